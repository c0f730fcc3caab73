"""Fixtures for the A-EQA tests: the procedural demo (written once per session)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `from tests.conftest import ...` without `python -m pytest`
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def aeqa_demo(tmp_path_factory) -> Path:
    """The A-EQA demo (2 apartments, 13 questions; read-only: copy it before changing files)."""
    from eqa_runner.benchmarks.aeqa.demo import write_aeqa_demo

    out = tmp_path_factory.mktemp("aeqa_demo") / "aeqa"
    write_aeqa_demo(out, seed=0)
    return out
