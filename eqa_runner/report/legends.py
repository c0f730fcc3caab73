"""The map legends of a report page: one per map style shown (the trajectory map, the frontier
planner's top-down maps), each mark as a small SVG swatch beside its meaning
(:data:`eqa_runner.mapping.trajectory.LEGEND`, :data:`eqa_runner.mapping.topdown.LEGEND`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup


def map_legends(sections: Sequence[Any]) -> list[dict[str, Any]]:
    """One legend per map style on the page's ``sections`` (``report.html.Section``: the
    trajectory map; fbe's top-down maps), each mark as a small SVG swatch beside its meaning."""
    from eqa_runner.mapping import topdown, trajectory

    styles: list[tuple[str, Sequence[tuple[str, tuple[int, int, int], str]]]] = []
    if any(e.map and e.map.alt == "trajectory map" for s in sections for e in s.episodes):
        styles.append(("trajectory map", trajectory.LEGEND))
    if any(e.topdown for s in sections for e in s.episodes):
        styles.append(("top-down maps (frontier planner)", topdown.LEGEND))
    if not any(
        "GOE" in e.map_caption or "regions seen" in e.map_caption
        for s in sections
        for e in s.episodes
    ):
        styles = [(n, [m for m in lg if "fine_eqa" not in m[2]]) for n, lg in styles]
    return [
        {"name": name, "marks": [(_swatch(shape, rgb), label) for shape, rgb, label in legend]}
        for name, legend in styles
    ]


def _swatch(shape: str, rgb: tuple[int, int, int]) -> Markup:
    c = "#{:02x}{:02x}{:02x}".format(*rgb)
    body = {
        "circle": f"<circle cx='7' cy='7' r='5' fill='{c}' stroke='#fff'/>",
        "ring": f"<circle cx='7' cy='7' r='5' fill='#fff' stroke='{c}' stroke-width='2'/>",
        "line": "<line x1='0' y1='7' x2='14' y2='7' stroke='#7dafeb' stroke-width='3'/>"
        f"<line x1='7' y1='7' x2='14' y2='7' stroke='{c}' stroke-width='3'/>",
        "dash": f"<line x1='0' y1='7' x2='14' y2='7' stroke='{c}' stroke-width='2' "
        "stroke-dasharray='3 2'/>",
        "triangle": f"<polygon points='2,12 7,2 12,12' fill='{c}'/>",
        "diamond": f"<polygon points='7,1 13,7 7,13 1,7' fill='{c}'/>",
    }.get(shape, f"<rect x='1' y='1' width='12' height='12' fill='{c}' stroke='#999'/>")
    return Markup(f"<svg width='14' height='14' viewBox='0 0 14 14'>{body}</svg>")
