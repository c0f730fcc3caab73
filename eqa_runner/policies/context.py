"""What the run loop hands a policy or judge for one episode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from eqa_runner.llm import LLMClient

T = TypeVar("T")


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
    resources: dict[str, Any] = field(default_factory=dict)  # e.g. simulator, stop model

    async def run_cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound work (image decode/encode, mapping) off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
