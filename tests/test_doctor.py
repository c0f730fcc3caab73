"""``python -m eqa_runner.doctor``: the preflight a user runs on a new node."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "eqa_runner.doctor", "--root", str(tmp_path), *args],
        cwd=ROOT, env=full, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.slow
def test_doctor_mesh_node_is_ready_and_names_only_key_names(tmp_path: Path) -> None:
    (tmp_path / "data" / "openeqa").mkdir(parents=True)
    proc = _doctor(tmp_path, OPENAI_API_KEY="sk-secret-value-123", NUMBA_CACHE_DIR=str(tmp_path))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "selected sim=mesh: OK" in out and "mesh simulator OK" in out
    assert "numba" in out and "NOT INSTALLED" not in out
    assert "jit: numba kernels OK (compiled in" in out  # empty cache dir: compiled
    assert f"cache {tmp_path}" in out
    assert "API keys set: OPENAI_API_KEY" in out and "sk-secret" not in out + proc.stderr
    assert f"openeqa: {tmp_path / 'data' / 'openeqa'}" in out
    assert "express" in out and "MISSING" in out  # the express data dir does not exist
    again = _doctor(tmp_path, NUMBA_CACHE_DIR=str(tmp_path))
    assert "jit: numba kernels OK (loaded from cache in" in again.stdout, again.stdout


@pytest.mark.slow
def test_doctor_habitat_absent_cannot_run(tmp_path: Path) -> None:
    proc = _doctor(tmp_path, "--sim", "habitat")
    assert proc.returncode == 1
    assert "selected sim=habitat: CANNOT RUN" in proc.stdout
