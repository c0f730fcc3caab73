"""``--compare``: the ablation table, paired differences to a baseline and stamp warnings.

The table shows the config keys that differ between runs, each run's headline metrics with
their intervals and ``Δ`` to the baseline. Each Δ is *paired*: computed on the episodes both
runs scored (the judge's per-episode values, ``Judge.episode_values``), with a bootstrap
interval (whole clusters resampled by default: the records' scenes: episode histories or scenes)
and a two-sided sign-flip p-value (``scoring/stats.paired_difference``). Episodes scored by
one run only are counted and named in a note and take no part in any Δ. Methods:
docs/statistics.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd

from eqa_runner.errors import ReportError
from eqa_runner.report.keys import cell, flatten
from eqa_runner.report.runs import Run, declarations, judge_for, runs_differing_keys
from eqa_runner.report.tables import fmt_ci, headline_metrics
from eqa_runner.scoring.aggregate import INTERVAL_METHODS, clusters_of
from eqa_runner.scoring.comparability import headline_records
from eqa_runner.scoring.stats import PairedDiff, paired_difference
from eqa_runner.types import EpisodeRecord

NAMED_IDS = 10  # episode ids named in a note before "(+N more)"


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


# ----------------------------------------------------------------------------- per-episode values


@dataclass
class Scores:
    """A run's per-episode headline values (``metric -> episode_id -> value``) and clusters."""

    values: dict[str, dict[str, float]]
    clusters: dict[str, str]
    records: list[EpisodeRecord]


def run_scores(run: Run, records: list[EpisodeRecord] | None = None) -> Scores | None:
    """Per-episode values of ``run`` (None when it has no records to pair)."""
    recs = run.records() if records is None else records
    if not recs:
        return None
    judge = judge_for(run.config)
    values = judge.episode_values(headline_records(judge, recs)[0])  # as its headline counts
    # kept without their traces: a sweep's records with traces do not fit in memory at once
    slim: list[dict[str, Any]] = [dict(r) for r in recs]
    for s in slim:
        s.pop("trace", None)
    return Scores(values, clusters_of(recs), cast(list[EpisodeRecord], slim))


def _scores_or_none(run: Run) -> Scores | None:
    try:
        return run_scores(run)
    except ReportError:  # e.g. a config without judge._target_: Δ of the means, noted
        return None


def reinterval(run: Run, method: str, *, samples: int = 1000, seed: int = 0) -> bool:
    """Recompute ``run``'s headline and breakdown intervals with ``method`` from its records,
    unless its summary already used it (summaries without ``intervals`` used i.i.d.)."""
    if method not in INTERVAL_METHODS:
        raise ReportError(f"--interval {method}: expected one of {', '.join(INTERVAL_METHODS)}")
    used = (run.summary.get("intervals") or {}).get("method", "iid")
    recs = run.records()
    if used == method or not recs:
        return False
    rcfg = run.section("run")
    judge = judge_for(run.config)
    agg = judge.aggregate(
        headline_records(judge, recs)[0],  # judge.error_records
        bootstrap_samples=int(rcfg.get("bootstrap_samples", samples)),
        seed=int(rcfg.get("seed", seed)),
        interval=method,
    )
    run.summary = {**run.summary, **agg}
    run.summary["intervals"] = {**(run.summary.get("intervals") or {}), "method": method}
    return True


# ----------------------------------------------------------------------------- paired Δ


@dataclass
class Paired:
    """All paired differences of a comparison: ``diffs[row][metric]`` (None for the
    baseline row and where a run has no records), and the notes they produce."""

    baseline: int
    method: str
    diffs: list[dict[str, PairedDiff]]
    notes: list[str]


def _ids(ids: tuple[str, ...]) -> str:
    shown = ", ".join(ids[:NAMED_IDS])
    return shown + (f" (+{len(ids) - NAMED_IDS} more)" if len(ids) > NAMED_IDS else "")


def _task_of(run: Run) -> str | None:
    name = (run.summary.get("task") or {}).get("name") or run.section("task").get("name")
    return None if name is None else str(name)


def paired_differences(
    runs: list[Run],
    baseline: int = 0,
    *,
    method: str = "cluster",
    samples: int = 1000,
    seed: int = 0,
    scores: list[Scores | None] | None = None,
) -> Paired:
    """Δ = run − baseline for every run and headline metric, on their common episodes."""
    if method not in INTERVAL_METHODS:
        raise ReportError(f"--interval {method}: expected one of {', '.join(INTERVAL_METHODS)}")
    metrics = headline_metrics(runs)
    scores = scores if scores is not None else [_scores_or_none(r) for r in runs]
    base = scores[baseline]
    diffs: list[dict[str, PairedDiff]] = []
    notes: list[str] = []
    for i, (r, sc) in enumerate(zip(runs, scores, strict=True)):
        row: dict[str, PairedDiff] = {}
        diffs.append(row)
        if i == baseline:
            continue
        name = r.short or r.label
        tasks = (_task_of(runs[baseline]), _task_of(r))
        if None not in tasks and tasks[0] != tasks[1]:
            notes.append(
                f"{name}: another task ({tasks[1]}) than the baseline's ({tasks[0]}): "
                "Δ not paired (the same episode id is another question) and the means "
                "are not comparable"
            )
            continue
        if sc is None or base is None:
            who = r.label if sc is None else runs[baseline].label
            notes.append(
                f"{name}: Δ is the difference of the means, not paired (no per-episode "
                f"scores for {who}: no records, or no judge in its config)"
            )
            continue
        clusters = {**base.clusters, **sc.clusters}
        for m in metrics:
            a, b = base.values.get(m), sc.values.get(m)
            if a is None or b is None:
                continue
            row[m] = paired_difference(
                a,
                b,
                clusters if method == "cluster" else None,
                method="auto" if method == "cluster" else "iid",
                samples=samples,
                seed=seed,
            )
        if metrics and metrics[0] in row and (note := _left_out_note(name, row[metrics[0]])):
            notes.append(note)
    return Paired(baseline, method, diffs, notes)


def _left_out_note(name: str, d: PairedDiff) -> str | None:
    """The note on the episodes only one of the two runs scored (None when there are none)."""
    if not (d.only_a or d.only_b):
        return None
    parts = []
    if d.only_b:
        parts.append(f"{len(d.only_b)} scored only here ({_ids(d.only_b)})")
    if d.only_a:
        parts.append(f"{len(d.only_a)} scored only by the baseline ({_ids(d.only_a)})")
    only = "; ".join(parts)
    return f"{name}: Δ on the {d.n} episodes both runs scored; {only}: left out of every Δ"


def digits_of(runs: list[Run], metric: str) -> int:
    """Decimals shown for a metric's Δ, as its judge declares (percentages 1, metres 2)."""
    m = declarations(runs).get(metric)
    return 1 if m is None else m.digits


def fmt_delta(d: PairedDiff | None, digits: int = 1) -> str:
    if d is None or d.delta is None:
        return "-"
    return f"{d.delta:+.{digits}f}"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def compare_table(runs: list[Run], baseline: int = 0, paired: Paired | None = None) -> pd.DataFrame:
    """Differing config keys, each headline metric with its interval, and Δ to the baseline
    (paired on common episodes when ``paired`` has it, else the difference of the means)."""
    keys = runs_differing_keys(runs)
    metrics = headline_metrics(runs)
    flats = [dict(flatten(r.config), **r.choices) for r in runs]
    base = runs[baseline].summary.get("headline") or {}
    if not keys:  # identical configs (e.g. repeated runs): name the rows by their run dirs
        keys = ["run"]
        flats = [{"run": r.label or r.path.name} for r in runs]
    rows = []
    for i, (r, f) in enumerate(zip(runs, flats, strict=False)):
        row: dict[str, Any] = {k: cell(f.get(k)) for k in keys}
        row["n"] = (r.summary.get("counts") or {}).get("scored")
        head = r.summary.get("headline") or {}
        for m in metrics:
            row[m] = fmt_ci(head.get(m))
            a, b = (head.get(m) or {}).get("mean"), (base.get(m) or {}).get("mean")
            d = paired.diffs[i].get(m) if paired else None
            if r is runs[baseline]:
                row[f"Δ {m}"] = "(baseline)"
            elif d is not None:
                row[f"Δ {m}"] = fmt_delta(d, digits_of(runs, m))
            else:
                row[f"Δ {m}"] = "-" if a is None or b is None else f"{a - b:+.1f}"
        rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "n", *[c for m in metrics for c in (m, f"Δ {m}")]])


def paired_table(runs: list[Run], paired: Paired) -> pd.DataFrame:
    """One row per (run, metric): Δ to the baseline, its interval, p, n common, clusters."""
    rows = []
    for r, diffs in zip(runs, paired.diffs, strict=True):
        for m, d in diffs.items():
            rows.append(
                {
                    "run": r.short or r.label,
                    "metric": m,
                    "Δ": fmt_delta(d, k := digits_of(runs, m)),
                    "95% CI": "-"
                    if d.lo is None or d.hi is None
                    else f"[{d.lo:+.{k}f}, {d.hi:+.{k}f}]",
                    "p": fmt_p(d.p_value),
                    "n": d.n,
                    "clusters": d.n_clusters if d.method == "cluster" else "-",
                    "only run": len(d.only_b),
                    "only baseline": len(d.only_a),
                }
            )
    return pd.DataFrame(
        rows,
        columns=["run", "metric", "Δ", "95% CI", "p", "n", "clusters", "only run", "only baseline"],
    )


def paired_csv(runs: list[Run], paired: Paired) -> pd.DataFrame:
    """The paired differences as numbers (``--csv``): one row per run, columns per metric."""
    rows = []
    for diffs in paired.diffs:
        row: dict[str, Any] = {}
        for m in headline_metrics(runs):
            d = diffs.get(m)
            row[f"delta_{m}"] = None if d is None else d.delta
            row[f"delta_{m}_ci_lo"] = None if d is None else d.lo
            row[f"delta_{m}_ci_hi"] = None if d is None else d.hi
            row[f"delta_{m}_p"] = None if d is None else d.p_value
            row[f"delta_{m}_n"] = None if d is None else d.n
        rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- stamps

# stamp field -> the config keys that, when compared, explain a difference in it
_STAMP_KEYS: dict[str, tuple[str, ...]] = {
    "eqa_runner": (),
    "git": (),
    "data_sha256": ("task",),
    "prompts_sha256": ("prompts",),
    "judge_model": ("judge", "judge.model"),
    "seeds": ("run.seed", "llm.seed", "judge.seed", "sim.seed", "policy.seed", "task.seed"),
}


def _canon(v: Any) -> str:
    import json

    return json.dumps(v, sort_keys=True, default=str)


def stamp_warnings(runs: list[Run], compared: list[str], *, short: bool = False) -> list[str]:
    """Differences between the runs' reproducibility stamps not explained by the compared keys
    (``short``: runs named by their swept keys, as the HTML page names them)."""
    stamps = [r.summary.get("reproducibility") for r in runs]
    out = []
    names = [(r.short or r.label) if short else r.label for r in runs]
    missing = [n for n, s in zip(names, stamps, strict=True) if not s]
    if missing:
        out.append(
            f"no reproducibility stamp (summary from an older version) in: {', '.join(missing)}"
        )
    have = [(r, s) for r, s in zip(runs, stamps, strict=True) if s]
    if len(have) < 2:
        return out

    def explained(field: str, sub: str | None = None) -> bool:
        keys = _STAMP_KEYS.get(field, ())
        if field == "seeds" and sub:
            keys = (*keys, sub)
        return any(
            c == k or c.startswith(k + ".") or k.startswith(c + ".") for c in compared for k in keys
        )

    def show(field: str, sub: str | None = None) -> str:
        vals = []
        for r, s in have:
            v = s.get(field)
            if sub is not None:
                v = (v or {}).get(sub)
            if field == "git" and isinstance(v, dict):
                v = str(v.get("commit", ""))[:10] + ("+dirty" if v.get("dirty") else "")
            elif isinstance(v, str) and len(v) == 64:
                v = v[:12]
            vals.append(f"{r.short or r.label}: {v}")
        return "; ".join(vals)

    for field in ("eqa_runner", "git", "judge_model"):
        if len({_canon(s.get(field)) for _, s in have}) > 1 and not explained(field):
            out.append(f"runs differ in {field} ({show(field)})")
    for field in ("data_sha256", "prompts_sha256", "seeds"):
        subs = sorted({k for _, s in have for k in (s.get(field) or {})})
        for sub in subs:
            # a file only some runs use (the blind policy's prompt) is not a difference
            vals = {_canon(v) for _, s in have if (v := (s.get(field) or {}).get(sub)) is not None}
            if len(vals) > 1 and not explained(field, sub):
                out.append(f"runs differ in {field}.{sub} ({show(field, sub)})")
    fps = {_canon(s.get("config_fingerprint")) for _, s in have}
    if len(fps) > 1 and not compared:
        out.append(
            "runs have the same config keys but different config fingerprints "
            f"({show('config_fingerprint')})"
        )
    return out
