"""Bad EXPRESS inputs through the runner: NaN / wrong-length poses, a missing scene."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eqa_runner.errors import DataError
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.reliability import tally

pytest.importorskip("eqa_runner.benchmarks.express.task")
pytest.importorskip("eqa_runner.policies.explore")

BASE = ["task=express", "policy=re", "llm=offline", "judge.model=offline"]


@pytest.fixture
def demo(tmp_path, express_demo) -> Path:
    tally.add("bad inputs tried")
    return Path(shutil.copytree(express_demo, tmp_path / "express"))


def _questions(demo: Path) -> tuple[Path, list[dict]]:
    qfile = demo / "express-bench.json"  # the demo also writes the two-storey house file
    return qfile, json.loads(qfile.read_text())


def _pose_key(rec: dict) -> str:
    return "start_position" if "start_position" in rec else "position"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1.0, float("nan"), 2.0], "holds a non-finite value"),
        ([1.0, 2.0], "must be a list of 3 numbers"),
    ],
)
def test_bad_start_pose_names_record_and_field(compose_cfg, demo, value, message):
    qfile, recs = _questions(demo)
    key = _pose_key(recs[1])
    recs[1][key] = value
    qfile.write_text(json.dumps(recs))  # NaN is written as the (non-standard) literal NaN
    with pytest.raises(DataError, match=rf"{qfile.name}.*record 1.*{key} {message}"):
        run(compose_cfg([*BASE, f"task.data_dir={demo}"]))


@pytest.mark.slow
def test_missing_scene_fails_at_start_then_is_a_recorded_error(tmp_path, compose_cfg, demo):
    scene_dir = next((demo / "scenes" / "val").iterdir())
    shutil.rmtree(scene_dir)
    with pytest.raises(
        DataError, match=rf"scene .*{scene_dir.name}: no scene file for sim=mesh at"
    ) as e:
        run(compose_cfg([*BASE, f"task.data_dir={demo}"]))
    assert "task.scenes_dir" in str(e.value) and "task.check_data=false" in str(e.value)
    _, recs = _questions(demo)
    out = run(compose_cfg([*BASE, f"task.data_dir={demo}", "task.check_data=false"]))
    records = read_records(tmp_path / "run" / "episodes.jsonl")
    assert len(records) == len(recs), "the run goes on past the broken scene"
    errors = [r for r in records if r["status"] == "error"]
    assert errors and out["counts"]["error"] == len(errors) and out["counts"]["ok"] > 0
    for r in errors:
        assert scene_dir.name in r["scene"]
        assert f"{scene_dir.name}' not found under" in r["error"]["message"]
        assert r["metrics"] == {}
