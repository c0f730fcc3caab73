"""Callables submitted by tests/slurm/test_cluster.py (importable by the job: PYTHONPATH)."""

from __future__ import annotations

import time
from pathlib import Path

import submitit


class SleepUnlessResumed(submitit.helpers.Checkpointable):
    """First run: drop a marker and sleep; after a requeue (marker present): return at once."""

    def __call__(self, marker: str, sleep_s: float = 600) -> str:
        path = Path(marker)
        if path.exists():
            return "resumed"
        path.write_text("started\n")
        time.sleep(sleep_s)
        return "not interrupted"
