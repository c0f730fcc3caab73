"""Pictures for ``report.html``: the per-category chart and frame thumbnails as ``data:`` URIs,
the forest plot of paired differences and the judge-agreement scatter as inline SVG."""

from __future__ import annotations

import base64
import io
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from eqa_runner.report.runs import Run
from eqa_runner.report.tables import groups

THUMB_PX = 160
MAX_LABEL = 60  # characters of a forest-plot row label (the full label is its tooltip)


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def file_uri(path: Path, mime: str, max_bytes: int = 4_000_000) -> str | None:
    """A file as a data URI (None when missing or larger than ``max_bytes``)."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        return data_uri(path.read_bytes(), mime)
    except OSError:
        return None


class Thumbs:
    """JPEG thumbnails (longer side ``px``) as data URIs, cached by path."""

    def __init__(self, px: int = THUMB_PX) -> None:
        self.px = px
        self._cache: dict[Path, str | None] = {}

    def __call__(self, path: Path) -> str | None:
        path = Path(path)
        if path not in self._cache:
            self._cache[path] = self._make(path, self.px)
        return self._cache[path]

    def small(self, path: Path) -> str | None:
        """A step-strip thumbnail (half the size of the others)."""
        return self._make(Path(path), self.px // 2)

    def _make(self, path: Path, px: int) -> str | None:
        from PIL import Image

        try:
            with Image.open(path) as im:
                im = im.convert("RGB")
                im.thumbnail((px, px))
                buf = io.BytesIO()
                im.save(buf, "JPEG", quality=80)
        except Exception:
            return None
        return data_uri(buf.getvalue(), "image/jpeg")


def category_chart(
    runs: list[Run], metric: str, *, percent: bool = True, lower_better: bool = False
) -> str | None:
    """Bars per category (one colour per run) with 95% interval error bars, as a data URI;
    None when no run has a value of ``metric`` in a category (nothing to draw)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    per_run = [groups(r.summary, "category") for r in runs]
    cats = sorted(
        {
            c
            for g in per_run
            for c, ms in g.items()
            if (ms.get(metric) or {}).get("mean") is not None
        }
    )
    if not cats:
        return None
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(cats) + 2), 3.6), dpi=100)
    x = np.arange(len(cats))
    for i, (r, by_cat) in enumerate(zip(runs, per_run, strict=False)):
        means, lo, hi = _bar_values(by_cat, cats, metric)
        bars = ax.bar(
            x + (i - (len(runs) - 1) / 2) * width,
            means,
            width,
            yerr=[lo, hi],
            capsize=3,
            label=(r.short or r.label)[:60],
        )
        # each bar's mean as text: a bar at 0 (nobody right) still shows it has a value
        ax.bar_label(
            bars,
            labels=["" if np.isnan(m) else f"{m:.{1 if percent else 2}f}" for m in means],
            fontsize=7,
            padding=2,
        )
    ax.set_xticks(x, [c.replace(" ", "\n") for c in cats], fontsize=8)
    ax.set_ylabel(f"{metric} (95% CI{', lower is better' if lower_better else ''})")
    ax.set_ylim(0, 105 if percent else None)
    ax.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return data_uri(buf.getvalue(), "image/png")


def _bar_values(
    by_cat: dict[str, Any], cats: list[str], metric: str
) -> tuple[list[float], list[float], list[float]]:
    """One run's bar heights per category (NaN where it has no value) and the error bars' lower
    and upper lengths (0 where the interval is missing)."""
    means: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    for c in cats:
        m = (by_cat.get(c) or {}).get(metric) or {}
        mean = m.get("mean")
        ci = m.get("ci95") or [None, None]
        means.append(math.nan if mean is None else mean)
        lo.append(0 if mean is None or ci[0] is None else mean - ci[0])
        hi.append(0 if mean is None or ci[1] is None else ci[1] - mean)
    return means, lo, hi


# ----------------------------------------------------------------------------- inline SVG


@dataclass
class ForestRow:
    """One line of a forest plot: a run's Δ to the baseline with its interval."""

    label: str
    delta: float
    lo: float | None
    hi: float | None
    p: float | None
    n: int


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    span = hi - lo if hi > lo else 1.0
    raw = span / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _num(v: float) -> str:
    return f"{v:g}" if abs(v) >= 1 or v == 0 else f"{v:.2g}"


def forest_svg(rows: Sequence[ForestRow], *, title: str, unit: str = "", digits: int = 1) -> Markup:
    """A forest plot: per row the paired Δ (square) and its 95% interval (line), a dashed
    line at 0, and the numbers on the right. Dark blue: the interval excludes 0 and p < 0.05
    (with few clusters the percentile interval can exclude 0 while p cannot be small)."""
    longest = max((len(r.label) for r in rows), default=10)
    lw = int(min(MAX_LABEL, max(12, longest)) * 6.6) + 20
    pw, rw, rh, top, bottom = 420, 280, 26, 46, 40
    h = top + rh * len(rows) + bottom
    w = lw + pw + rw
    pts = [0.0] + [v for r in rows for v in (r.delta, r.lo, r.hi) if v is not None]
    lo, hi = min(pts), max(pts)
    pad = (hi - lo) * 0.08 or 1.0
    lo, hi = lo - pad, hi + pad
    x = lambda v: lw + (v - lo) / (hi - lo) * pw  # noqa: E731
    out = [
        f'<svg class="forest" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="10" y="16" font-weight="bold">{escape(title)}</text>',
    ]
    y0, y1 = top, top + rh * len(rows)
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{y0}" y2="{y1}" stroke="#eee"/>')
        out.append(
            f'<text x="{x(t):.1f}" y="{y1 + 16}" text-anchor="middle" fill="#555">{_num(t)}</text>'
        )
    out.append(
        f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{y0 - 4}" y2="{y1}" stroke="#888" '
        'stroke-dasharray="4 3"/>'
    )
    out.append(
        f'<text x="{lw + pw / 2}" y="{y1 + 34}" text-anchor="middle" fill="#333">'
        f"Δ {escape(unit)} (run − baseline), 95% interval</text>"
    )
    out.append(f'<text x="{lw + pw + 10}" y="{top - 8}" fill="#555">Δ [95% CI]  p  n</text>')
    for i, r in enumerate(rows):
        out += _forest_row(r, top + rh * i + rh / 2, x, lw, pw, digits)
    out.append("</svg>")
    return Markup("\n".join(out))


def _forest_row(
    r: ForestRow, cy: float, x: Callable[[float], float], lw: int, pw: int, k: int
) -> list[str]:
    """One forest-plot row centred at ``cy``: its label left of ``lw``, the interval and the
    square on the plot ``pw`` wide, and the numbers (``k`` digits) on the right."""
    sig = r.lo is not None and r.hi is not None and (r.lo > 0 or r.hi < 0)
    sig = sig and r.p is not None and r.p < 0.05
    color = "#1f4e9c" if sig else "#777"
    label = r.label if len(r.label) <= MAX_LABEL else r.label[: MAX_LABEL - 1] + "…"
    out = [
        f'<text x="{lw - 10}" y="{cy + 4:.1f}" text-anchor="end">{escape(label)}'
        f"<title>{escape(r.label)}</title></text>"
    ]
    if r.lo is not None and r.hi is not None:
        out.append(
            f'<line x1="{x(r.lo):.1f}" x2="{x(r.hi):.1f}" y1="{cy:.1f}" '
            f'y2="{cy:.1f}" stroke="{color}" stroke-width="2"/>'
        )
        for v in (r.lo, r.hi):
            out.append(
                f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{cy - 5:.1f}" '
                f'y2="{cy + 5:.1f}" stroke="{color}" stroke-width="2"/>'
            )
    out.append(
        f'<rect x="{x(r.delta) - 5:.1f}" y="{cy - 5:.1f}" width="10" height="10" fill="{color}"/>'
    )
    ci = "" if r.lo is None or r.hi is None else f" [{r.lo:+.{k}f}, {r.hi:+.{k}f}]"
    p = "=-" if r.p is None else ("<0.001" if r.p < 0.001 else f"={r.p:.3f}")
    out.append(
        f'<text x="{lw + pw + 10}" y="{cy + 4:.1f}" fill="{color}">'
        f"{r.delta:+.{k}f}{ci}  p{p}  n={r.n}</text>"
    )
    return out


def agreement_svg(
    points: Sequence[tuple[float, float]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    size: int = 360,
) -> Markup:
    """Judge b's per-episode score against judge a's: one bubble per distinct (a, b) pair,
    its area proportional to the number of episodes (written inside), and the diagonal."""
    counts = Counter((float(a), float(b)) for a, b in points)
    vals = [v for ab in counts for v in ab] or [0.0, 1.0]
    lo, hi = min(vals), max(vals)
    if lo >= 0 and hi <= 100 and hi > 5:
        lo, hi = 0.0, 100.0
    pad = (hi - lo) * 0.08 or 1.0
    lo, hi = lo - pad, hi + pad
    m, pw = 56, size
    w, h = m + pw + 20, 30 + pw + m
    sx = lambda v: m + (v - lo) / (hi - lo) * pw  # noqa: E731
    sy = lambda v: 30 + pw - (v - lo) / (hi - lo) * pw  # noqa: E731
    out = [
        f'<svg class="scatter" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{m}" y="18" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{m}" y="30" width="{pw}" height="{pw}" fill="none" stroke="#ccc"/>',
    ]
    for t in _ticks(lo + pad, hi - pad):
        out.append(
            f'<text x="{sx(t):.1f}" y="{30 + pw + 16}" text-anchor="middle" '
            f'fill="#555">{_num(t)}</text>'
        )
        out.append(
            f'<text x="{m - 6}" y="{sy(t) + 4:.1f}" text-anchor="end" fill="#555">{_num(t)}</text>'
        )
        out.append(
            f'<line x1="{m}" x2="{m + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#f0f0f0"/>'
        )
    out.append(
        f'<line x1="{sx(lo):.1f}" y1="{sy(lo):.1f}" x2="{sx(hi):.1f}" y2="{sy(hi):.1f}" '
        'stroke="#888" stroke-dasharray="4 3"/>'
    )
    out += _bubbles(counts, sx, sy, pw / 14)
    out.append(
        f'<text x="{m + pw / 2}" y="{30 + pw + 36}" text-anchor="middle">{escape(xlabel)}</text>'
    )
    out.append(
        f'<text transform="translate(14 {30 + pw / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(ylabel)}</text>'
    )
    out.append("</svg>")
    return Markup("\n".join(out))


def _bubbles(
    counts: Counter[tuple[float, float]],
    sx: Callable[[float], float],
    sy: Callable[[float], float],
    rmax: float,
) -> list[str]:
    """One circle per (a, b) pair, its area proportional to its count (written inside when it
    fits): blue on the diagonal, red off it."""
    out: list[str] = []
    big = max(counts.values(), default=1)
    for (a, b), k in sorted(counts.items()):
        r = max(3.0, rmax * math.sqrt(k / big))
        color = "#1f4e9c" if a == b else "#c0392b"
        out.append(
            f'<circle cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="{r:.1f}" fill="{color}" '
            f'fill-opacity="0.55"><title>a={_num(a)}, b={_num(b)}: {k} episodes'
            "</title></circle>"
        )
        if r >= 9:
            out.append(
                f'<text x="{sx(a):.1f}" y="{sy(b) + 4:.1f}" text-anchor="middle" '
                f'fill="#fff" font-size="11">{k}</text>'
            )
    return out
