"""Compiled (numba) z-buffer rasteriser of the mesh backend: the per-pixel hits of a pinhole
camera, as a ray cast through every pixel centre gives them, at a fraction of the cost.

For each triangle in front of the camera (clipped at habitat-sim's near plane, 1 cm) the
pixels whose centres fall inside it (edges inclusive, so shared edges leave no cracks) get the
nearest surface's z-depth, triangle id and barycentric (u, v) of the hit on the original
triangle (hit = (1 - u - v) a + u b + v c, open3d's ``primitive_uvs`` convention), all
perspective-correct: 1/z and (u, v)/z are linear in the image. The arithmetic is float64. A
triangle seen from behind is skipped when culling (habitat-sim's single-sided triangles,
counter-clockwise front). Rows are split into bands rendered on separate threads (the kernels
release the GIL and write disjoint rows).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

NEAR = 0.01  # m, habitat-sim's default near plane
INVALID = np.uint32(0xFFFFFFFF)  # a miss, as open3d reports it
_EDGE_EPS = -1e-9  # edge functions are normalised: a pixel on a shared edge goes to both
_POOL: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    """In a forked child the parent's pool threads do not exist: start a new pool there."""
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


@njit(cache=True, nogil=True)
def project(verts, rot, pos, fx, fy, cx, cy, vc, scr) -> None:
    """World vertices (V, 3) -> camera frame ``vc`` (OpenGL: looking down -z; rot^T (v - pos))
    and ``scr``: pixel x, pixel y (pixel centres at integers) and depth d = -z (x, y only
    where d >= NEAR)."""
    for i in range(verts.shape[0]):
        px, py, pz = verts[i, 0] - pos[0], verts[i, 1] - pos[1], verts[i, 2] - pos[2]
        for j in range(3):
            vc[i, j] = rot[0, j] * px + rot[1, j] * py + rot[2, j] * pz
        d = -vc[i, 2]
        scr[i, 2] = d
        if d >= NEAR:
            scr[i, 0] = cx + fx * vc[i, 0] / d - 0.5
            scr[i, 1] = cy - fy * vc[i, 1] / d - 0.5


@njit(cache=True, nogil=True)
def _span(a: float, e: float, xa: int, xb: int) -> tuple[int, int]:
    """Pixels x in [xa, xb] where a x + e >= 0 may hold, with one pixel of margin each side
    (the caller tests every pixel it visits)."""
    if a == 0.0:
        return (xa, xb) if e >= _EDGE_EPS else (xb + 1, xb)
    x = min(max(-e / a, xa - 1.0), xb + 1.0)  # the edge crosses the row here
    if a > 0.0:
        return max(xa, int(np.floor(x))), xb
    return xa, min(xb, int(np.ceil(x)))


@njit(cache=True, nogil=True)
def _fill(s, att, fid, r0, r1, w, zbuf, pid, uv):
    """Rasterise one screen triangle ``s`` (3, 3: x, y, d) with per-vertex barycentric
    attributes ``att`` (3, 2) into rows [r0, r1)."""
    x0, y0, x1, y1, x2, y2 = s[0, 0], s[0, 1], s[1, 0], s[1, 1], s[2, 0], s[2, 1]
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    if area == 0.0:
        return
    ya = max(r0, int(np.ceil(min(y0, y1, y2))))
    yb = min(r1 - 1, int(np.floor(max(y0, y1, y2))))
    xa = max(0, int(np.ceil(min(x0, x1, x2))))
    xb = min(w - 1, int(np.floor(max(x0, x1, x2))))
    if ya > yb or xa > xb:
        return
    inv = 1.0 / area
    # l_k(x, y) = a_k x + b_k y + c_k: the barycentric weight of vertex k in the image
    a0, b0, c0 = (y1 - y2) * inv, (x2 - x1) * inv, (x1 * y2 - x2 * y1) * inv
    a1, b1, c1 = (y2 - y0) * inv, (x0 - x2) * inv, (x2 * y0 - x0 * y2) * inv
    a2, b2, c2 = (y0 - y1) * inv, (x1 - x0) * inv, (x0 * y1 - x1 * y0) * inv
    q0, q1, q2 = 1.0 / s[0, 2], 1.0 / s[1, 2], 1.0 / s[2, 2]
    for y in range(ya, yb + 1):
        e0, e1, e2 = b0 * y + c0, b1 * y + c1, b2 * y + c2
        lo, hi = _span(a0, e0, xa, xb)
        lo1, hi1 = _span(a1, e1, xa, xb)
        lo2, hi2 = _span(a2, e2, xa, xb)
        lo, hi = max(lo, lo1, lo2), min(hi, hi1, hi2)
        base = y * w
        for x in range(lo, hi + 1):
            l0, l1, l2 = a0 * x + e0, a1 * x + e1, a2 * x + e2
            if l0 < _EDGE_EPS or l1 < _EDGE_EPS or l2 < _EDGE_EPS:
                continue
            w0, w1, w2 = l0 * q0, l1 * q1, l2 * q2
            inv_z = w0 + w1 + w2
            z = 1.0 / inv_z
            i = base + x
            if z < zbuf[i]:
                zbuf[i] = z
                pid[i] = fid
                uv[i, 0] = (w0 * att[0, 0] + w1 * att[1, 0] + w2 * att[2, 0]) * z
                uv[i, 1] = (w0 * att[0, 1] + w1 * att[1, 1] + w2 * att[2, 1]) * z


@njit(cache=True, nogil=True)
def _clip_fill(vc, t, fid, fx, fy, cx, cy, r0, r1, w, zbuf, pid, uv):
    """A triangle crossing the near plane: clipped there (1 or 2 triangles), then filled."""
    poly = np.empty((4, 3))
    patt = np.empty((4, 2))
    corner = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    n = 0
    for k in range(3):
        a, b = t[k], t[(k + 1) % 3]
        da, db = -vc[a, 2], -vc[b, 2]
        if da >= NEAR:
            poly[n] = vc[a]
            patt[n] = corner[k]
            n += 1
        if (da >= NEAR) != (db >= NEAR):
            f = (da - NEAR) / (da - db)
            poly[n] = vc[a] + f * (vc[b] - vc[a])
            patt[n] = corner[k] + f * (corner[(k + 1) % 3] - corner[k])
            n += 1
    scr = np.empty((4, 3))
    for k in range(n):
        d = -poly[k, 2]
        scr[k, 0] = cx + fx * poly[k, 0] / d - 0.5
        scr[k, 1] = cy - fy * poly[k, 1] / d - 0.5
        scr[k, 2] = d
    for j in range(1, n - 1):
        sel = np.array([0, j, j + 1])
        _fill(scr[sel], patt[sel], fid, r0, r1, w, zbuf, pid, uv)


@njit(cache=True, nogil=True)
def raster_band(vc, scr, tri, fx, fy, cx, cy, cull, r0, r1, w, zbuf, pid, uv) -> None:
    """Every triangle into image rows [r0, r1): ``zbuf`` (H*W,) float64 (inf = empty),
    ``pid`` (H*W,) uint32, ``uv`` (H*W, 2) float32, all written in those rows only."""
    s = np.empty((3, 3))
    att = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    for f in range(tri.shape[0]):
        a, b, c = tri[f, 0], tri[f, 1], tri[f, 2]
        da, db, dc = scr[a, 2], scr[b, 2], scr[c, 2]
        if da < NEAR and db < NEAR and dc < NEAR:
            continue
        front = da >= NEAR and db >= NEAR and dc >= NEAR
        ys = (scr[a, 1], scr[b, 1], scr[c, 1])
        if front and (max(ys) < r0 or min(ys) > r1 - 1):
            continue  # in front and off these rows
        if cull:  # back-facing: the normal (b - a) x (c - a) points away from the camera
            ux, uy, uz = vc[b, 0] - vc[a, 0], vc[b, 1] - vc[a, 1], vc[b, 2] - vc[a, 2]
            vx, vy, vz = vc[c, 0] - vc[a, 0], vc[c, 1] - vc[a, 1], vc[c, 2] - vc[a, 2]
            nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
            if nx * vc[a, 0] + ny * vc[a, 1] + nz * vc[a, 2] > 0.0:
                continue
        if front:
            s[0], s[1], s[2] = scr[a], scr[b], scr[c]
            _fill(s, att, f, r0, r1, w, zbuf, pid, uv)
        else:
            _clip_fill(vc, tri[f], f, fx, fy, cx, cy, r0, r1, w, zbuf, pid, uv)


def rasterize(
    verts: np.ndarray,
    tri: np.ndarray,
    cam_to_world: np.ndarray,
    k: np.ndarray,
    width: int,
    height: int,
    cull: bool,
    bands: int = 2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_hit float32 z-depth, inf on a miss; primitive_ids uint32, ``INVALID`` on a miss;
    primitive_uvs float32 (N, 2)), flat in row-major pixel order, for the OpenGL camera pose
    ``cam_to_world`` and pinhole intrinsics ``k``; ``verts`` (V, 3) float64, ``tri`` int32."""
    global _POOL
    rot = np.ascontiguousarray(cam_to_world[:3, :3], dtype=np.float64)
    pos = np.ascontiguousarray(cam_to_world[:3, 3], dtype=np.float64)
    fx, fy, cx, cy = float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2])
    vc, scr = np.empty_like(verts), np.empty_like(verts)
    project(verts, rot, pos, fx, fy, cx, cy, vc, scr)
    n = width * height
    zbuf = np.full(n, np.inf)
    pid = np.full(n, INVALID, dtype=np.uint32)
    uv = np.zeros((n, 2), dtype=np.float32)
    rows = np.linspace(0, height, max(1, bands) + 1).astype(int)
    args = (vc, scr, tri, fx, fy, cx, cy, bool(cull))
    jobs = [(int(r0), int(r1)) for r0, r1 in zip(rows[:-1], rows[1:], strict=True) if r1 > r0]
    if len(jobs) > 1:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="raster")
        futs = [
            _POOL.submit(raster_band, *args, r0, r1, width, zbuf, pid, uv) for r0, r1 in jobs[1:]
        ]
        raster_band(*args, *jobs[0], width, zbuf, pid, uv)
        for fut in futs:
            fut.result()
    else:
        raster_band(*args, *jobs[0], width, zbuf, pid, uv)
    return zbuf.astype(np.float32), pid, uv


@njit(cache=True, nogil=True)
def rotate_normals(rot: np.ndarray, fn_t: np.ndarray) -> np.ndarray:
    """``rot.T @ fn_t`` for world face normals (3, F) float32: the normals in the camera frame
    of the camera-to-world rotation ``rot`` (a loop: no BLAS threads to wait for)."""
    out = np.empty_like(fn_t)
    for f in range(fn_t.shape[1]):
        x, y, z = fn_t[0, f], fn_t[1, f], fn_t[2, f]
        for j in range(3):
            out[j, f] = rot[0, j] * x + rot[1, j] * y + rot[2, j] * z
    return out
