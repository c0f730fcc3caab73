"""The run's experiment trackers (``logger=…``): built from the config, fed by the run loop.

What a tracker receives: at the start the composed config (secrets redacted) as parameters and
the reproducibility stamp as tags, in a sweep the sweep's group; after every record the live
headline metric and counts; at the end the headline metrics, the per-episode metrics table,
``summary.json`` and (from the command line) ``report.html``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError
from eqa_runner.records import SUMMARY_FILE
from eqa_runner.run.provenance import flatten
from eqa_runner.trackers.base import RunInfo, Tracker
from eqa_runner.trackers.hub import TrackerHub
from eqa_runner.trackers.redact import redact
from eqa_runner.types import EpisodeRecord

log = logging.getLogger(__name__)
ReportWriter = Callable[[Path], "Path | None"]


def build_trackers(cfg: DictConfig) -> list[Tracker]:
    """The configured trackers (``cfg.logger``: name → ``_target_`` node); built before the
    run dir is touched, so a bad option is refused first. Nothing connects yet."""
    node = cfg.get("logger")
    if not node:
        return []
    from hydra.utils import instantiate

    trackers: list[Tracker] = []
    for name, sub in node.items():
        if not isinstance(sub, DictConfig) or "_target_" not in sub:
            raise ConfigError(f"logger.{name}: expected a tracker with a _target_ (conf/logger/)")
        try:
            t = instantiate(sub)
        except Exception as e:  # noqa: BLE001 - a bad tracker option: one line naming it
            cause = e.__cause__ or e
            raise ConfigError(f"logger.{name}: {str(cause).splitlines()[0]}") from None
        if not isinstance(t, Tracker):
            raise ConfigError(f"logger.{name}: {sub._target_} is not an eqa_runner Tracker")
        trackers.append(t)
    return trackers


def _sweep_group() -> tuple[str | None, Path | None]:
    """The sweep dir when this run is a job of a ``-m`` sweep, else (None, None)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None, None
    d = Path(str(HydraConfig.get().sweep.dir))
    return str(d), d


def run_info(cfg: DictConfig, out_dir: Path, stamp: Mapping[str, Any]) -> RunInfo:
    """The start event: redacted config, flattened params, the stamp as flat string tags."""
    config = redact(cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True)))
    params = {k: "null" if v is None else str(v) for k, v in flatten(config).items()}
    tags = {f"eqa_runner.{k}": "null" if v is None else str(v)
            for k, v in flatten(redact(dict(stamp))).items()}  # fmt: skip
    group, group_dir = _sweep_group()
    return RunInfo(out_dir, out_dir.name, config, params, tags, group, group_dir)


def live_metrics(counts: Mapping[str, int], headline: str, value: float | None) -> dict[str, float]:
    """What the loop sends after each record (percent, as the progress bar shows)."""
    out = {"episodes_ok": float(counts["ok"]), "episodes_error": float(counts["err"])}
    if value is not None:
        out[f"running_{headline}"] = float(value)
    return out


def episode_rows(records: list[EpisodeRecord]) -> list[dict[str, Any]]:
    """The per-episode table: ids, status, category and every metric (no free text)."""
    rows = []
    for r in records:
        row: dict[str, Any] = {"episode_id": r["episode_id"], "status": r["status"],
                               "category": r["category"], "judge_ok": r["judge_ok"]}  # fmt: skip
        row.update({f"metric.{k}": v for k, v in r["metrics"].items()})
        row["total_s"] = r["timings"].get("total_s")
        rows.append(row)
    return rows


def finish(
    hub: TrackerHub,
    out_dir: Path,
    result: Mapping[str, Any],
    records: list[EpisodeRecord],
    status: str,
    report: ReportWriter | None,
) -> None:
    """The end events: headline metrics, the table, the run files; then close the hub."""
    counts = result.get("counts") or {}
    final = {k: float(v) for k, v in result.items()
             if k not in ("counts", "exit_code") and isinstance(v, (int, float))}  # fmt: skip
    final.update({f"count_{k}": float(v) for k, v in counts.items() if isinstance(v, (int, float))})
    hub.log_metrics(final, step=len(records))
    hub.log_table("episodes", episode_rows(records))
    if (out_dir / SUMMARY_FILE).is_file():
        hub.log_artifact(out_dir / SUMMARY_FILE)
    if report is not None:
        try:
            html = report(out_dir)
        except Exception as e:  # noqa: BLE001 - the report is an extra for the trackers
            log.warning("report.html for the trackers not written: %s", e)
            html = None
        if html is not None:
            hub.log_artifact(html)
    hub.close(status)
