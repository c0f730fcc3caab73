"""Printing a config must not import the heavy libraries (they cost seconds at start-up)."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


@pytest.mark.slow
def test_cfg_job_imports_no_heavy_library_for_fbe() -> None:
    assert _heavy_after("task=express", "policy=fbe") == "HEAVY []"


@pytest.mark.slow
def test_cfg_job_imports_no_heavy_library_for_openeqa() -> None:
    assert _heavy_after("task=openeqa_em", "policy=multiframe") == "HEAVY []"


@pytest.mark.slow
def test_cfg_job_with_trackers_imports_no_tracker_library() -> None:
    assert _heavy_after("task=express", "policy=fbe", "logger=[csv,mlflow,wandb]") == "HEAVY []"


DRY_SCRIPT = """
import runpy, sys
sys.argv = ["eqa_runner", *{args!r}]
try:
    runpy.run_module("eqa_runner", run_name="__main__", alter_sys=True)  # = python -m
except SystemExit:
    pass
print("HEAVY", sorted(m for m in ("litellm", "numba", "open3d", "sklearn") if m in sys.modules))
"""


@pytest.mark.slow
def test_fbe_dry_run_imports_neither_numba_nor_litellm(tmp_path) -> None:
    """The planner's numba kernels load when a run opens the policy, not when a dry run builds
    it (numba costs about half a second of a dry run's budget)."""
    from eqa_runner.benchmarks.express.demo import write_express_demo

    write_express_demo(tmp_path / "express", seed=0)
    data, out = tmp_path / "express", tmp_path / "o"
    args = ["task=express", "policy=fbe", "llm=gpt-4o", "run.dry_run=true",
            f"task.data_dir={data}", f"run.output_dir={out}"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", DRY_SCRIPT.format(args=args)], cwd=ROOT, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert "requests" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []"
