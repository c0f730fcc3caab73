"""The wait-for-all sweep launcher on submitit's local executor (no SLURM needed)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from eqa_runner.records import EPISODES_FILE, read_records
from tests.helpers.datasets import make_openeqa_dataset

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_local_sweep_with_a_failed_job_reports_it_and_exits_1(tmp_path: Path) -> None:
    good = make_openeqa_dataset(tmp_path / "good", n_questions=4, n_episodes=2, frames=4)
    missing = tmp_path / "missing"
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable, "-m", "eqa_runner", "-m", "hydra/launcher=local",
        f"hydra.sweep.dir={sweep}", "llm=offline", "judge.model=offline", "policy=blind",
        f"task.data_dir={good},{missing}", "run.progress=false",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert "[eqa_runner] 1 of 2 sweep jobs FAILED" in output
    assert "Traceback" not in output and "Error executing job" not in output
    assert f"task.data_dir={missing}" in output and "question file not found" in output

    runs = sorted(d for d in sweep.iterdir() if (d / ".hydra").is_dir())
    done = [d for d in runs if (d / "summary.json").exists()]
    assert len(done) == 1 and len(read_records(done[0] / EPISODES_FILE)) == 4

    reruns = re.findall(r"^  (python -m eqa_runner -m .*)$", output, flags=re.M)
    assert len(reruns) == 1
    rerun = shlex.split(reruns[0])
    assert "hydra/launcher=local" in rerun and "run.resume=true" in rerun
