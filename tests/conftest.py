"""Shared fixtures: config composition, the local model server, synthetic data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from tests.helpers import hydra_cache, navmesh_cache

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
hydra_cache.install()  # the suite's few hundred composes: the same configs, a third faster
navmesh_cache.install()  # the demos' shared scenes: one Recast build each per session

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "eqa_runner" / "conf"


def option_names(group: str) -> list[str]:
    """The option names of a config group in eqa_runner and its built-in benchmarks (the
    package's one walk, :func:`eqa_runner.registry.option_files`, without installed plugins)."""
    from eqa_runner.registry import option_files

    return sorted(p.stem for p in option_files(group, builtin_only=True))


@pytest.fixture
def compose_cfg(tmp_path: Path):
    """Compose the real config tree with overrides; outputs and the model cache in tmp_path."""
    from eqa_runner.run.configstore import register_configs

    register_configs()

    def _compose(overrides: list[str] = (), *, out: Path | None = None) -> DictConfig:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose(
                "config",
                overrides=[
                    f"run.output_dir={out or tmp_path / 'run'}",
                    f"run.cache_dir={tmp_path / 'cache'}",
                    "run.progress=false",
                    *overrides,
                ],
            )
        GlobalHydra.instance().clear()
        return cfg

    yield _compose
    GlobalHydra.instance().clear()


@pytest.fixture
def llm_server() -> Iterator:
    """A fresh scriptable OpenAI-compatible server on 127.0.0.1."""
    from eqa_runner.testing.llm_server import LLMTestServer

    with LLMTestServer() as srv:
        yield srv


def server_overrides(
    srv, *, policy_model: str = "test-model", judge_model: str = "test-judge"
) -> list[str]:
    """Overrides pointing both the policy's and the judge's model at the test server."""
    return [
        f"llm.model=openai/{policy_model}",
        f"llm.api_base={srv.url}",
        f"judge.model=openai/{judge_model}",
        f"judge.api_base={srv.url}",
        "llm.backoff_base_s=0.05",
        "llm.backoff_max_s=0.5",
        "llm.timeout_s=10",
    ]


@pytest.fixture
def openeqa_data(tmp_path: Path) -> Path:
    from tests.helpers.datasets import make_openeqa_dataset

    return make_openeqa_dataset(tmp_path / "data", n_questions=20)


def _session_demo(tmp_path_factory, name: str) -> Path:
    """Benchmark ``name``'s demo (``benchmarks/<name>/demo.py``: ``write_<name>_demo``), written
    once per session (read-only: copy it before changing files)."""
    import importlib

    module = importlib.import_module(f"eqa_runner.benchmarks.{name}.demo")
    out = tmp_path_factory.mktemp(f"{name}_demo") / name
    getattr(module, f"write_{name}_demo")(out, seed=0)
    return out


@pytest.fixture(scope="session")
def express_demo(tmp_path_factory) -> Path:
    """The procedural EXPRESS demo (2 scenes, 12 questions)."""
    return _session_demo(tmp_path_factory, "express")


@pytest.fixture(scope="session")
def aeqa_demo(tmp_path_factory) -> Path:
    """The A-EQA demo (2 apartments, 13 questions)."""
    return _session_demo(tmp_path_factory, "aeqa")


@pytest.fixture(scope="session")
def hmeqa_demo(tmp_path_factory) -> Path:
    """The HM-EQA demo (2 apartments, 10 questions)."""
    return _session_demo(tmp_path_factory, "hmeqa")
