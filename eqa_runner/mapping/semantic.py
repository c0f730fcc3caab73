"""Semantic weighting of frontiers (explore-eqa's semantic exploration; ``semantic=true``, off
for ``fbe``): a value map of VLM answers splatted around prompted points, smoothed, read at and
along each frontier's normal."""

from __future__ import annotations

import numpy as np

from eqa_runner.mapping.grid_maps import GridMaps
from eqa_runner.mapping.lazy import ndimage


class SemanticMaps(GridMaps):
    """The value map (running mean per cell) and what the frontier weights read from it."""

    def _semantic_on(self, step: int | None) -> bool:
        c = self.cfg
        if not c.semantic or not self.sem_count.any():
            return False
        return step is None or step >= c.min_random_init_steps

    def semantic_map(self) -> np.ndarray:
        """The value map the frontier weights read: the running means, gaussian-smoothed."""
        if self.cfg.smooth_sigma <= 0:
            return self.sem_value.copy()
        return ndimage.gaussian_filter(self.sem_value, sigma=self.cfg.smooth_sigma)

    def _value_along(self, cell: np.ndarray, normal: np.ndarray, val2d: np.ndarray) -> float:
        """Mean of the non-zero map values along the normal (0 when all are zero)."""
        n = max(int(self.cfg.max_val_check_frontier / self._vol.voxel_size), 1)
        pts = self._clip_cells(np.round(cell + np.arange(n)[:, None] * normal).astype(int))
        vals = val2d[pts[:, 0], pts[:, 1]]
        vals = vals[vals != 0]
        return float(vals.mean()) if vals.size else 0.0

    def integrate_semantic(self, points_normal: np.ndarray, values: np.ndarray) -> None:
        """Splat each point's value onto every cell within ``semantic_radius``: a running mean
        per cell (count += 1; value = (old_count * value + v) / count), point by point."""
        vol = self._vol
        r = self.cfg.semantic_radius / vol.voxel_size
        ii, jj = np.ogrid[: vol.dims[0], : vol.dims[1]]
        pts = np.asarray(points_normal, float).reshape(-1, 2)
        for p, v in zip(pts, np.ravel(values), strict=True):
            c = vol.world_to_grid(p)
            disc = (ii - c[0]) ** 2 + (jj - c[1]) ** 2 <= r * r
            old = self.sem_count[disc]
            self.sem_count[disc] = old + 1
            self.sem_value[disc] = (old * self.sem_value[disc] + float(v)) / (old + 1)
