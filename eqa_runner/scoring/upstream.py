"""Upstream result formats (the base): what a benchmark's official scorer reads, written and read.

A :class:`UpstreamFormat` exports a run's records as the file its benchmark's own scorer reads
and reads such a file (ours or another system's) back as :class:`Imported` answers, which
``report --import`` turns into a run (``policy=imported``) scored by our judge.
"""

from __future__ import annotations

import io
import math
import pickle
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError
from eqa_runner.types import Episode, EpisodeRecord


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


# ----------------------------------------------------------------------------- pickles
# The upstream scripts write pickles of plain data and numpy arrays; reading one must not run
# code, so only these globals may be looked up.
_ALLOWED = {
    ("builtins", "dict"),
    ("builtins", "list"),
    ("builtins", "tuple"),
    ("builtins", "set"),
    ("builtins", "float"),
    ("builtins", "int"),
    ("builtins", "str"),
    ("builtins", "complex"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("collections", "OrderedDict"),
}


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def load_pickle(path: Path) -> Any:
    """A pickle of plain data and numpy arrays (anything else is refused, not executed)."""
    try:
        return _DataUnpickler(io.BytesIO(Path(path).read_bytes())).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError) as e:
        raise DataError(f"{path}: not a results pickle of plain data ({e})") from None


def dump_pickle(obj: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        pickle.dump(obj, f, protocol=4)
    return path
