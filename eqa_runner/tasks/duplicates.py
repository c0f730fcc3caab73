"""Duplicates in a benchmark's data files: refused when they disagree, kept once when they repeat.

The rule every loader follows (docs/reliability.md says why per case):

* two records under one key that **differ** (two questions with one id, two start poses for one
  floor) are refused: a one-line ``DataError`` naming the file, the key and both places, since
  nothing says which one the benchmark meant;
* a key **listed again** with the same content (an id twice in an id list, a pose row copied) is
  kept once, with one warning per file, and counted: the task's ``describe()`` (so
  ``summary.json`` ``task``) holds ``duplicates_dropped: {file: n}``.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from eqa_runner.errors import DataError

log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)


class Duplicates:
    """The repeats a task dropped while loading, per file (reset by :meth:`clear`)."""

    def __init__(self) -> None:
        self.dropped: dict[str, list[str]] = {}

    def clear(self) -> None:
        self.dropped.clear()

    def unique(self, path: Path | str, keys: Iterable[K], what: str) -> list[K]:
        """``keys`` in order with repeats dropped (warned and counted under ``path``)."""
        seen: set[K] = set()
        out: list[K] = []
        for k in keys:
            if k in seen:
                self.drop(path, str(k), what)
            else:
                seen.add(k)
                out.append(k)
        return out

    def put(
        self,
        into: dict[str, Any],
        key: str,
        value: Any,
        where: str,
        path: Path | str,
        what: str,
        first: str,
    ) -> None:
        """``into[key] = value``; a repeat with the same value is dropped (counted), one with
        another value is refused naming ``where`` (this record) and ``first`` (the other)."""
        if key not in into:
            into[key] = value
        elif into[key] == value:
            self.drop(path, key, what)
        else:
            raise DataError(
                f"{where}: {what} {key!r} appears twice with different values (also {first}); "
                "keep one of them."
            )

    def drop(self, path: Path | str, key: str, what: str) -> None:
        ids = self.dropped.setdefault(str(path), [])
        if not ids:
            log.warning(
                "%s: %s %r is listed more than once; kept once (counted in the "
                "summary, task.duplicates_dropped)",
                path,
                what,
                key,
            )
        ids.append(key)

    def describe(self) -> dict[str, Any]:
        """``{"duplicates_dropped": {file: n}}``, or {} when nothing was dropped."""
        if not self.dropped:
            return {}
        return {"duplicates_dropped": {f: len(ids) for f, ids in sorted(self.dropped.items())}}
