"""The small base class every agent implements, with its per-run lifecycle."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from eqa_runner import capabilities as cap
from eqa_runner.llm import RequestEstimate
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies.context import EpisodeContext, RunResources
from eqa_runner.sim.config import STANDALONE_SIM
from eqa_runner.types import Episode, Prediction


class Policy(ABC):
    """An agent. ``name`` must match the policy's config file name.

    Lifecycle (the run loop, through :meth:`opened`): ``open(resources)`` once before the first
    episode, ``predict`` per episode (concurrently), ``close()`` once at the end, also when a
    run or ``open`` failed. ``estimate_requests`` and ``prompts`` need no ``open``.
    """

    name: str = "policy"
    # a policy that mixes in eqa_runner.configured.Configured takes its typed config: its keys
    # are ``policy.*`` and ``${sim.*}`` resolves to the default backend when built without Hydra
    config_key: ClassVar[str] = "policy"
    config_context: ClassVar[dict[str, Any]] = {"sim": STANDALONE_SIM}
    # what it needs of the task, and what it adds to a record (judges may read it)
    needs: ClassVar[frozenset[str]] = frozenset({cap.QUESTION})
    provides: ClassVar[frozenset[str]] = frozenset()
    needs_sim: bool = False  # true: the run builds ``cfg.sim`` and passes it in ``open``

    def open(self, resources: RunResources) -> None:
        """Acquire per-run resources (inside the job, before the first episode)."""
        return None

    def close(self) -> None:
        """Release what :meth:`open` acquired; safe to call when ``open`` did not finish."""
        return None

    @contextmanager
    def opened(self, resources: RunResources) -> Iterator[Policy]:
        """``open`` … ``close`` (always, also on failure) around a run's episodes."""
        try:
            self.open(resources)
            yield self
        finally:
            self.close()

    @abstractmethod
    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        """Answer one episode; raise on failure (the run loop records the error)."""

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        """The requests :meth:`predict` would make, for ``run.dry_run`` (no model is called)."""
        return []

    def extra_models(self, base: LLMConfig) -> dict[str, LLMConfig]:
        """Models this policy calls besides ``llm:`` (role → config; e.g. a stop check's), each
        with its own endpoint, key variable and price: the cost cap prices every one."""
        return {}

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        """Prompt files used, with SHA-256 (recorded in the summary and in cache keys)."""
        return {}
