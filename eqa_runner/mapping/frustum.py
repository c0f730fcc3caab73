"""Which voxels of a TSDF grid a depth frame can touch: the frustum's bounding box and, per grid
column of that box, the index range inside the frustum (both conservative; the exact per-voxel
test runs in :mod:`eqa_runner.mapping.tsdf` / :mod:`eqa_runner.mapping.fuse_kernel`)."""

from __future__ import annotations

import numpy as np

Box = tuple[slice, slice, slice]


def frustum_box(
    origin: np.ndarray,
    voxel_size: float,
    dims: np.ndarray,
    far: float,
    shape: tuple[int, int],
    intrinsics: np.ndarray,
    cam_to_world: np.ndarray,
) -> Box | None:
    """Grid index box containing every voxel an (H, W) = ``shape`` frame can update out to
    camera depth ``far`` (None if empty)."""
    h, w = shape
    fx, fy = intrinsics[0, 0], intrinsics[1, 1]
    cx, cy = intrinsics[0, 2], intrinsics[1, 2]
    us = np.array([-0.5, w - 0.5, -0.5, w - 0.5])
    vs = np.array([-0.5, -0.5, h - 0.5, h - 0.5])
    corners = np.stack([(us - cx) / fx * far, (vs - cy) / fy * far, np.full(4, far)], axis=1)
    corners = np.vstack([corners, np.zeros((1, 3))])
    world = corners @ cam_to_world[:3, :3].T + cam_to_world[:3, 3]
    lo = np.floor((world.min(axis=0) - origin) / voxel_size).astype(int) - 1
    hi = np.ceil((world.max(axis=0) - origin) / voxel_size).astype(int) + 2
    lo = np.clip(lo, 0, dims)
    hi = np.clip(hi, 0, dims)
    if (hi <= lo).any():
        return None
    return (
        slice(int(lo[0]), int(hi[0])),
        slice(int(lo[1]), int(hi[1])),
        slice(int(lo[2]), int(hi[2])),
    )


def box_affine(origin: np.ndarray, voxel_size: float, t: np.ndarray, box: Box):
    """The box's camera coordinates, affine in the voxel index: ``cam = c0 + i*a[0] + j*a[1] +
    l*a[2]`` for box index (i, j, l); returns ``lo``, extent ``n``, ``c0``, ``a``."""
    rot_t = t[:3, :3].T
    lo = np.array([box[0].start, box[1].start, box[2].start])
    n = np.array([box[0].stop, box[1].stop, box[2].stop]) - lo
    c0 = rot_t @ (origin + lo * voxel_size - t[:3, 3])
    a = (rot_t * voxel_size).T  # a[axis] = camera-frame step of one voxel along grid axis
    return lo, n, c0, a


def _range_max(values: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max(values[a:b+1]) for arrays of inclusive index ranges (sparse table, O(1) query)."""
    table = [values]
    span = 1
    while 2 * span <= len(values):
        prev = table[-1]
        table.append(np.maximum(prev[:-span], prev[span:]))
        span *= 2
    b = np.maximum(a, b)
    level = np.floor(np.log2(b - a + 1)).astype(int)
    out = np.empty(a.shape, dtype=values.dtype)
    for lvl in np.unique(level):
        m = level == lvl
        row = table[lvl]
        out[m] = np.maximum(row[a[m]], row[b[m] - (1 << int(lvl)) + 1])
    return out


def column_ranges(c0, a, n, k, depth, trunc: float, voxel_size: float):
    """Per (i, j) column of the box, the [kmin, kmax] index range inside the frustum.

    Each frustum face (image borders widened by 1.5 px, near plane, far plane at the
    farthest depth + truncation) is a half-space ``g . cam + g0 >= 0``, affine in the voxel
    index, so its k-interval per column is solved in closed form. Conservative: the exact
    per-voxel test still runs afterwards.
    """
    h, w = depth.shape
    fx, fy, cx, cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
    slack = 1.5
    far = float(depth.max()) + trunc
    planes = [
        (np.array([fx, 0.0, cx + slack]), 0.0),  # u >= -slack
        (np.array([-fx, 0.0, w - 1 + slack - cx]), 0.0),  # u <= w - 1 + slack
        (np.array([0.0, fy, cy + slack]), 0.0),  # v >= -slack
        (np.array([0.0, -fy, h - 1 + slack - cy]), 0.0),  # v <= h - 1 + slack
        (np.array([0.0, 0.0, 1.0]), -1e-6),  # z > 0
        (np.array([0.0, 0.0, -1.0]), far + voxel_size),  # z <= far
    ]
    lo_k = np.zeros((n[0], n[1]))
    hi_k = np.full((n[0], n[1]), float(n[2] - 1))
    ii = np.arange(n[0])[:, None]
    jj = np.arange(n[1])[None, :]
    for g, g0 in planes:
        base = g @ c0 + g0 + ii * (g @ a[0]) + jj * (g @ a[1])
        slope = g @ a[2]
        if abs(slope) < 1e-12:
            hi_k = np.where(base >= 0, hi_k, -1.0)
        elif slope > 0:
            lo_k = np.maximum(lo_k, -base / slope)
        else:
            hi_k = np.minimum(hi_k, -base / slope)
    limit = _column_far(c0, a, ii, jj, lo_k, hi_k, k, depth) + trunc + voxel_size
    z0 = c0[2] + ii * a[0][2] + jj * a[1][2]
    zs = a[2][2]
    ok = hi_k >= lo_k
    if abs(zs) < 1e-12:
        hi_k = np.where(z0 <= limit, hi_k, -1.0)
    elif zs > 0:
        hi_k = np.minimum(hi_k, (limit - z0) / zs)
    else:
        lo_k = np.maximum(lo_k, (limit - z0) / zs)
    hi_k = np.where(ok, hi_k, -1.0)
    kmin = np.ceil(lo_k - 1e-9).astype(np.int64)
    kmax = np.floor(hi_k + 1e-9).astype(np.int64)
    return kmin, kmax


def _column_far(c0, a, ii, jj, lo_k, hi_k, k, depth) -> np.ndarray:
    """Far limit per column: the deepest pixel in the image columns the segment projects to
    (voxels beyond it plus truncation cannot be updated)."""
    w = depth.shape[1]
    kc = np.array([[k[0, 0], 0.0, k[0, 2]], [0.0, k[1, 1], k[1, 2]], [0.0, 0.0, 1.0]])
    z0 = c0[2] + ii * a[0][2] + jj * a[1][2]
    pu0 = (kc[0] @ c0) + ii * (kc[0] @ a[0]) + jj * (kc[0] @ a[1])
    zs, pus = a[2][2], kc[0] @ a[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u_lo = (pu0 + lo_k * pus) / (z0 + lo_k * zs)
        u_hi = (pu0 + hi_k * pus) / (z0 + hi_k * zs)
    u_a = np.clip(np.nan_to_num(np.minimum(u_lo, u_hi), nan=0.0), 0, w - 1)
    u_b = np.clip(np.nan_to_num(np.maximum(u_lo, u_hi), nan=w - 1.0), 0, w - 1)
    return _range_max(depth.max(axis=0), np.floor(u_a).astype(int), np.ceil(u_b).astype(int))
