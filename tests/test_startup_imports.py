"""Printing a config must not import the heavy libraries (they cost seconds at start-up)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("litellm", "open3d", "habitat_sim", "pandas", "numba", "sklearn", "mlflow", "wandb")

SCRIPT = """
import runpy, sys
sys.argv = ["eqa_runner", *{args!r}, "--cfg", "job"]
try:
    runpy.run_module("eqa_runner", run_name="__main__", alter_sys=True)  # = python -m
except SystemExit:
    pass
print("HEAVY", sorted(m for m in {heavy!r} if m in sys.modules))
"""


def _heavy_after(*args: str) -> str:
    code = SCRIPT.format(args=list(args), heavy=HEAVY)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "policy:" in proc.stdout, proc.stdout[-2000:]  # the config was printed
    return proc.stdout.strip().splitlines()[-1]


def test_cfg_job_imports_no_heavy_library_for_fbe() -> None:
    assert _heavy_after("task=express", "policy=fbe") == "HEAVY []"


def test_cfg_job_imports_no_heavy_library_for_openeqa() -> None:
    assert _heavy_after("task=openeqa_em", "policy=multiframe") == "HEAVY []"


def test_cfg_job_with_trackers_imports_no_tracker_library() -> None:
    assert _heavy_after("task=express", "policy=fbe", "logger=[csv,mlflow,wandb]") == "HEAVY []"
