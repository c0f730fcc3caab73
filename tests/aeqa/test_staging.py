"""Staging on the real layouts (issue 24): the dry run checks the data with the same presence
check as ``data check`` and estimates only what can run; messages name the backend in use, the
benchmark's own layout and the real source; HM-EQA's check follows ``sim=``."""

from __future__ import annotations

import shutil

import pytest

from eqa_runner.benchmarks.aeqa.data import aeqa_instructions
from eqa_runner.benchmarks.aeqa.task import AEQATask
from eqa_runner.data.commands import build_parser
from eqa_runner.errors import DataError


def test_aeqa_without_path_lengths_names_the_source_and_the_switch(tmp_path, aeqa_demo):
    data = tmp_path / "aeqa"
    shutil.copytree(aeqa_demo, data)
    (data / "gt_path_length.json").unlink()
    with pytest.raises(DataError) as e:
        AEQATask(data_dir=str(data)).load_episodes()
    msg = str(e.value)
    assert "3D-Mem-AEQA-Eval" in msg and "task.require_path_lengths=false" in msg
    assert AEQATask(data_dir=str(data), require_path_lengths=False).load_episodes()


def test_aeqa_staging_asks_for_val_scenes_only(tmp_path):
    args = build_parser().parse_args(["check", "aeqa", "--data-dir", str(tmp_path)])
    text = aeqa_instructions(args, 57)
    assert "--uids hm3d_val_v0.2 " in text and "hm3d_train" not in text
    assert "57 val scenes" in text and "check aeqa" in text
