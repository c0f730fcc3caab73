"""``--judges``: agreement between the judges that scored one run, and ``--power``.

A run re-scored with ``python -m eqa_runner.rejudge`` holds ``episodes.rejudged-<tag>.jsonl``
and ``summary.rejudged-<tag>.json`` beside the original ``episodes.jsonl``. For every judge
this shows the headline metric (clustered interval), and for every pair of judges: Spearman ρ
and Kendall τ of the per-episode scores, Cohen's weighted κ on the marks (1–5; EAC: σ and δ
separately), the mean shift with a paired interval and p, and the episodes they disagree on
most. ``--power``: episodes needed to detect a difference, from a run's observed variance.
Formulas: docs/statistics.md; how to use it to calibrate a judge: docs/judges.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eqa_runner.errors import ReportError
from eqa_runner.records import EPISODES_FILE, SUMMARY_FILE, final_records, read_records
from eqa_runner.report.compare import Scores, fmt_p, judge_for, run_scores
from eqa_runner.report.runs import Run, read_summary
from eqa_runner.scoring.aggregate import clusters_of, interval_of
from eqa_runner.scoring.stats import Agreement, Power, judge_agreement, power_analysis

REJUDGED = "episodes.rejudged-"
TOP = 10
Marks = dict[str, tuple[str, tuple[float, ...]]]  # mark -> (label, its ordered values)


@dataclass
class JudgeScores:
    """One judge's scores of the run: ``name`` is its model (``(original)`` for the run's)."""

    name: str
    file: str
    summary: dict[str, Any]
    scores: Scores
    headline: str
    head: dict[str, Any]
    marks: dict[str, dict[str, float]] = field(default_factory=dict)
    # the per-episode marks the judge declares (``Metric.levels``), for weighted κ
    mark_specs: Marks = field(default_factory=dict)


@dataclass
class PairAgreement:
    a: str
    b: str
    metric: str
    agreement: Agreement
    kappas: dict[str, tuple[float | None, float | None, int]]  # mark -> (linear, quadr., n)
    labels: dict[str, str] = field(default_factory=dict)  # mark -> its shown name


@dataclass
class JudgesReport:
    run: Run
    method: str
    judges: list[JudgeScores]
    pairs: list[PairAgreement]
    questions: dict[str, str]  # episode_id -> question (for the disagreement table)


def _marks(records: list[Any], specs: Marks) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name in specs:
        vals = {
            str(r["episode_id"]): float(r["metrics"][name])
            for r in records
            if r["status"] == "ok" and r["judge_ok"] and r["metrics"].get(name) is not None
        }
        if vals:
            out[name] = vals
    return out


def _judge_scores(
    run: Run, jsonl: Path, summary: dict[str, Any] | None, name: str, method: str, seed: int
) -> JudgeScores:
    recs = list(final_records(read_records(jsonl)).values())
    config = (summary or {}).get("config") or run.config
    judge = judge_for(config if isinstance(config.get("judge"), dict) else run.config)
    values = judge.episode_values(recs)
    specs = type(judge).declaration().marks()
    headline = next(iter(values))
    samples = int((config.get("run") or {}).get("bootstrap_samples", 1000))
    head = interval_of(
        values[headline], clusters_of(recs), method=method, samples=samples, seed=seed
    )
    return JudgeScores(
        name,
        jsonl.name,
        summary or {},
        Scores(values, clusters_of(recs), recs),
        headline,
        head,
        _marks(recs, specs),
        specs,
    )


def judge_runs(run: Run, *, method: str = "cluster", seed: int = 0) -> list[JudgeScores]:
    """The run's original judge and every re-judge found beside it."""
    d = run.path
    if len(run.dirs) > 1:
        raise ReportError(f"{run.label}: --judges reads one run directory, not merged shards")
    if not (d / EPISODES_FILE).is_file():
        raise ReportError(f"{d}: no {EPISODES_FILE}")
    orig = (run.summary.get("models") or {}).get("judge") or "judge"
    out = [_judge_scores(run, d / EPISODES_FILE, run.summary, f"{orig} (original)", method, seed)]
    for f in sorted(d.glob(f"{REJUDGED}*.jsonl")):
        tag = f.name[len(REJUDGED) : -len(".jsonl")]
        sfile = d / f"{SUMMARY_FILE.rsplit('.', 1)[0]}.rejudged-{tag}.json"
        summary = read_summary(sfile)[0]
        model = ((summary or {}).get("models") or {}).get("judge") or tag
        out.append(_judge_scores(run, f, summary, str(model), method, seed))
    if len(out) < 2:
        raise ReportError(
            f"{d}: only the original judge; re-score it first: "
            "python -m eqa_runner.rejudge <run_dir> judge.model=<model>"
        )
    return out


def judges_report(
    run: Run, *, method: str = "cluster", samples: int = 1000, seed: int = 0, top: int = TOP
) -> JudgesReport:
    judges = judge_runs(run, method=method, seed=seed)
    pairs = []
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            m = a.headline
            va, vb = a.scores.values.get(m, {}), b.scores.values.get(m, {})
            clusters = {**a.scores.clusters, **b.scores.clusters}
            agr = judge_agreement(
                va,
                vb,
                clusters if method == "cluster" else None,
                marks=None,
                top=top,
                method="auto" if method == "cluster" else "iid",
                samples=samples,
                seed=seed,
            )
            kappas = {}
            for name, (_, marks) in a.mark_specs.items():
                ma, mb = a.marks.get(name), b.marks.get(name)
                if not ma or not mb:
                    continue
                from eqa_runner.scoring.stats import weighted_kappa

                common = sorted(set(ma) & set(mb))
                x, y = [ma[k] for k in common], [mb[k] for k in common]
                kl = weighted_kappa(x, y, marks=marks, weights="linear") if common else None
                kq = weighted_kappa(x, y, marks=marks, weights="quadratic") if common else None
                kappas[name] = (kl, kq, len(common))
            labels = {k: a.mark_specs[k][0] for k in kappas}
            pairs.append(PairAgreement(a.name, b.name, m, agr, kappas, labels))
    questions = {str(r["episode_id"]): str(r["question"]) for r in judges[0].scores.records}
    return JudgesReport(run, method, judges, pairs, questions)


def _f(v: float | None, digits: int = 2) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def judges_tables(rep: JudgesReport) -> dict[str, pd.DataFrame]:
    """``judges`` (per judge), ``agreement`` (per pair), ``disagreements`` (per pair, top)."""
    from eqa_runner.report.tables import fmt_ci

    per = []
    for j in rep.judges:
        c = j.summary.get("counts") or {}
        per.append(
            {
                "judge": j.name,
                "file": j.file,
                j.headline: fmt_ci(j.head),
                "n": j.head.get("n"),
                "unparsable": c.get("judge_unparsable"),
            }
        )
    agree = []
    dis = []
    for p in rep.pairs:
        g = p.agreement
        s = g.shift
        row: dict[str, Any] = {
            "judge a": p.a,
            "judge b": p.b,
            "n": g.n,
            "Spearman ρ": _f(g.spearman),
            "Kendall τ": _f(g.kendall),
        }
        for name, (kl, kq, _) in p.kappas.items():
            label = p.labels.get(name, name)
            row[f"κ {label} (lin / quad)"] = f"{_f(kl)} / {_f(kq)}"
        row[f"shift b − a ({p.metric})"] = (
            "-" if s.delta is None else f"{s.delta:+.1f} [{s.lo:+.1f}, {s.hi:+.1f}]"
        )
        row["p"] = fmt_p(s.p_value)
        agree.append(row)
        for eid, a, b in g.largest:
            if a == b:
                continue
            dis.append(
                {
                    "judge a": p.a,
                    "judge b": p.b,
                    "episode": eid,
                    "a": a,
                    "b": b,
                    "b − a": b - a,
                    "question": rep.questions.get(eid, "")[:80],
                }
            )
    return {
        "judges": pd.DataFrame(per),
        "agreement": pd.DataFrame(agree),
        "disagreements": pd.DataFrame(
            dis, columns=["judge a", "judge b", "episode", "a", "b", "b − a", "question"]
        ),
    }


# ----------------------------------------------------------------------------- power


@dataclass
class PowerReport:
    metric: str
    power: Power
    n_observed: int
    paired_with: str | None
    correlation: float | None


def power_report(
    runs: list[Run],
    delta: float,
    *,
    metric: str | None = None,
    correlation: float = 0.5,
    method: str = "cluster",
    alpha: float = 0.05,
    power: float = 0.8,
) -> PowerReport:
    """Episodes for a paired comparison to detect ``delta`` (in the metric's unit) at
    ``power``: from one run (σ_d from its SD and ``correlation``) or from two runs' observed
    per-episode differences; clustered (design effect from the run's ICC) unless ``iid``."""
    if len(runs) not in (1, 2):
        raise ReportError("--power takes one run (or two: their observed differences)")
    if delta == 0:
        raise ReportError("--delta must be non-zero")
    scores = [run_scores(r) for r in runs]
    if any(s is None for s in scores):
        raise ReportError("--power needs the run's episodes.jsonl")
    first = scores[0]
    assert first is not None
    metric = metric or next(iter(first.values))
    if metric not in first.values:
        raise ReportError(f"--metric {metric}: the run's metrics are {', '.join(first.values)}")
    vals = first.values[metric]
    other = scores[1].values.get(metric) if len(scores) == 2 and scores[1] else None
    clusters = None
    if method == "cluster":
        clusters = dict(first.clusters)
        if len(scores) == 2 and scores[1]:
            clusters.update(scores[1].clusters)
    try:
        pw = power_analysis(
            vals, delta, clusters, other=other, correlation=correlation, alpha=alpha, power=power
        )
    except ValueError as e:
        raise ReportError(f"--power: {e}") from None
    n_obs = len(vals) if other is None else len(set(vals) & set(other))
    return PowerReport(
        metric,
        pw,
        n_obs,
        runs[1].label if other is not None else None,
        None if other is not None else correlation,
    )


def power_text(rep: PowerReport, run_label: str) -> str:
    p = rep.power
    src = (
        f"observed differences to {rep.paired_with}"
        if rep.paired_with
        else f"the run's SD and an assumed between-run correlation ρ = {rep.correlation}"
    )
    lines = [
        f"power: {run_label}, {rep.metric}, Δ = {p.delta:g} (two-sided α = {p.alpha:g}, "
        f"power {p.power:.0%})",
        f"  episodes needed: {p.n_episodes}"
        + (f" ({p.n_independent} if episodes were independent)" if p.design_effect > 1 else ""),
        f"  σ_d = {p.sd_diff:.2f} from {src}; {rep.n_observed} episodes observed",
    ]
    if p.icc is not None or p.cluster_size > 1:
        lines.append(
            f"  clusters: ICC = {_f(p.icc, 3)}, mean cluster size m = "
            f"{p.cluster_size:.2f}, design effect {p.design_effect:.2f}"
        )
    return "\n".join(lines)
