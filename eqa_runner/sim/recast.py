"""Walkable spans of a mesh with Recast's semantics (what habitat-sim bakes its navmesh from).

A 2.5-D heightfield: every grid column (x, z) holds the solid spans the mesh rasterises into,
bottom to top; the top of a span is a floor, the bottom of the next span its ceiling, so several
storeys stack in one grid. The steps follow Recast's ``rcBuildNavMesh`` pipeline as habitat-sim
runs it: walkable-slope marking, low-hanging obstacles, ledge spans (drop-offs and floor edges),
low-height spans, neighbour links (climb and headroom), erosion by the agent radius from every
boundary of the walkable area (chamfer distance), and removal of connected regions smaller than
``region_min_size`` squared cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# imported with the module, not on a simulator thread: concurrent first imports race (open3d
# iterates sys.modules while it loads)
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

# 4-neighbour offsets (i, j), Recast's direction order
DIRS = ((-1, 0), (0, 1), (1, 0), (0, -1))
_MAX_POINTS = 2_000_000  # surface samples per rasterisation chunk
_Y_Q = 0.002  # m, height resolution of the samples


@dataclass(frozen=True)
class NavSettings:
    """Agent body and navmesh voxel settings, one set for both backends (habitat-sim's
    ``NavMeshSettings`` names; the defaults are habitat-sim's except ``cell_height``)."""

    agent_radius: float = 0.1
    agent_height: float = 1.5
    agent_max_climb: float = 0.2
    agent_max_slope: float = 45.0  # degrees
    cell_size: float = 0.05
    cell_height: float = 0.05
    region_min_size: float = 20.0  # cells; regions under this squared are dropped

    @property
    def radius_cells(self) -> int:
        return math.ceil(self.agent_radius / self.cell_size - 1e-6)


@dataclass
class SpanField:
    """Spans on an (nx, nz) grid, up to ``k`` per column (dense arrays, NaN where absent)."""

    origin_xz: tuple[float, float]
    cell_size: float
    floor: np.ndarray  # (nx, nz, k) span top (walking surface), NaN if no span
    ceil: np.ndarray  # (nx, nz, k) bottom of the next span up, +inf at the top
    walkable: np.ndarray  # (nx, nz, k) bool, after every filter
    links: np.ndarray  # (4, nx, nz, k) int8: layer of the linked span in DIRS[d], -1 none
    bottom_y: float = 0.0

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.floor.shape


def _steps(length: np.ndarray, step: float) -> np.ndarray:
    """Divisions of edges so that each piece is <= ``step``."""
    return np.maximum(np.ceil(length / step), 1.0).astype(int)


def _unique(a: np.ndarray) -> np.ndarray:
    a = np.sort(a)
    return a[np.concatenate([[True], a[1:] != a[:-1]])] if len(a) else a


def sample_surface(tri: np.ndarray, step: float):
    """Samples of triangles (F, 3, 3) on a lattice along two edges (spacing <= ``step`` along
    each, so about area / step^2 points) plus the third edge; yields (points, face)."""
    n1 = _steps(np.linalg.norm(tri[:, 1] - tri[:, 0], axis=1), step)
    n2 = _steps(np.linalg.norm(tri[:, 2] - tri[:, 0], axis=1), step)
    n3 = _steps(np.linalg.norm(tri[:, 2] - tri[:, 1], axis=1), step)
    for key in np.unique(np.stack([n1, n2], axis=1), axis=0):
        faces = np.nonzero((n1 == key[0]) & (n2 == key[1]))[0]
        a, b = np.meshgrid(np.arange(key[0] + 1), np.arange(key[1] + 1), indexing="ij")
        w1, w2 = a / key[0], b / key[1]
        keep = w1 + w2 <= 1.0 + 1e-9
        w1, w2 = w1[keep], w2[keep]
        yield from _combine(tri, faces, 1.0 - w1 - w2, w1, w2)
    for n in np.unique(n3):
        faces = np.nonzero(n3 == n)[0]
        w = np.arange(n + 1) / n
        yield from _combine(tri, faces, np.zeros_like(w), 1.0 - w, w)


def _combine(tri, faces, w0, w1, w2):
    chunk = max(1, _MAX_POINTS // len(w0))
    for s in range(0, len(faces), chunk):
        f = faces[s : s + chunk]
        t = tri[f]
        pts = w0[None, :, None] * t[:, None, 0]
        pts += w1[None, :, None] * t[:, None, 1]
        pts += w2[None, :, None] * t[:, None, 2]
        yield pts.reshape(-1, 3), np.repeat(f, len(w0))


def rasterize(vertices: np.ndarray, triangles: np.ndarray, s: NavSettings):
    """Solid spans per column: (origin, (nx, nz), bottom, top, walk_top) with (nx, nz, k)
    arrays (NaN where a column has fewer spans). ``walk_top``: the span's top is walkable (a
    walkable triangle reaches within ``agent_max_climb`` of it, Recast's flag merge)."""
    v = np.asarray(vertices, dtype=np.float64)
    tri = v[np.asarray(triangles, dtype=np.int64)]
    c = s.cell_size
    lo = v[:, [0, 2]].min(axis=0)
    nx, nz = (np.ceil((v[:, [0, 2]].max(axis=0) - lo) / c).astype(int) + 1).tolist()
    cr = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    ln = np.linalg.norm(cr, axis=1)
    walk_face = cr[:, 1] > math.cos(math.radians(s.agent_max_slope)) * np.maximum(ln, 1e-12)
    y_lo = float(v[:, 1].min())
    keys = []
    for pts, face in sample_surface(tri, c / 3):
        # rounded first: a face on a cell boundary goes to one column, not both by noise
        i = np.floor(np.round((pts[:, 0] - lo[0]) / c, 6)).astype(np.int64).clip(0, nx - 1)
        j = np.floor(np.round((pts[:, 2] - lo[1]) / c, 6)).astype(np.int64).clip(0, nz - 1)
        yq = np.round((pts[:, 1] - y_lo) / _Y_Q).astype(np.int64)  # 2 mm steps
        keys.append(_unique(((i * nz + j) << 22 | yq) << 1 | walk_face[face]))
    key = _unique(np.concatenate(keys))
    cell, y, w = key >> 23, ((key >> 1) & ((1 << 22) - 1)) * _Y_Q + y_lo, (key & 1) == 1
    new = np.ones(len(y), dtype=bool)
    new[1:] = (cell[1:] != cell[:-1]) | (y[1:] - y[:-1] > s.cell_height)
    starts = np.nonzero(new)[0]
    ends = np.append(starts[1:], len(y)) - 1
    bot, top, scell = y[starts], y[ends], cell[starts]
    wy = np.where(w, y, -np.inf)
    wtop = np.maximum.reduceat(wy, starts)
    walk_top = wtop >= top - s.agent_max_climb
    first = np.ones(len(starts), dtype=bool)
    first[1:] = scell[1:] != scell[:-1]
    grp = np.cumsum(first) - 1
    layer = np.arange(len(starts)) - np.nonzero(first)[0][grp]
    k = int(layer.max()) + 1
    shape = (nx, nz, k)
    out = [np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, dtype=bool)]
    ii, jj = scell // nz, scell % nz
    for arr, val in zip(out, (bot, top, walk_top), strict=True):
        arr[ii, jj, layer] = val
    return (float(lo[0]), float(lo[1])), (nx, nz), out[0], out[1], out[2]


def _shift(a: np.ndarray, d: tuple[int, int], fill) -> np.ndarray:
    """``out[i, j] = a[i + di, j + dj]`` (``fill`` outside the grid)."""
    out = np.full_like(a, fill)
    di, dj = d
    nx, nz = a.shape[:2]
    src = (slice(max(di, 0), nx + min(di, 0)), slice(max(dj, 0), nz + min(dj, 0)))
    dst = (slice(max(-di, 0), nx + min(-di, 0)), slice(max(-dj, 0), nz + min(-dj, 0)))
    out[dst] = a[src]
    return out


def build_spans(vertices: np.ndarray, triangles: np.ndarray, s: NavSettings) -> SpanField:
    """The walkable span field of a mesh (every Recast filter, erosion and region removal)."""
    origin, _, bot, top, walk = rasterize(vertices, triangles, s)
    bot, top = _quantize(bot, top, s.cell_height)
    climb, height = s.agent_max_climb + 1e-6, s.agent_height - 1e-6
    ceil = np.full_like(top, np.inf)
    ceil[..., :-1] = np.where(np.isnan(bot[..., 1:]), np.inf, bot[..., 1:])
    exists = ~np.isnan(top)
    walk &= exists
    for k in range(1, top.shape[2]):  # rcFilterLowHangingWalkableObstacles
        lift = ~walk[..., k] & walk[..., k - 1] & (top[..., k] - top[..., k - 1] <= climb)
        walk[..., k] |= lift & exists[..., k]
    bottom_y = float(np.nanmin(bot))
    walk &= ~_ledges(top, ceil, bot, exists, bottom_y, s)
    walk &= ceil - top > height  # rcFilterWalkableLowHeightSpans
    links = _links(top, ceil, walk, s)
    walk &= ~_eroded(walk, links, s.radius_cells)
    links = _links(top, ceil, walk, s)
    field = SpanField(origin, s.cell_size, top, ceil, walk, links, bottom_y)
    _drop_small_regions(field, int(s.region_min_size**2))
    return field


def _quantize(bot: np.ndarray, top: np.ndarray, ch: float) -> tuple[np.ndarray, np.ndarray]:
    """Span limits in voxels of ``ch`` above the lowest point, as Recast stores them: bottom
    floor(y), top ceil(y) and at least one voxel above the bottom (a floor at y is walked on
    at the top of its voxel)."""
    y0 = np.nanmin(bot)
    qb = np.floor((bot - y0) / ch + 1e-4)
    qt = np.maximum(np.ceil((top - y0) / ch - 1e-4), np.floor((top - y0) / ch + 1e-4) + 1)
    return y0 + qb * ch, y0 + qt * ch


def _ledges(top, ceil, bot, exists, bottom_y, s: NavSettings) -> np.ndarray:
    """rcFilterLedgeSpans: a drop of more than climb to a neighbour floor the agent could step
    onto (or off the grid / into an empty column), or neighbour floors spread over more than
    climb, make a span a ledge."""
    climb, height = s.agent_max_climb + 1e-6, s.agent_height - 1e-6
    # each column's walkable "floors": a virtual floor under the lowest span, then span tops
    nfl = np.concatenate([np.full(top.shape[:2] + (1,), bottom_y - climb), top], axis=2)
    first_bot = np.where(np.isnan(bot[..., :1]), np.inf, bot[..., :1])
    ncl = np.concatenate([first_bot, ceil], axis=2)
    minh = np.full(top.shape, np.inf)
    asmin, asmax = top.copy(), top.copy()
    f, c = top[..., :, None], ceil[..., :, None]
    for d in DIRS:
        nf = _shift(nfl, d, np.nan)[..., None, :]
        nc = _shift(ncl, d, np.nan)[..., None, :]
        outside = np.isnan(_shift(nfl[..., 0], d, np.nan))[..., None]
        overlap = np.minimum(c, nc) - np.maximum(f, nf) > height
        drop = np.where(overlap, nf - f, np.inf).min(axis=-1)
        minh = np.minimum(minh, np.where(outside, -np.inf, drop))
        acc = overlap & (np.abs(nf - f) <= climb)
        asmin = np.minimum(asmin, np.where(acc, nf, np.inf).min(axis=-1))
        asmax = np.maximum(asmax, np.where(acc, nf, -np.inf).max(axis=-1))
    return exists & ((minh < -climb) | (asmax - asmin > climb))


def _links(top, ceil, walk, s: NavSettings) -> np.ndarray:
    """Neighbour links between walkable spans: floors within climb, shared headroom >= height
    (the lowest such layer, as rcBuildCompactHeightfield picks)."""
    nx, nz, k = top.shape
    links = np.full((4, nx, nz, k), -1, dtype=np.int8)
    f, c = top[..., :, None], ceil[..., :, None]
    for n, d in enumerate(DIRS):
        nf = _shift(top, d, np.nan)[..., None, :]
        nc = _shift(ceil, d, np.nan)[..., None, :]
        nw = _shift(walk, d, False)[..., None, :]
        ok = nw & (np.abs(nf - f) <= s.agent_max_climb + 1e-6)
        ok &= np.minimum(c, nc) - np.maximum(f, nf) >= s.agent_height - 1e-6
        ok &= walk[..., :, None]
        links[n] = np.where(ok.any(axis=-1), ok.argmax(axis=-1), -1)
    return links


def neighbour(links: np.ndarray, arr: np.ndarray, n: int, fill):
    """``arr`` of each span's linked neighbour in direction ``n`` (``fill`` without a link)."""
    d = DIRS[n]
    sh = _shift(arr, d, fill)
    lk = links[n]
    got = np.take_along_axis(sh, np.maximum(lk, 0).astype(np.intp), axis=2)
    return np.where(lk >= 0, got, fill)


def _eroded(walk, links, radius: int) -> np.ndarray:
    """rcErodeWalkableArea: spans whose chamfer distance (2 per step, 3 per diagonal) to the
    boundary of the walkable area is under 2 * radius cells."""
    if radius <= 0:
        return np.zeros_like(walk)
    boundary = walk & (links < 0).any(axis=0)
    big = 255.0
    dist = np.where(boundary, 0.0, big)
    for _ in range(2 * radius + 2):
        new = dist.copy()
        for n in range(4):
            new = np.minimum(new, neighbour(links, dist, n, big) + 2.0)
            side = neighbour(links, dist, (n + 1) % 4, big)
            new = np.minimum(new, neighbour(links, side, n, big) + 3.0)
        new = np.where(walk, new, big)
        if np.array_equal(new, dist):
            break
        dist = new
    return walk & (dist < 2 * radius)


def _drop_small_regions(field: SpanField, min_cells: int) -> None:
    """Remove connected walkable regions with fewer than ``min_cells`` spans (in place)."""
    if min_cells <= 1:
        return
    comp, sizes = span_components(field)
    if len(sizes) == 0:
        return
    small = field.walkable & (sizes[np.maximum(comp, 0)] < min_cells)
    if small.any():
        field.walkable &= ~small
        field.links = np.where(
            np.stack([neighbour(field.links, field.walkable, n, False) for n in range(4)])
            & field.walkable[None],
            field.links,
            -1,
        ).astype(np.int8)


def span_components(field: SpanField) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of walkable spans over 4-neighbour links: (label per span, -1 off
    the walkable area; sizes per label)."""

    nx, nz, k = field.floor.shape
    idx = np.arange(nx * nz * k).reshape(nx, nz, k)
    rows, cols = [], []
    for n in range(4):
        nb = neighbour(field.links, idx, n, -1)
        ok = field.walkable & (nb >= 0)
        rows.append(idx[ok])
        cols.append(nb[ok])
    if not field.walkable.any():
        return np.full(idx.shape, -1), np.zeros(0, dtype=np.int64)
    r, c = np.concatenate(rows), np.concatenate(cols)
    g = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(idx.size, idx.size))
    _, lab = connected_components(g, directed=False)
    lab = lab.reshape(nx, nz, k)
    lab = np.where(field.walkable, lab, -1)
    sizes = np.bincount(lab[lab >= 0].ravel(), minlength=int(lab.max()) + 1)
    return lab, sizes


def no_floor_cause(mesh, s: NavSettings) -> str:
    """Why a mesh has no navigable area, in one line with the fix."""
    v = np.asarray(mesh.vertices, dtype=np.float64)
    tri = v[np.asarray(mesh.triangles, dtype=np.int64)]
    cr = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    area = 0.5 * np.linalg.norm(cr, axis=1)
    cos = math.cos(math.radians(s.agent_max_slope))
    up = float(area[cr[:, 1] > cos * 2 * np.maximum(area, 1e-12)].sum())
    down = float(area[-cr[:, 1] > cos * 2 * np.maximum(area, 1e-12)].sum())
    if up < 1e-6 and down > 1e-6:
        return (
            f"no navigable area: every level surface ({down:.1f} m^2) faces down (flipped "
            "normals?); wind floor triangles counter-clockwise seen from above"
        )
    if up < 1e-6:
        return "no navigable area: the mesh has no floor (no surface facing up)"
    return (
        f"no navigable area: {up:.1f} m^2 of upward surface, none of it a region of at least "
        f"{(s.region_min_size * s.cell_size) ** 2:.2f} m^2 with {s.agent_height} m headroom "
        f"after eroding {s.agent_radius} m from its edges (check the scale and up axis)"
    )


def start_off_island(scene, p: np.ndarray, nearest: np.ndarray, limit: float) -> str:
    """The error line of a start position on no island (its nearest navigable point
    ``nearest``, NaN when none was found, is farther than ``limit`` metres)."""
    name = scene.scene_id if scene is not None else "<memory>"
    where = "[" + ", ".join(f"{x:.2f}" for x in p) + "]"
    if not np.all(np.isfinite(nearest)):
        return f"scene {name}: start {where} is on no island (nothing navigable within 2 m)"
    d = float(np.linalg.norm(nearest - p))
    return (
        f"scene {name}: start {where} is on no island (the nearest navigable point is "
        f"{d:.2f} m away, more than {limit} m); fix the episode's start position"
    )
