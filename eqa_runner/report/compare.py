"""``--compare``: the ablation table (differing config keys, metrics, Δ to a baseline run)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from eqa_runner.errors import ReportError
from eqa_runner.report.keys import cell, flatten
from eqa_runner.report.runs import Run, runs_differing_keys
from eqa_runner.report.tables import fmt_ci, headline_metrics


def pick_baseline(runs: list[Run], baseline: str | None) -> int:
    """The baseline row: ``None`` (the first), an index (0-based, negative from the end), a
    run dir (one of the row's shards too) or a row label."""
    if baseline is None:
        return 0
    if re.fullmatch(r"-?\d+", baseline.strip()):
        i = int(baseline)
        if not -len(runs) <= i < len(runs):
            raise ReportError(f"--baseline {baseline}: only {len(runs)} runs")
        return i % len(runs)
    want = Path(baseline).resolve()
    for i, r in enumerate(runs):
        if want in [d.resolve() for d in r.dirs] or want == r.path.resolve():
            return i
    for i, r in enumerate(runs):
        if baseline in (r.label, r.path.name):
            return i
    raise ReportError(f"--baseline {baseline}: not one of the reported runs")


def compare_table(runs: list[Run], baseline: int = 0) -> pd.DataFrame:
    """Differing config keys, each headline metric with its interval, and Δ to the baseline."""
    keys = runs_differing_keys(runs)
    metrics = headline_metrics(runs)
    flats = [dict(flatten(r.config), **r.choices) for r in runs]
    base = runs[baseline].summary.get("headline") or {}
    if not keys:  # identical configs (e.g. repeated runs): name the rows by their run dirs
        keys = ["run"]
        flats = [{"run": r.label or r.path.name} for r in runs]
    rows = []
    for r, f in zip(runs, flats, strict=False):
        row: dict[str, Any] = {k: cell(f.get(k)) for k in keys}
        row["n"] = (r.summary.get("counts") or {}).get("scored")
        head = r.summary.get("headline") or {}
        for m in metrics:
            row[m] = fmt_ci(head.get(m))
            a, b = (head.get(m) or {}).get("mean"), (base.get(m) or {}).get("mean")
            if r is runs[baseline]:
                row[f"Δ {m}"] = "(baseline)"
            else:
                row[f"Δ {m}"] = "-" if a is None or b is None else f"{a - b:+.1f}"
        rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "n", *[c for m in metrics for c in (m, f"Δ {m}")]])
