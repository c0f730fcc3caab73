"""Sweep figures for ``report --compare --html``: each compared metric against each swept key.

One inline SVG per (swept key, headline metric): a point per run at its value of the key (a
numeric axis when every value is a number, else one slot per distinct value, in sweep order)
with its 95% interval as a vertical bar. Runs that share a value but differ in another swept
key sit side by side in the slot and their label is the tooltip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from eqa_runner.report.figures import _num, _ticks
from eqa_runner.report.keys import cell, flatten
from eqa_runner.report.runs import Run

PALETTE = ("#1f4e9c", "#c0392b", "#16a085", "#8e44ad", "#d35400", "#2c3e50")


@dataclass
class SweepPoint:
    x: str  # the key's value as shown
    mean: float
    lo: float | None
    hi: float | None
    label: str  # the run's label (tooltip)


def key_value(run: Run, key: str) -> str:
    """A run's value of a swept key: a group choice (``policy``) or a dotted config key."""
    if key in run.choices:
        return str(run.choices[key])
    return cell(flatten(run.config).get(key))


def _number(v: str) -> float | None:
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def sweep_points(runs: list[Run], key: str, metric: str) -> list[SweepPoint]:
    out = []
    for r in runs:
        m = (r.summary.get("headline") or {}).get(metric)
        if not isinstance(m, dict) or m.get("mean") is None:
            continue
        lo, hi = (m.get("ci95") or [None, None])[:2]
        out.append(SweepPoint(key_value(r, key), float(m["mean"]), lo, hi, r.short or r.label))
    return out


def sweep_svg(points: list[SweepPoint], *, key: str, metric: str) -> Markup:
    """The metric (y, with intervals) against the key's values (x)."""
    nums = [_number(p.x) for p in points]
    numeric = all(v is not None for v in nums) and len(set(nums)) > 1
    slots = list(dict.fromkeys(p.x for p in points))
    pw, ph, left, top, bottom = 460, 220, 64, 34, 58
    w, h = left + pw + 24, top + ph + bottom
    if numeric:
        xs = [v for v in nums if v is not None]
        x_lo, x_hi = min(xs), max(xs)
        pad = (x_hi - x_lo) * 0.08 or 1.0
        x_lo, x_hi = x_lo - pad, x_hi + pad
    ys = [v for p in points for v in (p.mean, p.lo, p.hi) if v is not None]
    y_lo, y_hi = min(ys), max(ys)
    ypad = (y_hi - y_lo) * 0.1 or 1.0
    y_lo, y_hi = y_lo - ypad, y_hi + ypad

    def sx(p: SweepPoint, k: int, n: int) -> float:
        if numeric:
            base = left + (float(p.x) - x_lo) / (x_hi - x_lo) * pw
        else:
            base = left + (slots.index(p.x) + 0.5) * pw / len(slots)
        return base + (k - (n - 1) / 2) * 9

    sy = lambda v: top + ph - (v - y_lo) / (y_hi - y_lo) * ph  # noqa: E731
    title = f"{metric} vs {key}"
    out = [
        f'<svg class="sweep" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="10" y="18" font-weight="bold">{escape(title)} (95% intervals)</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#ccc"/>',
    ]
    out += _y_axis(y_lo + ypad, y_hi - ypad, sy, left, pw)
    out += _x_axis(
        points,
        slots,
        numeric,
        sx,
        top + ph,
        x_lo if numeric else 0,
        x_hi if numeric else 1,
        left,
        pw,
    )
    out.append(
        f'<text x="{left + pw / 2}" y="{h - 8}" text-anchor="middle" fill="#333">'
        f"{escape(key)}</text>"
    )
    if numeric:
        out += _lines(points, sx, sy)
    out += _points(points, sx, sy)
    out.append("</svg>")
    return Markup("\n".join(out))


def _y_axis(lo: float, hi: float, sy: Any, left: int, pw: int) -> list[str]:
    out = []
    for t in _ticks(lo, hi):
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" '
            'stroke="#f0f0f0"/>'
        )
        out.append(
            f'<text x="{left - 6}" y="{sy(t) + 4:.1f}" text-anchor="end" fill="#555">'
            f"{_num(t)}</text>"
        )
    return out


def _x_axis(
    points: list[SweepPoint],
    slots: list[str],
    numeric: bool,
    sx: Any,
    y: float,
    x_lo: float,
    x_hi: float,
    left: int,
    pw: int,
) -> list[str]:
    out = []
    if numeric:
        ints = all(float(p.x).is_integer() for p in points)
        for t in _ticks(x_lo, x_hi):
            if ints and not float(t).is_integer():
                continue  # integer keys (seeds, step counts) get integer ticks only
            x = left + (t - x_lo) / (x_hi - x_lo) * pw
            out.append(
                f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle" fill="#555">{_num(t)}</text>'
            )
        return out
    for i, s in enumerate(slots):
        x = left + (i + 0.5) * pw / len(slots)
        text = s if len(s) <= 18 else s[:17] + "…"
        out.append(
            f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle" fill="#555">'
            f"{escape(text)}<title>{escape(s)}</title></text>"
        )
    return out


def series(points: list[SweepPoint]) -> list[list[tuple[int, SweepPoint]]]:
    """The points as lines: the k-th run at each value of the key is on line k (its colour),
    so a key swept alone (or with keys that follow it, ``sim.seed`` with ``run.seed``) is one
    line, and a second swept key's values are one line each; in key order."""
    out: dict[int, list[tuple[int, SweepPoint]]] = {}
    for x in dict.fromkeys(p.x for p in points):
        for k, p in enumerate(q for q in points if q.x == x):
            out.setdefault(k, []).append((k, p))
    return [sorted(ps, key=lambda kp: float(kp[1].x)) for _, ps in sorted(out.items())]


def _lines(points: list[SweepPoint], sx: Any, sy: Any) -> list[str]:
    """A numeric key: each series' means joined by a line over a band of its intervals."""
    out = []
    for i, ps in enumerate(series(points)):
        if len(ps) < 2:
            continue
        color = PALETTE[i % len(PALETTE)]
        n = {p.x: sum(1 for q in points if q.x == p.x) for _, p in ps}
        xy = [(sx(p, k, n[p.x]), p) for k, p in ps]
        if all(p.lo is not None and p.hi is not None for _, p in xy):
            band = [f"{x:.1f},{sy(p.hi):.1f}" for x, p in xy]
            band += [f"{x:.1f},{sy(p.lo):.1f}" for x, p in reversed(xy)]
            out.append(
                f'<polygon class="band" points="{" ".join(band)}" fill="{color}" '
                'fill-opacity="0.12" stroke="none"/>'
            )
        line = " ".join(f"{x:.1f},{sy(p.mean):.1f}" for x, p in xy)
        out.append(
            f'<polyline class="line" points="{line}" fill="none" stroke="{color}" '
            'stroke-width="1.5"/>'
        )
    return out


def _points(points: list[SweepPoint], sx: Any, sy: Any) -> list[str]:
    out = []
    for x in dict.fromkeys(p.x for p in points):
        group = [p for p in points if p.x == x]
        for k, p in enumerate(group):
            cx, color = sx(p, k, len(group)), PALETTE[k % len(PALETTE)]
            tip = f"{p.label}: {p.mean:.2f}"
            if p.lo is not None and p.hi is not None:
                tip += f" [{p.lo:.2f}, {p.hi:.2f}]"
                out.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{sy(p.lo):.1f}" '
                    f'y2="{sy(p.hi):.1f}" stroke="{color}" stroke-width="2"/>'
                )
            out.append(
                f'<circle cx="{cx:.1f}" cy="{sy(p.mean):.1f}" r="5" fill="{color}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    return out


def sweep_svgs(runs: list[Run], keys: list[str], metrics: list[str]) -> list[Markup]:
    """One figure per swept key and headline metric (keys with a single value are skipped, and
    so is a key that follows an earlier one: ``sim.seed`` set from ``run.seed``)."""
    out = []
    seen: set[tuple[int, ...]] = set()
    for key in keys:
        values = [key_value(r, key) for r in runs]
        partition = tuple(values.index(v) for v in values)  # which runs share a value
        if len(set(values)) < 2 or partition in seen:
            continue
        seen.add(partition)
        for m in metrics:
            pts = sweep_points(runs, key, m)
            if len(pts) >= 2:
                out.append(sweep_svg(pts, key=key, metric=m))
    return out
