"""The small base class every benchmark implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from eqa_runner import capabilities as cap
from eqa_runner.types import Episode


class Task(ABC):
    """A benchmark: loads episodes and declares what they provide (``provides``: the
    :mod:`eqa_runner.capabilities` a policy may need and a judge may read)."""

    name: str = "task"
    provides: ClassVar[frozenset[str]] = frozenset({cap.QUESTION})

    @abstractmethod
    def load_episodes(self) -> list[Episode]:
        """All episodes of the configured split/subset, in a stable order."""

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """``episode_id -> problem`` for each episode whose scene or frames are not there (one
        problem line per scene or frame folder, shared by its episodes); {} if all are present.

        The one presence check behind ``check``, the dry run and ``data check``: cheap (stat
        calls, once per scene), nothing is decoded."""
        return {}

    def check(self, episodes: Sequence[Episode]) -> list[str]:
        """Problems with the data of ``episodes`` (missing frames, scenes ...); empty if fine."""
        return sorted(set(self.missing(episodes).values()))

    def describe(self) -> dict[str, Any]:
        """What the summary records about the data (paths, question-file hash)."""
        return {"name": self.name}

    def subset_of(self, episode: Episode) -> str | None:
        """Name of the subset an episode belongs to (breakdowns), if any."""
        return episode.meta.get("subset")
