"""The tracker interface: a run's start, live metrics, tables, artifacts and end."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunInfo:
    """What a tracker records when a run starts (the config is already redacted)."""

    run_dir: Path
    name: str  # the one naming rule (trackers/naming.py): swept values, else the run dir's name
    config: dict[str, Any]  # the composed config, secrets redacted
    params: dict[str, str]  # the same, flattened to dotted keys (values as text)
    tags: dict[str, str] = field(default_factory=dict)  # the reproducibility stamp, flattened
    group: str | None = None  # the sweep this run belongs to (its sweep dir's name), None alone
    group_dir: Path | None = None
    swept: dict[str, str] = field(default_factory=dict)  # the sweep's swept keys and values


class Tracker(ABC):
    """One destination. Every method runs on the hub's background thread; raising is fine
    (the hub disables the tracker with one warning and counts what it did not log)."""

    name: str = "tracker"
    requires: tuple[str, ...] = ()  # packages it imports (checked at start: exit 2 if missing)

    @abstractmethod
    def start(self, info: RunInfo) -> None:
        """Open the run: config as parameters, the stamp as tags, the sweep group."""

    @abstractmethod
    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Numbers at ``step`` (the number of episodes recorded so far)."""

    @abstractmethod
    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """A table (one row per episode); a :class:`~pathlib.Path` cell is an image file."""

    def log_summary(self, headline: Mapping[str, float], status: str) -> None:  # noqa: B027
        """The run's headline numbers once, before :meth:`finish` (a sweep parent collects
        them); optional."""

    @abstractmethod
    def log_artifact(self, path: Path) -> None:
        """A file of the run (summary.json, report.html)."""

    def abort(self, status: str) -> None:  # noqa: B027
        """Close the run at once from another thread (the process is being stopped while
        events are still queued); optional, best effort, quick."""

    @abstractmethod
    def finish(self, status: str) -> None:
        """Close the run (``status``: FINISHED | FAILED | KILLED)."""
