"""What a run starts from: :class:`RunPlan`, the typed config and what the start checks built.

:func:`eqa_runner.run.start.prepare` fills it, one check at a time (their list is
:data:`eqa_runner.run.start.START`); :func:`eqa_runner.run.loop.execute` runs it. Nothing after
the start reads the composed config's raw nodes for a setting: the typed ``run`` and ``llm``
blocks and each component's own schema object (``task.config`` ...) carry the values, with the
defaults their schemas declare.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from eqa_runner.errors import ConfigError
from eqa_runner.llm import LLMClient
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies.base import Policy
from eqa_runner.run.config import RunConfig
from eqa_runner.run.context import Components
from eqa_runner.scoring.base import Judge
from eqa_runner.tasks.base import Task
from eqa_runner.trackers.base import Tracker
from eqa_runner.types import Episode


@dataclass
class RunPlan:
    """One run, checked: filled by the start checks in their order (a field is set by the
    check named beside it, so a later check may read it)."""

    cfg: DictConfig  # the composed config: components are built from its nodes
    run: RunConfig = field(default_factory=RunConfig)  # "typed config"
    llm: LLMConfig = field(default_factory=LLMConfig)  # "typed config"
    prompts_dir: str | None = None  # "typed config"
    container: dict[str, Any] = field(default_factory=dict)  # "typed config": resolved, plain
    task: Task | None = None  # "task"
    task_name: str | None = None  # "task": what the judge's inputs are checked against
    task_info: dict[str, Any] = field(default_factory=dict)  # "selection": its describe()
    policy: Policy | None = None  # "policy"
    judge: Judge | None = None  # "judge"
    trackers: list[Tracker] = field(default_factory=list)  # "trackers"
    episodes: list[Episode] = field(default_factory=list)  # "selection"
    out_dir: Path = Path()  # "run dir"
    prompts: dict[str, dict[str, object]] = field(default_factory=dict)  # "prompt files"
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)  # "prompt files"
    has_records: bool = False  # "same config"
    clients: tuple[LLMClient, LLMClient] | None = None  # "credentials" (under the run's lock)
    # "prices" (under the lock): a run.cost_cap.CostCap when run.max_cost_usd is set (typed
    # Any: cost_cap builds its estimate from the dry run, which reads this module)
    cap: Any = None

    @property
    def parts(self) -> Components:
        if self.task is None or self.policy is None or self.judge is None:
            raise ConfigError("the run's components are not built yet (start check order)")
        return Components(self.task, self.policy, self.judge)

    @property
    def dir_key(self) -> str:
        """The setting that moves the run dir (named in a refusal's fix)."""
        return "run.output_dir" if self.run.output_dir else "hydra.run.dir"

    @property
    def judge_model(self) -> str:
        assert self.judge is not None, "built by the judge check"
        return str(self.judge.llm_overrides.get("model"))
