"""Self-contained ``report.html``: summary, per-category chart, filterable episode table.

Everything is inlined (PNG chart and JPEG thumbnails as base64, a few lines of JS, CSS), so the
file can be mailed or opened offline.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

from eqa_runner.records import EPISODES_FILE, final_records, read_records
from eqa_runner.report.tables import (
    Run,
    _common_parent,
    _groups,
    compare_table,
    display_runs,
    headline_metrics,
    runs_table,
)

THUMB_PX = 160
MAX_THUMBS = 4

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top;font-size:13px}
th{background:#f0f0f0}
td.t{max-width:22em}
img.th{margin:1px;border:1px solid #999}
.note{color:#8a4b00}
#filters{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd}
tr.err td{background:#fde8e8}
.x{color:#555;font-size:12px;margin-top:.3em}
"""

JS = """
function applyFilters(){
  const cat=document.getElementById('fcat').value;
  const min=parseFloat(document.getElementById('fscore').value);
  let shown=0;
  document.querySelectorAll('tr.ep').forEach(tr=>{
    const s=parseFloat(tr.dataset.score);
    const ok=(cat===''||tr.dataset.category===cat)&&(isNaN(min)||(!isNaN(s)&&s>=min));
    tr.style.display=ok?'':'none'; if(ok) shown++;
  });
  document.getElementById('nshown').textContent=shown;
}
document.addEventListener('DOMContentLoaded',()=>{
  document.getElementById('fcat').addEventListener('change',applyFilters);
  document.getElementById('fscore').addEventListener('change',applyFilters);
  applyFilters();
});
"""


def _b64(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


class Thumbs:
    """JPEG thumbnails (longer side ``px``) as data URIs, cached by path."""

    def __init__(self, px: int = THUMB_PX) -> None:
        self.px = px
        self._cache: dict[Path, str | None] = {}

    def __call__(self, path: Path) -> str | None:
        path = Path(path)
        if path not in self._cache:
            self._cache[path] = self._make(path)
        return self._cache[path]

    def _make(self, path: Path) -> str | None:
        from PIL import Image

        try:
            with Image.open(path) as im:
                im = im.convert("RGB")
                im.thumbnail((self.px, self.px))
                buf = io.BytesIO()
                im.save(buf, "JPEG", quality=80)
        except Exception:
            return None
        return _b64(buf.getvalue(), "image/jpeg")


def category_chart(runs: list[Run], metric: str) -> str | None:
    """Bars per category (one colour per run) with 95% interval error bars, as a data URI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    per_run = [_groups(r.summary, "category") for r in runs]
    cats = sorted({c for g in per_run for c in g})
    if not cats:
        return None
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(cats) + 2), 3.6), dpi=100)
    x = np.arange(len(cats))
    for i, (r, groups) in enumerate(zip(runs, per_run, strict=False)):
        means, lo, hi = [], [], []
        for c in cats:
            m = (groups.get(c) or {}).get(metric) or {}
            mean = m.get("mean")
            ci = m.get("ci95") or [None, None]
            means.append(np.nan if mean is None else mean)
            lo.append(0 if mean is None or ci[0] is None else mean - ci[0])
            hi.append(0 if mean is None or ci[1] is None else ci[1] - mean)
        ax.bar(x + (i - (len(runs) - 1) / 2) * width, means, width, yerr=[lo, hi], capsize=3,
               label=(r.short or r.label)[:60])  # fmt: skip
    ax.set_xticks(x, [c.replace(" ", "\n") for c in cats], fontsize=8)
    ax.set_ylabel(f"{metric} (95% CI)")
    ax.set_ylim(0, 105 if metric != "d_T" else None)
    ax.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return _b64(buf.getvalue(), "image/png")


def _episodes_dir(config: dict[str, Any]) -> Path | None:
    task = config.get("task") or {}
    if task.get("episodes_dir"):
        return Path(task["episodes_dir"])
    if task.get("data_dir"):
        return Path(task["data_dir"]) / "episodes"
    return None


def _score(rec: dict[str, Any]) -> float | None:
    m = rec.get("metrics") or {}
    for k in ("score_1to5", "c", "delta"):
        if m.get(k) is not None:
            return float(m[k])
    return None


def _images(rec: dict[str, Any], run_dir: Path, ep_dir: Path | None, thumbs: Thumbs) -> list[str]:
    trace = rec.get("trace") or {}
    paths: list[Path] = []
    frames = trace.get("frames") or []
    if frames and ep_dir is not None:
        k = min(MAX_THUMBS, len(frames))
        idx = sorted({round(i * (len(frames) - 1) / max(1, k - 1)) for i in range(k)})
        paths += [ep_dir / frames[i] for i in idx]
    paths += [run_dir / p for p in (trace.get("judge_images") or [])[:MAX_THUMBS]]
    if trace.get("topdown"):
        paths.append(run_dir / trace["topdown"])
    out = []
    for p in paths:
        uri = thumbs(p)
        if uri:
            out.append(f'<img class="th" src="{uri}" alt="{html.escape(p.name)}" '
                       f'title="{html.escape(str(p))}">')  # fmt: skip
    return out


def _exploration_line(rec: dict[str, Any]) -> str:
    """EXPRESS episodes: path length vs the reference, final distance to the goal, steps."""
    m = rec.get("metrics") or {}
    tr = rec.get("trace") or {}
    path = m.get("path_len", tr.get("path_len"))
    if path is None:
        return ""
    ref = m.get("gt_geodesic", tr.get("gt_geodesic"))
    d_t = m.get("d_t", tr.get("d_t"))
    steps = m.get("steps_taken", tr.get("steps_taken"))
    bits = [f"path {path:.1f} m" + (f" (ref {ref:.1f} m)" if ref is not None else "")]
    if d_t is not None:
        bits.append(f"d_T {d_t:.2f} m")
    if steps is not None:
        bits.append(f"{int(steps)} steps" + (f", {tr['stop_reason']}" if tr.get("stop_reason")
                                             else ""))  # fmt: skip
    return f'<div class="x">{html.escape("; ".join(bits))}</div>'


def episode_rows(run: Run, thumbs: Thumbs, max_episodes: int) -> tuple[list[str], set[str]]:
    rows, cats = [], set()
    ep_dir = _episodes_dir(run.config)
    recs: list[tuple[dict[str, Any], Path]] = []
    for d in run.dirs or [run.path]:
        recs += [(r, d) for r in final_records(read_records(d / EPISODES_FILE)).values()]
    for rec, d in recs[:max_episodes]:
        cat = str(rec.get("category") or "")
        cats.add(cat)
        score = _score(rec)
        err = rec.get("status") != "ok"
        judge = rec.get("judge_raw") or ""
        if err:
            e = rec.get("error") or {}
            judge = f"ERROR {e.get('type', '')}: {e.get('message', '')}"
        judge_cell = html.escape(str(judge)) + _exploration_line(rec)
        cells = [
            html.escape(str(rec.get("episode_id"))),
            html.escape(cat),
            "-" if score is None else f"{score:g}",
            html.escape(str(rec.get("question") or "")),
            html.escape(str(rec.get("answer") or "")),
            html.escape(str(rec.get("prediction") or "")),
            judge_cell,
            "".join(_images(rec, d, ep_dir, thumbs)),
        ]
        tds = "".join(
            f'<td class="t">{c}</td>' if i in (3, 4, 5, 6) else f"<td>{c}</td>"
            for i, c in enumerate(cells)
        )
        rows.append(
            f'<tr class="ep{" err" if err else ""}" data-run="{html.escape(run.label)}" '
            f'data-category="{html.escape(cat, quote=True)}" '
            f'data-score="{"" if score is None else score}">{tds}</tr>'
        )
    if len(recs) > max_episodes:
        rows.append(f'<tr><td colspan="8">… {len(recs) - max_episodes} more episodes not shown '
                    "(--max-episodes)</td></tr>")  # fmt: skip
    return rows, cats


def render(runs: list[Run], *, compare: bool, baseline: int = 0, max_episodes: int = 300) -> str:
    metrics = headline_metrics(runs)
    if compare:
        table = compare_table(runs, baseline)
        if "run" not in table.columns:  # identical configs already get a "run" column
            table.insert(0, "run", [r.label for r in runs])
    else:
        table = display_runs(runs_table(runs), metrics)
    title = "eqa_runner comparison" if compare else f"eqa_runner report: {runs[0].label}"
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Summary</h2>",
        table.to_html(index=False, na_rep="-", escape=True, classes="summary"),
    ]
    notes: dict[str, list[str]] = {}
    for r in runs:
        s = r.summary
        texts = list(r.notes) + [s[k] for k in ("offline_warning", "prompts_note", "metric_note")
                                 if s.get(k)]  # fmt: skip
        for t in texts:
            notes.setdefault(str(t), []).append(r.short or r.label)
    if notes:
        items = [
            f"{'all runs' if len(who) == len(runs) and len(runs) > 1 else '; '.join(who)}: {t}"
            for t, who in notes.items()
        ]
        parts.append("<ul>" + "".join(f'<li class="note">{html.escape(n)}</li>' for n in items)
                     + "</ul>")  # fmt: skip
    # EXPRESS groups its questions by type (stored in the records' category field)
    group = "question type" if "E_path" in metrics else "category"
    parts.append(f"<h2>By {group}</h2>")
    for m in metrics[:1] if len(metrics) < 2 else [m for m in metrics if m != "d_T"][:2]:
        uri = category_chart(runs, m)
        if uri:
            parts.append(f'<img class="chart" src="{uri}" alt="{html.escape(m)} by {group}">')
    thumbs = Thumbs()
    all_rows, cats = [], set()
    for r in runs:
        rows, c = episode_rows(r, thumbs, max_episodes)
        cats |= c
        if len(runs) > 1:
            all_rows.append(f'<tr><th colspan="8">{html.escape(r.label)}</th></tr>')
        all_rows += rows
    opts = "".join(f'<option value="{html.escape(c, quote=True)}">{html.escape(c)}</option>'
                   for c in sorted(cats))  # fmt: skip
    score_opts = "".join(f'<option value="{v}">score &ge; {v}</option>' for v in (1, 2, 3, 4, 5))
    parts += [
        "<h2>Episodes</h2>",
        f'<div id="filters">{group} <select id="fcat"><option value="">all</option>'
        f"{opts}</select> minimum score <select id='fscore'><option value=''>any</option>"
        f"{score_opts}</select> — <span id='nshown'></span> shown</div>",
        f'<table id="episodes"><thead><tr><th>episode</th><th>{group}</th><th>score</th>'
        "<th>question</th><th>reference</th><th>prediction</th><th>judge reply</th>"
        "<th>frames</th></tr></thead><tbody>",
        *all_rows,
        "</tbody></table>",
        f"<script>{JS}</script>",
        f"<!-- runs: {html.escape(json.dumps([str(r.path) for r in runs]))} -->",
        "</body></html>",
    ]
    return "\n".join(parts)


def write_reports(
    runs: list[Run],
    *,
    compare: bool,
    out: Path | None = None,
    baseline: int = 0,
    max_episodes: int = 300,
) -> list[Path]:
    """``--compare``: one report for all runs (default: their common parent); else one per run."""
    written = []
    if compare:
        dest = Path(out) if out else (_common_parent([r.path for r in runs]) or Path("."))
        dest = dest / "report.html" if dest.suffix != ".html" else dest
        dest.write_text(render(runs, compare=True, baseline=baseline,
                               max_episodes=max_episodes), encoding="utf-8")  # fmt: skip
        return [dest]
    for r in runs:
        dest = r.path / "report.html"
        if out:
            dest = Path(out) / f"{r.path.name}.html" if len(runs) > 1 else Path(out)
            if dest.suffix != ".html":
                dest = dest / "report.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(render([r], compare=False, max_episodes=max_episodes), encoding="utf-8")
        written.append(dest)
    return written
