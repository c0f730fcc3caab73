"""Trajectory maps: one small top-down PNG per episode from its recorded trace.

The picture is drawn from trace fields only (``steps[*].position``, ``final_position``,
``goal_position``, ``d_t``; a step "asked a model" when it recorded a ``*_reply``) over the
scene's :class:`~eqa_runner.sim.base.NavigableMap` (the simulator's capability), which
:class:`SceneMaps` keeps once per scene and floor for the whole run. Nothing here names a
benchmark: any exploration task whose trace has these fields gets a map.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from eqa_runner.sim.base import NavigableMap, Simulator

COLORS = {
    "outside": (255, 255, 255),
    "obstacle": (96, 96, 96),
    "floor": (226, 232, 222),
    "path": (40, 80, 200),
    "step": (40, 80, 200),
    "asked": (255, 150, 0),
    "start": (0, 160, 60),
    "goal": (210, 20, 40),
    "final": (20, 20, 20),
    "text": (20, 20, 20),
    "goal_hop": (200, 0, 160),  # a goal-oriented hop (source "goe*", policy=fine_eqa)
}
# region discs (a trace's ``region_points``), one colour per region name in order of appearance
REGION_COLORS = [(170, 210, 255), (180, 235, 170), (255, 215, 160), (230, 190, 240),
                 (255, 190, 190), (200, 200, 140), (160, 225, 225), (220, 220, 220)]  # fmt: skip
OBSTACLE_M = 0.6  # non-navigable cells this close to the floor are drawn as obstacles
FLOOR_BAND_M = 1.0  # trajectory points farther than this from the drawn floor are dropped
MAX_PX = 320  # the longer side of a map image
MARGIN_M = 0.5
HEADER_PX = 14  # a strip above the map for its one-line caption
_BACKGROUNDS: dict[int, tuple[NavigableMap, np.ndarray]] = {}  # per raster, drawn once


class SceneMaps:
    """The run's navigable maps, one per (scene, floor band); thread-safe, filled lazily.

    :meth:`get` runs on the simulator's own thread (it calls the simulator) while the caller
    holds the scene; every later episode of that scene and floor reuses the raster.
    """

    def __init__(self, cell_m: float = 0.1, band_m: float = 0.5) -> None:
        self.cell_m = float(cell_m)
        self.band_m = float(band_m)
        self._maps: dict[tuple[str, int], NavigableMap] = {}
        self._lock = threading.Lock()
        self.built = 0  # rasters computed (the rest were cache hits)

    def key(self, scene_key: str, floor_y: float) -> tuple[str, int]:
        return str(scene_key), int(math.floor(float(floor_y) / self.band_m + 0.5))

    def get(self, sim: Simulator, scene_key: str, floor_y: float) -> NavigableMap | None:
        """The raster of ``scene_key``'s floor at ``floor_y``; None when the simulator has none."""
        k = self.key(scene_key, floor_y)
        with self._lock:
            hit = self._maps.get(k)
        if hit is not None:
            return hit
        try:
            nav = sim.navigable_map(float(floor_y), self.cell_m)
        except NotImplementedError:
            return None
        with self._lock:
            self.built += 1
            return self._maps.setdefault(k, nav)


@dataclass(frozen=True)
class TracePoints:
    """What a trace says about where the agent went (habitat frame)."""

    path: np.ndarray  # (n, 3) the agent's positions, step by step, then the final one
    asked: list[int]  # indices into ``path`` of steps where a model was asked
    goal: np.ndarray | None
    d_t: float | None
    sources: list[str] = field(default_factory=list)  # each step's waypoint source
    regions: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (name, position)
    region_radius_m: float = 1.0


def _asked(step: Mapping[str, Any]) -> bool:
    """A step asked a model when it recorded a reply (``stop_reply``, ``answer_reply`` ...)."""
    for k, v in step.items():
        if k.endswith("_reply") and v is not None:
            return True
        if isinstance(v, Mapping) and _asked(v):
            return True
    return False


def trace_points(trace: Mapping[str, Any]) -> TracePoints | None:
    """The path, model-asked steps, goal and d_T of a trace; None without recorded positions."""
    steps = [s for s in trace.get("steps") or [] if isinstance(s, Mapping) and s.get("position")]
    pts = [list(map(float, s["position"])) for s in steps]
    asked = [i for i, s in enumerate(steps) if _asked(s)]
    final = trace.get("final_position")
    if final and (not pts or not np.allclose(pts[-1], final)):
        pts.append(list(map(float, final)))
    if not pts:
        return None
    goal = trace.get("goal_position")
    d_t = trace.get("d_t")
    regions = [
        (str(r["region"]), np.asarray(r["position"], dtype=float).reshape(3))
        for r in trace.get("region_points") or []
        if isinstance(r, Mapping) and r.get("position") is not None
    ]
    return TracePoints(
        path=np.asarray(pts, dtype=float).reshape(-1, 3),
        asked=asked,
        goal=None if not goal else np.asarray(goal, dtype=float).reshape(3),
        d_t=None if d_t is None or not math.isfinite(float(d_t)) else float(d_t),
        sources=[str(s.get("source") or "") for s in steps],
        regions=regions,
        region_radius_m=float(trace.get("region_radius_m") or 1.0),
    )


def background(nav: NavigableMap) -> np.ndarray:
    """(nz, nx, 3) image rows = z, columns = x: floor, obstacles near it, outside (computed
    once per raster: every episode of a scene shares it)."""
    hit = _BACKGROUNDS.get(id(nav))
    if hit is not None and hit[0] is nav:
        return hit[1]
    img = _background(nav)
    if len(_BACKGROUNDS) >= 8:
        _BACKGROUNDS.pop(next(iter(_BACKGROUNDS)))
    _BACKGROUNDS[id(nav)] = (nav, img)
    return img


def _background(nav: NavigableMap) -> np.ndarray:
    from scipy.ndimage import distance_transform_edt

    free = np.asarray(nav.navigable, dtype=bool)
    near = distance_transform_edt(~free) * nav.cell_m <= OBSTACLE_M if free.any() else free
    img = np.empty((*free.shape, 3), dtype=np.uint8)
    img[:] = COLORS["outside"]
    img[near & ~free] = COLORS["obstacle"]
    img[free] = COLORS["floor"]
    return np.ascontiguousarray(np.transpose(img, (1, 0, 2)))


def _crop(nav: NavigableMap, pts: np.ndarray) -> tuple[int, int, int, int]:
    """Cell window (i0, i1, j0, j1) around the floor and the points, with a margin."""
    ii, jj = np.nonzero(nav.navigable)
    c, (x0, z0) = nav.cell_m, nav.origin_xz
    nx, nz = nav.navigable.shape
    ci = np.concatenate([ii, (pts[:, 0] - x0) / c])
    cj = np.concatenate([jj, (pts[:, 2] - z0) / c])
    if not len(ci):
        return 0, nx, 0, nz
    m = int(math.ceil(MARGIN_M / c))
    i0, i1 = max(int(np.floor(ci.min())) - m, 0), min(int(np.ceil(ci.max())) + m + 1, nx)
    j0, j1 = max(int(np.floor(cj.min())) - m, 0), min(int(np.ceil(cj.max())) + m + 1, nz)
    return i0, max(i1, i0 + 1), j0, max(j1, j0 + 1)


Pixel = Callable[[np.ndarray], tuple[float, float]]


def draw_trajectory(
    nav: NavigableMap, trace: Mapping[str, Any], max_px: int = MAX_PX
) -> Image.Image:
    """The map of one episode (see the module docstring); ``max_px`` bounds the longer side."""
    return render_trajectory(nav, trace, max_px)[0]


def render_trajectory(
    nav: NavigableMap, trace: Mapping[str, Any], max_px: int = MAX_PX
) -> tuple[Image.Image, Pixel, int]:
    """The map, the habitat-position → pixel function and the pixels per cell."""
    tp = trace_points(trace)
    pts = np.zeros((0, 3)) if tp is None else tp.path
    on_floor = np.abs(pts[:, 1] - nav.floor_y) <= FLOOR_BAND_M
    shown = pts[on_floor]
    i0, i1, j0, j1 = _crop(nav, shown)
    bg = background(nav)[j0:j1, i0:i1]
    s = max(1, min(math.ceil(max_px / max(bg.shape[0], bg.shape[1])), 16))
    body = np.repeat(np.repeat(bg, s, axis=0), s, axis=1)
    img = Image.new("RGB", (body.shape[1], body.shape[0] + HEADER_PX), COLORS["outside"])
    img.paste(Image.fromarray(body), (0, HEADER_PX))
    draw = ImageDraw.Draw(img)
    c, (x0, z0) = nav.cell_m, nav.origin_xz

    def px(p: np.ndarray) -> tuple[float, float]:
        return ((p[0] - x0) / c - i0) * s, ((p[2] - z0) / c - j0) * s + HEADER_PX

    if tp is not None:
        _draw_regions(draw, tp, px, s / c)
        _draw_marks(draw, tp, on_floor, px, s)
    return img, px, s


def _draw_regions(draw: ImageDraw.ImageDraw, tp: TracePoints, px: Pixel, px_per_m: float) -> None:
    """The region map's painted discs (a trace's ``region_points``), one colour per region."""
    names = list(dict.fromkeys(name for name, _ in tp.regions))
    rr = tp.region_radius_m * px_per_m
    for name, p in tp.regions:
        col = REGION_COLORS[names.index(name) % len(REGION_COLORS)]
        _dot(draw, px(p), rr, fill=col)
    for k, name in enumerate(names[:4]):  # a legend under the caption
        col = REGION_COLORS[k % len(REGION_COLORS)]
        x = 4 + 80 * k
        draw.rectangle([x, HEADER_PX + 2, x + 8, HEADER_PX + 10], fill=col, outline=(0, 0, 0))
        draw.text((x + 11, HEADER_PX + 1), name[:11], fill=COLORS["text"])


def _dot(draw: ImageDraw.ImageDraw, xy: tuple[float, float], r: float, **kw: Any) -> None:
    draw.ellipse([xy[0] - r, xy[1] - r, xy[0] + r, xy[1] + r], **kw)


def _draw_marks(
    draw: ImageDraw.ImageDraw,
    tp: TracePoints,
    on_floor: np.ndarray,
    px: Pixel,
    s: int,
) -> None:
    """Path with step markers, asked steps, start, goal (with d_T), final position."""
    r = max(2.0, 1.2 * s)
    xy = [px(p) for p in tp.path]
    keep = [q for q, ok in zip(xy, on_floor, strict=True) if ok]
    if len(keep) > 1:
        draw.line(keep, fill=COLORS["path"], width=max(1, s // 2 + 1))
    for k, (q, ok) in enumerate(zip(xy, on_floor, strict=True)):
        if ok and k not in tp.asked:
            _dot(draw, q, r * 0.6, fill=COLORS["step"])
    for k in tp.asked:
        if k < len(xy) and on_floor[k]:
            _dot(draw, xy[k], r, outline=COLORS["asked"], width=2)
    for k, q in enumerate(xy[1:], start=1):  # reached by a goal-oriented hop (source "goe")
        if on_floor[k] and k - 1 < len(tp.sources) and tp.sources[k - 1] == "goe":
            _dot(draw, q, r * 1.1, fill=COLORS["goal_hop"], outline=(255, 255, 255))
    if on_floor[0]:
        _dot(draw, xy[0], r * 1.6, fill=COLORS["start"], outline=(255, 255, 255))
    final = xy[-1]
    if tp.goal is not None:
        g = px(tp.goal)
        if tp.d_t is not None:
            draw.line([final, g], fill=COLORS["goal"], width=1)
        rr = r * 1.8
        draw.polygon([(g[0], g[1] - rr), (g[0] + rr, g[1]), (g[0], g[1] + rr), (g[0] - rr, g[1])],
                     fill=COLORS["goal"], outline=(255, 255, 255))  # fmt: skip
    if on_floor[-1]:
        h = r * 1.4
        draw.rectangle([final[0] - h, final[1] - h, final[0] + h, final[1] + h],
                       fill=COLORS["final"], outline=(255, 255, 255))  # fmt: skip
    label = f"{len(tp.path) - 1} hops, {len(tp.asked)} asked"
    n_goal = sum(s == "goe" for s in tp.sources)
    if n_goal:
        turns = sum(s == "goe_turn" for s in tp.sources)
        fbe = sum(not s.startswith("goe") for s in tp.sources)
        label += f", GOE {n_goal} hops + {turns} turns, FBE {fbe}"
    if tp.d_t is not None:
        label += f", d_T {tp.d_t:.2f} m"
    draw.text((4, 3), label, fill=COLORS["text"])


def save_trajectory(nav: NavigableMap, trace: Mapping[str, Any], out: str | Path) -> Path:
    """Draw and write the episode's map PNG; returns its path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    draw_trajectory(nav, trace).save(path, format="PNG", optimize=False)
    return path
