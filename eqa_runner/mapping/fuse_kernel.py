"""Compiled (numba) inner loop of :meth:`TSDFVolume.integrate` over a box of voxels.

The upstream TSDF planner (explore-eqa, after andyzeng/tsdf-fusion-python) compiles its
per-voxel projection with numba too; here the loop visits only the voxels of the camera
frustum's bounding box and updates TSDF, weight and explored flags in place, so no
per-voxel temporary arrays are built.

Arithmetic is float32 in the same order as the numpy path (``TSDFVolume._integrate_box``),
so both give bit-identical volumes (``tests/mapping`` checks this). The kernel releases the
GIL, so fusion runs beside the run loop's other threads. Compiled code is cached on disk
next to this file (or under ``NUMBA_CACHE_DIR``); the first call in a fresh install compiles
it (about 1 s).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def fuse_box(
    tsdf: np.ndarray,  # (X, Y, Z) float32, updated in place
    weight: np.ndarray,  # (X, Y, Z) float32, updated in place
    explored: np.ndarray,  # (X, Y, Z) bool, set in place
    explored_2d: np.ndarray,  # (X, Y) bool, set in place
    depth: np.ndarray,  # (H, W) float32 metres, <= 0 invalid
    lo0: int,
    lo1: int,
    lo2: int,
    nk: int,
    base: np.ndarray,  # (n0, n1, 3) float32: (u*z, v*z, z) of each column's voxel k = 0
    step: np.ndarray,  # (3,) float32: change of (u*z, v*z, z) per k
    trunc: np.float32,
    obs_weight: np.float32,
    margin_h: int,
    margin_w: int,
) -> tuple[int, int]:
    """Fuse ``depth`` into the box ``[lo0, lo0+n0) x [lo1, lo1+n1) x [lo2, lo2+nk)``.

    Returns (voxels updated, voxels marked explored).
    """
    h, w = depth.shape
    n0, n1 = base.shape[0], base.shape[1]
    s0, s1, s2 = step[0], step[1], step[2]
    neg_trunc = -trunc
    one = np.float32(1.0)
    near = np.float32(1e-6)
    inf = np.float32(np.inf)
    updated = 0
    marked = 0
    for i in range(n0):
        gi = lo0 + i
        for j in range(n1):
            gj = lo1 + j
            bu = base[i, j, 0]
            bv = base[i, j, 1]
            bz = base[i, j, 2]
            column_explored = False
            for k in range(nk):
                kf = np.float32(k)
                z = bz + kf * s2
                if not z > near:
                    continue
                inv_z = one / z
                u = int(np.rint((bu + kf * s0) * inv_z))
                if u < 0 or u >= w:
                    continue
                v = int(np.rint((bv + kf * s1) * inv_z))
                if v < 0 or v >= h:
                    continue
                d = depth[v, u]
                if not (d > 0 and d < inf):  # invalid: <= 0, NaN or inf
                    continue
                diff = d - z
                if diff < neg_trunc:
                    continue
                dist = diff / trunc
                if dist > one:
                    dist = one
                elif dist < -one:
                    dist = -one
                gk = lo2 + k
                w_old = weight[gi, gj, gk]
                w_new = w_old + obs_weight
                tsdf[gi, gj, gk] = (w_old * tsdf[gi, gj, gk] + obs_weight * dist) / w_new
                weight[gi, gj, gk] = w_new
                updated += 1
                if u >= margin_w and u < w - margin_w and v >= margin_h:
                    explored[gi, gj, gk] = True
                    column_explored = True
                    marked += 1
            if column_explored:
                explored_2d[gi, gj] = True
    return updated, marked


@njit(cache=True, nogil=True)
def max_valid_depth(depth: np.ndarray) -> float:
    """Largest finite depth > 0 of an (H, W) float32 image; 0.0 if there is none."""
    best = np.float32(0.0)
    inf = np.float32(np.inf)
    for v in range(depth.shape[0]):
        for u in range(depth.shape[1]):
            d = depth[v, u]
            if d > best and d < inf:
                best = d
    return best
