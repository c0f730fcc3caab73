"""Content hashes of what the selected episodes read: scene files and frame folders.

A task names them (:meth:`eqa_runner.tasks.base.Task.inputs`: a stable name, such as the scene
id, to a file or a folder); each becomes one SHA-256 in the ``scenes`` section of the run's
provenance. A file's hash is of its bytes; a folder's is over its files' relative names and
byte hashes. Each file is hashed once per (path, size, mtime): the hashes persist in
``content_hashes.json`` in ``run.cache_dir``, so a resume of a 2,044-episode run reads no
scene bytes again (``bench/provenance_hashing.py``). The cache is best effort: an unreadable
one is ignored, one that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eqa_runner.safe_io import read_json, write_atomic

log = logging.getLogger(__name__)

CACHE_FILE = "content_hashes.json"


def read_bytes_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class HashCache:
    """``{absolute path: [size, mtime_ns, sha256]}``, loaded from and saved to ``path``."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        self.hashed = 0  # files whose bytes were read by this instance
        self._dirty = False
        if path is not None and path.is_file():
            try:
                data = read_json(path)
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict):
                self.entries = {k: v for k, v in data.items() if _valid(v)}

    def file(self, path: Path) -> str:
        """The SHA-256 of ``path``'s bytes; read only when its size or mtime is new."""
        st = path.stat()
        key = str(path.resolve())
        hit = self.entries.get(key)
        if hit is not None and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return str(hit[2])
        digest = read_bytes_hash(path)
        self.hashed += 1
        self.entries[key] = [st.st_size, st.st_mtime_ns, digest]
        self._dirty = True
        return digest

    def folder(self, path: Path) -> str:
        """SHA-256 over the sorted ``relative name, file hash`` lines of a folder's files."""
        h = hashlib.sha256()
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                f = Path(root) / name
                rel = f.relative_to(path).as_posix()
                h.update(f"{rel}\0{self.file(f)}\n".encode())
        return h.hexdigest()

    def save(self) -> None:
        """Write the entries back when any was added (skipped, with a warning, on an error)."""
        if self.path is None or not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(self.entries, separators=(",", ":")), redacted=False)
            self._dirty = False
        except OSError as e:
            log.warning("content hash cache %s not written (%s)", self.path, e)


def _valid(v: Any) -> bool:
    return (
        isinstance(v, list)
        and len(v) == 3
        and isinstance(v[0], int)
        and isinstance(v[1], int)
        and isinstance(v[2], str)
    )


def content_hashes(inputs: Mapping[str, Path], cache_dir: Path | str | None) -> dict[str, str]:
    """``{name: sha256}`` of each existing file or folder of ``inputs`` (missing or unreadable
    ones are left out: their episodes become error records), cached in ``cache_dir``."""
    cache = HashCache(Path(cache_dir) / CACHE_FILE if cache_dir else None)
    out: dict[str, str] = {}
    for name in sorted(inputs):
        p = Path(inputs[name])
        try:
            if p.is_file():
                out[name] = cache.file(p)
            elif p.is_dir():
                out[name] = cache.folder(p)
        except OSError as e:  # unreadable: its episodes fail reading it, as error records
            log.warning("%s: not hashed for the provenance (%s)", p, e)
    cache.save()
    return out
