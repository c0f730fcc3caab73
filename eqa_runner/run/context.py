"""The state one run shares, built once and passed instead of long parameter lists."""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqa_runner.llm import LLMClient
from eqa_runner.policies.base import Policy
from eqa_runner.policies.context import RunResources
from eqa_runner.run.config import RunConfig
from eqa_runner.run.summary import SummaryInputs
from eqa_runner.scoring.base import Judge
from eqa_runner.sim.base import Simulator
from eqa_runner.tasks.base import Task
from eqa_runner.types import Episode


@dataclass(frozen=True)
class Components:
    """The run's task, policy and judge, built from the config (run/build.py)."""

    task: Task
    policy: Policy
    judge: Judge


@dataclass(frozen=True)
class EpisodeSettings:
    """The settings every episode reads, from the run's typed plan."""

    seed: int
    save_artifacts: bool
    prompts_dir: str | None
    episode_timeout_s: float
    trajectory_maps: bool = True
    profile: bool = False

    @classmethod
    def of(cls, run: RunConfig, prompts_dir: str | None) -> EpisodeSettings:
        return cls(
            run.seed,
            run.save_artifacts,
            prompts_dir,
            run.episode_timeout_s,
            run.trajectory_maps,
            run.profile,
        )


@dataclass(frozen=True)
class RunContext:
    """Everything the episodes of one run share, built once from its plan by
    :func:`eqa_runner.run.loop.execute`.

    The run owns ``sim`` (built from ``cfg.sim`` when the policy ``needs_sim``; closed after
    the policy's ``close()``) and ``executor`` (the CPU pool episodes run image and mapping
    work on).
    """

    run: RunConfig
    parts: Components
    episodes: list[Episode]  # every selected episode (also those already done on resume)
    out_dir: Path
    prompts: dict[str, dict[str, object]]  # prompt files used, with SHA-256
    policy_llm: LLMClient
    judge_llm: LLMClient
    settings: EpisodeSettings
    summary: SummaryInputs  # what summary.json is written from
    executor: Executor
    sim: Simulator | None = None
    scene_maps: Any = None  # eqa_runner.mapping.trajectory.SceneMaps when maps are drawn

    @property
    def task(self) -> Task:
        return self.parts.task

    @property
    def policy(self) -> Policy:
        return self.parts.policy

    @property
    def judge(self) -> Judge:
        return self.parts.judge

    @property
    def workers(self) -> int:
        return self.run.workers

    def policy_resources(self) -> RunResources:
        """What the policy's ``open()`` gets."""
        return RunResources(llm=self.policy_llm, task=self.task, sim=self.sim, run_dir=self.out_dir)
