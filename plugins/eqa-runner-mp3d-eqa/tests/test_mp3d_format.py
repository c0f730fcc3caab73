"""The MP3DEQA-v1 file format: the demo writes it, the reader checks every field it reads."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.errors import DataError
from eqa_runner_mp3d_eqa.demo import FORWARD_M, TURN_DEG, write_mp3d_eqa_demo
from eqa_runner_mp3d_eqa.episodes import Vocab, episodes_file, load, tokenize, xyzw_to_wxyz
from eqa_runner_mp3d_eqa.task import MP3DEQATask


def _raw(demo: Path) -> dict:
    with gzip.open(episodes_file(demo, "val"), "rt") as fh:
        return json.load(fh)


@pytest.mark.slow
def test_demo_file_has_habitat_labs_shape(mp3d_demo):
    data = _raw(mp3d_demo)
    assert set(data) == {"episodes", "question_vocab", "answer_vocab"}
    assert data["answer_vocab"]["word_list"][0] == "<unk>"
    assert len(data["episodes"]) == 8
    answers = Vocab(data["answer_vocab"]["word_list"])
    questions = Vocab(data["question_vocab"]["word_list"])
    for ep in data["episodes"]:
        assert {
            "episode_id",
            "scene_id",
            "start_position",
            "start_rotation",
            "goals",
            "shortest_paths",
            "question",
            "start_room",
            "info",
        } <= set(ep)
        q = ep["question"]
        assert q["question_type"] in ("location", "color", "color_room")
        assert answers.word(q["answer_token"]) == q["answer_text"]
        assert [questions.word(t) for t in q["question_tokens"]] == tokenize(q["question_text"])
        (goal,) = ep["goals"]
        assert goal["view_points"] and len(goal["position"]) == 3
        house = ep["scene_id"].split("/")[1]
        assert ep["scene_id"] == f"mp3d/{house}/{house}.glb"
        assert (mp3d_demo / "scenes" / ep["scene_id"]).is_file()
        x, y, z, w = ep["start_rotation"]
        assert x == z == 0 and math.isclose(x * x + y * y + z * z + w * w, 1, abs_tol=1e-5)


@pytest.mark.slow
def test_demo_is_deterministic(mp3d_demo, tmp_path):
    again = write_mp3d_eqa_demo(tmp_path)
    assert again.read_bytes() == episodes_file(mp3d_demo, "val").read_bytes()


def test_shortest_path_replays_in_v1_actions(mp3d_demo):
    """Replaying the actions from the start (0.1 m forward, 9 degree turns) follows the stored
    positions and ends at a view point, as habitat-lab's replay test expects of real data."""
    for ep in _raw(mp3d_demo)["episodes"]:
        path = ep["shortest_paths"][0]
        pos = np.asarray(path[0]["position"], float)
        x, y, z, w = path[0]["rotation"]
        yaw = 2 * math.atan2(y, w)
        assert np.allclose(pos, ep["start_position"], atol=1e-4)
        for k, (a, b) in enumerate(zip(path, path[1:], strict=False)):
            if a["action"] == 0:
                pos = pos + FORWARD_M * np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])
            else:
                yaw += math.radians(TURN_DEG) * (1 if a["action"] == 1 else -1)
            # habitat-lab's test: x-z within 0.028 m per step of the stored point
            assert np.allclose(pos[[0, 2]], np.asarray(b["position"])[[0, 2]], atol=0.028 * (k + 1))
            assert np.allclose(pos[[0, 2]], np.asarray(b["position"])[[0, 2]], atol=1e-3)
        assert path[-1]["action"] == 3
        end = np.asarray(path[-1]["position"])
        assert any(
            np.linalg.norm(end - np.asarray(v["position"])) < 0.1
            for v in ep["goals"][0]["view_points"]
        )


def test_task_turns_the_file_into_episodes(mp3d_demo):
    eps = MP3DEQATask(data_dir=str(mp3d_demo)).load_episodes()
    raw = {e["episode_id"]: e for e in _raw(mp3d_demo)["episodes"]}
    assert len(eps) == 8 and {e.category for e in eps} <= {"location", "color", "color_room"}
    for e in eps:
        r = raw[e.episode_id]
        assert e.meta["start_rotation"] == pytest.approx(xyzw_to_wxyz(r["start_rotation"]))
        assert e.meta["goal_position"] == r["goals"][0]["position"]
        assert e.meta["answer_vocab"][e.meta["answer_token"]] == e.answer
        assert e.meta["geodesic_distance"] > 1.0
    assert MP3DEQATask(data_dir=str(mp3d_demo)).check(eps) == []


def test_spawn_steps_start_on_the_shortest_path(mp3d_demo):
    raw = {e["episode_id"]: e for e in _raw(mp3d_demo)["episodes"]}
    for e in MP3DEQATask(data_dir=str(mp3d_demo), spawn_steps=10).load_episodes():
        path = raw[e.episode_id]["shortest_paths"][0]
        assert e.meta["start_position"] == path[len(path) - 10]["position"]
        assert e.meta["geodesic_distance"] < 1.5  # <= 9 forward steps of 0.1 m


def _broken(demo: Path, tmp_path: Path, edit) -> Path:
    data = _raw(demo)
    edit(data)
    out = episodes_file(tmp_path, "val")
    out.parent.mkdir(parents=True)
    with gzip.open(out, "wt") as fh:
        json.dump(data, fh)
    return out


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["episodes"][1]["question"].update(answer_token=0), "question.answer_token"),
        (lambda d: d["episodes"][2].update(start_position=[0, "x", 1]), "start_position"),
        (lambda d: d["episodes"][0].update(start_rotation=[0, 0, 0, 2]), "start_rotation"),
        (lambda d: d["episodes"][3].update(goals=[]), "goals"),
        (lambda d: d["episodes"][3]["question"].pop("answer_text"), "question.answer_text"),
        (lambda d: d.pop("answer_vocab"), "answer_vocab.word_list"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(mp3d_demo, tmp_path, edit, field):
    path = _broken(mp3d_demo, tmp_path, edit)
    with pytest.raises(DataError) as e:
        load(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and field in msg


def test_missing_file_says_how_to_get_it(tmp_path):
    with pytest.raises(DataError, match="--only mp3d_eqa"):
        MP3DEQATask(data_dir=str(tmp_path)).load_episodes()
