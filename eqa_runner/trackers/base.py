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
    name: str  # the run dir's name (a sweep job's sub-directory name)
    config: dict[str, Any]  # the composed config, secrets redacted
    params: dict[str, str]  # the same, flattened to dotted keys (values as text)
    tags: dict[str, str] = field(default_factory=dict)  # the reproducibility stamp, flattened
    group: str | None = None  # the sweep this run belongs to (its sweep dir), None alone
    group_dir: Path | None = None


class Tracker(ABC):
    """One destination. Every method runs on the hub's background thread; raising is fine
    (the hub disables the tracker with one warning and counts what it did not log)."""

    name: str = "tracker"

    @abstractmethod
    def start(self, info: RunInfo) -> None:
        """Open the run: config as parameters, the stamp as tags, the sweep group."""

    @abstractmethod
    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Numbers at ``step`` (the number of episodes recorded so far)."""

    @abstractmethod
    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """A table (one row per episode)."""

    @abstractmethod
    def log_artifact(self, path: Path) -> None:
        """A file of the run (summary.json, report.html)."""

    @abstractmethod
    def finish(self, status: str) -> None:
        """Close the run (``status``: FINISHED | FAILED | KILLED)."""
