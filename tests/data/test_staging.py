"""Staging on the real layouts (issue 24): the dry run checks the data with the same presence
check as ``data check`` and estimates only what can run; messages name the backend in use, the
benchmark's own layout and the real source; HM-EQA's check follows ``sim=``."""

from __future__ import annotations

import json
import shutil

from eqa_runner.run.loop import run


def test_openeqa_dry_run_without_frames_says_so(openeqa_data, compose_cfg, capsys):
    shutil.rmtree(openeqa_data / "episodes")
    out = run(compose_cfg(["task=openeqa_em", "policy=multiframe", f"task.data_dir={openeqa_data}",
                           "run.dry_run=true", "llm=offline"]))  # fmt: skip
    text = capsys.readouterr().out
    assert out["missing_data"] == out["episodes"] == 20 and out["runnable"] == 0
    assert "data: 20 of 20 episodes lack their scene or frames" in text
    assert "data fetch openeqa" in text
    assert json.dumps(out["estimate"]["policy"]["requests"]) == "0"
