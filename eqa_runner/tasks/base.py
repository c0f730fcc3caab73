"""The small base class every benchmark implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from eqa_runner import capabilities as cap
from eqa_runner.configured import Configured
from eqa_runner.sim.config import STANDALONE_SIM
from eqa_runner.tasks.config import TaskConfig
from eqa_runner.tasks.duplicates import Duplicates
from eqa_runner.types import Episode


class Task(Configured, ABC):
    """A benchmark: loads episodes and declares what they provide (``provides``: the
    :mod:`eqa_runner.capabilities` a policy may need and a judge may read).

    Built as ``Cls(config=None, **overrides)`` (:mod:`eqa_runner.configured`): ``config_class``
    names the benchmark's schema, ``self.config`` is its checked object."""

    config_class: ClassVar[type[Any]] = TaskConfig
    config_key: ClassVar[str] = "task"
    config_context: ClassVar[dict[str, Any]] = {"sim": STANDALONE_SIM}
    config: TaskConfig
    provides: ClassVar[frozenset[str]] = frozenset({cap.QUESTION})
    _duplicates: Duplicates | None = None

    @property
    def duplicates(self) -> Duplicates:
        """Repeats dropped from the data files by the last ``load_episodes`` (counted in
        ``describe()``; :mod:`eqa_runner.tasks.duplicates`)."""
        if self._duplicates is None:
            self._duplicates = Duplicates()
        return self._duplicates

    @abstractmethod
    def load_episodes(self) -> list[Episode]:
        """All episodes of the configured split/subset, in a stable order."""

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """``episode_id -> problem`` for each episode whose scene or frames are not there (one
        problem line per scene or frame folder, shared by its episodes); {} if all are present.

        The one presence check behind ``check``, the dry run and ``data check``: cheap (stat
        calls, once per scene), nothing is decoded."""
        return {}

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene files and frame folders ``episodes`` read, by a name that stays when the
        data moves (the scene id, the folder name); their content hashes join the run's
        provenance (``scenes``). Missing ones may be left out; {} for a task that reads none."""
        return {}

    def check(self, episodes: Sequence[Episode]) -> list[str]:
        """Problems with the data of ``episodes`` (missing frames, scenes ...); empty if fine."""
        return sorted(set(self.missing(episodes).values()))

    @property
    def simulator(self) -> str:
        """The backend class (``sim._target_``) whose scene lookup the data check uses."""
        return str(getattr(self.config, "simulator", STANDALONE_SIM["_target_"]))

    def describe(self) -> dict[str, Any]:
        """What the summary records about the data (paths, question-file hash)."""
        return {"name": self.name}

    def subset_of(self, episode: Episode) -> str | None:
        """Name of the subset an episode belongs to (breakdowns), if any."""
        return episode.meta.get("subset")
