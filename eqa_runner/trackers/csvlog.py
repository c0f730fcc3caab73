"""``logger=csv``: plain files in the run dir (params, tags, a metrics log, tables, artifacts)."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import UnsafeWriteError
from eqa_runner.safe_io import write_atomic
from eqa_runner.trackers.base import RunInfo, Tracker


class CsvTracker(Tracker):
    """Writes ``<save_dir>/`` (default ``<run_dir>/logs/csv``): ``params.json``, ``tags.json``,
    ``metrics.csv`` (time, step, name, value; appended), ``<table>.csv``, ``artifacts/``."""

    name = "csv"

    def __init__(self, save_dir: str | None = None) -> None:
        self.save_dir = None if save_dir in (None, "") else Path(str(save_dir))
        self.dir: Path | None = None

    def _dir(self) -> Path:
        if self.dir is None:
            raise RuntimeError("CsvTracker used before start()")
        return self.dir

    def start(self, info: RunInfo) -> None:
        self.dir = self.save_dir or info.run_dir / "logs" / "csv"
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.dir / "params.json", json.dumps(info.params, indent=1, sort_keys=True))
        tags = {**info.tags, **({"group": info.group} if info.group else {})}
        write_atomic(self.dir / "tags.json", json.dumps(tags, indent=1, sort_keys=True))

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        path = self._dir() / "metrics.csv"
        new = not path.exists()
        if path.is_symlink():  # appended to, never through a link (the one writer's rule)
            raise UnsafeWriteError(f"{path}: is a symbolic link; refusing to write through it")
        with path.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["time", "step", "name", "value"])
            now = round(time.time(), 3)
            for k, v in metrics.items():
                w.writerow([now, step, k, v])

    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        cols: list[str] = []
        for r in rows:
            cols += [k for k in r if k not in cols]
        rows = [
            {k: self._image(v) if isinstance(v, Path) else v for k, v in r.items()} for r in rows
        ]
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
        write_atomic(self._dir() / f"{name}.csv", buf.getvalue())

    def _image(self, path: Path) -> str:
        """An image cell: the file copied to ``maps/``, the cell its relative path."""
        dest = self._dir() / "maps"
        dest.mkdir(exist_ok=True)
        write_atomic(dest / path.name, Path(path).read_bytes())
        return f"maps/{path.name}"

    def log_artifact(self, path: Path) -> None:
        dest = self._dir() / "artifacts"
        dest.mkdir(exist_ok=True)
        write_atomic(dest / Path(path).name, Path(path).read_bytes())

    def abort(self, status: str) -> None:
        if self.dir is not None:
            self.finish(status)

    def finish(self, status: str) -> None:
        write_atomic(self._dir() / "status", status + "\n")
