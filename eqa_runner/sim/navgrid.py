"""A 2-D navigable grid on one floor: snapping, random points, geodesic distance (numpy/skimage).

Cell (i, j) covers x in [x0 + i*c, x0 + (i+1)*c) and z in [z0 + j*c, z0 + (j+1)*c).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from eqa_runner.sim.base import NAN3


class NavGrid:
    """Navigable cells of one floor plus cached shortest-path machinery."""

    def __init__(
        self,
        navigable: np.ndarray,
        origin_xz: tuple[float, float],
        cell_size: float,
        floor_y: float,
        *,
        snap_max_dist: float = 2.0,
        max_y_delta: float = 2.0,
        cache_sources: int = 16,
    ) -> None:
        from skimage.measure import label

        self.navigable = np.asarray(navigable, dtype=bool)
        self.x0, self.z0 = float(origin_xz[0]), float(origin_xz[1])
        self.c = float(cell_size)
        self.floor_y = float(floor_y)
        self.snap_max_dist = float(snap_max_dist)
        self.max_y_delta = float(max_y_delta)
        self.labels = label(self.navigable, connectivity=2)
        self.costs = np.where(self.navigable, 1.0, np.inf)
        self._sources: OrderedDict[tuple[int, int], tuple[object, np.ndarray]] = OrderedDict()
        self._cache_sources = cache_sources
        ii, jj = np.nonzero(self.navigable)
        self._nav_ij = np.stack([ii, jj], axis=1)
        self._nav_xz = self.cell_center_xz(ii, jj)

    # ------------------------------------------------------------------ coordinates
    @property
    def shape(self) -> tuple[int, int]:
        return self.navigable.shape

    def cell_of(self, x: float, z: float) -> tuple[int, int]:
        return int(np.floor((x - self.x0) / self.c)), int(np.floor((z - self.z0) / self.c))

    def cell_center_xz(self, i, j) -> np.ndarray:
        i = np.asarray(i, dtype=np.float64)
        j = np.asarray(j, dtype=np.float64)
        return np.stack([self.x0 + (i + 0.5) * self.c, self.z0 + (j + 0.5) * self.c], axis=-1)

    def in_grid(self, i: int, j: int) -> bool:
        return 0 <= i < self.shape[0] and 0 <= j < self.shape[1]

    def nav_at(self, i: int, j: int) -> bool:
        return self.in_grid(i, j) and bool(self.navigable[i, j])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        if len(self._nav_ij) == 0:
            z = np.array([0.0, self.floor_y, 0.0])
            return z, z.copy()
        lo = self._nav_xz.min(axis=0) - self.c / 2
        hi = self._nav_xz.max(axis=0) + self.c / 2
        return (
            np.array([lo[0], self.floor_y, lo[1]]),
            np.array([hi[0], self.floor_y, hi[1]]),
        )

    # ------------------------------------------------------------------ queries
    def is_navigable(self, p: np.ndarray, max_y_delta: float = 0.5) -> bool:
        if not np.all(np.isfinite(p)) or abs(p[1] - self.floor_y) > max_y_delta:
            return False
        return self.nav_at(*self.cell_of(p[0], p[2]))

    def snap_cell(self, p: np.ndarray) -> tuple[int, int] | None:
        """The navigable cell containing ``p`` or the nearest one within snap_max_dist."""
        if not np.all(np.isfinite(p)) or abs(p[1] - self.floor_y) > self.max_y_delta:
            return None
        i, j = self.cell_of(p[0], p[2])
        if self.nav_at(i, j):
            return i, j
        if len(self._nav_xz) == 0:
            return None
        d2 = np.sum((self._nav_xz - np.array([p[0], p[2]])) ** 2, axis=1)
        k = int(np.argmin(d2))
        if d2[k] > self.snap_max_dist**2:
            return None
        return int(self._nav_ij[k, 0]), int(self._nav_ij[k, 1])

    def snap_point(self, p: np.ndarray) -> np.ndarray:
        cell = self.snap_cell(p)
        if cell is None:
            return NAN3.copy()
        if cell == self.cell_of(p[0], p[2]):
            return np.array([p[0], self.floor_y, p[2]])
        x, z = self.cell_center_xz(*cell)
        return np.array([x, self.floor_y, z])

    def random_point_near(
        self, p: np.ndarray, radius: float, rng: np.random.Generator
    ) -> np.ndarray:
        """Uniform over navigable cells within ``radius`` connected to ``p`` inside the disc."""
        from skimage.measure import label

        cell = self.snap_cell(p)
        if cell is None:
            return NAN3.copy()
        r = max(int(np.ceil(radius / self.c)), 0)
        i0, i1 = max(cell[0] - r, 0), min(cell[0] + r + 1, self.shape[0])
        j0, j1 = max(cell[1] - r, 0), min(cell[1] + r + 1, self.shape[1])
        ii, jj = np.meshgrid(np.arange(i0, i1), np.arange(j0, j1), indexing="ij")
        xz = self.cell_center_xz(ii, jj)
        in_disc = np.sum((xz - np.array([p[0], p[2]])) ** 2, axis=-1) <= radius**2
        window = self.navigable[i0:i1, j0:j1] & in_disc
        window[cell[0] - i0, cell[1] - j0] = True
        lab = label(window, connectivity=2)
        sel = np.argwhere(lab == lab[cell[0] - i0, cell[1] - j0])
        k = int(rng.integers(len(sel)))
        x, z = xz[sel[k, 0], sel[k, 1]]
        return np.array([x, self.floor_y, z])

    def _source(self, cell: tuple[int, int]):
        from skimage.graph import MCP_Geometric

        hit = self._sources.get(cell)
        if hit is not None:
            self._sources.move_to_end(cell)
            return hit
        mcp = MCP_Geometric(self.costs, fully_connected=True)
        cum, _ = mcp.find_costs([cell])
        self._sources[cell] = (mcp, cum)
        while len(self._sources) > self._cache_sources:
            self._sources.popitem(last=False)
        return mcp, cum

    def shortest_path(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray] | None:
        """Smoothed (any-angle) path of habitat points from ``a`` to ``b``; None if unreachable."""
        ca, cb = self.snap_cell(a), self.snap_cell(b)
        if ca is None or cb is None or self.labels[ca] != self.labels[cb]:
            return None
        sa, sb = self.snap_point(a), self.snap_point(b)
        if ca == cb:
            return [sa, sb]
        mcp, cum = self._source(ca)
        if not np.isfinite(cum[cb]):
            return None
        cells = np.asarray(mcp.traceback(cb))
        mid = self.cell_center_xz(cells[1:-1, 0], cells[1:-1, 1]).reshape(-1, 2)
        pts = np.concatenate([[sa[[0, 2]]], mid, [sb[[0, 2]]]], axis=0)
        smooth = self._string_pull(pts)
        return [np.array([x, self.floor_y, z]) for x, z in smooth]

    def geodesic_distance(self, a: np.ndarray, b: np.ndarray) -> float:
        path = self.shortest_path(a, b)
        if path is None:
            return float("inf")
        pts = np.asarray(path)[:, [0, 2]]
        return float(np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=1)))

    # ------------------------------------------------------------------ helpers
    def line_of_sight(self, p: np.ndarray, q: np.ndarray) -> bool:
        """Whether the x-z segment p-q stays on navigable cells (sampled at c/3)."""
        n = max(int(np.ceil(np.linalg.norm(q - p) / (self.c / 3))), 1)
        t = np.linspace(0.0, 1.0, n + 1)[:, None]
        s = p[None, :] * (1 - t) + q[None, :] * t
        i = np.floor((s[:, 0] - self.x0) / self.c).astype(int)
        j = np.floor((s[:, 1] - self.z0) / self.c).astype(int)
        ok = (i >= 0) & (i < self.shape[0]) & (j >= 0) & (j < self.shape[1])
        if not ok.all():
            return False
        return bool(self.navigable[i, j].all())

    def _string_pull(self, pts: np.ndarray) -> np.ndarray:
        out = [pts[0]]
        i, n = 0, len(pts)
        while i < n - 1:
            k = i + 1
            while k + 1 < n and self.line_of_sight(pts[i], pts[k + 1]):
                k += 1
            out.append(pts[k])
            i = k
        return np.asarray(out)
