"""Registers the typed config schemas in Hydra's ConfigStore (cheap: dataclasses only)."""

from __future__ import annotations

import re

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from eqa_runner.llm.config import LLMConfig
from eqa_runner.run.config import RunConfig
from eqa_runner.sim.schema import register_sim_configs


def slug(text: str, max_len: int = 120) -> str:
    """A path-safe, bounded name for sweep sub-directories (``${eqa_slug:...}``)."""
    s = re.sub(r"[^A-Za-z0-9=,._+-]+", "_", str(text)).strip("_")
    return s[:max_len] or "default"


def register_configs() -> None:
    """Make ``run: schema``, ``llm/base_llm``, the sim schemas and ``eqa_slug`` available."""
    if not OmegaConf.has_resolver("eqa_slug"):
        OmegaConf.register_new_resolver("eqa_slug", slug)
    cs = ConfigStore.instance()
    cs.store(group="run", name="schema", node=RunConfig)
    cs.store(group="llm", name="base_llm", node=LLMConfig)
    register_sim_configs()
