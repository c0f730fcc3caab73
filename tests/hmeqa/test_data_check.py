"""``python -m eqa_runner.data check hmeqa`` on the demo, with a missing scene, and bad files;
``python -m eqa_runner.demo`` writes the hmeqa directory."""

from __future__ import annotations

import shutil

import pytest

from eqa_runner.benchmarks.hmeqa.task import PADDING, HMEQATask
from eqa_runner.data.commands import main as data_main


@pytest.mark.slow
def test_check_demo_ok_and_missing_scene(tmp_path, hmeqa_demo, capsys):
    assert data_main(["check", "hmeqa", "--data-dir", str(hmeqa_demo)]) == 0
    out = capsys.readouterr().out
    assert "hmeqa: 10 questions over 2 scenes" in out and "OK" in out
    assert "2 scene floors; categories: count 2, existence 2" in out
    data = tmp_path / "hmeqa"
    shutil.copytree(hmeqa_demo, data)
    shutil.rmtree(data / "scenes" / "00002-DemoApt1")
    assert data_main(["check", "hmeqa", "--data-dir", str(data)]) == 1
    out = capsys.readouterr().out
    scene = data / "scenes" / "00002-DemoApt1" / "DemoApt1.basis.glb"  # the train layout
    assert f"missing: scene 00002-DemoApt1: no scene file for sim=mesh at {scene}" in out
    assert "To stage the scenes" in out and "<NNNNN-id>/<id>.basis.navmesh" in out


def test_check_reports_bad_files_and_padding_answers(tmp_path, hmeqa_demo, capsys):
    data = tmp_path / "hmeqa"
    shutil.copytree(hmeqa_demo, data)
    rows = (data / "questions.csv").read_text().splitlines()
    # a row whose answer is a padding option (upstream has one): kept, and said so
    pad_row = next(i for i, r in enumerate(rows) if PADDING in r and i > 0)
    choices = rows[pad_row].split('"')[1]
    letter = "ABCD"[eval(choices).index(PADDING)]  # noqa: S307 - the test's own literal
    head, _, tail = rows[pad_row].rpartition(",")
    head, _, _ = head.rpartition(",")
    rows[pad_row] = f"{head},{letter},{tail}"
    (data / "questions.csv").write_text("\n".join(rows) + "\n")
    assert data_main(["check", "hmeqa", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert f"question {pad_row - 1} " in out and "answer on a padding option" in out
    eps = {e.episode_id: e for e in HMEQATask(data_dir=str(data)).load_episodes()}
    assert eps[str(pad_row - 1)].meta["answer_is_padding"] is True
    # a question whose scene floor has no start pose: one line, exit 1
    (data / "scene_init_poses.csv").write_text("scene_floor,init_x,init_y,init_z,init_angle\n")
    assert data_main(["check", "hmeqa", "--data-dir", str(data)]) == 1
    assert "FAILED:" in capsys.readouterr().out


@pytest.mark.slow
def test_demo_cli_writes_hmeqa(tmp_path, capsys):
    from eqa_runner.demo.cli import main as demo_main

    demo_main([str(tmp_path), "--only", "hmeqa"])
    assert f"hmeqa: task.data_dir={tmp_path / 'hmeqa'}" in capsys.readouterr().out
    eps = HMEQATask(data_dir=str(tmp_path / "hmeqa")).load_episodes()
    assert len(eps) == 10 and {e.category for e in eps} == {
        "location", "existence", "state", "identification", "count"
    }  # fmt: skip
    for e in eps:  # four options, the answer a real one, the start a navigable floor point
        assert len(e.meta["choices"]) == 4 and e.meta["answer_text"] != PADDING
        # the floor: the top of its 5 cm voxel, where habitat-sim's navmesh lies too
        assert 0.0 <= e.meta["start_yaw"] < 6.2832 and abs(e.meta["floor_height"] - 0.05) < 1e-6
    assert not (tmp_path / "express").exists()
