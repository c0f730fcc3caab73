"""Trajectory maps: one small top-down PNG per episode from its recorded trace.

The picture is drawn from trace fields only (``steps[*].position``, each hop's geodesic corners
``steps[*].hop_via``, the heading ``steps[*].angle``, ``final_position``, ``goal_position`` with
the goal path ``goal_via``, ``d_t``; a step "asked a model" when it recorded a ``*_reply``): hops
along the paths the agent walked, coloured by time, so the drawn length is ``path_len`` over the
scene's :class:`~eqa_runner.sim.base.NavigableMap` (the simulator's capability), which
:class:`SceneMaps` keeps once per scene and floor for the whole run. Nothing here names a
benchmark: any exploration task whose trace has these fields gets a map.
"""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from eqa_runner.safe_io import write_atomic
from eqa_runner.sim.base import NavigableMap, Simulator

COLORS = {
    "outside": (255, 255, 255),
    "obstacle": (96, 96, 96),
    "floor": (226, 232, 222),
    "path": (40, 80, 200),
    "step": (40, 80, 200),
    "asked": (20, 20, 20),  # ring around a step that asked a model
    "teleport": (150, 150, 150),  # a hop with no geodesic (unreachable): dashed
    "start": (0, 160, 60),
    "goal": (210, 20, 40),
    "final": (20, 20, 20),
    "text": (20, 20, 20),
    "goal_hop": (200, 0, 160),  # a goal-oriented hop (source "goe*", policy=fine_eqa)
}
# region discs (a trace's ``region_points``), one colour per region name in order of appearance
REGION_COLORS = [
    (170, 210, 255),
    (180, 235, 170),
    (255, 215, 160),
    (230, 190, 240),
    (255, 190, 190),
    (200, 200, 140),
    (160, 225, 225),
    (220, 220, 220),
]
# what each mark of a trajectory map means: (shape, colour, label), one legend in the HTML report
LEGEND: tuple[tuple[str, tuple[int, int, int], str], ...] = (
    ("circle", COLORS["start"], "start"),
    ("line", (40, 80, 200), "path along the geodesic, light (early) to dark (late)"),
    ("ring", COLORS["asked"], "a step that asked a model"),
    ("dash", COLORS["teleport"], "a hop with no path (unreachable)"),
    ("triangle", COLORS["final"], "the agent at the end, facing where it looks"),
    ("diamond", COLORS["goal"], "goal; dashed: the path from the end to it"),
    ("circle", COLORS["goal_hop"], "reached by a goal-oriented hop (policy=fine_eqa)"),
    ("square", REGION_COLORS[0], "a region seen (fine_eqa's region map; names in the caption)"),
    ("square", COLORS["obstacle"], "obstacle"),
    ("square", COLORS["floor"], "navigable floor"),
)
OBSTACLE_M = 0.6  # non-navigable cells this close to the floor are drawn as obstacles
FLOOR_BAND_M = 1.0  # trajectory points farther than this from the drawn floor are dropped
MAX_PX = 320  # the longer side of a map image
MARGIN_M = 0.5
HEADER_PX = 0  # the caption is HTML text beside the image (``caption``), not pixels in it
# the path's colour over time, start → end: light blue to navy (apart from the green start, the
# red goal and the black agent; every shade reads on the floor)
TIME_RAMP = ((125, 175, 235), (40, 80, 200), (10, 20, 90))
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
    # hop k (path[k] -> path[k+1]) along its recorded geodesic: its points, both ends included
    legs: list[np.ndarray] = field(default_factory=list)
    teleports: frozenset[int] = frozenset()  # hops with no geodesic (unreachable): drawn dashed
    goal_leg: np.ndarray | None = None  # the final position to the goal along its path
    headings: list[float | None] = field(default_factory=list)  # habitat yaw after each hop
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


def _pts(rows: Any) -> list[list[float]]:
    return [list(map(float, r)) for r in rows or [] if isinstance(r, (list, tuple)) and len(r) == 3]


def trace_points(trace: Mapping[str, Any]) -> TracePoints | None:
    """The path, its hops along their geodesics (``hop_via``), model-asked steps, goal (with the
    goal path, ``goal_via``) and goal distance of a trace; None without recorded positions."""
    steps = [s for s in trace.get("steps") or [] if isinstance(s, Mapping) and s.get("position")]
    pts = [list(map(float, s["position"])) for s in steps]
    asked = [i for i, s in enumerate(steps) if _asked(s)]
    final = trace.get("final_position")
    if final and (not pts or not np.allclose(pts[-1], final)):
        pts.append(list(map(float, final)))
    if not pts:
        return None
    legs, teleports, headings = [], set(), []
    for k in range(len(pts) - 1):
        s = steps[k] if k < len(steps) else {}
        legs.append(np.asarray([pts[k], *_pts(s.get("hop_via")), pts[k + 1]], dtype=float))
        if "hop_m" in s and s.get("hop_m") is None:
            teleports.add(k)
        angle = s.get("angle")
        headings.append(float(angle) if isinstance(angle, (int, float)) else None)
    goal = trace.get("goal_position")
    raw_d_t = trace.get("d_t")
    d_t = float(raw_d_t) if isinstance(raw_d_t, (int, float)) else None
    finite = d_t is not None and math.isfinite(d_t)
    goal_leg = None
    if goal and finite:
        goal_leg = np.asarray([pts[-1], *_pts(trace.get("goal_via")), list(map(float, goal))])
    regions = [
        (str(r["region"]), np.asarray(r["position"], dtype=float).reshape(3))
        for r in trace.get("region_points") or []
        if isinstance(r, Mapping) and r.get("position") is not None
    ]
    return TracePoints(
        path=np.asarray(pts, dtype=float).reshape(-1, 3),
        asked=asked,
        goal=None if not goal else np.asarray(goal, dtype=float).reshape(3),
        d_t=d_t if finite else None,
        legs=legs,
        teleports=frozenset(teleports),
        goal_leg=goal_leg,
        headings=headings,
        sources=[str(s.get("source") or "") for s in steps],
        regions=regions,
        region_radius_m=float(trace.get("region_radius_m") or 1.0),
    )


def drawn_length(tp: TracePoints) -> float:
    """Metres of path the map draws (the hops' polylines): the recorded ``path_len`` when every
    hop's geodesic was recorded (tests hold the map to it)."""
    return float(sum(np.linalg.norm(np.diff(leg, axis=0), axis=1).sum() for leg in tp.legs))


def caption(trace: Mapping[str, Any]) -> str:
    """The map's caption, one step count per episode: steps taken of the budget, model calls,
    the path walked and the goal distance (HTML text beside the image, not pixels in it)."""
    tp = trace_points(trace)
    taken = trace.get("steps_taken", len(trace.get("steps") or []))
    parts = [f"{taken} steps" + (f" of {trace['num_steps']}" if trace.get("num_steps") else "")]
    if tp is not None:
        parts.append(f"{len(tp.asked)} asked a model")
        goal_hops = sum(src == "goe" for src in tp.sources)
        if goal_hops:  # fine_eqa: goal-oriented hops towards the question's regions, else FBE
            turns = sum(src == "goe_turn" for src in tp.sources)
            fbe = sum(not src.startswith("goe") for src in tp.sources)
            parts.append(f"GOE {goal_hops} hops + {turns} turns, FBE {fbe}")
        if tp.regions:
            parts.append("regions seen: " + ", ".join(dict.fromkeys(n for n, _ in tp.regions)))
    path_len = trace.get("path_len")
    if isinstance(path_len, (int, float)) and math.isfinite(path_len):
        parts.append(f"walked {float(path_len):.1f} m")
    if tp is not None and tp.d_t is not None:
        parts.append(f"goal {tp.d_t:.2f} m away along its path")
    return ", ".join(parts)


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
    nav: NavigableMap, trace: Mapping[str, Any], max_px: int = MAX_PX, upto: int | None = None
) -> tuple[Image.Image, Pixel, int]:
    """The map, the habitat-position → pixel function and the pixels per cell. ``upto``: draw
    the path only to the agent's position at that step (a replay frame); the window is the whole
    episode's either way, so a replay's frames line up."""
    tp = trace_points(trace)
    every = np.zeros((0, 3)) if tp is None else np.concatenate([tp.path, *tp.legs])
    if tp is not None and tp.goal_leg is not None:
        every = np.concatenate([every, tp.goal_leg])
    shown = every[np.abs(every[:, 1] - nav.floor_y) <= FLOOR_BAND_M]
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
        on_floor = np.abs(tp.path[:, 1] - nav.floor_y) <= FLOOR_BAND_M
        _draw_regions(draw, tp, px, s / c)
        _draw_marks(draw, tp, on_floor, px, s, len(tp.path) - 1 if upto is None else upto)
    return img, px, s


def time_color(t: float) -> tuple[int, int, int]:
    """The path's colour at fraction ``t`` of the episode (0 = start, 1 = end)."""
    t = min(max(float(t), 0.0), 1.0) * (len(TIME_RAMP) - 1)
    k = min(int(t), len(TIME_RAMP) - 2)
    a, b, f = TIME_RAMP[k], TIME_RAMP[k + 1], t - k
    return (
        round(a[0] + (b[0] - a[0]) * f),
        round(a[1] + (b[1] - a[1]) * f),
        round(a[2] + (b[2] - a[2]) * f),
    )


def _draw_regions(draw: ImageDraw.ImageDraw, tp: TracePoints, px: Pixel, px_per_m: float) -> None:
    """The region map's painted discs (a trace's ``region_points``), one colour per region."""
    names = list(dict.fromkeys(name for name, _ in tp.regions))
    rr = tp.region_radius_m * px_per_m
    for name, p in tp.regions:
        col = REGION_COLORS[names.index(name) % len(REGION_COLORS)]
        _dot(draw, px(p), rr, fill=col)


def _dot(draw: ImageDraw.ImageDraw, xy: tuple[float, float], r: float, **kw: Any) -> None:
    draw.ellipse([xy[0] - r, xy[1] - r, xy[0] + r, xy[1] + r], **kw)


def _dashed(
    draw: ImageDraw.ImageDraw, xy: list[tuple[float, float]], dash: float, **kw: Any
) -> None:
    """A polyline drawn in dashes of ``dash`` pixels."""
    for (ax, ay), (bx, by) in zip(xy, xy[1:], strict=False):
        n = max(1, int(math.hypot(bx - ax, by - ay) / dash))
        for i in range(0, n, 2):
            t0, t1 = i / n, min(i + 1, n) / n
            draw.line(
                [
                    (ax + (bx - ax) * t0, ay + (by - ay) * t0),
                    (ax + (bx - ax) * t1, ay + (by - ay) * t1),
                ],
                **kw,
            )


def _heading(draw: ImageDraw.ImageDraw, q: tuple[float, float], yaw: float, r: float) -> None:
    """A triangle at ``q`` pointing where the agent faces (habitat yaw: forward is -z at 0)."""
    fx, fz = -math.sin(yaw), -math.cos(yaw)  # image x = world x, image y = world z
    lx, lz = -fz, fx
    tip = (q[0] + fx * 2 * r, q[1] + fz * 2 * r)
    left = (q[0] - fx * r + lx * r, q[1] - fz * r + lz * r)
    right = (q[0] - fx * r - lx * r, q[1] - fz * r - lz * r)
    draw.polygon([tip, left, right], fill=COLORS["final"], outline=(255, 255, 255))


def _draw_marks(
    draw: ImageDraw.ImageDraw,
    tp: TracePoints,
    on_floor: np.ndarray,
    px: Pixel,
    s: int,
    upto: int,
) -> None:
    """Hops along their geodesics coloured by time, steps (ringed where a model was asked),
    start, goal with the path to it, and the agent with its heading at step ``upto``."""
    r = max(2.0, 1.2 * s)
    n, width = max(len(tp.legs), 1), max(1, s // 2 + 1)
    for k, leg in enumerate(tp.legs[:upto]):
        if not (on_floor[k] and on_floor[k + 1]):
            continue
        shown = [px(p) for p in leg]
        if k in tp.teleports:
            _dashed(draw, shown, 2.0 * width, fill=COLORS["teleport"], width=width)
        else:
            draw.line(shown, fill=time_color((k + 0.5) / n), width=width, joint="curve")
    xy = [px(p) for p in tp.path]
    for k in range(min(upto + 1, len(xy))):
        if on_floor[k]:
            color = time_color(k / n)
            if k in tp.asked:
                _dot(draw, xy[k], r, fill=color, outline=COLORS["asked"], width=2)
            else:
                _dot(draw, xy[k], r * 0.6, fill=color)
    for k in range(1, min(upto + 1, len(xy))):  # reached by a goal-oriented hop ("goe")
        if on_floor[k] and k - 1 < len(tp.sources) and tp.sources[k - 1] == "goe":
            _dot(draw, xy[k], r * 1.1, fill=COLORS["goal_hop"], outline=(255, 255, 255))
    if on_floor[0]:
        _dot(draw, xy[0], r * 1.6, fill=COLORS["start"], outline=(255, 255, 255))
    if tp.goal is not None:
        if tp.goal_leg is not None and upto >= len(tp.path) - 1 and on_floor[-1]:
            _dashed(draw, [px(p) for p in tp.goal_leg], 3.0 * width, fill=COLORS["goal"], width=1)
        g, rr = px(tp.goal), r * 1.8
        draw.polygon(
            [(g[0], g[1] - rr), (g[0] + rr, g[1]), (g[0], g[1] + rr), (g[0] - rr, g[1])],
            fill=COLORS["goal"],
            outline=(255, 255, 255),
        )
    k = min(upto, len(xy) - 1)
    if on_floor[k]:
        yaw = tp.headings[k - 1] if 0 < k <= len(tp.headings) else None
        if yaw is not None and math.isfinite(yaw):
            _heading(draw, xy[k], yaw, r * 1.4)
        else:
            h = r * 1.4
            draw.rectangle(
                [xy[k][0] - h, xy[k][1] - h, xy[k][0] + h, xy[k][1] + h],
                fill=COLORS["final"],
                outline=(255, 255, 255),
            )


def save_trajectory(nav: NavigableMap, trace: Mapping[str, Any], out: str | Path) -> Path:
    """Draw and write the episode's map PNG; returns its path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    draw_trajectory(nav, trace).save(buf, format="PNG", optimize=False)
    return write_atomic(path, buf.getvalue())
