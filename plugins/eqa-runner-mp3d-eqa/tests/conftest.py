"""Fixtures of the plugin's tests: the demo data, written once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def mp3d_demo(tmp_path_factory) -> Path:
    """The MP3D-EQA demo (2 houses, 8 episodes), read-only: copy it before changing files."""
    from eqa_runner_mp3d_eqa.demo import write_mp3d_eqa_demo

    out = tmp_path_factory.mktemp("mp3d_eqa")
    write_mp3d_eqa_demo(out)
    return out
