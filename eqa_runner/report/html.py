"""Self-contained ``report.html``: summary, per-category chart, filterable episode table.

The page is ``templates/report.html.j2`` (Jinja2, autoescaped) with ``report.css`` and
``report.js`` included; everything is inlined (PNG chart and JPEG thumbnails as base64), so the
file can be mailed or opened offline. This module turns runs and their records into the
template's values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from eqa_runner.redact import redact
from eqa_runner.report.agreement import JudgesReport, judges_tables
from eqa_runner.report.compare import (
    Paired,
    compare_table,
    digits_of,
    paired_differences,
    paired_table,
    stamp_warnings,
)
from eqa_runner.report.figures import (
    ForestRow,
    Thumbs,
    agreement_svg,
    category_chart,
    forest_svg,
)
from eqa_runner.report.legends import map_legends
from eqa_runner.report.media import Image, episode_media
from eqa_runner.report.runs import (
    Run,
    common_parent,
    declarations,
    load_records,
    runs_differing_keys,
)
from eqa_runner.report.sweep_figures import sweep_svgs
from eqa_runner.report.tables import display_runs, headline_metrics, runs_table
from eqa_runner.safe_io import confine
from eqa_runner.scoring.declare import PERCENT, Declaration
from eqa_runner.types import EpisodeRecord

TEMPLATES = Path(__file__).resolve().parent / "templates"
MAX_THUMBS = 4


@dataclass
class EpisodeRow:
    episode_id: str
    category: str
    score: float | None
    question: str
    answer: str
    prediction: str
    judge: str
    exploration: str = ""
    options: str = ""  # a multiple-choice question's options ("A. sofa · B. bed ...")
    error: bool = False
    images: list[Image] = field(default_factory=list)
    map: Image | None = None  # the trajectory map (exploration tasks)
    map_caption: str = ""  # what the map shows, as text beside it (steps, path, goal)
    strip: list[Image] = field(default_factory=list)  # step frames (run.save_artifacts=true)
    replay: str | None = None  # animated replay as a data URI (run.save_artifacts=true)
    topdown: list[Image] = field(default_factory=list)  # fbe's map per step (save_artifacts)


@dataclass
class Section:
    """The episode rows of one run."""

    label: str  # the run's swept keys (``policy=fbe, run.seed=1``), else its dir
    episodes: list[EpisodeRow]
    hidden: int = 0  # rows beyond --max-episodes
    path: str = ""  # the run's dir, relative to the reported runs' common parent


def _episodes_dir(run: Run) -> Path | None:
    task = run.section("task")
    if task.get("episodes_dir"):
        return Path(task["episodes_dir"])
    if task.get("data_dir"):
        return Path(task["data_dir"]) / "episodes"
    return None


def score_levels(sections: list[Section], most: int = 6) -> list[tuple[str, str]]:
    """The minimum-score filter's choices: the distinct scores the rows show when there are at
    most ``most`` (a mark 1-5, a 0/1 success), else ``most`` steps from the lowest to the highest
    (a 0-1 or 0-100 score); the judges' scales differ, so the rows decide. Each choice is
    ``(value, label)``: the value exact, so a row holding it is shown."""
    xs = sorted({e.score for s in sections for e in s.episodes if e.score is not None})
    if len(xs) > most:
        lo, hi = xs[0], xs[-1]
        xs = [lo + (hi - lo) * i / (most - 1) for i in range(most)]
    return [(repr(x), f"{x:.3g}") for x in xs]  # (exact value for the filter, label)


def _score(rec: EpisodeRecord, row_metrics: list[str]) -> float | None:
    """The episode's score shown in its row: the first per-episode metric the judge declares
    as one (``Metric.row``) that the record holds."""
    m = rec["metrics"]
    for k in row_metrics:
        v = m.get(k)
        if v is not None:
            return float(v)
    return None


def _images(rec: EpisodeRecord, run_dir: Path, ep_dir: Path | None, thumbs: Thumbs) -> list[Image]:
    trace = rec["trace"]
    paths: list[Path | None] = []
    frames = trace.get("frames") or []
    if frames and ep_dir is not None:
        k = min(MAX_THUMBS, len(frames))
        idx = sorted({round(i * (len(frames) - 1) / max(1, k - 1)) for i in range(k)})
        paths += [confine(frames[i], ep_dir, what="trace frame") for i in idx]
    judge_images = (trace.get("judge_images") or [])[:MAX_THUMBS]
    paths += [confine(p, run_dir, what="judge image") for p in judge_images]
    out = []
    for p in filter(None, paths):  # a path out of its dir is refused, counted (safe_io.confine)
        uri = thumbs(p)
        if uri:
            out.append(Image(uri, p.name, str(p)))
    return out


def _exploration(rec: EpisodeRecord) -> str:
    """Episodes with a goal: path length vs the reference, final distance to the goal, steps."""
    m, tr = rec["metrics"], rec["trace"]
    path = m.get("path_len", tr.get("path_len"))
    if path is None:
        return ""
    ref = m.get("gt_geodesic", tr.get("gt_geodesic"))
    d_t = m.get("d_t", tr.get("d_t"))
    steps = m.get("steps_taken", tr.get("steps_taken"))
    bits = [f"path {path:.1f} m" + (f" (ref {ref:.1f} m)" if ref is not None else "")]
    if d_t is not None:
        bits.append(f"goal {d_t:.2f} m away")
    if steps is not None:
        stop = tr.get("stop_reason")
        bits.append(f"{int(steps)} steps" + (f", {stop}" if stop else ""))
    return "; ".join(bits)


def _options(trace: dict[str, Any]) -> str:
    """The lettered options of a multiple-choice question (the trace's ``choices``), so a row
    saying "reference C, prediction A" shows what C and A were."""
    from eqa_runner.capabilities import CHOICES
    from eqa_runner.llm.choice import LETTERS, option_letters

    opts = trace.get(CHOICES)
    if not isinstance(opts, list) or not 1 <= len(opts) <= len(LETTERS):
        return ""
    return " · ".join(f"{k}. {o}" for k, o in zip(option_letters(len(opts)), opts, strict=True))


def _row(
    rec: EpisodeRecord, run_dir: Path, ep_dir: Path | None, thumbs: Thumbs, row_metrics: list[str]
) -> EpisodeRow:
    err = rec["status"] != "ok"
    judge = rec["judge_raw"] or ""
    if err:
        e = rec["error"]
        judge = f"ERROR {e['type'] if e else ''}: {e['message'] if e else ''}"
    return EpisodeRow(
        episode_id=str(rec["episode_id"]),
        category=str(rec["category"] or ""),
        score=_score(rec, row_metrics),
        question=str(rec["question"] or ""),
        answer=str(rec["answer"] or ""),
        prediction=str(rec["prediction"] or ""),
        judge=str(judge),
        exploration=_exploration(rec),
        options=_options(rec["trace"]),
        error=err,
        images=_images(rec, run_dir, ep_dir, thumbs),
        **episode_media(rec["trace"], run_dir, thumbs, str(rec["episode_id"])),
    )


def episode_section(run: Run, thumbs: Thumbs, max_episodes: int) -> Section:
    ep_dir = _episodes_dir(run)
    dirs = run.dirs or [run.path]
    if len(dirs) == 1 and run.head and len(run.head[0]) >= min(max_episodes, run.head[1]):
        head, total = run.head  # what records() read (one dir: the same records)
        recs = [(r, dirs[0]) for r in head]
    else:
        recs = []
        for d in dirs:
            recs += [(r, d) for r in load_records([d], run.records_file)]
        total = len(recs)
    shown = run.declaration().row_metrics()
    rows = [_row(rec, d, ep_dir, thumbs, shown) for rec, d in recs[:max_episodes]]
    return Section(run.short or run.label, rows, max(0, total - max_episodes), run.label)


def _notes(runs: list[Run]) -> list[str]:
    """Run notes and the summaries' warnings, each once, with the runs it applies to."""
    notes: dict[str, list[str]] = {}
    for r in runs:
        s = r.summary
        texts = list(r.notes) + [
            s[k] for k in ("offline_warning", "prompts_note", "metric_note") if s.get(k)
        ]
        for t in texts:
            notes.setdefault(str(t), []).append(r.short or r.label)
    return [
        f"{'all runs' if len(who) == len(runs) and len(runs) > 1 else '; '.join(who)}: {t}"
        for t, who in notes.items()
    ]


def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def forest_plots(runs: list[Run], paired: Paired) -> list[Markup]:
    """One forest plot per headline metric (units differ: percent, metres)."""
    base = runs[paired.baseline]
    how = "scenes resampled" if paired.method == "cluster" else "episodes resampled"
    plots = []
    for m in headline_metrics(runs):
        rows = [
            ForestRow(r.short or r.label, d.delta, d.lo, d.hi, d.p_value, d.n)
            for r, diffs in zip(runs, paired.diffs, strict=True)
            if (d := diffs.get(m)) is not None and d.delta is not None
        ]
        if rows:
            title = f"Δ {m} vs baseline {base.short or base.label} (paired, {how})"
            plots.append(forest_svg(rows, title=title, unit=m, digits=digits_of(runs, m)))
    return plots


def category_charts(runs: list[Run], decl: Declaration) -> list[dict[str, str]]:
    """One chart per metric the judges declare per category and the summaries hold a value of
    in some category (a headline without a breakdown gets no empty chart)."""
    charts = []
    for name in decl.per_category():
        spec = decl.get(name)
        uri = category_chart(
            runs,
            name,
            percent=spec is None or spec.scale == PERCENT,
            lower_better=spec is not None and not spec.higher_is_better,
        )
        if uri:
            charts.append({"uri": uri, "metric": name})
    return charts


def render(
    runs: list[Run],
    *,
    compare: bool,
    baseline: int = 0,
    max_episodes: int = 300,
    paired: Paired | None = None,
) -> str:
    metrics = headline_metrics(runs)
    forests: list[Markup] = []
    sweeps: list[Markup] = []
    paired_html = Markup("")
    paired_notes: list[str] = []
    if compare:
        if paired is None:
            paired = paired_differences(runs, baseline)
        table = compare_table(runs, baseline, paired)
        forests = forest_plots(runs, paired)
        sweeps = sweep_svgs(runs, runs_differing_keys(runs), metrics)
        pt = paired_table(runs, paired)
        if len(pt):
            paired_html = Markup(
                pt.to_html(index=False, na_rep="-", escape=True, classes="summary")
            )
        paired_notes = paired.notes + [
            f"warning: {w}" for w in stamp_warnings(runs, runs_differing_keys(runs), short=True)
        ]
        # the swept keys' columns name the rows (a Hydra sweep's dir names run to 80
        # characters); identical configs already get a "run" column of their dirs
    else:
        table = display_runs(runs_table(runs), metrics)
    decl = declarations(runs)
    charts = category_charts(runs, decl)
    thumbs = Thumbs()
    sections = [episode_section(r, thumbs, max_episodes) for r in runs]
    summary_table = table.to_html(index=False, na_rep="-", escape=True, classes="summary")
    values: dict[str, Any] = {
        "title": "eqa_runner comparison" if compare else f"eqa_runner report: {runs[0].label}",
        "summary_table": Markup(summary_table),  # pandas escaped the cells itself
        "notes": _notes(runs),
        "forests": forests,
        "sweeps": sweeps,
        "paired_table": paired_html,
        "paired_notes": paired_notes,
        "group": decl.category_label,  # e.g. question types, stored as the records' category
        "charts": charts,
        "categories": sorted({e.category for s in sections for e in s.episodes}),
        "score_levels": score_levels(sections),
        "sections": sections,
        "legends": map_legends(sections),
        "run_paths": json.dumps([str(r.path) for r in runs]),
    }
    return redact(_environment().get_template("report.html.j2").render(values))


def write_reports(
    runs: list[Run],
    *,
    compare: bool,
    out: Path | None = None,
    baseline: int = 0,
    max_episodes: int = 300,
    paired: Paired | None = None,
) -> list[Path]:
    """``--compare``: one report for all runs (default: their common parent); else one per run."""
    written = []
    if compare:
        dest = Path(out) if out else (common_parent([r.path for r in runs]) or Path("."))
        dest = dest / "report.html" if dest.suffix != ".html" else dest
        _write(
            dest,
            render(runs, compare=True, baseline=baseline, paired=paired, max_episodes=max_episodes),
        )
        return [dest]
    for r in runs:
        page = page_name(r)
        dest = r.path / page
        if out:
            dest = (
                Path(out) / f"{r.path.name}{page[len('report') :]}" if len(runs) > 1 else Path(out)
            )
            if dest.suffix != ".html":
                dest = dest / page
        _write(dest, render([r], compare=False, max_episodes=max_episodes))
        written.append(dest)
    return written


def page_name(run: Run) -> str:
    """``report.html``; a rejudged row's page ``report.rejudged-<tag>.html`` (it overwrote the
    original judge's page before)."""
    prefix, suffix = "episodes.rejudged-", ".jsonl"
    rf = run.records_file
    if rf.startswith(prefix) and rf.endswith(suffix):
        return f"report.rejudged-{rf[len(prefix) : -len(suffix)]}.html"
    return "report.html"


def _write(dest: Path, html: str) -> None:
    """Write one report; a place it cannot be written (a read-only run dir) is one line naming
    it and the fix (``--html-out``), and nothing else is touched."""
    from eqa_runner.errors import ReportError, UserError, os_error_line
    from eqa_runner.safe_io import write_atomic

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, html)  # the one writer: atomic, never through a link
    except UserError:
        raise
    except OSError as e:
        fix = "write the report elsewhere with --html-out <file.html or dir>"
        raise ReportError(os_error_line(dest, e, fix)) from None


# ----------------------------------------------------------------------------- --judges


def render_judges(rep: JudgesReport) -> str:
    """The judge-agreement page: per-judge table, agreement table, scatter per pair, and the
    episodes the judges disagree on most."""
    tables = judges_tables(rep)
    by_name = {j.name: j for j in rep.judges}
    scatters = []
    for p in rep.pairs:
        a, b = by_name[p.a], by_name[p.b]
        va, vb = a.scores.values.get(p.metric, {}), b.scores.values.get(p.metric, {})
        pts = [(va[k], vb[k]) for k in sorted(set(va) & set(vb))]
        g = p.agreement
        title = f"{p.metric}: ρ = {g.spearman:.2f}, n = {g.n}"
        scatters.append(
            agreement_svg(
                pts, xlabel=f"{p.a} ({p.metric})", ylabel=f"{p.b} ({p.metric})", title=title
            )
        )

    def html(df: Any) -> Markup:
        return Markup(df.to_html(index=False, na_rep="-", escape=True, classes="summary"))

    values = {
        "title": f"eqa_runner judges: {rep.run.label}",
        "judges_table": html(tables["judges"]),
        "agreement_table": html(tables["agreement"]),
        "disagreements": html(tables["disagreements"]) if len(tables["disagreements"]) else "",
        "scatters": scatters,
        "method": rep.method,
    }
    return _environment().get_template("judges.html.j2").render(values)


def write_judges_report(rep: JudgesReport, out: Path | None = None) -> Path:
    dest = Path(out) if out else rep.run.path / "judges.html"
    if dest.suffix != ".html":
        dest = dest / "judges.html"
    _write(dest, redact(render_judges(rep)))
    return dest
