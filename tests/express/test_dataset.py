"""EXPRESS-Bench question files: both layouts, validation, splits, scene checks, dry run."""

from __future__ import annotations

import json
import math
import time

import pytest

from eqa_runner.benchmarks.express.task import ExpressTask, load_questions
from eqa_runner.errors import ConfigError, DataError
from eqa_runner.prompts import split_prompt
from eqa_runner.run.loop import run

from .conftest import original_record, repackaged_record, write_questions


@pytest.mark.parametrize("layout", ["original", "repackaged"])
def test_2044_records_load_fast(tmp_path, layout):
    make = original_record if layout == "original" else repackaged_record
    path = write_questions(tmp_path / "q.json", [make(i) for i in range(2044)])
    t0 = time.perf_counter()
    eps = ExpressTask(data_dir=str(tmp_path), questions_file=str(path)).load_episodes()
    dt = time.perf_counter() - t0
    print(f"\n{layout}: loaded {len(eps)} records in {dt:.3f} s")
    assert len(eps) == 2044
    assert dt < 5.0


def test_both_layouts_give_the_same_episodes(tmp_path):
    a = load_questions(
        write_questions(tmp_path / "a.json", [original_record(i) for i in range(30)])
    )
    b = load_questions(
        write_questions(tmp_path / "b.json", [repackaged_record(i) for i in range(30)])
    )
    for x, y in zip(a, b, strict=True):
        assert (x.episode_id, x.question, x.answer, x.category) == (
            y.episode_id,
            y.question,
            y.answer,
            y.category,
        )
        for k in ("start_position", "start_rotation", "goal_position", "geodesic_distance"):
            assert x.meta[k] == y.meta[k]
        assert x.meta["split"] == y.meta["split"]
    r = original_record(5)
    ep = a[5]
    assert ep.scene == r["scene_id"] and ep.category == r["type"]
    assert ep.meta["start_rotation"] == r["start_rotation"]  # (w, x, y, z) verbatim
    assert ep.meta["goal_rotation"] == r["goal_rotation"]
    assert ep.meta["trajectory_id"] == r["trajectory_id"]


def test_split_scene_filter_and_order(tmp_path):
    recs = [original_record(i) for i in range(40)]
    for i, r in enumerate(recs):
        r["scene_id"] = f"hm3d/train/{(i * 7) % 5 * 10:05d}-Scene{(i * 7) % 5}"
    recs[3]["scene_id"] = "hm3d/val/00812-AbCdEf"
    path = write_questions(tmp_path / "q.json", recs)
    task = ExpressTask(data_dir=str(tmp_path), questions_file=str(path))
    eps = task.load_episodes()
    keys = [e.scene.split("/")[-1] for e in eps]
    assert keys == sorted(keys), "episodes are grouped by scene"
    first = [e.episode_id for e in eps if e.scene == recs[0]["scene_id"]]
    assert first == sorted(first, key=int), "order inside a scene is stable"
    val = ExpressTask(data_dir=str(tmp_path), questions_file=str(path), split="val")
    assert [e.episode_id for e in val.load_episodes()] == ["3"]
    train = ExpressTask(data_dir=str(tmp_path), questions_file=str(path), split="train")
    assert len(train.load_episodes()) == 39
    only = ExpressTask(
        data_dir=str(tmp_path), questions_file=str(path), scenes=["00812-AbCdEf"]
    ).load_episodes()
    assert [e.episode_id for e in only] == ["3"]
    with pytest.raises(ConfigError, match=r"^task.split=test: must be one of all, val, train$"):
        ExpressTask(data_dir=str(tmp_path), split="test")


def _bad(tmp_path, mutate, layout=original_record):
    recs = [layout(i) for i in range(4)]
    mutate(recs)
    return write_questions(tmp_path / "bad.json", recs)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r[2].__setitem__("start_position", [0.0, math.nan, 1.0]), "record 2: field "
         "start_position holds a non-finite"),
        (lambda r: r[1].__setitem__("start_rotation", [1.0, 0.0, 0.0]), "record 1: field "
         "start_rotation must be a list of 4 numbers, got 3 values"),
        (lambda r: r[3].__setitem__("goal_position", [1.0, 2.0]), "record 3: field goal_position"),
        (lambda r: r[0].pop("question"), "record 0: missing field.*question"),
        (lambda r: r[2].pop("geodesic_distance"), "record 2: missing field.*geodesic_distance"),
        (lambda r: r[3].__setitem__("episode_id", "1"), "record 3: duplicate episode id '1'.*"
         "record 1"),
        (lambda r: r[1].__setitem__("scene_id", "hm3d/val/not-a-scene"), "record 1: field "
         "scene_id"),
        (lambda r: r[0].__setitem__("geodesic_distance", math.inf), "record 0: field geodesic"),
        (lambda r: r[0].__setitem__("start_rotation", [0, 0, 0, 0]), "zero quaternion"),
        (lambda r: r[1].__setitem__("start_position", [0.0, "a", 1.0]), "non-number"),
    ],
)  # fmt: skip
def test_validation_errors_name_file_record_and_field(tmp_path, mutate, message):
    path = _bad(tmp_path, mutate)
    with pytest.raises(DataError, match=message) as e:
        load_questions(path)
    assert str(path) in str(e.value)


def test_repackaged_validation_and_file_errors(tmp_path):
    path = _bad(tmp_path, lambda r: r[1].pop("rotation"), repackaged_record)
    with pytest.raises(DataError, match=r"record 1: missing field.*start_rotation"):
        load_questions(path)
    with pytest.raises(DataError, match="question file not found.*data fetch express"):
        load_questions(tmp_path / "nope.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        load_questions(tmp_path / "x.json")


def test_check_names_missing_scene_and_fetch_command(tmp_path, express_demo):
    task = ExpressTask(data_dir=str(express_demo))
    eps = task.load_episodes()
    assert task.check(eps) == []
    empty = ExpressTask(data_dir=str(express_demo), scenes_dir=str(tmp_path / "none"))
    problems = empty.check(eps)
    assert len(problems) == 2  # one per scene, not per question
    # the message names the real HM3D layout and the backend in use, and how access is obtained
    assert str(tmp_path / "none" / "val" / "00800-DemoApt0" / "DemoApt0.basis.glb") in problems[0]
    assert "sim=mesh" in problems[0] and "licensed by Matterport" in problems[0]
    assert "python -m eqa_runner.data check express" in problems[0]


def test_dry_run_lists_questions_without_scenes(tmp_path, compose_cfg, capsys):
    path = write_questions(tmp_path / "d" / "express-bench.json", [original_record(i) for i in
                                                                   range(50)])  # fmt: skip
    args = ["task=express", "policy=re", f"task.data_dir={path.parent}", "run.dry_run=true",
            "judge.model=offline"]  # fmt: skip
    # the dry run checks the data: no scene is there, so nothing can run and nothing is estimated
    out = run(compose_cfg(args))
    assert out["episodes"] == 50 and out["missing_data"] == 50 and out["runnable"] == 0
    assert out["estimate"]["policy"]["requests"] == 0
    text = capsys.readouterr().out
    assert "data: 50 of 50 episodes lack their scene or frames" in text
    assert "`python -m eqa_runner.data check express` lists them" in text
    # without the data check every selected episode is estimated
    out = run(compose_cfg([*args, "task.check_data=false"]))
    assert out["dry_run"] and out["episodes"] == 50
    est = out["estimate"]["policy"]
    assert est["requests"] == 50 * (50 + 1)  # estimate_steps stop checks + one answer each
    assert out["estimate"]["judge"]["requests"] == 50
    assert "50 episodes selected" in capsys.readouterr().out


def test_split_prompt_handles_upstream_layout():
    text = "[system]:\nYou judge.\n[user]:\nLine one.\nInput: "
    assert split_prompt(text) == ("You judge.", "Line one.\nInput:")
    assert split_prompt("just user text") == ("", "just user text")
    assert json.dumps(split_prompt("[user]:\nonly user")) == json.dumps(["", "only user"])
