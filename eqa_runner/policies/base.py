"""The small base class every agent implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from eqa_runner.llm import RequestEstimate
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.types import Episode, Prediction


class Policy(ABC):
    """An agent. ``name`` must match the policy's config file name."""

    name: str = "policy"

    @abstractmethod
    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        """Answer one episode; raise on failure (the run loop records the error)."""

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        """The requests :meth:`predict` would make, for ``run.dry_run`` (no model is called)."""
        return []

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        """Prompt files used, with SHA-256 (recorded in the summary and in cache keys)."""
        return {}
