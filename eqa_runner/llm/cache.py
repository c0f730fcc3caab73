"""The disk cache of completions, keyed by the full request (images by content hash)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

CACHE_FORMAT_VERSION = 1


class DiskCache:
    """Completions on disk, one JSON file per request key (atomic writes; safe across processes)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root) / f"llm-v{CACHE_FORMAT_VERSION}"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(value), encoding="utf-8")
        os.replace(tmp, path)
