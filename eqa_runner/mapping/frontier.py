"""Frontier-based exploration planner (the TSDF planner of explore-eqa and its successors).

Algorithm per :meth:`FrontierPlanner.next_pose` (re-implemented from the upstream
``TSDFPlanner.get_island_around_pts`` / ``find_next_pose`` with the semantic terms off); the
defaults reproduce the upstream planner step for step on identical frames
(``tests/golden/fbe``):

1. free floor = cells whose voxel 0.4 m above the volume floor is observed free; a disc
   around the start pose is forced free; morphological closing (0.4 m square);
2. island = connected (4-connectivity) free component containing the agent (or nearest);
3. unexplored = columns never marked explored (start disc counts as explored);
   frontier cells = island cells with 3..4 unexplored 8-neighbours;
4. more than 10 frontier cells -> DBSCAN (eps 1 cell, min 2) and one representative per
   cluster (the member nearest the cluster mean), noise dropped;
5. each frontier's normal points into unexplored space (Sobel gradient of the unexplored map,
   sign by counting unexplored cells along both directions, a coin on a tie); weight =
   exp(unexplored_rate / unexplored_T) * exp(unoccupied_rate / unoccupied_T) * exp(-d / dist_T),
   x 1e-3 when near and already faced (``close_penalty_upstream_units``, ``angle_wrap``,
   ``penalty_yaw``);
6. sample a frontier by weight, back off from it against the normal by up to 1.5 m while the
   cell stays free and on the island (>= 2 cells back needed, up to 50 tries), face the normal;
7. a target farther than 3 m (straight line) is approached along a shortest 8-connected path
   on the island (``hop_path``), cut after 30 path nodes (``hop_rule="path_nodes"``, upstream:
   up to ~4.2 m diagonally) or where the path length reaches 3 m (``"path_length"``), and the
   target is committed to for later hops (``keep_commit``);
8. no qualifying frontier -> fallback: stay and turn to a random heading (``fallback="turn"``,
   upstream) or hop to a random island cell within reach (``"random_hop"``).

Random draws: :mod:`eqa_runner.mapping.streams` (``random_source``). Positions are in the
"normal" frame (z up). ``Waypoint.angle`` is the habitat yaw about +y (0 looks along normal +y),
the upstream ``next_yaw`` wrapped to (-pi, pi].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from eqa_runner.errors import ConfigError
from eqa_runner.mapping.clusters import cluster_frontiers, dbscan_cells
from eqa_runner.mapping.hop import dijkstra_path, mcp_path
from eqa_runner.mapping.lazy import ndimage
from eqa_runner.mapping.prompt_points import PromptPoints, PromptPointsMixin

__all__ = ["FrontierPlanner", "PlannerMaps", "PromptPoints", "Waypoint", "dbscan_cells"]

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
    frontier_weights: np.ndarray  # (M,) sampling weights (upstream's; 0 on a commit step)
    agent_cell: tuple[int, int]
    chosen_cell: tuple[int, int] | None = None  # frontier picked
    next_cell: tuple[int, int] | None = None  # pose cell returned
    target_cell: tuple[int, int] | None = None  # committed far target, if any
    semantic: np.ndarray | None = None  # the smoothed value map used for this plan, if any


@dataclass
class _Plan:
    """The maps of one :meth:`FrontierPlanner.next_pose` call."""

    cur: np.ndarray
    free: np.ndarray
    island: np.ndarray
    unexplored: np.ndarray
    cells: np.ndarray
    frontiers: np.ndarray
    grad: tuple[np.ndarray, np.ndarray]
    val2d: np.ndarray | None
    weights: np.ndarray


class FrontierPlanner(PromptPointsMixin):
    """Fuses depth frames and proposes the next exploration pose (see module docstring)."""

    def _reset_plan(self) -> None:
        self._target: dict | None = None
        self._last_yaw: float | None = None
        self._plan_yaw = 0.0  # upstream main.py: the angle passed to the planner, 0 at start
        self.maps: PlannerMaps | None = None

    # ------------------------------------------------------------------ planning
    def next_pose(
        self, agent_pos_normal: np.ndarray, agent_yaw: float | None = None, step: int | None = None
    ) -> Waypoint:
        """Choose the next pose from the current maps (see module docstring). ``step``: the
        episode step (semantic weighting starts at ``min_random_init_steps``; None: at once).
        ``agent_yaw`` is read only with ``penalty_yaw="agent"``."""
        pos = np.asarray(agent_pos_normal, dtype=float)
        if self._init_cells is None:
            self._set_start(pos)
        plan = self._maps_for(pos, step)
        info: dict = {"num_frontier_cells": len(plan.cells), "num_frontiers": len(plan.frontiers)}
        target = self._target
        if (
            target is not None
            and self.cfg.keep_commit == "on_island"
            and not plan.island[tuple(target["next"])]
        ):
            info["commit_dropped"] = True
            self._target = None
        source: Literal["frontier", "commit", "fallback"]
        if self._target is not None:
            source = "commit"
            next_cell = np.array(self._target["next"])
            direction = np.array(self._target["direction"], dtype=float)
            chosen = np.array(self._target["frontier"])
        else:
            yaw = self._penalty_yaw(agent_yaw)
            for i, f in enumerate(plan.frontiers):
                normal = self._normal_into(f, plan.grad, plan.unexplored)
                plan.weights[i] = self._weight(f, normal, plan, yaw)
            pick = self._sample_pose(plan)
            if pick is None:
                return self._fallback(plan, info)
            chosen, next_cell, direction = pick
            source = "frontier"
        next_cell, direction = self._cap_hop(plan, next_cell, direction, chosen, info)
        return self._emit(plan, next_cell, direction, source, info, chosen)

    def _maps_for(self, pos: np.ndarray, step: int | None) -> _Plan:
        c = self.cfg
        cur = self._vol.world_to_grid(pos[:2])
        free = self.free_floor()
        island = self.island_of(free, cur)
        unexplored = self.unexplored()
        un_i = unexplored.astype(np.int16)
        n_un = ndimage.convolve(un_i, _NEIGHBOUR_KERNEL, mode="constant", cval=0)
        cells = np.argwhere(
            island & (n_un >= c.frontier_min_neighbors) & (n_un <= c.frontier_max_neighbors)
        )
        frontiers = cluster_frontiers(cells, c, self._vol.dims[:2])
        # integer gradients, as upstream: their negation has no signed zero (it shows in atan2)
        grad = (ndimage.sobel(un_i, axis=0), ndimage.sobel(un_i, axis=1))
        val2d = self.semantic_map() if self._semantic_on(step) else None
        return _Plan(
            cur, free, island, unexplored, cells, frontiers, grad, val2d, np.zeros(len(frontiers))
        )

    def _penalty_yaw(self, agent_yaw: float | None) -> float | None:
        if self.cfg.penalty_yaw == "planned":
            return self._plan_yaw
        return self._last_yaw if agent_yaw is None else float(agent_yaw)

    # ---- pieces
    def _normal_into(self, cell: np.ndarray, grad, unexplored: np.ndarray) -> np.ndarray:
        """Unit normal at ``cell`` pointing into the side with more unexplored cells."""
        g = np.array([-grad[0][cell[0], cell[1]], -grad[1][cell[0], cell[1]]], dtype=float)
        norm = np.linalg.norm(g)
        g = self.draws.zero_gradient_normal() if norm == 0 else g / norm
        steps = np.arange(self.cfg.normal_check_cells)[:, None]
        fwd = self._clip_cells((cell + steps * g).astype(int))
        bwd = self._clip_cells((cell - steps * g).astype(int))
        n_fwd = int(unexplored[fwd[:, 0], fwd[:, 1]].sum())
        n_bwd = int(unexplored[bwd[:, 0], bwd[:, 1]].sum())
        if n_fwd < n_bwd or (n_fwd == n_bwd and self.draws.coin()):
            g = -g
        return g

    def _ray_rate(self, cell: np.ndarray, normal: np.ndarray, metres: float, grid: np.ndarray):
        n = max(int(metres / self._vol.voxel_size), 1)
        pts = self._clip_cells(np.round(cell + np.arange(n)[:, None] * normal).astype(int))
        return float(grid[pts[:, 0], pts[:, 1]].sum()) / n

    def _weight(self, cell: np.ndarray, normal: np.ndarray, plan: _Plan, yaw: float | None):
        """Upstream's weight, factor by factor in upstream's order."""
        c = self.cfg
        weight = math.exp(
            self._ray_rate(cell, normal, c.max_unexplored_check_frontier, plan.unexplored)
            / c.unexplored_T
        )
        weight *= math.exp(
            self._ray_rate(cell, normal, c.max_unoccupied_check_frontier, plan.free)
            / c.unoccupied_T
        )
        if plan.val2d is not None:  # exp(val[f] / val_T) * exp(val_dir / val_dir_T)
            weight *= math.exp(float(plan.val2d[cell[0], cell[1]]) / c.val_T)
            weight *= math.exp(self._value_along(cell, normal, plan.val2d) / c.val_dir_T)
        dist = float(np.linalg.norm(cell - plan.cur[:2])) * self._vol.voxel_size
        weight *= math.exp(-dist / c.dist_T)
        radius = c.min_dist_from_cur
        if c.close_penalty_upstream_units:
            radius = c.min_dist_from_cur / self._vol.voxel_size
        if yaw is not None and dist < radius:
            diff = yaw - (math.atan2(normal[1], normal[0]) - math.pi / 2)
            if c.angle_wrap:
                diff = (diff + math.pi) % (2 * math.pi) - math.pi
            if abs(diff) < c.close_penalty_angle:
                weight *= c.close_penalty
        return weight

    def _sample_pose(self, plan: _Plan):
        """Sample frontiers by weight until a valid backed-off pose is found (or give up)."""
        c = self.cfg
        if len(plan.frontiers) == 0:
            return None
        dims = self._vol.dims
        max_back = int(c.frontier_spacing / self._vol.voxel_size)
        occupied, island = ~plan.free, plan.island

        def within(pt: np.ndarray) -> bool:
            return 0 < pt[0] < dims[0] and 0 < pt[1] < dims[1]

        for _ in range(c.max_sample_tries):
            f = plan.frontiers[self.draws.choose(plan.weights)]
            direction = self._normal_into(f, plan.grad, plan.unexplored)
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

    def _cap_hop(self, plan: _Plan, next_cell, direction, frontier, info):
        """Cut hops longer than ``max_dist_from_cur`` along an island path (``hop_path``)."""
        c = self.cfg
        s = self._vol.voxel_size
        cur = plan.cur[:2]
        if not float(np.linalg.norm(next_cell - cur)) > c.max_dist_from_cur / s:  # upstream
            self._target = None
            return next_cell, direction
        if c.hop_path == "dijkstra":
            path = dijkstra_path(plan.island, cur, next_cell)
            if len(path) == 1 and tuple(path[0]) != tuple(cur):
                info["target_unreachable"] = True
        else:
            path, reached = mcp_path(plan.island, cur, next_cell)
            if not reached:
                info["target_unreachable"] = True
        seg = np.linalg.norm(np.diff(path, axis=0), axis=1) * s
        length = np.concatenate([[0.0], np.cumsum(seg)])
        if c.hop_rule == "path_nodes":  # upstream: a fixed number of path nodes
            last = min(int(c.max_dist_from_cur / s), len(path) - 1)
        elif c.hop_rule == "path_length":
            last = int(np.searchsorted(length, c.max_dist_from_cur + 1e-9, side="right") - 1)
        else:
            raise ConfigError(f"planner.hop_rule={c.hop_rule!r}: use path_nodes or path_length")
        cut = path[last]
        self._target = None
        if last < len(path) - 1:
            self._target = {
                "next": [int(v) for v in next_cell],
                "direction": [float(v) for v in direction],
                "frontier": [int(v) for v in frontier],
            }
        to_frontier = np.asarray(frontier, dtype=float) - cut
        nrm = np.linalg.norm(to_frontier)
        new_dir = to_frontier / nrm if nrm > 0 else direction
        info.update(path_cells=len(path), hop_path_m=float(length[last]), hop_nodes=last)
        return cut.astype(int), new_dir

    def _fallback(self, plan: _Plan, info: dict) -> Waypoint:
        c = self.cfg
        s = self._vol.voxel_size
        cur = plan.cur[:2]
        direction = self.draws.turn_direction()
        next_cell = cur.copy()
        info["fallback"] = "turn"
        if c.fallback == "random_hop":
            cand = np.argwhere(plan.island)
            d = np.linalg.norm(cand - cur, axis=1) * s
            ok = cand[(d >= c.min_dist_from_cur) & (d <= c.max_dist_from_cur)]
            if len(ok):
                next_cell = ok[self.draws.integers(len(ok))]
                info["fallback"] = "random_hop"
        self._target = None
        next_cell, direction = self._cap_hop(
            plan, next_cell, direction, next_cell + direction, info
        )
        self._target = None
        return self._emit(plan, next_cell, direction, "fallback", info, None)

    def _emit(self, plan: _Plan, next_cell, direction, source, info, chosen) -> Waypoint:
        vol = self._vol
        xy = vol.grid_to_world(np.asarray(next_cell, dtype=float))
        raw = float(math.atan2(direction[1], direction[0]) - math.pi / 2)  # upstream next_yaw
        self._plan_yaw = raw
        angle = (raw + math.pi) % (2 * math.pi) - math.pi
        self._last_yaw = angle
        nxt = self._target["next"] if self._target else None
        target = None if nxt is None else (int(nxt[0]), int(nxt[1]))
        self.maps = PlannerMaps(
            origin=(float(vol.origin[0]), float(vol.origin[1])),
            voxel_size=vol.voxel_size,
            unoccupied=plan.free,
            explored=~plan.unexplored,
            island=plan.island,
            frontier_cells=plan.cells,
            frontiers=np.asarray(plan.frontiers, dtype=int).reshape(-1, 2),
            frontier_weights=np.asarray(plan.weights, dtype=float),
            agent_cell=(int(plan.cur[0]), int(plan.cur[1])),
            chosen_cell=None if chosen is None else (int(chosen[0]), int(chosen[1])),
            next_cell=(int(next_cell[0]), int(next_cell[1])),
            target_cell=target,
            semantic=plan.val2d,
        )
        info.update(
            cell=[int(next_cell[0]), int(next_cell[1])],
            frontier_cell=None if chosen is None else [int(chosen[0]), int(chosen[1])],
            committed_target=list(target) if target else None,
        )
        return Waypoint((float(xy[0]), float(xy[1])), angle, source, info)
