"""Compiled (numba) inner loop of :meth:`TSDFVolume.integrate` over a box of voxels.

The upstream TSDF planner (explore-eqa, after andyzeng/tsdf-fusion-python) compiles its
per-voxel projection with numba too; here the loop visits only the voxels of the camera
frustum's bounding box and updates TSDF, weight and explored flags in place, so no
per-voxel temporary arrays are built.

Arithmetic is upstream's, operation for operation, so the maps match it bit for bit: voxel
sample points are float32 (``origin + index * voxel_size``), the world-to-camera transform is
float64 and accumulated as a BLAS ``dgemm`` does it on an FMA machine (``T[r,0]*x``, then one
fused multiply-add per further term), pixels are ``rint(x * fx / z + cx)``, and the running
average is ``(w_old * tsdf_old + w * dist) / w_new`` with the float32 product first. The numpy
path (``TSDFVolume._integrate_box``, the tests' oracle) computes the same values. The kernel
releases the GIL, so fusion runs beside the run loop's other threads. Compiled code is cached on
disk next to this file (or under ``NUMBA_CACHE_DIR``); the first call in a fresh install
compiles it (about 1 s).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def _fma_intrinsic(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma.f64``)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fnty = ir.FunctionType(d, [d, d, d])
        return builder.call(
            cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma.f64"), args
        )

    return sig, codegen


_fma = cast(Callable[[float, float, float], float], _fma_intrinsic)


@njit(cache=True, nogil=True, inline="always")
def _fuse_voxel(tsdf, weight, gi, gj, gk, d32, z, trunc, obs_weight) -> bool:
    """Fold one voxel's observation into its running average (upstream's arithmetic); False
    when the depth is invalid (<= 0, NaN, inf) or the voxel lies beyond the truncation."""
    if not (d32 > 0 and d32 < np.float32(np.inf)):
        return False
    diff = np.float64(d32) - z
    if diff < -trunc:
        return False
    dist = max(-1.0, min(1.0, diff / trunc))
    w_old = weight[gi, gj, gk]
    w_new = np.float32(w_old + obs_weight)
    prod = w_old * tsdf[gi, gj, gk]  # float32 product, as upstream
    tsdf[gi, gj, gk] = np.float32((np.float64(prod) + obs_weight * dist) / w_new)
    weight[gi, gj, gk] = w_new
    return True


@njit(cache=True, nogil=True)
def fuse_box(
    tsdf: np.ndarray,  # (X, Y, Z) float32, updated in place
    weight: np.ndarray,  # (X, Y, Z) float32, updated in place
    explored: np.ndarray,  # (X, Y, Z) bool, set in place
    explored_2d: np.ndarray,  # (X, Y) bool, set in place
    depth: np.ndarray,  # (H, W) float32 metres, <= 0 invalid
    lo: np.ndarray,  # (3,) int64: the box's first grid index per axis
    xs: np.ndarray,  # (n0,) float64: float32 sample x of the box's grid columns
    ys: np.ndarray,  # (n1,)
    zs: np.ndarray,  # (nk,)
    world_to_cam: np.ndarray,  # (4, 4) float64
    k: np.ndarray,  # (4,) float64: fx, fy, cx, cy (float32 values, as upstream)
    trunc: float,
    obs_weight: float,
    margin_h: int,
    margin_w: int,
) -> tuple[int, int]:
    """Fuse ``depth`` into the box ``lo + [0, n0) x [0, n1) x [0, nk)``.

    Returns (voxels updated, voxels marked explored).
    """
    h, w = depth.shape
    t = world_to_cam
    fx, fy, cx, cy = k[0], k[1], k[2], k[3]
    updated = 0
    marked = 0
    for i in range(xs.shape[0]):
        gi = lo[0] + i
        for j in range(ys.shape[0]):
            gj = lo[1] + j
            a0 = _fma(t[0, 1], ys[j], t[0, 0] * xs[i])
            a1 = _fma(t[1, 1], ys[j], t[1, 0] * xs[i])
            a2 = _fma(t[2, 1], ys[j], t[2, 0] * xs[i])
            column_explored = False
            for kk in range(zs.shape[0]):
                z = _fma(t[2, 3], 1.0, _fma(t[2, 2], zs[kk], a2))
                if not z > 0:
                    continue
                cam_x = _fma(t[0, 3], 1.0, _fma(t[0, 2], zs[kk], a0))
                u = int(np.rint(cam_x * fx / z + cx))
                if u < 0 or u >= w:
                    continue
                cam_y = _fma(t[1, 3], 1.0, _fma(t[1, 2], zs[kk], a1))
                v = int(np.rint(cam_y * fy / z + cy))
                if v < 0 or v >= h:
                    continue
                gk = lo[2] + kk
                if not _fuse_voxel(tsdf, weight, gi, gj, gk, depth[v, u], z, trunc, obs_weight):
                    continue
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
