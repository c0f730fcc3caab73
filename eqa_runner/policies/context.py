"""What the run hands a policy: once per run (:class:`RunResources`), and per episode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from eqa_runner.llm import LLMClient
from eqa_runner.sim.base import NavigableMap, Simulator
from eqa_runner.timing import OFF, PartTimes

T = TypeVar("T")


@dataclass(frozen=True)
class RunResources:
    """Per-run resources built by the run and handed to :meth:`Policy.open`.

    The run owns them: it builds the simulator from ``cfg.sim`` (only for a policy with
    ``needs_sim``) and closes it after the policy's ``close()``.
    """

    llm: LLMClient  # the policy's model client
    task: Any
    sim: Simulator | None = None
    run_dir: Path | None = None


@dataclass
class EpisodeContext:
    """Per-episode resources: the policy's model, a seeded RNG, a CPU pool, an artifacts dir."""

    llm: LLMClient
    rng: np.random.Generator
    seed: int
    executor: Executor
    task: Any
    prompts_dir: str | None = None
    artifacts_dir: Path | None = None
    run_dir: Path | None = None  # the run directory (files the judge / rejudge read live here)
    # trajectory maps (run.trajectory_maps): the run's cache of navigable maps; a policy that
    # moves an agent sets ``scene_map`` from it while it holds the scene (on the sim thread)
    scene_maps: Any = None  # eqa_runner.mapping.trajectory.SceneMaps
    scene_map: NavigableMap | None = None
    times: PartTimes = OFF  # run.profile=true: this episode's per-step part timer

    async def run_cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound work (image decode/encode, mapping) off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
