"""MT-HM3D's files as MemoryEQA reads them: floor-0 start poses, yes/no questions, the
protocol's last-answer rule."""

from __future__ import annotations

import pytest

from eqa_runner.benchmarks.mt_hm3d.protocol import last_letter, step_letter
from eqa_runner.benchmarks.mt_hm3d.task import MTHM3DTask
from eqa_runner.errors import DataError


def _write(tmp_path, floor="1", poses="s1_0,1,0.5,2,0.3\n"):
    (tmp_path / "MT-HM3D-filtered-new.csv").write_text(
        "scene,floor,question,choices,answer,label\n"
        f"s1,{floor},Are both the cup and the pan in the kitchen?,\"['Yes', 'No']\",yes,yes/no\n"
        f"s1,{floor},How many chairs and tables?,\"['1', '2', '3', '4']\",C,count\n"
    )
    (tmp_path / "scene_init_poses_all.csv").write_text(
        "scene_floor,init_x,init_y,init_z,init_angle\n" + poses
    )


def test_every_floor_starts_at_floor_zero_and_yes_no_is_a_choice(tmp_path) -> None:
    _write(tmp_path)
    eps = MTHM3DTask(data_dir=str(tmp_path)).load_episodes()
    assert [e.answer for e in eps] == ["A", "C"]  # "yes" mapped to its letter
    assert eps[0].meta["yes_no"] and not eps[1].meta["yes_no"]
    assert eps[0].meta["choices"][:2] == ["Yes", "No"]
    assert eps[0].meta["start_position"] == [1.0, 0.5, 2.0]  # s1_0's pose for floor 1
    with pytest.raises(DataError, match="no start pose for s1_1"):
        MTHM3DTask(data_dir=str(tmp_path), pose_floor="question").load_episodes()


def test_a_scene_without_a_floor_zero_pose_is_one_line(tmp_path) -> None:
    _write(tmp_path, poses="s2_0,1,0.5,2,0.3\n")
    with pytest.raises(DataError, match="no start pose s1_0 for scene s1"):
        MTHM3DTask(data_dir=str(tmp_path)).load_episodes()


def test_last_answered_step_gives_the_answer() -> None:
    steps = [{"step": 0, "answer_probs": [0.1, 0.7, 0.1, 0.1]},
             {"step": 1, "answer_probs": [0.4, 0.4, 0.1, 0.1]},
             {"step": 2, "black": True}]  # fmt: skip
    assert step_letter(steps[1]) == "A"  # ties: the first letter
    assert last_letter(steps) == ("A", 1)
    assert last_letter([{"step": 0}]) == (None, None)


def test_demo_has_yes_no_and_the_house_and_checks(mt_demo, capsys) -> None:
    import argparse

    from eqa_runner.benchmarks.mt_hm3d.data import check

    eps = MTHM3DTask(data_dir=str(mt_demo)).load_episodes()
    assert len(eps) == 12 and sum(e.meta["yes_no"] for e in eps) == 6
    assert "00003-DemoHouse2F" in {e.scene for e in eps}
    args = argparse.Namespace(data_dir=str(mt_demo), questions_file=None, scenes_dir=None,
                              sim="mesh")  # fmt: skip
    assert check(args) == 0
    assert "yes/no questions: 6 of 12" in capsys.readouterr().out
