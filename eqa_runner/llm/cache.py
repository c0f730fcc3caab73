"""The disk cache of completions, keyed by the full request (images by content hash).

A cache never turns a good reply into an error: a write that fails (read-only or full disk) is
warned about once and the run goes on uncached; an entry that cannot be read back as a
completion (corrupt, truncated by hand, from another version) is named in a warning, dropped
and recomputed. The run checks that the cache dir is writable at start (run/rundir.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from eqa_runner.redact import redact

CACHE_FORMAT_VERSION = 1
log = logging.getLogger(__name__)


def _completion_fields() -> set[str]:
    from eqa_runner.llm.usage import Completion

    return {f.name for f in dataclasses.fields(Completion)}


class DiskCache:
    """Completions on disk, one JSON file per request key (atomic writes; safe across processes)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root) / f"llm-v{CACHE_FORMAT_VERSION}"
        self._write_failed = False
        self._fields = _completion_fields()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:  # JSONDecodeError / UnicodeDecodeError / unreadable
            return self._drop(path, f"{type(e).__name__}: {str(e)[:80]}")
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            return self._drop(path, "not a cached completion")
        unknown = set(data) - self._fields
        if unknown:
            return self._drop(path, f"unknown fields {sorted(unknown)[:3]}")
        return data

    def _drop(self, path: Path, why: str) -> dict[str, Any] | None:
        log.warning(
            "model cache entry %s is corrupt (%s): dropped, the call is made again", path, why
        )
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(redact(json.dumps(value)), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as e:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if not self._write_failed:
                self._write_failed = True
                log.warning(
                    "model cache: cannot write %s (%s); the run goes on without caching new "
                    "replies (fix run.cache_dir, or run.cache=false)",
                    path.parent,
                    e.strerror or type(e).__name__,
                )
