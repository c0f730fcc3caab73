"""The run table and the ``--by`` breakdown (numbers in a DataFrame, then a printable form)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from eqa_runner.report.markdown import is_nan
from eqa_runner.report.runs import Run


def headline_metrics(runs: list[Run]) -> list[str]:
    names: list[str] = []
    for r in runs:
        for k in r.summary.get("headline") or {}:
            if k not in names:
                names.append(k)
    return names


def fmt_ci(m: dict[str, Any] | None, digits: int = 1) -> str:
    """``mean [lo, hi]`` (``-`` without a mean)."""
    if not m or m.get("mean") is None or is_nan(m["mean"]):
        return "-"
    lo, hi = (m.get("ci95") or [None, None])[:2]
    s = f"{m['mean']:.{digits}f}"
    if lo is not None and hi is not None and not is_nan(lo) and not is_nan(hi):
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return s


def _metric_cells(row: dict[str, Any], name: str, m: dict[str, Any] | None) -> None:
    m = m or {}
    lo, hi = (m.get("ci95") or [None, None])[:2]
    row[name] = m.get("mean")
    row[f"{name}_ci_lo"] = lo
    row[f"{name}_ci_hi"] = hi


def runs_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: numeric columns (means and interval bounds separately)."""
    metrics = headline_metrics(runs)
    rows = []
    for r in runs:
        s = r.summary
        c = s.get("counts") or {}
        models = s.get("models") or {}
        usage = s.get("usage") or {}
        headline = s.get("headline") or {}
        row: dict[str, Any] = {
            "run": r.label,
            "task": (s.get("task") or {}).get("name"),
            "policy": s.get("policy"),
            "model": models.get("policy"),
            "judge_model": models.get("judge"),
            "n": c.get("scored"),
            "selected": c.get("selected"),
        }
        for m in metrics:
            _metric_cells(row, m, headline.get(m))
        row["judge_unparsable"] = c.get("judge_unparsable")
        row["errors"] = c.get("error")
        row["missing"] = c.get("missing")
        row["cost_usd"] = usage.get("cost_usd")
        row["cost_unknown_calls"] = usage.get("cost_unknown_calls") or 0
        row["notes"] = "; ".join(
            r.notes + ([s["offline_warning"]] if s.get("offline_warning") else [])
        )
        rows.append(row)
    return pd.DataFrame(rows)


def display_runs(df: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The printable form: ``mean [lo, hi]`` strings, interval columns folded in."""
    out = df.drop(columns=[c for c in df.columns if c.endswith(("_ci_lo", "_ci_hi"))]).copy()
    for m in metrics:
        out[m] = [
            fmt_ci({"mean": v, "ci95": [lo, hi]})
            for v, lo, hi in zip(df[m], df[f"{m}_ci_lo"], df[f"{m}_ci_hi"], strict=False)
        ]
    out["cost_usd"] = [
        _cost_cell(v, u) for v, u in zip(df["cost_usd"], df["cost_unknown_calls"], strict=False)
    ]
    out = out.drop(columns=["cost_unknown_calls"])
    for c in COUNT_COLUMNS:  # whole numbers stay whole when a column holds a missing value
        if c in out.columns:
            out[c] = ["-" if v is None or is_nan(v) else str(int(v)) for v in df[c]]
    return out


COUNT_COLUMNS = ("n", "selected", "judge_unparsable", "errors", "missing")


def _cost_cell(v: Any, unpriced: Any) -> str:
    """Known cost; ``unknown`` when every call was unpriced; ``≥x`` when some were."""
    u = 0 if unpriced is None or is_nan(unpriced) else int(unpriced)
    if v is None or is_nan(v) or (u and not v):
        return f"unknown ({u} unpriced calls)" if u else "-"
    return f"≥{v:.4f} (+{u} unpriced calls)" if u else f"{v:.4f}"


def breakdown_key(by: str) -> tuple[str, ...]:
    return {
        "category": ("by_category",),
        "subset": ("by_subset", "by_split"),
        "type": ("by_type", "by_category"),
        "split": ("by_split", "by_subset"),
    }[by]


def groups(summary: dict[str, Any], by: str) -> dict[str, dict[str, Any]]:
    """``{group: {metric: {mean, ci95, n}}}`` from a summary's ``by_<...>`` breakdown."""
    for k in breakdown_key(by):
        g = summary.get(k)
        if isinstance(g, dict) and g:
            head = next(iter(summary.get("headline") or {"value": None}))
            # one metric: {group: {mean, ci95, n}}; several: {group: {metric: {mean, ci95, n}}}
            return {name: ({head: v} if "mean" in v else v) for name, v in g.items()}
    return {}


def by_table(runs: list[Run], by: str) -> pd.DataFrame:
    """Rows = groups; one column per (run, metric) with ``mean [lo, hi] (n)``."""
    metrics = headline_metrics(runs)
    data: dict[str, dict[str, str]] = {}
    for r in runs:
        for g, ms in groups(r.summary, by).items():
            for m in metrics:
                if m in ms:
                    name = r.short or r.label
                    col = name if len(metrics) == 1 else f"{name}: {m}"
                    n = ms[m].get("n")
                    data.setdefault(col, {})[g] = fmt_ci(ms[m]) + (f" (n={n})" if n else "")
    df = pd.DataFrame(data)
    df.index.name = by
    return df.sort_index().fillna("-").reset_index()
