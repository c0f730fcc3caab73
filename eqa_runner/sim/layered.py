"""Navigation on a multi-storey span field (:mod:`eqa_runner.sim.recast`): islands, snapping,
random points, shortest paths through stairs.

Navigable spans are graph nodes (8-neighbour steps; a diagonal needs both of its orthogonal
routes), edge weights their 3-D distance; paths are string-pulled in 3-D and geodesics are the
length of the pulled path, as Detour's straight path on a navmesh.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

# imported with the module, not on a simulator thread: concurrent first imports race (open3d
# iterates sys.modules while it loads)
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

from eqa_runner.sim.base import NAN3
from eqa_runner.sim.navgrid import NavGrid
from eqa_runner.sim.recast import DIRS, SpanField, neighbour, span_components

SNAP_HALF_EXTENT = (2.0, 4.0)  # Detour's findNearestPoly box as habitat-sim asks: xz, y (m)


class LayeredNavGrid:
    """Navigable spans of every storey of a scene, with one graph across stairs."""

    def __init__(self, field: SpanField, climb: float, *, cache_sources: int = 16) -> None:
        self.field = field
        self.c = field.cell_size
        self.x0, self.z0 = field.origin_xz
        self.climb = float(climb)
        nx, nz, k = field.floor.shape
        lab, sizes = span_components(field)
        flat = np.arange(nx * nz * k).reshape(nx, nz, k)
        self.node_of = np.full(flat.shape, -1, dtype=np.int64)
        ii, jj, kk = np.nonzero(field.walkable)
        self.node_of[ii, jj, kk] = np.arange(len(ii))
        self.ij = np.stack([ii, jj], axis=1)
        self.layer = kk
        self.xz = np.stack([self.x0 + (ii + 0.5) * self.c, self.z0 + (jj + 0.5) * self.c], 1)
        self.y = field.floor[ii, jj, kk]
        self.island = lab[ii, jj, kk]
        self.island_size = sizes
        self.graph = self._graph()
        self._sources: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cache_sources = cache_sources

    # ------------------------------------------------------------------ graph
    def _graph(self):

        f = self.field
        nodes = np.where(f.walkable, self.node_of, -1)
        rows, cols = [], []
        orth = [neighbour(f.links, nodes, n, -1) for n in range(4)]
        for n in range(4):
            rows.append(nodes[orth[n] >= 0])
            cols.append(orth[n][orth[n] >= 0])
            m = (n + 1) % 4  # diagonal DIRS[n] + DIRS[m], reached both ways round
            a = neighbour(f.links, orth[m], n, -1)
            b = neighbour(f.links, orth[n], m, -1)
            ok = (a >= 0) & (a == b) & (nodes >= 0)
            rows.append(nodes[ok])
            cols.append(a[ok])
        r, c = np.concatenate(rows), np.concatenate(cols)
        p = np.column_stack([self.xz[:, 0], self.y, self.xz[:, 1]])
        w = np.linalg.norm(p[r] - p[c], axis=1)
        n = len(self.y)
        return coo_matrix((w, (r, c)), shape=(n, n)).tocsr()

    @property
    def n_nodes(self) -> int:
        return len(self.y)

    def point(self, node: int) -> np.ndarray:
        return np.array([self.xz[node, 0], self.y[node], self.xz[node, 1]])

    # ------------------------------------------------------------------ lookup
    def node_at(self, p: np.ndarray, tol: float | None = None) -> int:
        """The navigable span under ``p`` (its cell, floor within ``tol`` below/above), or -1."""
        if not np.all(np.isfinite(p)):
            return -1
        i = int(np.floor((p[0] - self.x0) / self.c))
        j = int(np.floor((p[2] - self.z0) / self.c))
        nx, nz, _ = self.field.floor.shape
        if not (0 <= i < nx and 0 <= j < nz):
            return -1
        nodes = self.node_of[i, j]
        ok = nodes >= 0
        if not ok.any():
            return -1
        dy = np.abs(self.field.floor[i, j] - p[1])
        dy = np.where(ok, dy, np.inf)
        k = int(np.argmin(dy))
        lim = self.climb + 0.3 if tol is None else tol
        return int(nodes[k]) if dy[k] <= lim else -1

    def snap_node(self, p: np.ndarray, island: int | None = None) -> tuple[int, np.ndarray]:
        """Nearest navigable point to ``p`` inside Detour's search box (only on ``island`` when
        given): (node, point) or (-1, NaN)."""
        if not np.all(np.isfinite(p)) or self.n_nodes == 0:
            return -1, NAN3.copy()
        hx, hy = SNAP_HALF_EXTENT
        cand = self._box_nodes(p, hx)  # every node the box can hold, in node order
        xz, y = self.xz[cand], self.y[cand]
        lo = xz - self.c / 2
        q = np.clip(np.array([p[0], p[2]]), lo + 1e-4, lo + self.c - 1e-4)  # closest in each cell
        dxz = np.linalg.norm(q - np.array([p[0], p[2]]), axis=1)
        dy = np.abs(y - p[1])
        ok = (np.abs(xz - [p[0], p[2]]) <= hx + self.c / 2).all(axis=1) & (dy <= hy)
        if island is not None:
            ok &= self.island[cand] == island
        if not ok.any():
            return -1, NAN3.copy()
        # Detour's findNearestPoly: under the point (its column) only the height beyond climb
        # counts, elsewhere the full 3-D distance to the closest point
        i, j = np.floor((np.array([p[0], p[2]]) - [self.x0, self.z0]) / self.c).astype(int)
        over = (self.ij[cand, 0] == i) & (self.ij[cand, 1] == j)
        cost = np.where(over, np.maximum(dy - self.climb, 0.0) ** 2, dxz**2 + dy**2) + 1e-9 * dy
        cost = np.where(ok, cost, np.inf)
        k = int(np.argmin(cost))
        return int(cand[k]), np.array([q[k, 0], y[k], q[k, 1]])

    def _box_nodes(self, p: np.ndarray, half: float) -> np.ndarray:
        """Nodes (ascending) of the grid columns within ``half`` (+ 2 cells) of ``p`` in x-z: a
        superset of those the snap box admits, so the snap reads a few thousand nodes, not all."""
        nx, nz, _ = self.node_of.shape
        lo = np.floor((np.array([p[0] - half, p[2] - half]) - [self.x0, self.z0]) / self.c) - 2
        hi = np.ceil((np.array([p[0] + half, p[2] + half]) - [self.x0, self.z0]) / self.c) + 2
        i0, j0 = (int(max(v, 0)) for v in lo)
        i1, j1 = int(min(max(hi[0] + 1, 0), nx)), int(min(max(hi[1] + 1, 0), nz))
        nodes = self.node_of[i0:i1, j0:j1].ravel()
        return np.sort(nodes[nodes >= 0])

    # ------------------------------------------------------------------ paths
    def _source(self, node: int) -> tuple[np.ndarray, np.ndarray]:

        hit = self._sources.get(node)
        if hit is not None:
            self._sources.move_to_end(node)
            return hit
        dist, pred = dijkstra(self.graph, indices=node, return_predecessors=True)
        self._sources[node] = (dist, pred)
        while len(self._sources) > self._cache_sources:
            self._sources.popitem(last=False)
        return dist, pred

    def shortest_path(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray] | None:
        """String-pulled path of habitat points from ``a`` to ``b`` (both snapped onto ``a``'s
        island); None if unreachable."""
        na, pa = self.snap_node(a)
        if na < 0:
            return None
        nb, pb = self.snap_node(b, int(self.island[na]))
        if nb < 0:
            return None
        if na == nb:
            return [pa, pb]
        dist, pred = self._source(na)
        if not np.isfinite(dist[nb]):
            return None
        chain = [nb]
        while chain[-1] != na:
            chain.append(int(pred[chain[-1]]))
        chain.reverse()
        pts = np.array([pa] + [self.point(n) for n in chain[1:-1]] + [pb])
        return [np.asarray(p) for p in self._string_pull(pts)]

    def geodesic_distance(self, a: np.ndarray, b: np.ndarray) -> float:
        path = self.shortest_path(a, b)
        if path is None:
            return float("inf")
        return float(np.sum(np.linalg.norm(np.diff(np.asarray(path), axis=0), axis=1)))

    def line_of_sight(self, p: np.ndarray, q: np.ndarray) -> bool:
        """Whether the segment p-q (3-D, sampled at c/3) stays on navigable spans whose floor
        follows it within climb."""
        n = max(int(np.ceil(np.linalg.norm((q - p)[[0, 2]]) / (self.c / 3))), 1)
        t = np.linspace(0.0, 1.0, n + 1)[:, None]
        s = p[None, :] * (1 - t) + q[None, :] * t
        i = np.floor((s[:, 0] - self.x0) / self.c).astype(int)
        j = np.floor((s[:, 2] - self.z0) / self.c).astype(int)
        nx, nz, _ = self.field.floor.shape
        if not ((i >= 0) & (i < nx) & (j >= 0) & (j < nz)).all():
            return False
        nodes = self.node_of[i, j]  # (n, k)
        fl = np.where(nodes >= 0, self.field.floor[i, j], np.nan)
        dy = np.abs(fl - s[:, 1:2])
        return bool((np.nan_to_num(dy, nan=np.inf).min(axis=1) <= self.climb).all())

    def lines_of_sight(self, p: np.ndarray, qs: np.ndarray) -> np.ndarray:
        """``[line_of_sight(p, q) for q in qs]`` in one pass over all their samples (the same
        samples and arithmetic: one call per segment cost more than the test itself)."""
        qs = np.asarray(qs, dtype=float).reshape(-1, 3)
        n = np.array(
            [max(int(np.ceil(np.linalg.norm((q - p)[[0, 2]]) / (self.c / 3))), 1) for q in qs]
        )
        seg = np.repeat(np.arange(len(qs)), n + 1)  # sample -> segment
        first = np.concatenate([[0], np.cumsum(n + 1)[:-1]])
        k = np.arange(len(seg)) - first[seg]
        t = (k * (1.0 / n[seg]))[:, None]  # = np.linspace(0, 1, n + 1), bit for bit
        t[first + n] = 1.0
        s = p[None, :] * (1 - t) + qs[seg] * t
        i = np.floor((s[:, 0] - self.x0) / self.c).astype(int)
        j = np.floor((s[:, 2] - self.z0) / self.c).astype(int)
        nx, nz, _ = self.field.floor.shape
        inside = (i >= 0) & (i < nx) & (j >= 0) & (j < nz)
        i, j = np.where(inside, i, 0), np.where(inside, j, 0)
        nodes = self.node_of[i, j]  # (samples, k)
        fl = np.where(nodes >= 0, self.field.floor[i, j], np.nan)
        dy = np.abs(fl - s[:, 1:2])
        ok = inside & (np.nan_to_num(dy, nan=np.inf).min(axis=1) <= self.climb)
        return np.logical_and.reduceat(ok, first)

    def _string_pull(self, pts: np.ndarray, chunk: int = 16) -> np.ndarray:
        """Greedy: from each kept point, the farthest next one in sight while all in between
        are (the candidates are tested ``chunk`` at a time)."""
        out = [pts[0]]
        i, n = 0, len(pts)
        while i < n - 1:
            k = i + 1
            while k + 1 < n:
                ok = self.lines_of_sight(pts[i], pts[k + 1 : min(k + 1 + chunk, n)])
                if ok.all():
                    k += len(ok)
                    continue
                k += int(np.argmin(ok))  # the last one before the first out of sight
                break
            out.append(pts[k])
            i = k
        return np.asarray(out)

    # ------------------------------------------------------------------ sampling & views
    def random_point_near(
        self, p: np.ndarray, radius: float, rng: np.random.Generator
    ) -> np.ndarray:
        """Uniform over spans within ``radius`` (x-z) of ``p`` connected to its snap inside the
        disc (Detour's ``findRandomPointAroundCircle``)."""

        node, _ = self.snap_node(p)
        if node < 0:
            return NAN3.copy()
        d = np.linalg.norm(self.xz - [p[0], p[2]], axis=1)
        near = np.nonzero((d <= max(radius, 0.0)) & (self.island == self.island[node]))[0]
        near = np.union1d(near, [node])
        _, lab = connected_components(self.graph[near][:, near], directed=False)
        sel = near[lab == lab[np.searchsorted(near, node)]]
        return self.point(int(sel[int(rng.integers(len(sel)))]))

    def on_floor(self, floor_y: float, band: float) -> np.ndarray:
        """Nodes whose floor lies within ``band`` of ``floor_y``."""
        return np.nonzero(np.abs(self.y - floor_y) <= band)[0]

    def floor_view(self, floor_y: float, band: float, snap_max_dist: float) -> NavGrid:
        """A 2-D :class:`NavGrid` of the spans within ``band`` of ``floor_y`` (one storey)."""
        nx, nz, _ = self.field.floor.shape
        nav = np.zeros((nx, nz), dtype=bool)
        sel = self.on_floor(floor_y, band)
        nav[self.ij[sel, 0], self.ij[sel, 1]] = True
        return NavGrid(nav, (self.x0, self.z0), self.c, floor_y, snap_max_dist=snap_max_dist)

    def storeys(self, min_area: float = 4.0) -> list[float]:
        """Floor heights holding at least ``min_area`` m^2 of navigable spans (0.1 m bins)."""
        if self.n_nodes == 0:
            return []
        bins = np.round(self.y / 0.1).astype(int)
        uniq, cnt = np.unique(bins, return_counts=True)
        keep = uniq[cnt * self.c * self.c >= min_area]
        return [float(np.median(self.y[bins == b])) for b in keep]


__all__ = ["DIRS", "LayeredNavGrid"]
