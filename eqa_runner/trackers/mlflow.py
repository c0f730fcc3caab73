"""``logger=mlflow``: an MLflow run per eqa_runner run; a sweep's runs under one parent run.

Uses :class:`mlflow.MlflowClient` (no global active run, so it is safe on the hub's thread).
mlflow is imported when the tracker starts, never by the CLI. Keys MLflow refuses
(``notes (v2)``) are renamed (:func:`~eqa_runner.trackers.naming.safe_keys`) and the renaming
is logged (``renamed_keys.json``). Every run it opens is terminated, a sweep's parent included
(:mod:`eqa_runner.trackers.mlflow_sweep`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner.trackers.base import RunInfo, Tracker
from eqa_runner.trackers.mlflow_sweep import SweepParent
from eqa_runner.trackers.naming import safe_key

MAX_PARAM = 6000  # MLflow's limit on a parameter value's length
MAX_TAG = 8000  # and a tag value's
BATCH = 100
RENAMED_FILE = "renamed_keys.json"  # {config key: the key MLflow got}
IMAGE_DIR = "maps"


class MlflowTracker(Tracker):
    """Config as params, stamp as tags, live metrics, the episode table (maps as artifacts),
    run files as artifacts; ``tracking_uri`` null: ``$MLFLOW_TRACKING_URI``, else MLflow's
    default (``sqlite:///mlflow.db`` in the working directory)."""

    name = "mlflow"
    requires = ("mlflow",)

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
        self.renamed: dict[str, str] = {}  # original key -> the key MLflow got
        self.sweep: SweepParent | None = None
        self.run_label = ""

    def key(self, k: str) -> str:
        """The key MLflow accepts for ``k`` (recorded when it differs)."""
        if k in self.renamed or (s := safe_key(k)) == k:
            return self.renamed.get(k, k)
        base, n = s, 2
        while s in self.renamed.values():
            s, n = f"{base}_{n}", n + 1
        self.renamed[k] = s
        return s

    def start(self, info: RunInfo) -> None:
        # a down server fails fast instead of retrying for minutes (read by mlflow per request)
        os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, int(self.http_timeout_s)))
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(max(0, self.http_retries))
        from mlflow import MlflowClient

        self.client = client = MlflowClient(tracking_uri=self.tracking_uri)
        exp = client.get_experiment_by_name(self.experiment_name)
        self.experiment_id = (
            exp.experiment_id if exp else client.create_experiment(self.experiment_name)
        )
        tags = {self.key(k): v[:MAX_TAG] for k, v in info.tags.items()}
        self.run_label = self.run_name or info.name
        if info.group:
            self.sweep = SweepParent(client, str(self.experiment_id), info)
            tags["eqa_runner.sweep"] = info.group
            tags["mlflow.parentRunId"] = self.sweep.join(self.run_label)
        run = client.create_run(self.experiment_id, run_name=self.run_label, tags=tags)
        self.run_id = run.info.run_id
        try:
            self._log_config(info)
        except Exception:
            client.set_terminated(self.run_id, status="FAILED")  # never left RUNNING
            raise

    def _log_config(self, info: RunInfo) -> None:
        from mlflow.entities import Param

        client, run_id = self._run()
        params = [Param(self.key(k), v[:MAX_PARAM]) for k, v in sorted(info.params.items())]
        for i in range(0, len(params), BATCH):
            client.log_batch(run_id, params=params[i : i + BATCH])
        client.log_dict(run_id, info.config, "config.yaml")
        if self.renamed:
            client.log_dict(run_id, dict(sorted(self.renamed.items())), RENAMED_FILE)
            client.set_tag(run_id, "eqa_runner.renamed_keys", str(len(self.renamed)))

    def _run(self) -> tuple[Any, str]:
        if self.client is None or self.run_id is None:
            raise RuntimeError("the MLflow run was not started")
        return self.client, self.run_id

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        client, run_id = self._run()
        now = int(time.time() * 1000)
        n = len(self.renamed)
        ms = [
            Metric(self.key(k), float(v), now, int(step))
            for k, v in metrics.items()
            if v is not None
        ]
        client.log_batch(run_id, metrics=ms)
        if len(self.renamed) != n:
            client.log_dict(run_id, dict(sorted(self.renamed.items())), RENAMED_FILE)

    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        import pandas as pd

        client, run_id = self._run()
        out = []
        for r in rows:
            row = dict(r)
            for k, v in r.items():
                if isinstance(v, Path):  # an image: an artifact, the cell its artifact path
                    client.log_artifact(run_id, str(v), artifact_path=IMAGE_DIR)
                    row[k] = f"{IMAGE_DIR}/{v.name}"
            out.append(row)
        client.log_table(run_id, data=pd.DataFrame(out), artifact_file=f"{name}.json")

    def log_artifact(self, path: Path) -> None:
        client, run_id = self._run()
        client.log_artifact(run_id, str(path))

    def log_summary(self, headline: Mapping[str, float], status: str) -> None:
        if self.sweep is not None:
            self.sweep.report(self.run_label, dict(headline))

    def abort(self, status: str) -> None:
        if self.client is not None and self.run_id is not None:
            self.finish(status)

    def finish(self, status: str) -> None:
        client, run_id = self._run()
        try:
            client.set_terminated(run_id, status=status)
        finally:
            if self.sweep is not None:
                self.sweep.leave(self.run_label, status)
