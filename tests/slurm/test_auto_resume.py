"""A requeued SLURM job (``SLURM_RESTART_COUNT`` >= 1) resumes its run dir by itself.

No cluster needed: the environment variable is what SLURM sets in a restarted job. The real
requeue round trip is tests/slurm/test_sweeps.py (marked ``slurm``).
"""

from __future__ import annotations

import logging

import pytest

from eqa_runner.errors import RunDirError
from eqa_runner.records import EPISODES_FILE, read_records
from eqa_runner.run.loop import run


def test_restarted_job_auto_resumes_and_fresh_job_still_refuses(
    tmp_path, compose_cfg, openeqa_data, monkeypatch, caplog
) -> None:
    over = [f"task.data_dir={openeqa_data}", "llm=offline", "judge.model=offline", "run.limit=6"]
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    run(compose_cfg([*over, "run.limit=3"]))  # the first attempt got 3 of 6 episodes done
    jsonl = tmp_path / "run" / EPISODES_FILE
    assert len(read_records(jsonl)) == 3

    with pytest.raises(RunDirError, match="run.resume=true"):
        run(compose_cfg(over))  # not a requeue: a non-empty run dir is still refused
    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")
    with pytest.raises(RunDirError, match="run.resume=true"):
        run(compose_cfg(over))

    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    with caplog.at_level(logging.WARNING, logger="eqa_runner.run.loop"):
        out = run(compose_cfg(over))
    assert "auto-resuming" in caplog.text
    assert out["counts"]["ok"] == 6
    recs = read_records(jsonl)
    assert sorted(r["episode_id"] for r in recs) == [f"q{i:04d}" for i in range(6)]
