"""``logger=mlflow``: an MLflow run per eqa_runner run; a sweep's runs under one parent run.

Uses :class:`mlflow.MlflowClient` (no global active run, so it is safe on the hub's thread).
mlflow is imported when the tracker starts, never by the CLI. A sweep (``-m``) shares one
parent run, created by the first job and recorded in ``<sweep_dir>/.mlflow_parent_run``
(under a file lock, so concurrent jobs agree).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner.trackers.base import RunInfo, Tracker

PARENT_FILE = ".mlflow_parent_run"
MAX_PARAM = 6000  # MLflow's limit on a parameter value's length
BATCH = 100


class MlflowTracker(Tracker):
    """Config as params, stamp as tags, live metrics, the episode table, run files as
    artifacts; ``tracking_uri`` null: ``$MLFLOW_TRACKING_URI`` or ``./mlruns``."""

    name = "mlflow"

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment_name: str = "eqa_runner",
        run_name: str | None = None,
        http_timeout_s: float = 10.0,
        http_retries: int = 1,
    ) -> None:
        self.tracking_uri = tracking_uri or None
        self.experiment_name = str(experiment_name)
        self.run_name = run_name
        self.http_timeout_s = float(http_timeout_s)
        self.http_retries = int(http_retries)
        self.client: Any = None
        self.run_id: str | None = None
        self.experiment_id: str | None = None

    def start(self, info: RunInfo) -> None:
        # a down server fails fast instead of retrying for minutes (read by mlflow per request)
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(int(self.http_timeout_s)))
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(self.http_retries))
        from mlflow import MlflowClient
        from mlflow.entities import Param

        self.client = client = MlflowClient(tracking_uri=self.tracking_uri)
        exp = client.get_experiment_by_name(self.experiment_name)
        self.experiment_id = (
            exp.experiment_id if exp else client.create_experiment(self.experiment_name)
        )
        tags = {k: v[:MAX_PARAM] for k, v in info.tags.items()}
        if info.group:
            tags["eqa_runner.sweep"] = info.group
            tags["mlflow.parentRunId"] = self._parent(info)
        run = client.create_run(self.experiment_id, run_name=self.run_name or info.name, tags=tags)
        self.run_id = run.info.run_id
        params = [Param(k, v[:MAX_PARAM]) for k, v in sorted(info.params.items())]
        for i in range(0, len(params), BATCH):
            client.log_batch(self.run_id, params=params[i : i + BATCH])
        client.log_dict(self.run_id, info.config, "config.yaml")

    def _parent(self, info: RunInfo) -> str:
        """The sweep's parent run id (created once per sweep dir)."""
        assert self.client is not None and self.experiment_id is not None
        d = info.group_dir or info.run_dir.parent
        d.mkdir(parents=True, exist_ok=True)
        with (d / f"{PARENT_FILE}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = d / PARENT_FILE
            if path.is_file() and path.read_text().strip():
                return path.read_text().strip()
            parent = self.client.create_run(
                self.experiment_id,
                run_name=Path(str(info.group)).name,
                tags={"eqa_runner.sweep": str(info.group), "eqa_runner.sweep_parent": "true"},
            )
            path.write_text(parent.info.run_id + "\n")
            return str(parent.info.run_id)

    def _run(self) -> tuple[Any, str]:
        if self.client is None or self.run_id is None:
            raise RuntimeError("the MLflow run was not started")
        return self.client, self.run_id

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        client, run_id = self._run()
        now = int(time.time() * 1000)
        ms = [Metric(k, float(v), now, int(step)) for k, v in metrics.items() if v is not None]
        client.log_batch(run_id, metrics=ms)

    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        import pandas as pd

        client, run_id = self._run()
        client.log_table(run_id, data=pd.DataFrame(list(rows)), artifact_file=f"{name}.json")

    def log_artifact(self, path: Path) -> None:
        client, run_id = self._run()
        client.log_artifact(run_id, str(path))

    def finish(self, status: str) -> None:
        client, run_id = self._run()
        client.set_terminated(run_id, status=status)
