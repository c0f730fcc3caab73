"""Registers the typed config schemas in Hydra's ConfigStore (cheap: dataclasses only)."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from eqa_runner.llm_config import LLMConfig
from eqa_runner.run_config import RunConfig
from eqa_runner.sim.schema import register_sim_configs


def register_configs() -> None:
    """Make ``run: schema`` and ``llm/base_llm`` available to the defaults lists."""
    cs = ConfigStore.instance()
    cs.store(group="run", name="schema", node=RunConfig)
    cs.store(group="llm", name="base_llm", node=LLMConfig)
    register_sim_configs()
