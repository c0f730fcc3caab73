"""Fixtures for the MT-HM3D tests: the procedural demo (written once per session)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `from tests.conftest import ...` without `python -m pytest`
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def mt_demo(tmp_path_factory) -> Path:
    """The MT-HM3D demo (2 apartments + the two-storey house, 12 questions); read-only."""
    from eqa_runner.benchmarks.mt_hm3d.demo import write_mt_hm3d_demo

    out = tmp_path_factory.mktemp("mt_hm3d_demo") / "mt_hm3d"
    write_mt_hm3d_demo(out, seed=0)
    return out
