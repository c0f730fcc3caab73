"""``logger=wandb``: a Weights & Biases run per eqa_runner run; a sweep's runs in one group.

``mode`` null: W&B's own setting (``WANDB_MODE``, e.g. ``offline`` writes
``<dir>/wandb/offline-run-*`` for ``wandb sync``). wandb is imported when the tracker starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner.trackers.base import RunInfo, Tracker

MAX_TAG = 64  # W&B's limit on a tag's length
MAX_TIMEOUT = 10.0  # its shutdown adds ~12 s to whatever wait is under way: 30 s in all


class WandbTracker(Tracker):
    """Config, stamp (as tags and in the config), live metrics, the episode table, run files."""

    name = "wandb"
    requires = ("wandb",)

    def __init__(
        self,
        project: str = "eqa_runner",
        entity: str | None = None,
        mode: str | None = None,
        dir: str | None = None,  # noqa: A002 - W&B's own name for it
        job_type: str = "eval",
        timeout_s: float = 8.0,
    ) -> None:
        self.project, self.entity, self.mode = str(project), entity, mode
        self.dir = dir
        self.job_type = job_type
        # W&B's own waits (init, login, each request, finish), one request retried at most
        # once: the process ends within the hub's promise (docs/trackers.md) on a server that
        # accepts and never answers (W&B's defaults kept it ~100 s)
        self.timeout_s = min(max(1.0, float(timeout_s)), MAX_TIMEOUT)
        self.run: Any = None

    def start(self, info: RunInfo) -> None:
        os.environ.setdefault("WANDB_SILENT", "true")  # its login line ignores Settings(silent)
        import wandb

        tags = [f"{k}={v}"[:MAX_TAG] for k, v in sorted(info.tags.items())]
        d = Path(self.dir) if self.dir else info.run_dir
        d.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=self.project,
            entity=self.entity,
            mode=self.mode,  # type: ignore[arg-type]
            dir=str(d),
            name=info.name,
            group=info.group,
            job_type=self.job_type,
            config={**info.config, "reproducibility": dict(info.tags)},
            tags=tags,
            settings=wandb.Settings(**self._settings()),
        )

    def _settings(self) -> dict[str, Any]:
        """Quiet (no banner, no console capture: the run's own lines stay readable) and
        bounded waits."""
        t = self.timeout_s
        return {
            "console": "off",
            "x_disable_stats": True,
            "silent": True,
            "quiet": True,
            "show_info": False,
            "show_warnings": False,
            "init_timeout": t,
            "login_timeout": t,
            "x_graphql_timeout_seconds": t,
            "x_graphql_retry_max": 1,
            "x_file_stream_timeout_seconds": t,
            "x_file_stream_retry_max": 1,
            "x_file_transfer_timeout_seconds": t,
            "x_file_transfer_retry_max": 1,
        }

    def _run(self) -> Any:
        if self.run is None:
            raise RuntimeError("the W&B run was not started")
        return self.run

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self._run().log({k: v for k, v in metrics.items() if v is not None}, step=int(step))

    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        import wandb

        cols: list[str | int] = []
        for r in rows:
            cols += [k for k in r if k not in cols]

        def cell(v: Any) -> Any:
            if not isinstance(v, Path):
                return v
            try:  # a map: an image (one that does not decode: its file name)
                return wandb.Image(str(v))
            except Exception:  # noqa: BLE001
                return v.name

        data = [[cell(r.get(str(c))) for c in cols] for r in rows]
        table = wandb.Table(columns=cols, data=data)
        self._run().log({name: table})

    def log_artifact(self, path: Path) -> None:
        p = Path(path)
        self._run().save(str(p), base_path=str(p.parent), policy="now")

    def log_summary(self, headline: Mapping[str, float], status: str) -> None:
        run = self._run()
        run.summary.update({**dict(headline), "status": status})

    def finish(self, status: str) -> None:
        self._run().finish(exit_code=0 if status == "FINISHED" else 1)
