"""The planner's map state: the TSDF volume of one episode and the 2D maps read from it
(free floor, unexplored columns, the agent's island). Base of
:class:`~eqa_runner.mapping.frontier.FrontierPlanner`."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from eqa_runner.mapping.config import FrontierPlannerConfig
from eqa_runner.mapping.lazy import measure, ndimage
from eqa_runner.mapping.streams import PlannerDraws
from eqa_runner.mapping.tsdf import FuseStats, TSDFVolume


class GridMaps:
    """One episode's TSDF volume, start disc and the 2D maps the planner reads."""

    def __init__(self, config: FrontierPlannerConfig | None = None, **overrides) -> None:
        cfg = config or FrontierPlannerConfig()
        if overrides:
            cfg = FrontierPlannerConfig(**{**asdict(cfg), **overrides})
        self.cfg = cfg
        self.volume: TSDFVolume | None = None
        self.rng = np.random.default_rng(0)
        self.draws = PlannerDraws(cfg.random_source, 0)
        self.floor_height = 0.0
        self.restrict_to_frustum = True
        self._init_cells: np.ndarray | None = None
        self.path_normal: list[tuple[float, float]] = []
        self.sem_value = np.zeros((0, 0))  # semantic value map (running mean), per grid cell
        self.sem_count = np.zeros((0, 0), dtype=np.int32)
        self._reset_plan()

    def reset(
        self,
        bounds: np.ndarray,
        floor_height: float,
        rng: np.random.Generator | int | None = None,
        start_position_normal: np.ndarray | None = None,
        restrict_to_frustum: bool = True,
    ) -> None:
        """Start a new episode.

        ``bounds``: normal-frame navmesh bounds, (2, 2) or (3, 2) ``[[xmin, xmax], [ymin,
        ymax], ...]`` (z rows are ignored; z comes from ``floor_height``). ``rng``: a
        Generator or seed (the seed of the upstream-style streams, see
        :mod:`eqa_runner.mapping.streams`). ``start_position_normal``: the start disc centre
        (defaults to the agent position of the first :meth:`update`).
        """
        b = np.asarray(bounds, dtype=float)
        c = self.cfg
        vol_bounds = np.array(
            [
                [b[0].min() - c.bounds_margin, b[0].max() + c.bounds_margin],
                [b[1].min() - c.bounds_margin, b[1].max() + c.bounds_margin],
                [floor_height - c.below_floor, floor_height + c.above_floor],
            ]
        )
        self.volume = TSDFVolume(vol_bounds, c.voxel_size, c.trunc_voxels)
        self.floor_height = float(floor_height)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.draws = PlannerDraws(c.random_source, self.rng if rng is None else rng)
        self._init_cells = None
        self.path_normal = []
        self.sem_value = np.zeros(tuple(self.volume.dims[:2]), dtype=np.float64)
        self.sem_count = np.zeros(tuple(self.volume.dims[:2]), dtype=np.int32)
        self.restrict_to_frustum = restrict_to_frustum
        self._reset_plan()
        if start_position_normal is not None:
            self._set_start(np.asarray(start_position_normal, dtype=float))

    def _reset_plan(self) -> None:
        """Per-episode state of the planner on top (none here)."""

    def _set_start(self, pos: np.ndarray) -> None:
        vol = self._vol
        cell = vol.world_to_grid(pos[:2])
        r = int(self.cfg.init_clearance / vol.voxel_size)
        ii, jj = np.ogrid[: vol.dims[0], : vol.dims[1]]
        self._init_cells = (ii - cell[0]) ** 2 + (jj - cell[1]) ** 2 <= r * r

    @property
    def _vol(self) -> TSDFVolume:
        if self.volume is None:
            raise RuntimeError("FrontierPlanner.reset() must be called first")
        return self.volume

    # ------------------------------------------------------------------ fusion
    def update(
        self,
        depth: np.ndarray,
        intrinsics: np.ndarray,
        cam_to_world_normal: np.ndarray,
        agent_pos_normal: np.ndarray,
        rgb: np.ndarray | None = None,
    ) -> FuseStats:
        """Fuse one frame; the pose is the normal-frame OpenCV camera-to-world matrix."""
        vol = self._vol
        pos = np.asarray(agent_pos_normal, dtype=float)
        if self._init_cells is None:
            self._set_start(pos)
        if not self.path_normal or self.path_normal[-1] != (float(pos[0]), float(pos[1])):
            self.path_normal.append((float(pos[0]), float(pos[1])))
        h, w = np.asarray(depth).shape[:2]
        margin_h = int(self.cfg.margin_h_ratio * h)
        margin_w = int(self.cfg.margin_w_ratio * w)
        max_height = None
        if self.cfg.clip_to_camera_height:
            max_height = self._fusion_ceiling(intrinsics, cam_to_world_normal, margin_h, w)
        return vol.integrate(
            depth,
            intrinsics,
            cam_to_world_normal,
            rgb=rgb,
            margin_h=margin_h,
            margin_w=margin_w,
            restrict_to_frustum=self.restrict_to_frustum,
            max_height=max_height,
        )

    def _fusion_ceiling(self, k, pose, margin_h: int, w: int) -> float | None:
        """World z above which fusing changes nothing the planner reads, or None.

        The planner reads two low TSDF slices and the explored columns; a voxel marks its column
        explored only if it projects into the narrowed view (rows >= ``margin_h``). When the
        top edge of that view points downwards, every such voxel lies below the camera.
        """
        k = np.asarray(k, dtype=float)
        pose = np.asarray(pose, dtype=float)
        rows = np.array(
            [
                [(u - k[0, 2]) / k[0, 0], (margin_h - 0.5 - k[1, 2]) / k[1, 1], 1.0]
                for u in (-0.5, w - 0.5)
            ]
        )
        if (rows @ pose[2, :3]).max() > 0:
            return None
        vol = self._vol
        floor_slices = vol.origin[2] + (vol.height_index(self.cfg.occupancy_height) + 1) * (
            vol.voxel_size
        )
        return float(max(pose[2, 3] + vol.voxel_size, floor_slices))

    # ------------------------------------------------------------------ maps
    def free_floor(self) -> np.ndarray:
        """Observed free floor with the start disc forced free, closed (upstream)."""
        vol = self._vol
        free = vol.free_at_height(self.cfg.occupancy_height)
        if self._init_cells is not None:
            free |= self._init_cells
        k = max(int(self.cfg.fill_dim / vol.voxel_size), 1)
        se = np.ones((k, k), dtype=bool)
        return ndimage.binary_erosion(ndimage.binary_dilation(free, se), se)

    def unexplored(self) -> np.ndarray:
        """Columns never marked explored (the start disc counts as explored)."""
        un = ~self._vol.explored_2d
        if self._init_cells is not None:
            un &= ~self._init_cells
        return un

    @staticmethod
    def island_of(free: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """Connected component (4-connectivity) of ``free`` containing ``cell``, else the
        component nearest to it (upstream heuristic)."""
        labels = measure.label(free, connectivity=1)
        lab = labels[cell[0], cell[1]]
        if not free[cell[0], cell[1]]:
            cand = np.argwhere(labels > 0)
            if cand.size == 0:
                return np.zeros_like(free)
            d2 = ((cand - cell) ** 2).sum(axis=1)
            near = cand[np.argmin(d2)]
            lab = labels[near[0], near[1]]
        return labels == lab

    def explored_floor_fraction(self, free_floor_mask: np.ndarray) -> float:
        """Fraction of a grid-shaped free-floor mask whose columns are explored."""
        return self._vol.explored_floor_fraction(free_floor_mask)

    def _clip_cells(self, pts: np.ndarray) -> np.ndarray:
        d = self._vol.dims
        ok = (pts[:, 0] >= 0) & (pts[:, 0] < d[0]) & (pts[:, 1] >= 0) & (pts[:, 1] < d[1])
        return pts[ok]
