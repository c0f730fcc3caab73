"""A signal after the episodes are done, while the run closes its resources and writes the
summary: it is the run's (stops it as in the loop; a second one exits at once with its line),
never Python's default (a silent kill on SIGTERM, a KeyboardInterrupt traceback or a false
"interrupted before any episode ran" on Ctrl-C).

The signals are sent from inside the summary step (the process signals itself there), so the
window is hit every time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability.conftest import cli_env

CODES = {"SIGINT": 130, "SIGTERM": 143}

# runs the real CLI with the summary step wrapped: it first signals its own process
SCRIPT = """
import os, signal, sys
import eqa_runner.run.loop as loop
from eqa_runner.__main__ import main

sigs = [getattr(signal, s) for s in sys.argv[1].split(",")]
write_summary = loop._try_summary

def signalled_summary(ctx):
    for s in sigs:
        os.kill(os.getpid(), s)
    return write_summary(ctx)

loop._try_summary = signalled_summary
sys.argv = ["eqa_runner", *sys.argv[2:]]
main()
"""


def _run(tmp_path: Path, signals: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    data = make_openeqa_dataset(tmp_path / "d", n_questions=4, n_episodes=1, frames=2)
    run_dir = tmp_path / "run"
    args = [f"task.data_dir={data}", "policy=blind", "llm=offline", "judge.model=offline",
            f"hydra.run.dir={run_dir}", f"run.cache_dir={tmp_path / 'cache'}",
            "run.progress=false"]  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", SCRIPT, signals, *args], cwd=ROOT,
                          env=cli_env(), capture_output=True, text=True, timeout=180)  # fmt: skip
    return proc, run_dir


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_one_signal_while_the_summary_is_written_stops_the_run_with_its_line(tmp_path, sig):
    proc, run_dir = _run(tmp_path, sig)
    assert proc.returncode == CODES[sig], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "before any episode ran" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "resume with: " in ln]
    assert len(lines) == 1 and lines[0].startswith(f"[eqa_runner] interrupted ({sig}): 4/4 ")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["recorded"] == 4, "the summary is still written"


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_a_second_signal_while_the_summary_is_written_exits_at_once(tmp_path, sig):
    proc, run_dir = _run(tmp_path, f"{sig},{sig}")
    assert proc.returncode == CODES[sig], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "before any episode ran" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "resume with: " in ln]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("[eqa_runner] second signal: exiting without a summary; resume")
    assert lines[0].endswith(f"run.resume=true hydra.run.dir={run_dir}")
    recs = (run_dir / "episodes.jsonl").read_text().splitlines()
    assert len(recs) == 4, "every record stays"
