"""A sweep's MLflow parent run: opened by the first job, closed by the last one.

The jobs of a ``-m`` sweep (one process each, or one after another) share
``<sweep_dir>/.mlflow_parent_run`` (JSON, read and written under a file lock): the parent's
run id and each job's state. The first job creates the parent (the sweep's swept keys as
params ``sweep.<key>``); every job reports its headline to it (metrics ``<job>/<metric>`` and
the table ``sweep.json``); the job that leaves no other job running terminates it: FAILED if a
job failed, KILLED if one was stopped, else FINISHED. A job that starts later (an array task
that waited in the queue, a resumed job) reopens it.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from eqa_runner.records import write_json_atomic
from eqa_runner.trackers.base import RunInfo
from eqa_runner.trackers.naming import safe_key

PARENT_FILE = ".mlflow_parent_run"
RUNNING = "RUNNING"


class SweepParent:
    """One job's handle on its sweep's parent run."""

    def __init__(self, client: Any, experiment_id: str, info: RunInfo) -> None:
        self.client, self.experiment_id, self.info = client, experiment_id, info
        self.dir = info.group_dir or info.run_dir.parent
        self.run_id: str | None = None

    @contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The shared state, locked; written back when the block ends without an error."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with (self.dir / f"{PARENT_FILE}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = self.dir / PARENT_FILE
            state: dict[str, Any] = {"run_id": None, "children": {}}
            text = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
            if text.startswith("{"):
                state.update(json.loads(text))
            elif text:  # an older version wrote the bare run id
                state["run_id"] = text
            yield state
            write_json_atomic(path, state)

    def join(self, label: str) -> str:
        """The parent's run id (created or reopened); this job counted as running."""
        client = self.client
        with self._state() as state:
            if not state["run_id"]:
                state["run_id"] = self._create()
            elif client.get_run(state["run_id"]).info.status != RUNNING:
                client.update_run(state["run_id"], status=RUNNING)
            state["children"].setdefault(label, {})["status"] = RUNNING
            self.run_id = str(state["run_id"])
        return self.run_id

    def _create(self) -> str:
        from mlflow.entities import Param

        info, client = self.info, self.client
        tags = {
            "eqa_runner.sweep": str(info.group),
            "eqa_runner.sweep_parent": "true",
            "eqa_runner.swept_keys": ",".join(info.swept),
        }
        tags.update({k: v for k, v in info.tags.items() if k.startswith("slurm.array")})
        run = client.create_run(self.experiment_id, run_name=str(info.group), tags=tags)
        params = [Param(safe_key(f"sweep.{k}"), v[:6000]) for k, v in sorted(info.swept.items())]
        if params:
            client.log_batch(run.info.run_id, params=params)
        return str(run.info.run_id)

    def report(self, label: str, headline: dict[str, float]) -> None:
        """This job's headline numbers on the parent."""
        from mlflow.entities import Metric

        if self.run_id is None:
            return
        now = int(time.time() * 1000)
        ms = [Metric(safe_key(f"{label}/{k}"), float(v), now, 0) for k, v in headline.items()]
        if ms:
            self.client.log_batch(self.run_id, metrics=ms)
        with self._state() as state:
            state["children"].setdefault(label, {})["headline"] = headline

    def leave(self, label: str, status: str) -> None:
        """This job is done; the last one out closes the parent with the sweep's table."""
        if self.run_id is None:
            return
        client = self.client
        with self._state() as state:
            state["children"].setdefault(label, {})["status"] = status
            kids = state["children"]
            rows = [
                {"run": k, "status": v.get("status"), **(v.get("headline") or {})}
                for k, v in sorted(kids.items())
            ]
            client.log_dict(self.run_id, {"runs": rows}, "sweep.json")
            states = {v.get("status") for v in kids.values()}
            if RUNNING not in states:
                final = next((s for s in ("FAILED", "KILLED") if s in states), "FINISHED")
                client.set_terminated(self.run_id, status=final)


def parent_file(sweep_dir: Path) -> Path:
    """Where a sweep's parent run state is kept."""
    return Path(sweep_dir) / PARENT_FILE
