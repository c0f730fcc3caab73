"""Islands of a baked navmesh given as a triangle soup (habitat-sim 0.2.x has no island query):
connected components over shared vertices, and the nearest point on one island."""

from __future__ import annotations

import numpy as np

from eqa_runner.sim.base import NAN3
from eqa_runner.sim.layered import SNAP_HALF_EXTENT


def closest_on_triangles(p: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Closest point to ``p`` on each triangle (T, 3, 3) -> (T, 3) (Ericson, RTCD 5.1.5)."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = (ab * ap).sum(1), (ac * ap).sum(1)
    bp, cp = p - b, p - c
    d3, d4 = (ab * bp).sum(1), (ac * bp).sum(1)
    d5, d6 = (ab * cp).sum(1), (ac * cp).sum(1)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    denom = va + vb + vc
    denom = np.where(np.abs(denom) < 1e-18, 1e-18, denom)
    v, w = vb / denom, vc / denom
    out = a + ab * v[:, None] + ac * w[:, None]  # inside the face
    with np.errstate(divide="ignore", invalid="ignore"):
        cases = [
            ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + ab * (d1 / (d1 - d3))[:, None]),
            ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + ac * (d2 / (d2 - d6))[:, None]),
            (
                (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0),
                b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))[:, None],
            ),
            ((d6 >= 0) & (d5 <= d6), c),
            ((d3 >= 0) & (d4 <= d3), b),
            ((d1 <= 0) & (d2 <= 0), a),
        ]
    for mask, val in cases:  # later cases (vertices) take precedence, as in the reference
        out = np.where(mask[:, None], val, out)
    return out


class NavmeshIslands:
    """Connected components of navmesh triangles (vertices welded at 1 mm)."""

    def __init__(self, soup: np.ndarray, climb: float) -> None:
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        self.tri = np.asarray(soup, dtype=np.float64).reshape(-1, 3, 3)
        self.climb = float(climb)
        n = len(self.tri)
        if n == 0:
            self.label = np.zeros(0, dtype=np.int64)
            return
        keys = np.round(self.tri.reshape(-1, 3) / 1e-3).astype(np.int64)
        _, vid = np.unique(keys, axis=0, return_inverse=True)
        vid = vid.reshape(-1)
        rows = np.repeat(np.arange(n), 3)
        m = n + int(vid.max()) + 1
        g = coo_matrix((np.ones(3 * n), (rows, n + vid)), shape=(m, m))
        _, lab = connected_components(g, directed=False)
        self.label = lab[:n]

    def island_of(self, p: np.ndarray, tol: float = 0.5) -> int | None:
        """The island of the triangle nearest to ``p`` (within ``tol``), None if none."""
        if len(self.tri) == 0 or not np.all(np.isfinite(p)):
            return None
        d = np.linalg.norm(closest_on_triangles(p, self.tri) - p, axis=1)
        k = int(np.argmin(d))
        return int(self.label[k]) if d[k] <= tol else None

    def snap(self, p: np.ndarray, island: int) -> np.ndarray:
        """Nearest point to ``p`` on ``island`` inside Detour's search box, else NaN."""
        sel = np.nonzero(self.label == island)[0]
        if len(sel) == 0 or not np.all(np.isfinite(p)):
            return NAN3.copy()
        q = closest_on_triangles(p, self.tri[sel])
        d = q - p
        hx, hy = SNAP_HALF_EXTENT
        ok = (np.abs(d[:, 0]) <= hx) & (np.abs(d[:, 2]) <= hx) & (np.abs(d[:, 1]) <= hy)
        if not ok.any():
            return NAN3.copy()
        over = np.hypot(d[:, 0], d[:, 2]) < 1e-6  # the point is above the triangle
        cost = np.where(over, np.maximum(np.abs(d[:, 1]) - self.climb, 0) ** 2, (d * d).sum(1))
        return q[int(np.argmin(np.where(ok, cost, np.inf)))]
