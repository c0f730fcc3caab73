"""Frontier-based exploration planner (the TSDF planner of explore-eqa and its successors).

Algorithm per :meth:`FrontierPlanner.next_pose` (re-implemented from the upstream
``TSDFPlanner.get_island_around_pts`` / ``find_next_pose`` with the semantic terms off):

1. free floor = cells whose voxel 0.4 m above the volume floor is observed free; a disc
   around the start pose is forced free; morphological closing (0.4 m square);
2. island = connected (4-connectivity) free component containing the agent (or nearest);
3. unexplored = columns never marked explored (start disc counts as explored);
   frontier cells = island cells with 3..4 unexplored 8-neighbours;
4. more than 10 frontier cells -> DBSCAN (eps 1 cell, min 2) and one representative per
   cluster (the member nearest the cluster mean), noise dropped;
5. each frontier's normal points into unexplored space (Sobel gradient of the unexplored map,
   sign by counting unexplored cells along both directions); weight =
   exp(unexplored_rate / unexplored_T) * exp(unoccupied_rate / unoccupied_T) * exp(-d / dist_T),
   x 1e-3 when near and already faced (see ``close_penalty_upstream_units``);
6. sample a frontier by weight, back off from it against the normal by up to 1.5 m while the
   cell stays free and on the island (>= 2 cells back needed, up to 50 tries), face the normal;
7. a target farther than 3 m (straight line) is approached along a shortest 8-connected path
   on the island, cut after 30 path nodes (``hop_rule="path_nodes"``, upstream: up to ~4.2 m
   diagonally) or where the path length reaches 3 m (``"path_length"``), and the target is
   committed to for later hops;
8. no qualifying frontier -> fallback: a random island cell within reach, random heading
   (upstream instead stays in place with a random heading; ``fallback="turn"``).

Semantic weighting (``semantic=true``, explore-eqa's semantic exploration; off for ``fbe``):
:meth:`FrontierPlanner.prompt_points` picks the points a VLM is asked about (reachable free floor
in view, 2-10 m away), :meth:`FrontierPlanner.integrate_semantic` splats their values into a value
map (running mean within ``semantic_radius``), and step 5 multiplies each frontier's weight by
``exp(val[f] / val_T) * exp(val_dir / val_dir_T)`` (val = the map smoothed by ``smooth_sigma``
voxels; val_dir = the mean non-zero value along the normal) once ``step >=
min_random_init_steps``.

Positions are in the "normal" frame (z up). ``Waypoint.angle`` is the habitat yaw about +y
(0 looks along normal +y), exactly the upstream ``next_yaw``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from eqa_runner.errors import ConfigError
from eqa_runner.mapping.config import FrontierPlannerConfig, VisualPromptConfig
from eqa_runner.mapping.tsdf import FuseStats, TSDFVolume


# scipy / scikit-image / scikit-learn take seconds to import: loaded on first use, so building
# the policy (e.g. for ``run.dry_run``) does not pay for them.
def _ndimage() -> Any:
    from scipy import ndimage

    return ndimage


def _skimage_graph() -> Any:
    from skimage import graph

    return graph


def _skimage_measure() -> Any:
    from skimage import measure

    return measure


def _sk_dbscan() -> Any:
    from sklearn.cluster import DBSCAN

    return DBSCAN


_NEIGHBOUR_KERNEL = np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=np.int16)


@dataclass
class Waypoint:
    """Next pose: normal-frame (x, y), habitat yaw, where it came from, diagnostics."""

    position_normal: tuple[float, float]
    angle: float
    source: Literal["frontier", "commit", "fallback"]
    info: dict = field(default_factory=dict)


@dataclass
class PlannerMaps:
    """2D maps of the last plan (grid [ix, iy]; world = origin + index * voxel_size)."""

    origin: tuple[float, float]
    voxel_size: float
    unoccupied: np.ndarray  # bool, free floor after closing
    explored: np.ndarray  # bool
    island: np.ndarray  # bool
    frontier_cells: np.ndarray  # (N, 2) int, before clustering
    frontiers: np.ndarray  # (M, 2) int, cluster representatives
    frontier_weights: np.ndarray  # (M,)
    agent_cell: tuple[int, int]
    chosen_cell: tuple[int, int] | None = None  # frontier picked
    next_cell: tuple[int, int] | None = None  # pose cell returned
    target_cell: tuple[int, int] | None = None  # committed far target, if any
    semantic: np.ndarray | None = None  # the smoothed value map used for this plan, if any


@dataclass
class PromptPoints:
    """Points a VLM is asked about: grid cells, normal-frame (x, y), image pixels (u, v)."""

    cells: np.ndarray  # (n, 2) int
    xy: np.ndarray  # (n, 2) float, metres
    pixels: np.ndarray  # (n, 2) int, in the frame the points were projected into
    candidates: int = 0  # candidate cells before sampling

    def __len__(self) -> int:
        return len(self.cells)


def dbscan_cells(cells: np.ndarray, eps: float, min_samples: int, shape) -> np.ndarray:
    """DBSCAN labels (-1 = noise) of distinct integer grid cells, as scikit-learn's DBSCAN.

    With ``min_samples == 2`` and ``eps < 2`` a cell is a core point iff it has a neighbour
    within ``eps``, so clusters are exactly the connected components (size >= 2) of the
    cells under the 3x3 neighbourhood that ``eps`` reaches; they are labelled in the order of
    their first cell, as scikit-learn does. Other settings call scikit-learn.
    """
    cells = np.asarray(cells, dtype=int)
    if min_samples != 2 or not (1.0 <= eps < 2.0) or len(cells) == 0:
        return _sk_dbscan()(eps=eps, min_samples=min_samples).fit(cells).labels_
    grid = np.zeros(tuple(int(s) for s in shape), dtype=bool)
    grid[cells[:, 0], cells[:, 1]] = True
    structure = np.ones((3, 3), dtype=bool) if eps >= math.sqrt(2) else None
    comp, _ = _ndimage().label(grid, structure=structure)
    lab = comp[cells[:, 0], cells[:, 1]]
    sizes = np.bincount(lab)
    out = np.full(len(cells), -1, dtype=int)
    keep = sizes[lab] >= 2
    _, first = np.unique(lab[keep], return_index=True)
    order = np.argsort(first)
    remap = np.full(sizes.size, -1, dtype=int)
    remap[np.unique(lab[keep])[order]] = np.arange(order.size)
    out[keep] = remap[lab[keep]]
    return out


class FrontierPlanner:
    """Fuses depth frames and proposes the next exploration pose (see module docstring)."""

    def __init__(self, config: FrontierPlannerConfig | None = None, **overrides) -> None:
        cfg = config or FrontierPlannerConfig()
        if overrides:
            cfg = FrontierPlannerConfig(**{**asdict(cfg), **overrides})
        self.cfg = cfg
        self.volume: TSDFVolume | None = None
        self.rng = np.random.default_rng(0)
        self.floor_height = 0.0
        self._init_cells: np.ndarray | None = None
        self._target: dict | None = None
        self._last_yaw: float | None = None
        self.maps: PlannerMaps | None = None
        self.path_normal: list[tuple[float, float]] = []
        self.sem_value = np.zeros((0, 0))  # semantic value map (running mean), per grid cell
        self.sem_count = np.zeros((0, 0), dtype=np.int32)

    # ------------------------------------------------------------------ lifecycle
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
        Generator or seed. ``start_position_normal``: the start disc centre (defaults to the
        agent position of the first :meth:`update`).
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
        self._init_cells = None
        self._target = None
        self._last_yaw = None
        self.maps = None
        self.path_normal = []
        self.sem_value = np.zeros(tuple(self.volume.dims[:2]), dtype=np.float64)
        self.sem_count = np.zeros(tuple(self.volume.dims[:2]), dtype=np.int32)
        self.restrict_to_frustum = restrict_to_frustum
        if start_position_normal is not None:
            self._set_start(np.asarray(start_position_normal, dtype=float))

    def _set_start(self, pos: np.ndarray) -> None:
        vol = self._vol
        cell = vol.world_to_grid(pos[:2])
        r = int(self.cfg.init_clearance / vol.voxel_size)
        ii, jj = np.ogrid[: vol.dims[0], : vol.dims[1]]
        disc = (ii - cell[0]) ** 2 + (jj - cell[1]) ** 2 <= r * r
        self._init_cells = disc

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
        rows = np.array([[(u - k[0, 2]) / k[0, 0], (margin_h - 0.5 - k[1, 2]) / k[1, 1], 1.0]
                         for u in (-0.5, w - 0.5)])  # fmt: skip
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
        return _ndimage().binary_erosion(_ndimage().binary_dilation(free, se), se)

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
        labels = _skimage_measure().label(free, connectivity=1)
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

    # ------------------------------------------------------------------ planning
    def next_pose(
        self, agent_pos_normal: np.ndarray, agent_yaw: float | None = None, step: int | None = None
    ) -> Waypoint:
        """Choose the next pose from the current maps (see module docstring). ``step``: the
        episode step (semantic weighting starts at ``min_random_init_steps``; None: at once)."""
        c = self.cfg
        vol = self._vol
        pos = np.asarray(agent_pos_normal, dtype=float)
        if self._init_cells is None:
            self._set_start(pos)
        yaw = self._last_yaw if agent_yaw is None else float(agent_yaw)
        cur = vol.world_to_grid(pos[:2])

        free = self.free_floor()
        occupied = ~free
        island = self.island_of(free, cur)
        unexplored = self.unexplored()
        un_i = unexplored.astype(np.int16)
        n_un = _ndimage().convolve(un_i, _NEIGHBOUR_KERNEL, mode="constant", cval=0)
        cells = np.argwhere(
            island & (n_un >= c.frontier_min_neighbors) & (n_un <= c.frontier_max_neighbors)
        )
        frontiers = self._cluster(cells)
        grad0 = _ndimage().sobel(un_i.astype(float), axis=0)
        grad1 = _ndimage().sobel(un_i.astype(float), axis=1)

        info: dict = {"num_frontier_cells": len(cells), "num_frontiers": len(frontiers)}
        val2d = self.semantic_map() if self._semantic_on(step) else None
        weights = np.zeros(len(frontiers))
        normals = np.zeros((len(frontiers), 2))
        chosen = None
        source: str
        direction: np.ndarray

        # A committed target is kept while it is still on the island.
        if self._target is not None and not island[tuple(self._target["next"])]:
            info["commit_dropped"] = True
            self._target = None

        if self._target is not None:
            source = "commit"
            next_cell = np.array(self._target["next"])
            direction = np.array(self._target["direction"], dtype=float)
            chosen = np.array(self._target["frontier"])
        else:
            for i, f in enumerate(frontiers):
                normals[i] = self._normal_into(f, grad0, grad1, unexplored)
                weights[i] = self._weight(f, normals[i], cur, yaw, unexplored, free, val2d)
            pick = self._sample_pose(frontiers, weights, grad0, grad1, unexplored, island, occupied)
            if pick is None:
                return self._fallback(
                    cur, island, info, free, unexplored, frontiers, weights, cells, val2d
                )
            chosen, next_cell, direction = pick
            source = "frontier"

        next_cell, direction = self._cap_hop(cur, next_cell, direction, chosen, island, info)
        return self._emit(
            next_cell, direction, source, info, cur, free, unexplored, island, cells,
            frontiers, weights, chosen, val2d,
        )  # fmt: skip

    # ---- pieces
    def _cluster(self, cells: np.ndarray) -> np.ndarray:
        """DBSCAN the frontier cells; one representative (member nearest the mean) each."""
        c = self.cfg
        if len(cells) <= c.cluster_min_frontiers:
            return cells.astype(int)
        labels = dbscan_cells(cells, c.eps, c.dbscan_min_samples, self._vol.dims[:2])
        reps = []
        for lab in np.unique(labels):
            if lab < 0:
                continue
            members = cells[labels == lab]
            d2 = ((members - members.mean(axis=0)) ** 2).sum(axis=1)
            reps.append(members[np.argmin(d2)])
        return np.array(reps, dtype=int).reshape(-1, 2)

    def _clip_cells(self, pts: np.ndarray) -> np.ndarray:
        d = self._vol.dims
        ok = (pts[:, 0] >= 0) & (pts[:, 0] < d[0]) & (pts[:, 1] >= 0) & (pts[:, 1] < d[1])
        return pts[ok]

    def _normal_into(
        self, cell: np.ndarray, grad0: np.ndarray, grad1: np.ndarray, unexplored: np.ndarray
    ) -> np.ndarray:
        """Unit normal at ``cell`` pointing into the side with more unexplored cells."""
        g = np.array([-grad0[cell[0], cell[1]], -grad1[cell[0], cell[1]]])
        norm = np.linalg.norm(g)
        if norm == 0:
            ang = self.rng.uniform(0, 2 * np.pi)
            g = np.array([np.cos(ang), np.sin(ang)])
        else:
            g = g / norm
        steps = np.arange(self.cfg.normal_check_cells)[:, None]
        fwd = self._clip_cells((cell + steps * g).astype(int))
        bwd = self._clip_cells((cell - steps * g).astype(int))
        n_fwd = int(unexplored[fwd[:, 0], fwd[:, 1]].sum())
        n_bwd = int(unexplored[bwd[:, 0], bwd[:, 1]].sum())
        if n_fwd < n_bwd or (n_fwd == n_bwd and self.rng.random() < 0.5):
            g = -g
        return g

    def _ray_rate(self, cell: np.ndarray, normal: np.ndarray, metres: float, grid: np.ndarray):
        n = max(int(metres / self._vol.voxel_size), 1)
        pts = self._clip_cells(np.round(cell + np.arange(n)[:, None] * normal).astype(int))
        return float(grid[pts[:, 0], pts[:, 1]].sum()) / n

    def _weight(
        self,
        cell: np.ndarray,
        normal: np.ndarray,
        cur: np.ndarray,
        yaw: float | None,
        unexplored: np.ndarray,
        free: np.ndarray,
        val2d: np.ndarray | None = None,
    ) -> float:
        c = self.cfg
        un_rate = self._ray_rate(cell, normal, c.max_unexplored_check_frontier, unexplored)
        free_rate = self._ray_rate(cell, normal, c.max_unoccupied_check_frontier, free)
        dist = float(np.linalg.norm(cell - cur[:2])) * self._vol.voxel_size
        logw = un_rate / c.unexplored_T + free_rate / c.unoccupied_T - dist / c.dist_T
        if val2d is not None:  # exp(val[f] / val_T) * exp(val_dir / val_dir_T)
            logw += float(val2d[cell[0], cell[1]]) / c.val_T
            logw += self._value_along(cell, normal, val2d) / c.val_dir_T
        radius = c.min_dist_from_cur
        if c.close_penalty_upstream_units:
            radius = c.min_dist_from_cur / self._vol.voxel_size
        if yaw is not None and dist < radius:
            facing = math.atan2(normal[1], normal[0]) - math.pi / 2
            diff = abs((facing - yaw + math.pi) % (2 * math.pi) - math.pi)
            if diff < c.close_penalty_angle:
                logw += math.log(c.close_penalty)
        return logw  # log-weight

    def _sample_pose(self, frontiers, logw, grad0, grad1, unexplored, island, occupied):
        """Sample frontiers by weight until a valid backed-off pose is found (or give up)."""
        c = self.cfg
        if len(frontiers) == 0:
            return None
        p = np.exp(logw - logw.max())
        p /= p.sum()
        dims = self._vol.dims
        max_back = int(c.frontier_spacing / self._vol.voxel_size)

        def within(pt: np.ndarray) -> bool:
            return 0 < pt[0] < dims[0] and 0 < pt[1] < dims[1]

        for _ in range(c.max_sample_tries):
            k = int(self.rng.choice(len(frontiers), p=p))
            f = frontiers[k]
            direction = self._normal_into(f, grad0, grad1, unexplored)
            pt = f.astype(float)
            n_back = 0
            while True:
                pt = pt - direction
                n_back += 1
                if n_back >= max_back or not within(pt):
                    break
                ij = (int(pt[0]), int(pt[1]))
                if occupied[ij] or not island[ij]:
                    pt = pt + 2 * direction
                    break
            cell = np.round(pt).astype(int)
            if n_back >= c.min_backtrack and within(cell) and island[cell[0], cell[1]]:
                return f, cell, direction
        return None

    def _cap_hop(self, cur, next_cell, direction, frontier, island, info):
        """Cut hops longer than ``max_dist_from_cur`` along the island's shortest path."""
        c = self.cfg
        s = self._vol.voxel_size
        if float(np.linalg.norm(next_cell - cur)) * s <= c.max_dist_from_cur:
            self._target = None
            return next_cell, direction
        start = cur if island[cur[0], cur[1]] else self._nearest_on(island, cur)
        costs = np.where(island, 1.0, np.inf)
        costs[tuple(start)] = 1.0
        mcp = _skimage_graph().MCP_Geometric(costs, fully_connected=True)
        cum, _ = mcp.find_costs([tuple(start)], [tuple(next_cell)])
        if not np.isfinite(cum[tuple(next_cell)]):
            reach = np.isfinite(cum)
            goal = self._nearest_on(reach, next_cell)
            info["target_unreachable"] = True
        else:
            goal = next_cell
        path = np.array(mcp.traceback(tuple(goal)))
        seg = np.linalg.norm(np.diff(path, axis=0), axis=1) * s
        length = np.concatenate([[0.0], np.cumsum(seg)])
        if c.hop_rule == "path_nodes":  # upstream: a fixed number of path nodes
            last = min(int(c.max_dist_from_cur / s), len(path) - 1)
        elif c.hop_rule == "path_length":
            last = int(np.searchsorted(length, c.max_dist_from_cur + 1e-9, side="right") - 1)
        else:
            raise ConfigError(f"planner.hop_rule={c.hop_rule!r}: use path_nodes or path_length")
        cut = path[last]
        if last >= len(path) - 1:
            self._target = None
        else:
            self._target = {
                "next": [int(v) for v in next_cell],
                "direction": [float(v) for v in direction],
                "frontier": [int(v) for v in frontier],
            }
        to_frontier = np.asarray(frontier, dtype=float) - cut
        nrm = np.linalg.norm(to_frontier)
        new_dir = to_frontier / nrm if nrm > 0 else direction
        info["path_cells"] = len(path)
        info["hop_path_m"] = float(length[last])
        info["hop_nodes"] = last
        return cut.astype(int), new_dir

    @staticmethod
    def _nearest_on(mask: np.ndarray, cell: np.ndarray) -> np.ndarray:
        cand = np.argwhere(mask)
        if cand.size == 0:
            return np.asarray(cell, dtype=int)
        return cand[np.argmin(((cand - cell) ** 2).sum(axis=1))]

    def _fallback(self, cur, island, info, free, unexplored, frontiers, weights, cells, val2d=None):
        c = self.cfg
        s = self._vol.voxel_size
        ang = self.rng.uniform(-np.pi, np.pi)
        direction = np.array([-np.sin(ang), np.cos(ang)])  # habitat yaw ang -> grid direction
        next_cell = cur.copy()
        info["fallback"] = "turn"
        if c.fallback == "random_hop":
            cand = np.argwhere(island)
            d = np.linalg.norm(cand - cur, axis=1) * s
            ok = cand[(d >= c.min_dist_from_cur) & (d <= c.max_dist_from_cur)]
            if len(ok):
                next_cell = ok[int(self.rng.integers(len(ok)))]
                info["fallback"] = "random_hop"
        self._target = None
        next_cell, direction = self._cap_hop(cur, next_cell, direction, next_cell + direction,
                                             island, info)  # fmt: skip
        self._target = None
        return self._emit(
            next_cell, direction, "fallback", info, cur, free, unexplored, island, cells,
            frontiers, weights, None, val2d,
        )  # fmt: skip

    def _emit(self, next_cell, direction, source, info, cur, free, unexplored, island, cells,
              frontiers, weights, chosen, val2d=None) -> Waypoint:  # fmt: skip
        vol = self._vol
        xy = vol.grid_to_world(np.asarray(next_cell, dtype=float))
        angle = float(math.atan2(direction[1], direction[0]) - math.pi / 2)
        angle = (angle + math.pi) % (2 * math.pi) - math.pi
        self._last_yaw = angle
        nxt = self._target["next"] if self._target else None
        target = None if nxt is None else (int(nxt[0]), int(nxt[1]))
        self.maps = PlannerMaps(
            origin=(float(vol.origin[0]), float(vol.origin[1])),
            voxel_size=vol.voxel_size,
            unoccupied=free,
            explored=~unexplored,
            island=island,
            frontier_cells=cells,
            frontiers=np.asarray(frontiers, dtype=int).reshape(-1, 2),
            frontier_weights=np.asarray(weights, dtype=float),
            agent_cell=(int(cur[0]), int(cur[1])),
            chosen_cell=None if chosen is None else (int(chosen[0]), int(chosen[1])),
            next_cell=(int(next_cell[0]), int(next_cell[1])),
            target_cell=target,
            semantic=val2d,
        )
        info.update(
            cell=[int(next_cell[0]), int(next_cell[1])],
            frontier_cell=None if chosen is None else [int(chosen[0]), int(chosen[1])],
            committed_target=list(target) if target else None,
        )
        return Waypoint((float(xy[0]), float(xy[1])), angle, source, info)

    # ------------------------------------------------------------------ semantic weighting
    def _semantic_on(self, step: int | None) -> bool:
        c = self.cfg
        if not c.semantic or not self.sem_count.any():
            return False
        return step is None or step >= c.min_random_init_steps

    def semantic_map(self) -> np.ndarray:
        """The value map the frontier weights read: the running means, gaussian-smoothed."""
        if self.cfg.smooth_sigma <= 0:
            return self.sem_value.copy()
        return _ndimage().gaussian_filter(self.sem_value, sigma=self.cfg.smooth_sigma)

    def _value_along(self, cell: np.ndarray, normal: np.ndarray, val2d: np.ndarray) -> float:
        """Mean of the non-zero map values along the normal (0 when all are zero)."""
        n = max(int(self.cfg.max_val_check_frontier / self._vol.voxel_size), 1)
        pts = self._clip_cells(np.round(cell + np.arange(n)[:, None] * normal).astype(int))
        vals = val2d[pts[:, 0], pts[:, 1]]
        vals = vals[vals != 0]
        return float(vals.mean()) if vals.size else 0.0

    def integrate_semantic(self, points_normal: np.ndarray, values: np.ndarray) -> None:
        """Splat each point's value onto every cell within ``semantic_radius``: a running mean
        per cell (count += 1; value = (old_count * value + v) / count), point by point."""
        vol = self._vol
        r = self.cfg.semantic_radius / vol.voxel_size
        ii, jj = np.ogrid[: vol.dims[0], : vol.dims[1]]
        pts = np.asarray(points_normal, float).reshape(-1, 2)
        for p, v in zip(pts, np.ravel(values), strict=True):
            c = vol.world_to_grid(p)
            disc = (ii - c[0]) ** 2 + (jj - c[1]) ** 2 <= r * r
            old = self.sem_count[disc]
            self.sem_count[disc] = old + 1
            self.sem_value[disc] = (old * self.sem_value[disc] + float(v)) / (old + 1)

    def prompt_points(
        self,
        agent_pos_normal: np.ndarray,
        cam_to_world_normal: np.ndarray,
        intrinsics: np.ndarray,
        image_hw: tuple[int, int],
        vp: VisualPromptConfig | None = None,
    ) -> PromptPoints:
        """Points to mark on the current frame (explore-eqa's ``find_prompt_points_within_view``).

        Candidates are island (reachable free-floor) cells in view of the camera moved
        ``cam_offset`` forward, inside the image margins, ``point_min_dist``..``point_max_dist``
        from the agent, whose straight grid line from the agent crosses at most
        ``max_occupied_crossed`` non-free cells (a random subsample of ``num_max_unoccupied``).
        Farthest-point sampling picks ``num_prompt_points`` (seeded with the first candidate),
        then points within ``cluster_threshold`` of a kept one are dropped. Pixels are the
        projection at the volume's bottom (z-index 0) through the camera itself. Fewer than
        ``min_num_prompt_points`` kept: no points.
        """
        vp = vp or VisualPromptConfig()
        vol = self._vol
        h, w = int(image_hw[0]), int(image_hw[1])
        empty = PromptPoints(np.zeros((0, 2), int), np.zeros((0, 2)), np.zeros((0, 2), int))
        pos = np.asarray(agent_pos_normal, dtype=float)
        if self._init_cells is None:
            self._set_start(pos)
        cur = vol.world_to_grid(pos[:2])
        free = self.free_floor()
        island = self.island_of(free, cur)
        cells = np.argwhere(island)
        if len(cells) == 0:
            return empty
        xy = vol.grid_to_world(cells.astype(float))
        d = np.linalg.norm(xy - pos[:2], axis=1)
        keep = (d >= vp.point_min_dist) & (d <= vp.point_max_dist)
        cells, xy = cells[keep], xy[keep]
        pts = np.column_stack([xy, np.full(len(xy), float(vol.origin[2]))])
        pose = np.asarray(cam_to_world_normal, dtype=float)
        k = np.asarray(intrinsics, dtype=float)
        shifted = pose.copy()
        shifted[:3, 3] = pose[:3, 3] + vp.cam_offset * pose[:3, 2]
        uv_s, z_s = _project(pts, shifted, k)
        uv, z = _project(pts, pose, k)
        ms, mt = vp.margin_side_px, vp.margin_top_px
        in_view = (z_s > 0) & (uv_s[:, 0] >= ms) & (uv_s[:, 0] < w - ms)
        in_view &= (z > 0) & (uv[:, 0] >= ms) & (uv[:, 0] < w - ms)
        in_view &= (uv[:, 1] >= mt) & (uv[:, 1] < h)
        cells, xy, uv = cells[in_view], xy[in_view], uv[in_view]
        if len(cells) > vp.num_max_unoccupied:
            pick = self.rng.choice(len(cells), vp.num_max_unoccupied, replace=False)
            cells, xy, uv = cells[pick], xy[pick], uv[pick]
        else:
            order = self.rng.permutation(len(cells))
            cells, xy, uv = cells[order], xy[order], uv[order]
        sight = np.array([self._crossed(cur, c, free) <= vp.max_occupied_crossed for c in cells],
                         dtype=bool).reshape(-1)  # fmt: skip
        cells, xy, uv = cells[sight], xy[sight], uv[sight]
        n_cand = len(cells)
        if n_cand < vp.min_points_for_clustering:
            return PromptPoints(empty.cells, empty.xy, empty.pixels, n_cand)
        chosen = [0]
        dist = np.linalg.norm(xy - xy[0], axis=1)
        while len(chosen) < min(vp.num_prompt_points, n_cand):
            nxt = int(np.argmax(dist))
            if dist[nxt] <= 0:
                break
            chosen.append(nxt)
            dist = np.minimum(dist, np.linalg.norm(xy - xy[nxt], axis=1))
        kept: list[int] = []
        for i in chosen:
            if all(np.linalg.norm(xy[i] - xy[j]) >= vp.cluster_threshold for j in kept):
                kept.append(i)
        if len(kept) < vp.min_num_prompt_points:
            return PromptPoints(empty.cells, empty.xy, empty.pixels, n_cand)
        idx = np.array(kept)
        return PromptPoints(cells[idx], xy[idx], np.round(uv[idx]).astype(int), n_cand)

    @staticmethod
    def _crossed(a: np.ndarray, b: np.ndarray, free: np.ndarray) -> int:
        """Non-free cells on the straight grid line from ``a`` to ``b`` (end points excluded)."""
        n = int(max(abs(int(b[0]) - int(a[0])), abs(int(b[1]) - int(a[1]))))
        if n <= 1:
            return 0
        t = np.linspace(0.0, 1.0, n + 1)[1:-1, None]
        line = np.round(a[None, :2] + t * (np.asarray(b[:2]) - a[:2])).astype(int)
        return int((~free[line[:, 0], line[:, 1]]).sum())


def _project(
    pts: np.ndarray, cam_to_world: np.ndarray, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (u, v) and camera depths of world points through an OpenCV camera pose."""
    r, t = cam_to_world[:3, :3], cam_to_world[:3, 3]
    cam = (pts - t) @ r  # = R^T (p - t), row-wise
    z = cam[:, 2]
    safe = np.where(np.abs(z) > 1e-9, z, 1e-9)
    u = k[0, 0] * cam[:, 0] / safe + k[0, 2]
    v = k[1, 1] * cam[:, 1] / safe + k[1, 2]
    return np.column_stack([u, v]), z
