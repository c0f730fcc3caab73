"""A-EQA loaders: the pose file, the ids-only subset joined with open-eqa-v0.json, lengths."""

from __future__ import annotations

import json
import math

import pytest

from eqa_runner.benchmarks.aeqa.task import AEQATask
from eqa_runner.errors import ConfigError, DataError

Q1, Q2, Q3 = "f2e82760-aaaa", "0b1c2d3e-bbbb", "99999999-cccc"
OPENEQA = [
    {"question": "What is above the TV?", "answer": "An air conditioner", "category":
     "object recognition", "question_id": Q1, "episode_history": "hm3d-v0/000-hm3d-BFRyYbPCCPE"},
    {"question": "Is the oven on?", "answer": "No", "category": "object state recognition",
     "question_id": Q2, "episode_history": "hm3d-v0/001-hm3d-Xyz12345", "extra_answers": ["off"]},
    {"question": "Unused", "answer": "x", "category": "world knowledge", "question_id": Q3,
     "episode_history": "scannet-v0/002-scannet-scene0000_00"},
]  # fmt: skip
HALF_TURN = [math.cos(0.4), 0.0, math.sin(0.4), 0.0]


def _pose_rec(rec, scene, pos):
    return {**{k: v for k, v in rec.items() if k != "episode_history"},
            "episode_history": scene, "position": pos, "rotation": HALF_TURN,
            "object_id": None, "class": None}  # fmt: skip


POSES = [
    _pose_rec(OPENEQA[0], "00826-BFRyYbPCCPE", [-3.2, 0.18, -2.6]),
    _pose_rec(OPENEQA[1], "00801-Xyz12345", [1.0, 0.0, 1.0]),
]


@pytest.fixture
def data(tmp_path):
    (tmp_path / "aeqa_questions-184.json").write_text(json.dumps(POSES))
    (tmp_path / "open-eqa-v0.json").write_text(json.dumps(OPENEQA))
    (tmp_path / "gt_path_length.json").write_text(json.dumps({Q1: 5.537, Q2: 12.0, Q3: 3.0}))
    (tmp_path / "ids.json").write_text(json.dumps([Q2, Q1]))
    return tmp_path


def _check(eps):
    by = {e.episode_id: e for e in eps}
    assert set(by) == {Q1, Q2}
    ac = by[Q1]
    assert ac.scene == "00826-BFRyYbPCCPE" and ac.category == "object recognition"
    assert ac.meta["start_position"] == [-3.2, 0.18, -2.6]
    assert ac.meta["start_rotation"] == pytest.approx(HALF_TURN)
    assert ac.meta["reference_path_length"] == 5.537
    assert by[Q2].extra_answers == ["off"] and by[Q2].meta["reference_path_length"] == 12.0
    return by


def test_pose_file_shape(data):
    by = _check(AEQATask(data_dir=str(data)).load_episodes())
    assert by[Q1].meta["episode_history"] == "00826-BFRyYbPCCPE"


def test_ids_only_subset_joined_with_openeqa_and_poses(data):
    by = _check(AEQATask(data_dir=str(data), questions_file=str(data / "ids.json")).load_episodes())
    assert by[Q1].meta["episode_history"] == "hm3d-v0/000-hm3d-BFRyYbPCCPE"


def test_missing_path_lengths(data):
    (data / "gt_path_length.json").write_text(json.dumps({Q1: 5.0}))
    task = AEQATask(data_dir=str(data))
    eps = task.load_episodes()
    assert {e.episode_id: e.meta["reference_path_length"] for e in eps} == {Q1: 5.0, Q2: None}
    assert any(f"question {Q2}: no reference path length" in p for p in task.check(eps))
    (data / "gt_path_length.json").unlink()
    with pytest.raises(DataError, match="gt_path_length.json: reference path lengths not found"):
        task.load_episodes()
    optional = AEQATask(data_dir=str(data), require_path_lengths=False)
    assert all(e.meta["reference_path_length"] is None for e in optional.load_episodes())


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda p: p[0].pop("position"), r"record 0: missing field\(s\) position"),
        (lambda p: p[0].update(rotation=[0, 0, 0, 0]), "zero quaternion"),
        (lambda p: p[0].update(rotation=[1, 0, 0]), "rotation must be 4 finite numbers"),
        (lambda p: p[0].update(episode_history="hm3d-v0/000-hm3d-BFRyYbPCCPE"),
         "not an HM3D scene dir"),
        (lambda p: p.pop(1), f"no start pose for question {Q2}"),
    ],
)  # fmt: skip
def test_bad_pose_records(data, mutate, match):
    poses = json.loads(json.dumps(POSES))
    mutate(poses)
    (data / "aeqa_questions-184.json").write_text(json.dumps(poses))
    with pytest.raises(DataError, match=match):
        AEQATask(data_dir=str(data), questions_file=str(data / "ids.json")).load_episodes()


def test_unknown_ids_and_bad_lengths(data):
    (data / "ids.json").write_text(json.dumps([Q1, "nope"]))
    with pytest.raises(DataError, match=r"1 question id\(s\) not in .*open-eqa-v0.json"):
        AEQATask(data_dir=str(data), questions_file=str(data / "ids.json")).load_episodes()
    (data / "gt_path_length.json").write_text(json.dumps({Q1: -1}))
    with pytest.raises(DataError, match=r"path length must be a number >= 0"):
        AEQATask(data_dir=str(data)).load_episodes()
    with pytest.raises(ConfigError, match=r"^task.categories=\[colours\]: must be one of object"):
        AEQATask(data_dir=str(data), categories=["colours"])
