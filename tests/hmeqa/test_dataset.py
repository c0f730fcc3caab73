# ruff: noqa: E501  (CSV rows as upstream writes them)
"""HM-EQA loaders: both CSV files, option padding, tolerant shapes, one-line errors."""

from __future__ import annotations

import math

import pytest

from eqa_runner.benchmarks.hmeqa.task import (
    PADDING,
    HMEQATask,
    load_poses,
    pad_choices,
    parse_choices,
)
from eqa_runner.errors import DataError

POSES = """scene_floor,init_x,init_y,init_z,init_angle
00004-VqCaAuuoeWk_0,1.0,0.12,-2.0,1.5707963267948966
00004-VqCaAuuoeWk_1,0.5,3.1,0.25,0.0
00017-oEPjPNSPmzL_0,-3.25,-1.5,2.0,3.0
"""
QUESTIONS = """scene,floor,question,choices,question_formatted,answer,label
00004-VqCaAuuoeWk,1,Is the bedside lamp on?,"['(Do not choose this option)', 'Yes', 'No', '(Do not choose this option)']",x,B,state
00004-VqCaAuuoeWk,0,Where is the sofa?,"[""the kid's room"", 'the kitchen', 'the living room', 'the porch']",x,C,location
00017-oEPjPNSPmzL,0,How many chairs are there?,"[""1"", ""2"", ""3"", ""4""]",x,D,count
"""


@pytest.fixture
def data(tmp_path):
    (tmp_path / "questions.csv").write_text(QUESTIONS)
    (tmp_path / "scene_init_poses.csv").write_text(POSES)
    return tmp_path


def test_loads_both_files_and_joins_poses(data):
    eps = {e.episode_id: e for e in HMEQATask(data_dir=str(data)).load_episodes()}
    assert set(eps) == {"0", "1", "2"}
    lamp = eps["0"]
    assert lamp.answer == "B" and lamp.category == "state" and lamp.scene == "00004-VqCaAuuoeWk"
    assert lamp.meta["choices"] == [PADDING, "Yes", "No", PADDING]
    assert lamp.meta["padding"] == [0, 3] and lamp.meta["answer_text"] == "Yes"
    assert lamp.meta["start_position"] == [0.5, 3.1, 0.25] and lamp.meta["floor_height"] == 3.1
    sofa = eps["1"]
    assert sofa.meta["choices"][0] == "the kid's room"  # apostrophe: upstream's split breaks here
    w, x, y, z = sofa.meta["start_rotation"]
    assert math.isclose(2 * math.atan2(y, w), math.pi / 2) and x == z == 0.0
    assert eps["2"].meta["choices"] == ["1", "2", "3", "4"]  # JSON-style literal


def test_order_groups_scene_floors(data):
    ids = [e.episode_id for e in HMEQATask(data_dir=str(data)).load_episodes()]
    assert ids == ["1", "0", "2"]  # 00004 floor 0, 00004 floor 1, 00017


def test_option_columns_and_answer_text(tmp_path):
    (tmp_path / "scene_init_poses.csv").write_text(POSES)
    (tmp_path / "questions.csv").write_text(
        "scene,floor,question,choice_a,choice_b,choice_c,answer,label\n"
        "00017-oEPjPNSPmzL,0,What colour is the bed?,red,blue,green,blue,identification\n"
    )
    (ep,) = HMEQATask(data_dir=str(tmp_path)).load_episodes()
    assert ep.answer == "B" and ep.meta["choices"] == ["red", "blue", "green", PADDING]


def test_padding_answer_is_flagged(tmp_path):
    (tmp_path / "scene_init_poses.csv").write_text(POSES)
    (tmp_path / "questions.csv").write_text(
        "scene,floor,question,choices,answer,label\n"
        "00017-oEPjPNSPmzL,0,Anything on the chair?,\"['yes', 'no']\",D,existence\n"
    )
    (ep,) = HMEQATask(data_dir=str(tmp_path)).load_episodes()
    assert ep.meta["answer_is_padding"] is True


def test_pad_and_parse_helpers():
    assert pad_choices(["a"]) == ["a", PADDING, PADDING, PADDING]
    with pytest.raises(ValueError):
        pad_choices(["a"] * 5)
    assert parse_choices("['a', \"b's\"]", "w") == ["a", "b's"]


@pytest.mark.parametrize(
    "questions,match",
    [
        ("scene,floor,question,choices,answer,label\n"
         "00017-oEPjPNSPmzL,0,Q?,not a list,A,count\n", r"line 2: field choices is not a list"),
        ("scene,floor,question,choices,answer,label\n"
         "00017-oEPjPNSPmzL,0,Q?,\"['a','b']\",E,count\n", r"line 2: field answer 'E'"),
        ("scene,floor,question,choices,answer,label\n"
         "00099-NoPoseHere,0,Q?,\"['a','b']\",A,count\n", r"no start pose for 00099-NoPoseHere_0"),
        ("scene,question,choices,answer\n00017-oEPjPNSPmzL,Q?,\"['a']\",A\n", r"missing field\(s\) floor"),
        ("scene,floor,question,choices,answer,label\n"
         "00017-oEPjPNSPmzL,0,Q?,\"['a','b','c','d','e']\",A,count\n", r"5 options; HM-EQA has 4"),
    ],
)  # fmt: skip
def test_bad_question_rows(tmp_path, questions, match):
    (tmp_path / "scene_init_poses.csv").write_text(POSES)
    (tmp_path / "questions.csv").write_text(questions)
    with pytest.raises(DataError, match=match):
        HMEQATask(data_dir=str(tmp_path)).load_episodes()


def test_bad_pose_rows_and_missing_files(tmp_path):
    bad = tmp_path / "p.csv"
    bad.write_text("scene_floor,init_x,init_y,init_z,init_angle\n00001-A_0,1,nan,0,0\n")
    with pytest.raises(DataError, match=r"p.csv: line 2: field init_y must be a finite number"):
        load_poses(bad)
    with pytest.raises(
        DataError, match=r"scene_init_poses.csv: poses file not found.*task.poses_file.*demo"
    ):
        HMEQATask(data_dir=str(tmp_path / "nowhere")).load_episodes()


def test_unknown_category_filter_is_an_error(data):
    with pytest.raises(DataError, match=r"task.categories: \['colour'\] not in"):
        HMEQATask(data_dir=str(data), categories=["colour"]).load_episodes()
    eps = HMEQATask(data_dir=str(data), categories=["count"]).load_episodes()
    assert [e.episode_id for e in eps] == ["2"]


def test_no_constant_letter_wins_a_demo_question_file(hmeqa_demo):
    """A model that always answers one letter scores at most half on each demo file (the
    house's three questions were all A: such a model scored 100 % there)."""
    import csv
    from collections import Counter

    for name in ("questions.csv", "questions-house.csv"):
        with (hmeqa_demo / name).open(newline="", encoding="utf-8") as fh:
            letters = Counter(row["answer"] for row in csv.DictReader(fh))
        (top, n), total = letters.most_common(1)[0], sum(letters.values())
        assert total >= 3 and n <= total / 2, f"{name}: {top} is right for {n} of {total}"
