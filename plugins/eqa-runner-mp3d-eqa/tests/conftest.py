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


@pytest.fixture
def compose(tmp_path: Path):
    """Compose eqa_runner's config (the plugin's groups come in through its entry point)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.run.configstore import register_configs

    register_configs()

    def _compose(overrides: list[str], out: Path | None = None):
        GlobalHydra.instance().clear()
        try:
            with initialize_config_module("eqa_runner.conf", version_base="1.3"):
                return hydra_compose(
                    "config",
                    overrides=[
                        f"run.output_dir={out or tmp_path / 'run'}",
                        f"run.cache_dir={tmp_path / 'cache'}",
                        "run.progress=false",
                        *overrides,
                    ],
                )
        finally:
            GlobalHydra.instance().clear()

    return _compose
