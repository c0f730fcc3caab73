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
(out to the farthest depth + truncation; :mod:`eqa_runner.mapping.frustum`) are projected each
frame, by a compiled loop (:mod:`eqa_runner.mapping.fuse_kernel`) or a vectorised numpy pass
with identical results, both with upstream's arithmetic (float32 voxel points, float64
projection), and the 2D explored map is kept up to date incrementally.

Camera poses come in the normal frame with the OpenCV camera convention
(:func:`eqa_runner.sim.geometry.cam_pose_tsdf`); all frame conversions live in ``sim/geometry.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqa_runner.mapping.frustum import Box, box_affine, column_ranges, frustum_box

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
    The origin is float32, as upstream's, and so is each voxel's sample point.
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
        self.origin = b[:, 0].astype(np.float32).astype(np.float64)
        self.bounds = np.stack([self.origin, self.origin + self.dims * self.voxel_size], axis=1)
        # per axis, the float32 sample coordinate of each index (upstream's vox2world)
        self.axis_coords = [
            (self.origin[a] + self.voxel_size * np.arange(int(d), dtype=np.float64))
            .astype(np.float32)
            .astype(np.float64)
            for a, d in enumerate(self.dims)
        ]
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
        return i * self.voxel_size + self.origin[:k]

    def height_index(self, height_above_min: float) -> int:
        """z index of the slice ``height_above_min`` metres above the volume's lowest slice."""
        return int(np.clip(int(height_above_min / self.voxel_size), 0, self.dims[2] - 1))

    # ---- fusion
    def frustum_box(self, max_depth: float, shape, intrinsics, cam_to_world) -> Box | None:
        """Grid index box containing every voxel an (H, W) = ``shape`` frame whose farthest
        valid depth is ``max_depth`` can update (None if empty)."""
        if not max_depth > 0:
            return None
        far = float(max_depth) + self.trunc
        return frustum_box(
            self.origin, self.voxel_size, self.dims, far, shape, intrinsics, cam_to_world
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

    def _integrate_box_compiled(self, depth, k, t, box, margin_h, margin_w, obs_weight):
        from eqa_runner.mapping.fuse_kernel import fuse_box

        xs, ys, zs = (c[s] for c, s in zip(self.axis_coords, box, strict=True))
        lo = np.array([s.start for s in box], dtype=np.int64)
        updated, marked = fuse_box(
            self.tsdf,
            self.weight,
            self.explored,
            self.explored_2d,
            depth,
            lo,
            xs,
            ys,
            zs,
            np.linalg.inv(t),
            _pixel_params(k),
            self.trunc,
            float(obs_weight),
            int(margin_h),
            int(margin_w),
        )
        return FuseStats(int(len(xs) * len(ys) * len(zs)), int(updated), int(marked))

    def _integrate_box(self, depth, k, t, box, rgb, margin_h, margin_w, obs_weight):
        """The numpy oracle of the compiled loop: candidate voxels of the box (per-column
        frustum ranges), then upstream's per-voxel arithmetic, vectorised."""
        h, w = depth.shape
        lo, n, c0, a = box_affine(self.origin, self.voxel_size, t, box)
        kmin, kmax = column_ranges(c0, a, n, k, depth, self.trunc, self.voxel_size)
        count = np.maximum(kmax - kmin + 1, 0).ravel()
        total = int(count.sum())
        if total == 0:
            return FuseStats(0, 0, 0)
        col = np.repeat(np.arange(count.size), count)  # one entry per candidate voxel
        lk = np.arange(total) - np.repeat(np.cumsum(count) - count - kmin.ravel(), count)
        gi, gj = lo[0] + col // n[1], lo[1] + col % n[1]
        gk = lo[2] + lk
        pts = np.stack(
            [
                self.axis_coords[0][gi],
                self.axis_coords[1][gj],
                self.axis_coords[2][gk],
                np.ones(total),
            ]
        )
        cam = np.dot(np.linalg.inv(t), pts)  # BLAS: T[r,0]*x, then fused multiply-adds
        fx, fy, cx, cy = _pixel_params(k)
        z = cam[2]
        ok = z > 0
        zs = np.where(ok, z, 1.0)
        u = np.rint(cam[0] * fx / zs + cx)
        v = np.rint(cam[1] * fy / zs + cy)
        ok &= (u >= 0) & (u < w) & (v >= 0) & (v < h)
        sel = np.flatnonzero(ok)
        u, v = u[sel].astype(np.int64), v[sel].astype(np.int64)
        d = depth[v, u].astype(np.float64)
        diff = d - z[sel]
        upd = np.flatnonzero((d > 0) & (diff >= -self.trunc))
        sel, u, v = sel[upd], u[upd], v[upd]
        dist = np.maximum(-1.0, np.minimum(1.0, diff[upd] / self.trunc))
        flat = (gi[sel] * self.dims[1] + gj[sel]) * self.dims[2] + gk[sel]
        tsdf, wgt = self.tsdf.reshape(-1), self.weight.reshape(-1)
        w_old = wgt[flat]
        w_new = (w_old + float(obs_weight)).astype(np.float32)
        prod = w_old * tsdf[flat]  # float32 product, as upstream
        tsdf[flat] = ((prod.astype(np.float64) + float(obs_weight) * dist) / w_new).astype(
            np.float32
        )
        wgt[flat] = w_new
        nsel = np.flatnonzero((u >= margin_w) & (u < w - margin_w) & (v >= margin_h))
        self.explored.reshape(-1)[flat[nsel]] = True
        self.explored_2d[gi[sel[nsel]], gj[sel[nsel]]] = True
        if rgb is not None and self.store_color:
            self._fuse_color(np.asarray(rgb), flat, u, v, w_old, w_new, obs_weight)
        return FuseStats(total, int(flat.size), int(nsel.size))

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
    """Load the kernels (compiling them on first use) with a tiny fusion and a tiny hop path;
    returns wall ms."""
    import time

    from eqa_runner.mapping.hop import dijkstra_path

    t0 = time.perf_counter()
    vol = TSDFVolume(np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]))
    vol.integrate(np.ones((8, 8), np.float32), np.eye(3), np.eye(4))
    dijkstra_path(np.ones((3, 3), dtype=bool), np.array([0, 0]), np.array([2, 2]))
    return (time.perf_counter() - t0) * 1e3


def _pixel_params(k: np.ndarray) -> np.ndarray:
    """fx, fy, cx, cy as upstream's ``cam2pix`` reads them (the intrinsics cast to float32)."""
    k32 = np.asarray(k).astype(np.float32)
    return np.array([k32[0, 0], k32[1, 1], k32[0, 2], k32[1, 2]], dtype=np.float64)
