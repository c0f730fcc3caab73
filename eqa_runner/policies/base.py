"""The small base class every agent implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from eqa_runner.context import EpisodeContext
from eqa_runner.llm import Message
from eqa_runner.types import Episode, Prediction


@dataclass
class RequestEstimate:
    """A model request as a dry run sees it: text messages plus image sizes (nothing encoded)."""

    role: str
    messages: list[Message]
    image_sizes: list[tuple[int, int]] = field(default_factory=list)


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
