"""Dense TSDF + explored-volume fusion restricted to the camera frustum.

Semantics follow the TSDF planner of explore-eqa and its successors (written anew here):

* the grid covers the scene bounds in the "normal" frame (z up); a voxel's sample point is
  ``origin + index * voxel_size`` (the upstream convention, not the voxel centre);
* every voxel starts at TSDF -1 and weight 0, i.e. unobserved space reads as occupied;
* a voxel that projects into the image (nearest pixel, z-depth > 0) with a valid depth and
  ``depth - z >= -trunc`` gets ``clip((depth - z) / trunc, -1, 1)`` folded into a running
  weighted average (observation weight 1 by default);
* the same test restricted to a narrowed view (``margin_w`` pixels dropped on each side,
  ``margin_h`` pixels dropped from the top) marks the voxel as explored.

Unlike upstream, only the voxels inside the axis-aligned box that bounds the camera frustum
(out to the farthest depth + truncation) are projected each frame, by a compiled loop
(:mod:`eqa_runner.mapping.fuse_kernel`) or a vectorised numpy pass with identical results,
and the 2D explored map is kept up to date incrementally.

Camera poses come in the normal frame with the OpenCV camera convention
(:func:`eqa_runner.sim.geometry.cam_pose_tsdf`); all frame conversions live in ``sim/geometry.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# --------------------------------------------------------------------------- bounds


def tsdf_bounds(
    xy_lower: np.ndarray,
    xy_upper: np.ndarray,
    floor_height: float,
    below_floor: float = 0.2,
    above_floor: float = 3.5,
    margin: float = 0.0,
) -> np.ndarray:
    """(3, 2) volume bounds in the normal frame: the x-y box (+ ``margin``) and
    ``[floor - below_floor, floor + above_floor]`` in z (upstream ``get_scene_bnds``)."""
    lo = np.minimum(xy_lower[:2], xy_upper[:2]) - margin
    hi = np.maximum(xy_lower[:2], xy_upper[:2]) + margin
    return np.array(
        [
            [lo[0], hi[0]],
            [lo[1], hi[1]],
            [floor_height - below_floor, floor_height + above_floor],
        ],
        dtype=float,
    )


# --------------------------------------------------------------------------- volume


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


@dataclass
class FuseStats:
    """What one :meth:`TSDFVolume.integrate` call touched."""

    box_voxels: int
    updated_voxels: int
    explored_voxels: int


KERNELS = ("numba", "numpy")


class TSDFVolume:
    """Dense TSDF (float32) with running-average weights and an explored flag per voxel.

    ``kernel``: ``numba`` (compiled loop over the frustum box: the production path, what the
    planner uses) or ``numpy`` (vectorised over the box's candidate voxels: only the oracle
    the compiled loop is tested against; not a config option). Colour fusion
    (``store_color`` with an ``rgb`` frame) always takes the numpy path.
    """

    def __init__(
        self,
        bounds: np.ndarray,
        voxel_size: float = 0.1,
        trunc_voxels: float = 5.0,
        store_color: bool = False,
        kernel: str = "numba",
    ) -> None:
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        b = np.asarray(bounds, dtype=float)
        if b.shape != (3, 2) or not (b[:, 0] < b[:, 1]).all():
            raise ValueError(f"bounds must be (3, 2) with min < max, got {b.tolist()}")
        self.voxel_size = float(voxel_size)
        self.trunc = float(trunc_voxels) * self.voxel_size
        self.dims = np.ceil((b[:, 1] - b[:, 0]) / self.voxel_size).astype(int)
        self.origin = b[:, 0].astype(np.float64)
        self.bounds = np.stack([self.origin, self.origin + self.dims * self.voxel_size], axis=1)
        shape = tuple(int(d) for d in self.dims)
        self.tsdf = np.full(shape, -1.0, dtype=np.float32)
        self.weight = np.zeros(shape, dtype=np.float32)
        self.explored = np.zeros(shape, dtype=bool)
        self.explored_2d = np.zeros(shape[:2], dtype=bool)
        self.store_color = store_color
        self.kernel = kernel
        self.color: np.ndarray | None = None  # (X, Y, Z, 3) uint8, allocated on first rgb

    # ---- coordinates
    def world_to_grid(self, pts: np.ndarray) -> np.ndarray:
        """Nearest voxel index of world point(s) (..., 3) or (..., 2), clipped to the grid."""
        p = np.asarray(pts, dtype=float)
        k = p.shape[-1]
        idx = np.round((p - self.origin[:k]) / self.voxel_size).astype(int)
        return np.clip(idx, 0, self.dims[:k] - 1)

    def grid_to_world(self, idx: np.ndarray) -> np.ndarray:
        """World position of voxel index(es) (..., 3) or (..., 2)."""
        i = np.asarray(idx, dtype=float)
        k = i.shape[-1]
        return self.origin[:k] + i * self.voxel_size

    def height_index(self, height_above_min: float) -> int:
        """z index of the slice ``height_above_min`` metres above the volume's lowest slice."""
        return int(np.clip(int(height_above_min / self.voxel_size), 0, self.dims[2] - 1))

    # ---- fusion
    def frustum_box(
        self,
        max_depth: float,
        shape: tuple[int, int],
        intrinsics: np.ndarray,
        cam_to_world: np.ndarray,
    ) -> tuple[slice, slice, slice] | None:
        """Grid index box containing every voxel an (H, W) = ``shape`` frame whose farthest
        valid depth is ``max_depth`` can update (None if empty)."""
        if not max_depth > 0:
            return None
        far = float(max_depth) + self.trunc
        h, w = shape
        fx, fy = intrinsics[0, 0], intrinsics[1, 1]
        cx, cy = intrinsics[0, 2], intrinsics[1, 2]
        us = np.array([-0.5, w - 0.5, -0.5, w - 0.5])
        vs = np.array([-0.5, -0.5, h - 0.5, h - 0.5])
        corners = np.stack([(us - cx) / fx * far, (vs - cy) / fy * far, np.full(4, far)], axis=1)
        corners = np.vstack([corners, np.zeros((1, 3))])
        world = corners @ cam_to_world[:3, :3].T + cam_to_world[:3, 3]
        lo = np.floor((world.min(axis=0) - self.origin) / self.voxel_size).astype(int) - 1
        hi = np.ceil((world.max(axis=0) - self.origin) / self.voxel_size).astype(int) + 2
        lo = np.clip(lo, 0, self.dims)
        hi = np.clip(hi, 0, self.dims)
        if (hi <= lo).any():
            return None
        return (
            slice(int(lo[0]), int(hi[0])),
            slice(int(lo[1]), int(hi[1])),
            slice(int(lo[2]), int(hi[2])),
        )

    def integrate(
        self,
        depth: np.ndarray,
        intrinsics: np.ndarray,
        cam_to_world: np.ndarray,
        rgb: np.ndarray | None = None,
        margin_h: int = 0,
        margin_w: int = 0,
        obs_weight: float = 1.0,
        restrict_to_frustum: bool = True,
        max_height: float | None = None,
    ) -> FuseStats:
        """Fuse one depth frame (H, W metres, z-depth; <= 0 or non-finite = invalid).

        ``cam_to_world`` is the normal-frame OpenCV camera-to-world 4x4. ``margin_h`` /
        ``margin_w`` (pixels) narrow the view used for explored marking.
        ``restrict_to_frustum=False`` projects every voxel (the upstream approach).
        ``max_height`` (world z): voxels above it are left untouched (with the frustum box).
        """
        depth = np.ascontiguousarray(depth, dtype=np.float32)
        k = np.asarray(intrinsics, dtype=np.float64)
        t = np.asarray(cam_to_world, dtype=np.float64)
        compiled = self.kernel == "numba" and not (rgb is not None and self.store_color)
        if compiled:
            from eqa_runner.mapping.fuse_kernel import max_valid_depth

            max_depth = float(depth.max()) if depth.size else 0.0
            if not np.isfinite(max_depth):  # the kernel skips non-finite depths
                max_depth = float(max_valid_depth(depth))
        else:
            depth = np.where(np.isfinite(depth), depth, 0.0).astype(np.float32, copy=False)
            max_depth = float(depth.max()) if depth.size else 0.0
        box: tuple[slice, ...] | None
        if restrict_to_frustum:
            box = self.frustum_box(max_depth, depth.shape, k, t)
            if box is not None and max_height is not None:
                top = int(np.ceil((max_height - self.origin[2]) / self.voxel_size)) + 1
                top = min(box[2].stop, max(top, 0))
                box = None if top <= box[2].start else (box[0], box[1], slice(box[2].start, top))
            if box is None:
                return FuseStats(0, 0, 0)
        else:
            box = tuple(slice(0, int(d)) for d in self.dims)
        if compiled:
            return self._integrate_box_compiled(depth, k, t, box, margin_h, margin_w, obs_weight)
        return self._integrate_box(depth, k, t, box, rgb, margin_h, margin_w, obs_weight)

    def _box_projection(self, k: np.ndarray, t: np.ndarray, box: tuple[slice, ...]):
        """The box's projection, affine in the voxel index.

        Camera coordinates are ``cam = c0 + i*a[0] + j*a[1] + l*a[2]`` for box index (i, j, l);
        returns the box corner ``lo``, extent ``n``, ``c0``, ``a``, each column's
        (u*z, v*z, z) at ``l = 0`` (float64, (n0, n1, 3)) and its change per ``l``.
        """
        s = self.voxel_size
        kc = np.array([[k[0, 0], 0.0, k[0, 2]], [0.0, k[1, 1], k[1, 2]], [0.0, 0.0, 1.0]])
        rot_t = t[:3, :3].T
        lo = np.array([box[0].start, box[1].start, box[2].start])
        n = np.array([box[0].stop, box[1].stop, box[2].stop]) - lo
        c0 = rot_t @ (self.origin + lo * s - t[:3, 3])
        a = (rot_t * s).T  # a[axis] = camera-frame step of one voxel along grid axis
        ii = np.arange(n[0])[:, None, None]
        jj = np.arange(n[1])[None, :, None]
        base = (c0 + ii * a[0] + jj * a[1]) @ kc.T
        return lo, n, c0, a, base, kc @ a[2]

    def _integrate_box_compiled(
        self,
        depth: np.ndarray,
        k: np.ndarray,
        t: np.ndarray,
        box: tuple[slice, ...],
        margin_h: int,
        margin_w: int,
        obs_weight: float,
    ) -> FuseStats:
        from eqa_runner.mapping.fuse_kernel import fuse_box

        lo, n, _, _, base, step = self._box_projection(k, t, box)
        updated, marked = fuse_box(
            self.tsdf,
            self.weight,
            self.explored,
            self.explored_2d,
            depth,
            int(lo[0]),
            int(lo[1]),
            int(lo[2]),
            int(n[2]),
            np.ascontiguousarray(base, dtype=np.float32),
            step.astype(np.float32),
            np.float32(self.trunc),
            np.float32(obs_weight),
            int(margin_h),
            int(margin_w),
        )
        return FuseStats(int(n.prod()), int(updated), int(marked))

    def _integrate_box(
        self,
        depth: np.ndarray,
        k: np.ndarray,
        t: np.ndarray,
        box: tuple[slice, ...],
        rgb: np.ndarray | None,
        margin_h: int,
        margin_w: int,
        obs_weight: float,
        cull_columns: bool = True,
    ) -> FuseStats:
        h, w = depth.shape
        fx, fy, cx, cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
        lo, n, c0, a, base, step = self._box_projection(k, t, box)
        ii = np.arange(n[0])[:, None]
        jj = np.arange(n[1])[None, :]
        if cull_columns:
            kmin, kmax = self._column_ranges(c0, a, n, fx, fy, cx, cy, h, w, depth)
        else:
            kmin = np.zeros((n[0], n[1]), dtype=np.int64)
            kmax = np.full((n[0], n[1]), n[2] - 1, dtype=np.int64)
        count = np.maximum(kmax - kmin + 1, 0).ravel()
        total = int(count.sum())
        if total == 0:
            return FuseStats(0, 0, 0)
        # one entry per candidate voxel: its column and its k index (ragged ranges)
        col = np.repeat(np.arange(count.size, dtype=np.int32), count)
        first = np.cumsum(count) - count
        lk = np.arange(total, dtype=np.int32) - np.repeat(
            (first - kmin.ravel()).astype(np.int32), count
        )
        lk_f = lk.astype(np.float32)
        # intrinsics folded in: (pu, pv, z) = K @ cam, pixel = (pu / z, pv / z)
        base = base.astype(np.float32).reshape(-1, 3)
        z = base[:, 2][col] + lk_f * np.float32(step[2])
        if not cull_columns:  # the column ranges already guarantee z > 0
            z = np.where(z > 1e-6, z, np.float32(-1.0))
        inv_z = np.float32(1.0) / z
        pu = base[:, 0][col]
        pu += lk_f * np.float32(step[0])
        pu *= inv_z
        u = np.rint(pu).astype(np.int32)
        pv = base[:, 1][col]
        pv += lk_f * np.float32(step[1])
        pv *= inv_z
        v = np.rint(pv).astype(np.int32)
        # negative ints view as huge unsigned ones: one compare per axis
        inside = (u.view(np.uint32) < w) & (v.view(np.uint32) < h)
        if not cull_columns:
            inside &= z > 0
        sel = np.flatnonzero(inside)
        u, v = u[sel], v[sel]
        d = depth.ravel()[v * w + u]
        diff = d - z[sel]
        upd = np.flatnonzero((d > 0) & (diff >= -self.trunc))
        sel = sel[upd]
        u, v = u[upd], v[upd]
        dist = np.clip(diff[upd] / np.float32(self.trunc), -1.0, 1.0)
        # global flat indices: per-column base + k
        gi = lo[0] + ii
        gj = lo[1] + jj
        col2d = (gi * self.dims[1] + gj).ravel()
        col_sel = col[sel]
        flat = col2d[col_sel] * self.dims[2] + (lk[sel] + lo[2])

        tsdf = self.tsdf.reshape(-1)
        wgt = self.weight.reshape(-1)
        ow = np.float32(obs_weight)
        w_old = wgt[flat]
        w_new = w_old + ow
        tsdf[flat] = (w_old * tsdf[flat] + ow * dist) / w_new
        wgt[flat] = w_new

        nsel = np.flatnonzero((u >= margin_w) & (u < w - margin_w) & (v >= margin_h))
        self.explored.reshape(-1)[flat[nsel]] = True
        self.explored_2d.reshape(-1)[col2d[col_sel[nsel]]] = True

        if rgb is not None and self.store_color:
            self._fuse_color(np.asarray(rgb), flat, u, v, w_old, w_new, obs_weight)
        return FuseStats(total, int(flat.size), int(nsel.size))

    def _column_ranges(self, c0, a, n, fx, fy, cx, cy, h, w, depth):
        """Per (i, j) column of the box, the [kmin, kmax] index range inside the frustum.

        Each frustum face (image borders widened by 1.5 px, near plane, far plane at the
        farthest depth + truncation) is a half-space ``g . cam + g0 >= 0``, affine in the voxel
        index, so its k-interval per column is solved in closed form. Conservative: the exact
        per-voxel test still runs afterwards.
        """
        slack = 1.5
        far = float(depth.max()) + self.trunc
        planes = [
            (np.array([fx, 0.0, cx + slack]), 0.0),  # u >= -slack
            (np.array([-fx, 0.0, w - 1 + slack - cx]), 0.0),  # u <= w - 1 + slack
            (np.array([0.0, fy, cy + slack]), 0.0),  # v >= -slack
            (np.array([0.0, -fy, h - 1 + slack - cy]), 0.0),  # v <= h - 1 + slack
            (np.array([0.0, 0.0, 1.0]), -1e-6),  # z > 0
            (np.array([0.0, 0.0, -1.0]), far + self.voxel_size),  # z <= far
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
        # Far limit per column: the deepest pixel in the image columns the segment projects to
        # (plus truncation); voxels beyond it cannot be updated.
        kc = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
        z0 = c0[2] + ii * a[0][2] + jj * a[1][2]
        pu0 = (kc[0] @ c0) + ii * (kc[0] @ a[0]) + jj * (kc[0] @ a[1])
        zs, pus = a[2][2], kc[0] @ a[2]
        with np.errstate(divide="ignore", invalid="ignore"):
            u_lo = (pu0 + lo_k * pus) / (z0 + lo_k * zs)
            u_hi = (pu0 + hi_k * pus) / (z0 + hi_k * zs)
        ok = hi_k >= lo_k
        u_a = np.clip(np.nan_to_num(np.minimum(u_lo, u_hi), nan=0.0), 0, w - 1)
        u_b = np.clip(np.nan_to_num(np.maximum(u_lo, u_hi), nan=w - 1.0), 0, w - 1)
        col_far = _range_max(depth.max(axis=0), np.floor(u_a).astype(int), np.ceil(u_b).astype(int))
        limit = col_far + self.trunc + self.voxel_size
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

    def _fuse_color(
        self,
        rgb: np.ndarray,
        flat: np.ndarray,
        u: np.ndarray,
        v: np.ndarray,
        w_old: np.ndarray,
        w_new: np.ndarray,
        obs_weight: float,
    ) -> None:
        if self.color is None:
            self.color = np.zeros((*self.tsdf.shape, 3), dtype=np.uint8)
        col = self.color.reshape(-1, 3)
        old = col[flat].astype(np.float32)
        new = rgb[v, u, :3].astype(np.float32)
        mixed = (w_old[:, None] * old + obs_weight * new) / w_new[:, None]
        col[flat] = np.clip(np.round(mixed), 0, 255).astype(np.uint8)

    # ---- 2D views
    def free_at_height(self, height_above_min: float) -> np.ndarray:
        """Cells whose voxel at ``height_above_min`` is observed free (TSDF > 0) with the lowest
        slice not free (ground below; unobserved counts as occupied), as upstream."""
        hv = self.height_index(height_above_min)
        return (self.tsdf[:, :, hv] > 0) & (self.tsdf[:, :, 0] < 0)

    def cell_points_xy(self) -> np.ndarray:
        """(X, Y, 2) normal-frame x-y of every grid column's sample point (for rasterising a
        free-floor mask with e.g. a simulator's ``is_navigable``)."""
        xs = self.origin[0] + np.arange(self.dims[0]) * self.voxel_size
        ys = self.origin[1] + np.arange(self.dims[1]) * self.voxel_size
        return np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)

    def explored_floor_fraction(self, free_floor_mask: np.ndarray) -> float:
        """Fraction of ``free_floor_mask`` cells (grid-shaped bool) whose column is explored."""
        m = np.asarray(free_floor_mask, dtype=bool)
        total = int(m.sum())
        return float((self.explored_2d & m).sum()) / total if total else 0.0

    def nbytes(self) -> int:
        """Bytes held by the dense arrays."""
        arrays = [self.tsdf, self.weight, self.explored, self.explored_2d]
        if self.color is not None:
            arrays.append(self.color)
        return int(sum(a.nbytes for a in arrays))


def warm_up() -> float:
    """Load the kernels (compiling them on first use) with a tiny fusion; returns wall ms."""
    import time

    t0 = time.perf_counter()
    vol = TSDFVolume(np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]))
    vol.integrate(np.ones((8, 8), np.float32), np.eye(3), np.eye(4))
    return (time.perf_counter() - t0) * 1e3
