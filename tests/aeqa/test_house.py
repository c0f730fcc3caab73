"""A-EQA on the two-storey demo house: the demo writes its questions in 3D-Mem's pose-file shape
(three asked from the upper floor about the ground floor, one the other way round), with
reference lengths through the stairs, and an episode that starts upstairs runs (mesh backend)."""

from __future__ import annotations

import json
import math

import pytest

from eqa_runner.benchmarks.aeqa.demo import HOUSE_FILE
from eqa_runner.benchmarks.aeqa.task import PATH_LENGTHS_FILE, POSES_FILE, load_aeqa
from eqa_runner.demo.house import FURNITURE, STOREY_H


def _storey(name: str) -> int:
    return next(storey for n, _c, _r, storey, _fp, _h in FURNITURE if n == name)


def test_demo_writes_house_questions_in_the_pose_file_shape(aeqa_demo):
    house = json.loads((aeqa_demo / HOUSE_FILE).read_text())
    main = json.loads((aeqa_demo / POSES_FILE).read_text())
    assert len(house) == 4 and all(r["episode_history"].endswith("-DemoHouse2F") for r in house)
    assert {tuple(sorted(r)) for r in house} == {tuple(sorted(main[0]))}  # the same record shape
    assert not {r["question_id"] for r in house} & {r["question_id"] for r in main}
    up = [r for r in house if r["position"][1] > STOREY_H - 0.5]
    assert len(up) == 3  # one shared upstairs start pose (one A-EQA episode) ...
    assert len({tuple(r["position"]) for r in up}) == 1
    for r in house:  # ... every answer is on the other floor than the start
        start_storey = int(r["position"][1] > STOREY_H - 0.5)
        assert _storey(r["class"]) != start_storey and r["class"] in r["question"], r
    lengths = json.loads((aeqa_demo / PATH_LENGTHS_FILE).read_text())
    for r in house:  # the reference path climbs the stairs: longer than the storey height
        assert lengths[r["question_id"]] > STOREY_H, r["question_id"]
    # the task reads the file as its own pose file (the questions file's default shape)
    eps = load_aeqa(aeqa_demo / HOUSE_FILE, aeqa_demo / "open-eqa-v0.json",
                    aeqa_demo / POSES_FILE, lengths)  # fmt: skip
    assert [e.episode_id for e in eps] == [r["question_id"] for r in house]
    assert {e.scene for e in eps} == {house[0]["episode_history"]}
    assert all(e.meta["reference_path_length"] == lengths[e.episode_id] for e in eps)


@pytest.mark.slow
def test_an_upstairs_aeqa_episode_runs_on_mesh(tmp_path, compose_cfg, aeqa_demo):
    from eqa_runner.records import read_records
    from eqa_runner.run.loop import run

    over = [
        "task=aeqa", "policy=fbe", "llm=offline", "judge.model=offline",
        f"task.data_dir={aeqa_demo}", f"task.questions_file={aeqa_demo / HOUSE_FILE}",
        "protocol.num_steps=4", "protocol.stop_check=false", "sim.width=64", "sim.height=64",
        "run.limit=1", "run.cache=false", "run.bootstrap_samples=10",
    ]  # fmt: skip
    out = run(compose_cfg(over, out=tmp_path / "r"))
    assert out["counts"]["ok"] == 1 and out["counts"]["error"] == 0
    (rec,) = read_records(tmp_path / "r" / "episodes.jsonl")
    t = rec["trace"]
    assert rec["episode_id"] == "demo-aeqa-house-00" and t["steps_taken"] == 4
    ys = [s["position"][1] for s in t["steps"]]
    assert all(abs(y - (STOREY_H + 0.05)) < 0.1 for y in ys), ys  # explores the upper floor
    assert all(s["source"] in {"frontier", "commit", "fallback"} for s in t["steps"])
    m = rec["metrics"]
    assert m["llm_match"] == 0.5 and math.isfinite(m["path_len"]) and m["path_len"] > 0
    assert m["reference_path_length"] > STOREY_H
