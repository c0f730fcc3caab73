"""Top-down map drawing (PIL + numpy only; call it off the hot path)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from eqa_runner.mapping.frontier import PlannerMaps
from eqa_runner.safe_io import write_atomic

COLORS = {
    "unknown": (200, 200, 200),
    "occupied": (60, 60, 60),
    "explored_free": (235, 245, 255),
    "unexplored_free": (170, 200, 170),
    "island_explored": (205, 230, 255),
    "frontier_cell": (255, 170, 60),
    "frontier": (230, 30, 30),
    "path": (20, 20, 160),
    "agent": (20, 90, 255),
    "next": (0, 170, 0),
    "target": (160, 0, 160),
}


# what each colour of the planner's top-down strip means: (shape, colour, label)
LEGEND: tuple[tuple[str, tuple[int, int, int], str], ...] = (
    ("square", COLORS["unknown"], "not seen yet"),
    ("square", COLORS["occupied"], "occupied"),
    ("square", COLORS["unexplored_free"], "free, not explored"),
    ("square", COLORS["explored_free"], "free, explored"),
    ("square", COLORS["island_explored"], "the agent's island, explored"),
    ("square", COLORS["frontier_cell"], "frontier cell"),
    ("ring", COLORS["frontier"], "frontier (clustered)"),
    ("circle", COLORS["agent"], "agent"),
    ("circle", COLORS["next"], "next position"),
    ("circle", COLORS["target"], "committed target"),
)


def render_topdown(
    maps: PlannerMaps,
    path_normal: Sequence[Sequence[float]] = (),
    scale: int = 4,
) -> Image.Image:
    """RGB image of the planner maps: x to the right, y up, ``scale`` pixels per cell."""
    explored, free, island = maps.explored, maps.unoccupied, maps.island
    img = np.empty((*explored.shape, 3), dtype=np.uint8)
    img[:] = COLORS["unknown"]
    img[explored & ~free] = COLORS["occupied"]
    img[free & ~explored] = COLORS["unexplored_free"]
    img[free & explored] = COLORS["explored_free"]
    img[island & explored] = COLORS["island_explored"]
    if len(maps.frontier_cells):
        fc = np.asarray(maps.frontier_cells)
        img[fc[:, 0], fc[:, 1]] = COLORS["frontier_cell"]
    # grid [ix, iy] -> image rows top = max y
    img = np.flipud(np.transpose(img, (1, 0, 2)))
    img = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)
    pil = Image.fromarray(np.ascontiguousarray(img))
    draw = ImageDraw.Draw(pil)
    ny = explored.shape[1]

    def px(cell: Sequence[float] | np.ndarray) -> tuple[float, float]:
        return ((cell[0] + 0.5) * scale, (ny - 1 - cell[1] + 0.5) * scale)

    def world_px(p: Sequence[float]) -> tuple[float, float]:
        cell = (
            (p[0] - maps.origin[0]) / maps.voxel_size,
            (p[1] - maps.origin[1]) / maps.voxel_size,
        )
        return px(cell)

    if len(path_normal) > 1:
        draw.line([world_px(p) for p in path_normal], fill=COLORS["path"], width=max(scale // 2, 1))
    r = max(scale, 2)
    for f in np.asarray(maps.frontiers).reshape(-1, 2):
        x, y = px(f)
        draw.ellipse([x - r, y - r, x + r, y + r], outline=COLORS["frontier"], width=2)
    for key, cell in (
        ("target", maps.target_cell),
        ("next", maps.next_cell),
        ("agent", maps.agent_cell),
    ):
        if cell is not None:
            x, y = px(cell)
            draw.ellipse([x - r, y - r, x + r, y + r], fill=COLORS[key])
    return pil


def save_topdown(
    maps: PlannerMaps,
    path: str | Path,
    path_normal: Sequence[Sequence[float]] = (),
    scale: int = 4,
) -> Path:
    """Draw and write a PNG; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    render_topdown(maps, path_normal, scale).save(buf, format="PNG", optimize=False)
    return write_atomic(out, buf.getvalue())
