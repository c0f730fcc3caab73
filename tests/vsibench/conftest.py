"""Fixtures for the VSI-Bench tests: a small dataset in the published format (two short videos
written with PyAV, a question of every type)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `from tests.conftest import ...` without `python -m pytest`
    sys.path.insert(0, str(ROOT))

OPTS = ["A. sofa", "B. chair", "C. table", "D. lamp"]


def records() -> list[dict]:
    """One question per type on two scenes (answers: letter B, numbers 3 and 2.5)."""
    from eqa_runner.benchmarks.vsibench.scoring import MCA_TYPES, NA_TYPES

    recs = []
    for i, qtype in enumerate(MCA_TYPES + NA_TYPES):
        mca = qtype in MCA_TYPES
        recs.append({
            "id": i, "dataset": "scannet" if i % 2 else "arkitscenes",
            "scene_name": f"scene{i % 2}", "question_type": qtype,
            "question": f"Question {i} about {qtype}?", "options": OPTS if mca else None,
            "ground_truth": "B" if mca else ("3" if i % 2 else "2.5"),
        })  # fmt: skip
    return recs


def write_dataset(out: Path, n_frames: int = 12) -> Path:
    from eqa_runner.benchmarks.vsibench.video import write_video

    out.mkdir(parents=True, exist_ok=True)
    for source, scene in (("arkitscenes", "scene0"), ("scannet", "scene1")):
        frames = [np.full((48, 64, 3), (8 * i) % 256, np.uint8) for i in range(n_frames)]
        write_video(out / source / f"{scene}.mp4", frames, fps=5)
    (out / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records()))
    return out


@pytest.fixture(scope="session")
def vsi_data(tmp_path_factory) -> Path:
    """The small dataset; read-only (the frame cache goes to each test's task.frames_dir)."""
    return write_dataset(tmp_path_factory.mktemp("vsi") / "vsibench")
