"""The run's experiment trackers (``logger=…``): built from the config, fed by the run loop.

What a tracker receives: at the start the composed config (secrets redacted) as parameters and
the reproducibility stamp as tags, in a sweep the sweep's group; after every record the live
headline metric and counts; at the end the headline metrics, the per-episode metrics table,
``summary.json`` and (from the command line) ``report.html``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError, UserError
from eqa_runner.records import SUMMARY_FILE
from eqa_runner.run.provenance import flatten
from eqa_runner.run.stop import resume_command
from eqa_runner.trackers import naming
from eqa_runner.trackers.base import RunInfo, Tracker
from eqa_runner.trackers.hub import TrackerHub
from eqa_runner.trackers.redact import redact, redact_text
from eqa_runner.types import EpisodeRecord

log = logging.getLogger(__name__)
ReportWriter = Callable[[Path], "Path | None"]


def build_trackers(cfg: DictConfig) -> list[Tracker]:
    """The configured trackers (``cfg.logger``: name → ``_target_`` node); built before the
    run dir is touched, so a bad option or a missing package is refused first. Nothing
    connects yet."""
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
        missing = [p for p in t.requires if not _installed(p)]
        if missing:
            raise TrackerMissingError(
                f"logger={name}: the {' and '.join(missing)} package is not installed in this "
                f"environment; pip install 'eqa_runner[trackers]' (or drop logger={name})"
            )
        trackers.append(t)
    return trackers


class TrackerMissingError(UserError, ImportError):
    """A selected tracker's package is not installed (an environment error: exit 2)."""


def _installed(package: str) -> bool:
    if package in sys.modules:
        return sys.modules[package] is not None
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _sweep() -> tuple[str | None, Path | None, dict[str, str], str | None]:
    """This job's sweep: (group name, sweep dir, swept keys and values, job name); all None
    (and no keys) for a single run."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None, None, {}, None
    hc = HydraConfig.get()
    d = Path(str(hc.sweep.dir))
    exclude = [str(k) for k in hc.job.config.override_dirname.exclude_keys]
    try:  # the driver's overrides (policy=re,fbe) are in the sweep dir's multirun.yaml
        driver = OmegaConf.load(d / "multirun.yaml").hydra.overrides.task
        swept = naming.swept([str(o) for o in driver], exclude)
    except Exception:  # noqa: BLE001 - no sweep file: the job's own overrides name it
        swept = {}
    job = [str(o) for o in hc.overrides.task]
    keys = list(swept) or [
        k.split("=", 1)[0].lstrip("~+")
        for k in job
        if "=" in k and not naming.is_plumbing_key(k.split("=", 1)[0], exclude)
    ]
    return d.name, d, swept, naming.run_name("", job, keys) or None


def run_info(cfg: DictConfig, out_dir: Path, stamp: Mapping[str, Any]) -> RunInfo:
    """The start event: redacted config, params (no plumbing, no nulls), the stamp and the
    SLURM job as flat string tags, the one naming rule (:mod:`eqa_runner.trackers.naming`)."""
    config = redact(cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True)))
    config = {k: v for k, v in config.items() if not naming.is_plumbing_key(str(k))}
    params = naming.params(flatten(config))
    tags = {
        f"eqa_runner.{k}": "null" if v is None else str(v)
        for k, v in flatten(redact(dict(stamp))).items()
        if k != "slurm"
    }
    tags.update({f"slurm.{k}": v for k, v in naming.slurm_ids(os.environ).items()})
    group, group_dir, swept, job_name = _sweep()
    name = redact_text(job_name or out_dir.name)
    swept = {k: redact_text(v) for k, v in swept.items()}
    group = None if group is None else redact_text(group)
    return RunInfo(out_dir, name, config, params, tags, group, group_dir, swept)


def live_metrics(counts: Mapping[str, int], headline: str, value: float | None) -> dict[str, float]:
    """What the loop sends after each record (percent, as the progress bar shows)."""
    out = {"episodes_ok": float(counts["ok"]), "episodes_error": float(counts["err"])}
    if value is not None:
        out[f"running_{headline}"] = float(value)
    return out


MAX_TEXT = 4000  # characters of a text cell (question, reference, prediction, judge reply)


def episode_rows(records: list[EpisodeRecord], run_dir: Path) -> list[dict[str, Any]]:
    """The per-episode table: ids, status, category, the texts a reader checks (redacted),
    every metric, the time, and the episode's trajectory map (a file in the run dir)."""
    rows = []
    for r in records:
        row: dict[str, Any] = {
            "episode_id": redact_text(str(r["episode_id"])),
            "status": r["status"],
            "category": redact_text(str(r["category"])),
            "judge_ok": r["judge_ok"],
        }
        for col, field in (
            ("question", "question"),
            ("reference", "answer"),
            ("prediction", "prediction"),
            ("judge_reply", "judge_raw"),
        ):
            text = r.get(field)
            row[col] = None if text is None else redact_text(str(text))[:MAX_TEXT]
        row.update({f"metric.{k}": v for k, v in r["metrics"].items()})
        row["total_s"] = r["timings"].get("total_s")
        row["map"] = _run_file(run_dir, (r.get("trace") or {}).get("trajectory_map"))
        rows.append(row)
    return rows


def _run_file(run_dir: Path, rel: Any) -> Path | None:
    """A file a record names, only when it resolves inside the run dir (links leaving it and
    absolute or ``..`` paths are not followed)."""
    if not isinstance(rel, str) or not rel:
        return None
    root = run_dir.resolve()
    p = (root / rel).resolve()
    return p if p.is_relative_to(root) and p.is_file() else None


def summary_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """Intervals and per-category numbers of ``summary.json``: ``<m>_ci95_low/high``,
    ``<m>_n``, ``by_category/<category>`` (+ ``_ci95_low/high``, ``_n``)."""
    out: dict[str, float] = {}

    def put(prefix: str, cell: Any) -> None:
        if not isinstance(cell, Mapping):
            return
        ci = cell.get("ci95")
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci:
            out[f"{prefix}_ci95_low"], out[f"{prefix}_ci95_high"] = float(ci[0]), float(ci[1])
        if isinstance(cell.get("n"), (int, float)):
            out[f"{prefix}_n"] = float(cell["n"])

    for m, cell in (summary.get("headline") or {}).items():
        put(str(m), cell)
    for cat, cell in (summary.get("by_category") or {}).items():
        if isinstance(cell, Mapping) and isinstance(cell.get("mean"), (int, float)):
            key = f"by_category/{redact_text(str(cat))}"  # a category is text from the data
            out[key] = float(cell["mean"])
            put(key, cell)
    return out


def _read_summary(out_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((out_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def finish(
    hub: TrackerHub,
    out_dir: Path,
    result: Mapping[str, Any],
    records: list[EpisodeRecord],
    status: str,
    report: ReportWriter | None,
) -> None:
    """The end events: headline metrics with intervals and per-category numbers, the table,
    the run files, the headline for a sweep's parent; then close the hub (a SIGTERM or
    SIGINT while it flushes ends the wait with the run's line)."""
    with _signals_end_flush(hub, out_dir, int(result.get("exit_code", 0) or 0)):
        _send_end(hub, out_dir, result, records, status, report)
        hub.close(status)


def _send_end(
    hub: TrackerHub,
    out_dir: Path,
    result: Mapping[str, Any],
    records: list[EpisodeRecord],
    status: str,
    report: ReportWriter | None,
) -> None:
    """Enqueue the end events (the report for the trackers is written here)."""
    counts = result.get("counts") or {}
    headline = {
        k: float(v)
        for k, v in result.items()
        if k not in ("counts", "exit_code") and isinstance(v, (int, float))
    }
    final = {**headline, **summary_metrics(_read_summary(out_dir))}
    final.update({f"count_{k}": float(v) for k, v in counts.items() if isinstance(v, (int, float))})
    hub.log_metrics(final, step=len(records))
    hub.log_table("episodes", episode_rows(records, out_dir))
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
    hub.log_summary(headline, status)


@contextmanager
def _signals_end_flush(hub: TrackerHub, out_dir: Path, code: int) -> Iterator[None]:
    """While the trackers flush: SIGTERM / SIGINT stop the wait, print the run's line (its
    records and summary are complete; the trackers' state) and exit 143 / 130."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
        name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
        if code >= 128:  # the run itself was stopped: its resume line again
            state = f"stopped; resume with: {resume_command(out_dir)}"
        else:
            state = f"complete in {out_dir} (episodes.jsonl, summary.json written)"
        sys.stderr.write(
            f"\n[eqa_runner] {name} while the trackers ({', '.join(hub.names)}) were flushing: "
            f"not waiting for them (their runs closed as KILLED, the last events may be "
            f"missing); the run is {state}\n"
        )
        sys.stderr.flush()
        hub.abort("KILLED")  # the runs the trackers opened are closed (a few seconds at most)
        raise SystemExit(130 if signum == signal.SIGINT else 143)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
