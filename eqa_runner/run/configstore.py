"""Registers the typed config schemas in Hydra's ConfigStore (cheap: dataclasses only), and
the Hydra callback that checks value ranges and choices before a run directory is made."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import UserError
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies.config import PROTOCOL_SCHEMAS
from eqa_runner.policies.config import SCHEMAS as POLICY_SCHEMAS
from eqa_runner.run.config import RunConfig
from eqa_runner.schema import check_config
from eqa_runner.scoring.config import SCHEMAS as JUDGE_SCHEMAS
from eqa_runner.sim.config import SCHEMAS as SIM_SCHEMAS
from eqa_runner.tasks.config import SCHEMAS as TASK_SCHEMAS

# group -> {schema node name -> dataclass}; a YAML option names its node in its defaults list
SCHEMAS: dict[str, Mapping[str, type]] = {
    "run": {"schema": RunConfig},
    "llm": {"base_llm": LLMConfig},
    "task": TASK_SCHEMAS,
    "policy": POLICY_SCHEMAS,
    "protocol": PROTOCOL_SCHEMAS,
    "judge": JUDGE_SCHEMAS,
    "sim": SIM_SCHEMAS,
}


def slug(text: str, max_len: int = 120) -> str:
    """A path-safe, bounded name for sweep sub-directories (``${eqa_slug:...}``)."""
    s = re.sub(r"[^A-Za-z0-9=,._+-]+", "_", str(text)).strip("_")
    return s[:max_len] or "default"


def register_configs() -> None:
    """Store every group's schema (``run: schema``, ``llm/base_llm``, ``policy/base_fbe`` ...)
    and register ``eqa_slug``."""
    if not OmegaConf.has_resolver("eqa_slug"):
        OmegaConf.register_new_resolver("eqa_slug", slug)
    cs = ConfigStore.instance()
    for group, nodes in SCHEMAS.items():
        for name, node in nodes.items():
            cs.store(group=group, name=name, node=node)


class CheckConfig(Callback):
    """Checks ranges and choices (:func:`eqa_runner.schema.check_config`) of the composed
    config before Hydra makes the run directory (for a sweep: its base config before the
    sweep starts; each job's own values are checked again when the job starts).

    Hydra turns a callback's exceptions into warnings, so a bad value is reported here, as
    every command reports a user error: ``error: <message>`` on stderr, exit status 2.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_or_exit(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_or_exit(config)


def _check_or_exit(config: DictConfig) -> None:
    try:
        check_config(config)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)
