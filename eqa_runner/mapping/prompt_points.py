"""Points a VLM is asked about (explore-eqa's ``find_prompt_points_within_view``): reachable
free floor in view of the current frame, ``policy=vlm_explore``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqa_runner.mapping.config import VisualPromptConfig
from eqa_runner.mapping.semantic import SemanticMaps


@dataclass
class PromptPoints:
    """Points a VLM is asked about: grid cells, normal-frame (x, y), image pixels (u, v)."""

    cells: np.ndarray  # (n, 2) int
    xy: np.ndarray  # (n, 2) float, metres
    pixels: np.ndarray  # (n, 2) int, in the frame the points were projected into
    candidates: int = 0  # candidate cells before sampling

    def __len__(self) -> int:
        return len(self.cells)


class PromptPointsMixin(SemanticMaps):
    """:meth:`prompt_points` on top of the planner's maps."""

    def prompt_points(
        self,
        agent_pos_normal: np.ndarray,
        cam_to_world_normal: np.ndarray,
        intrinsics: np.ndarray,
        image_hw: tuple[int, int],
        vp: VisualPromptConfig | None = None,
    ) -> PromptPoints:
        """Points to mark on the current frame (explore-eqa's ``find_prompt_points_within_view``).

        Candidates are island (reachable free-floor) cells in view of the camera moved
        ``cam_offset`` forward, inside the image margins, ``point_min_dist``..``point_max_dist``
        from the agent, whose straight grid line from the agent crosses at most
        ``max_occupied_crossed`` non-free cells (a random subsample of ``num_max_unoccupied``).
        Farthest-point sampling picks ``num_prompt_points`` (seeded with the first candidate),
        then points within ``cluster_threshold`` of a kept one are dropped. Pixels are the
        projection at the volume's bottom (z-index 0) through the camera itself. Fewer than
        ``min_num_prompt_points`` kept: no points.
        """
        vp = vp or VisualPromptConfig()
        vol = self._vol
        h, w = int(image_hw[0]), int(image_hw[1])
        empty = PromptPoints(np.zeros((0, 2), int), np.zeros((0, 2)), np.zeros((0, 2), int))
        pos = np.asarray(agent_pos_normal, dtype=float)
        if self._init_cells is None:
            self._set_start(pos)
        cur = vol.world_to_grid(pos[:2])
        free = self.free_floor()
        island = self.island_of(free, cur)
        cells = np.argwhere(island)
        if len(cells) == 0:
            return empty
        xy = vol.grid_to_world(cells.astype(float))
        d = np.linalg.norm(xy - pos[:2], axis=1)
        keep = (d >= vp.point_min_dist) & (d <= vp.point_max_dist)
        cells, xy = cells[keep], xy[keep]
        pts = np.column_stack([xy, np.full(len(xy), float(vol.origin[2]))])
        pose = np.asarray(cam_to_world_normal, dtype=float)
        k = np.asarray(intrinsics, dtype=float)
        shifted = pose.copy()
        shifted[:3, 3] = pose[:3, 3] + vp.cam_offset * pose[:3, 2]
        in_view = _in_view(pts, pose, shifted, k, vp, h, w)
        cells, xy = cells[in_view], xy[in_view]
        uv = _project(pts[in_view], pose, k)[0]
        if len(cells) > vp.num_max_unoccupied:
            pick = self.rng.choice(len(cells), vp.num_max_unoccupied, replace=False)
            cells, xy, uv = cells[pick], xy[pick], uv[pick]
        else:
            order = self.rng.permutation(len(cells))
            cells, xy, uv = cells[order], xy[order], uv[order]
        sight = self._crossed_many(cur, cells, free) <= vp.max_occupied_crossed
        cells, xy, uv = cells[sight], xy[sight], uv[sight]
        n_cand = len(cells)
        kept = _spread(xy, vp) if n_cand >= vp.min_points_for_clustering else []
        if len(kept) < vp.min_num_prompt_points:
            return PromptPoints(empty.cells, empty.xy, empty.pixels, n_cand)
        idx = np.array(kept)
        return PromptPoints(cells[idx], xy[idx], np.round(uv[idx]).astype(int), n_cand)

    @staticmethod
    def _crossed(a: np.ndarray, b: np.ndarray, free: np.ndarray) -> int:
        """Non-free cells on the straight grid line from ``a`` to ``b`` (end points excluded)."""
        n = int(max(abs(int(b[0]) - int(a[0])), abs(int(b[1]) - int(a[1]))))
        if n <= 1:
            return 0
        t = np.linspace(0.0, 1.0, n + 1)[1:-1, None]
        line = np.round(a[None, :2] + t * (np.asarray(b[:2]) - a[:2])).astype(int)
        return int((~free[line[:, 0], line[:, 1]]).sum())

    @staticmethod
    def _crossed_many(a: np.ndarray, cells: np.ndarray, free: np.ndarray) -> np.ndarray:
        """``[_crossed(a, b, free) for b in cells]`` in one pass (the same samples, bit for bit:
        ``np.linspace(0, 1, n + 1)[k]`` is ``k * (1 / n)``)."""
        cells = np.asarray(cells).reshape(-1, 2)
        out = np.zeros(len(cells), dtype=int)
        n = np.maximum(
            np.abs(cells[:, 0].astype(int) - int(a[0])), np.abs(cells[:, 1].astype(int) - int(a[1]))
        )
        long = np.nonzero(n > 1)[0]
        if len(long) == 0:
            return out
        inner = n[long] - 1  # samples per line, end points excluded
        seg = np.repeat(np.arange(len(long)), inner)
        k = np.arange(len(seg)) - np.repeat(np.cumsum(inner) - inner, inner) + 1
        t = (k * (1.0 / n[long][seg]))[:, None]
        b = cells[long][seg]
        line = np.round(a[None, :2] + t * (np.asarray(b[:, :2]) - a[:2])).astype(int)
        hits = (~free[line[:, 0], line[:, 1]]).astype(int)
        out[long] = np.bincount(seg, weights=hits, minlength=len(long)).astype(int)
        return out


def _project(
    pts: np.ndarray, cam_to_world: np.ndarray, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (u, v) and camera depths of world points through an OpenCV camera pose."""
    r, t = cam_to_world[:3, :3], cam_to_world[:3, 3]
    cam = (pts - t) @ r  # = R^T (p - t), row-wise
    z = cam[:, 2]
    safe = np.where(np.abs(z) > 1e-9, z, 1e-9)
    u = k[0, 0] * cam[:, 0] / safe + k[0, 2]
    v = k[1, 1] * cam[:, 1] / safe + k[1, 2]
    return np.column_stack([u, v]), z


def _in_view(pts, pose, shifted, k, vp: VisualPromptConfig, h: int, w: int) -> np.ndarray:
    """Points in front of both cameras, inside the side margins of both and below the top
    margin of the real one."""
    uv_s, z_s = _project(pts, shifted, k)
    uv, z = _project(pts, pose, k)
    ms, mt = vp.margin_side_px, vp.margin_top_px
    in_view = (z_s > 0) & (uv_s[:, 0] >= ms) & (uv_s[:, 0] < w - ms)
    in_view &= (z > 0) & (uv[:, 0] >= ms) & (uv[:, 0] < w - ms)
    return in_view & (uv[:, 1] >= mt) & (uv[:, 1] < h)


def _spread(xy: np.ndarray, vp: VisualPromptConfig) -> list[int]:
    """Farthest-point sampling from the first point, then points within ``cluster_threshold``
    of a kept one dropped."""
    chosen = [0]
    dist = np.linalg.norm(xy - xy[0], axis=1)
    while len(chosen) < min(vp.num_prompt_points, len(xy)):
        nxt = int(np.argmax(dist))
        if dist[nxt] <= 0:
            break
        chosen.append(nxt)
        dist = np.minimum(dist, np.linalg.norm(xy - xy[nxt], axis=1))
    kept: list[int] = []
    for i in chosen:
        if all(np.linalg.norm(xy[i] - xy[j]) >= vp.cluster_threshold for j in kept):
            kept.append(i)
    return kept
