"""The VSI-Bench demo: one rendered video per apartment, every question type the demo makes,
answers from the apartment itself; ``data check`` passes on it."""

from __future__ import annotations

import argparse
import json

import pytest

from eqa_runner.benchmarks.vsibench.data import check
from eqa_runner.benchmarks.vsibench.scoring import QUESTION_TYPES
from eqa_runner.benchmarks.vsibench.video import count_frames


@pytest.mark.slow
def test_demo_videos_questions_and_check(tmp_path, capsys) -> None:
    from eqa_runner.benchmarks.vsibench.demo import write_vsibench_demo

    path = write_vsibench_demo(tmp_path / "vsibench", n_scenes=1, max_frames=12)
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    types = {r["question_type"] for r in recs}
    assert types == set(QUESTION_TYPES) - {"route_planning"}
    assert count_frames(tmp_path / "vsibench" / "arkitscenes" / "DemoApt0.mp4") == 12
    for r in recs:
        if r["options"]:
            assert r["ground_truth"] in "ABCD"[: len(r["options"])]
        else:
            assert float(r["ground_truth"]) > 0
    args = argparse.Namespace(data_dir=str(tmp_path / "vsibench"), questions_file=None,
                              variant="full", no_decode=False)  # fmt: skip
    assert check(args) == 0
    assert "1/1 videos present, 9 questions" in capsys.readouterr().out
