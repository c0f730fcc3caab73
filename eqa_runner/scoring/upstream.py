"""Upstream result formats (the base): what a benchmark's official scorer reads, written and read.

A :class:`UpstreamFormat` exports a run's records as the file its benchmark's own scorer reads
and reads such a file (ours or another system's) back as :class:`Imported` answers, which
``report --import`` turns into a run (``policy=imported``) scored by our judge. Upstream pickles
are untrusted input: :func:`load_pickle` reads plain data only, within limits, and the field
helpers (:func:`int_field`, :func:`num_field`, :func:`vec_field`, :func:`str_field`) check each
field a format defines, one line naming the file, the item and the field.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.errors import DataError
from eqa_runner.scoring.safe_pickle import dump_pickle, load_pickle
from eqa_runner.types import Episode, EpisodeRecord

__all__ = [
    "Imported",
    "UpstreamFormat",
    "by_id",
    "dump_pickle",
    "finite",
    "int_field",
    "load_pickle",
    "nullable",
    "num_field",
    "str_field",
    "vec_field",
]


@dataclass
class Imported:
    """One episode's answer from an upstream file, with what the file says about the path."""

    episode_id: str
    answer: str | None
    trace: dict[str, Any] = field(default_factory=dict)
    judge_images: list[Path] = field(
        default_factory=list
    )  # e.g. the frame the answer was given from


class UpstreamFormat(ABC):
    """One benchmark's upstream file format (``--export NAME`` / ``--import FILE --format``)."""

    name: str  # the format's name on the command line
    task: str  # our task (config option) whose episodes and judge it belongs to
    files: str  # what ``export`` writes, for ``--help`` and the docs
    command: str = ""  # the upstream command that scores an export (see docs/reports.md)
    last_command: str = ""  # that command for the last export, with its paths and flags

    @abstractmethod
    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        """Write the upstream file(s) for ``records`` into ``out_dir``; the paths written."""

    @abstractmethod
    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        """The answers in an upstream file (``episodes``: the task's, in dataset order)."""


def finite(v: Any) -> float:
    """A record number as upstream stores it: ``inf`` for null (unreachable / no path)."""
    return math.inf if v is None else float(v)


def nullable(v: Any) -> float | None:
    """An upstream number as a record stores it: None for inf / NaN."""
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def by_id(episodes: Sequence[Episode], path: Path, ids: Sequence[str]) -> dict[str, Episode]:
    """The episodes named in an upstream file; an id the task does not have is an error."""
    known = {e.episode_id: e for e in episodes}
    missing = [i for i in ids if i not in known]
    if missing:
        raise DataError(
            f"{path}: {len(missing)} id(s) not in the task's episodes (e.g. {missing[0]!r}); "
            "pass the task.data_dir / task.questions_file the file was made from"
        )
    return known


# ----------------------------------------------------------------------------- field checks


def _show(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    text = repr(v)
    return f"{type(v).__name__} {text[:40]}{'…' if len(text) > 40 else ''}"


def _bad(path: Path, item: int | str, name: str, want: str, got: Any) -> DataError:
    return DataError(
        f"{path}: item {item}: field {name} must be {want}, got {_show(got)}; "
        "fix or regenerate the file with the upstream script"
    )


def int_field(path: Path, item: int | str, name: str, v: Any) -> int:
    """An integer field (a Python or numpy int; not a bool, string or float)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise _bad(path, item, name, "an integer", v)


def num_field(path: Path, item: int | str, name: str, v: Any) -> float:
    """A number field (int or float, numpy scalars and 0-d arrays too; inf/NaN kept)."""
    if isinstance(v, np.ndarray) and v.shape == () and v.dtype.kind in "iuf":
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    raise _bad(path, item, name, "a number", v)


def vec_field(path: Path, item: int | str, name: str, v: Any, n: int) -> list[float]:
    """A flat vector of ``n`` finite numbers (list, tuple or numpy array)."""
    if isinstance(v, (list, tuple, np.ndarray)):
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            a = None
        if a is not None and a.shape == (n,) and bool(np.isfinite(a).all()):
            return [float(x) for x in a]
    raise _bad(path, item, name, f"a vector of {n} finite numbers", v)


def str_field(path: Path, item: int | str, name: str, v: Any, *, null: bool = False) -> str | None:
    """A string field (``null=True``: None allowed)."""
    if isinstance(v, str) or (null and v is None):
        return v
    if isinstance(v, np.str_):
        return str(v)
    raise _bad(path, item, name, "a string" + (" or None" if null else ""), v)
