"""``fbe``: frontier-based exploration, :class:`~eqa_runner.mapping.FrontierPlanner` as a
:class:`~eqa_runner.policies.explore.WaypointProposer`.

Per step of the exploration loop:

* ``update`` (CPU pool) fuses the forward observation: depth, intrinsics and the TSDF-frame
  camera pose ``geometry.cam_pose_tsdf(obs.cam_to_world)`` (normal frame, OpenCV camera);
* ``propose`` (simulator thread, agent placed) optionally renders a look-around — extra views at
  the same position, rotated by ``look_around_deg`` — fuses them, then plans. The stop check
  only ever sees the forward view; every extra view is one more simulator render;
* the waypoint's ``source`` is ``frontier`` (a newly sampled frontier), ``commit`` (a hop
  towards a far frontier chosen earlier) or ``fallback`` (no frontier qualified).

Top-down maps (occupancy, explored, frontiers, path) are kept as array snapshots and written
as PNGs at episode end (``finish``, CPU pool) when the run saves artifacts.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.configured import Configured
from eqa_runner.mapping.frontier import FrontierPlanner, PlannerMaps
from eqa_runner.policies.config import FrontierProposerConfig
from eqa_runner.policies.proposer import AgentState, Waypoint, WaypointProposer
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import Observation, Simulator
from eqa_runner.types import Episode

SOURCES = ("frontier", "commit", "fallback")


def bounds_normal(sim: Simulator) -> np.ndarray:
    """(2, 2) normal-frame x-y bounds ``[[xmin, xmax], [ymin, ymax]]`` of the navmesh."""
    lo, hi = (geo.habitat_to_normal(np.asarray(p, dtype=float)) for p in sim.bounds())
    return np.array(
        [[min(lo[0], hi[0]), max(lo[0], hi[0])], [min(lo[1], hi[1]), max(lo[1], hi[1])]]
    )


class FrontierProposer(Configured, WaypointProposer):
    """Frontier-based exploration (the upstream TSDF frontier planner, semantics off)."""

    name = "fbe"
    needs_sim = True  # the look-around renders extra views in ``propose``

    config_class = FrontierProposerConfig
    config: FrontierProposerConfig

    def __init__(self, config: FrontierProposerConfig | None = None, **overrides: Any) -> None:
        """``planner=``: the planner settings, a :class:`FrontierPlannerConfig` or a mapping of
        its keys (merged over the schema's; an unknown key is refused)."""
        super().__init__(config, **overrides)
        self.planner = FrontierPlanner(self.config.planner)
        self.artifacts_dir: Path | None = None  # set by the loop when run.save_artifacts=true
        self.sim: Simulator | None = None
        self.counts = dict.fromkeys(SOURCES, 0)
        self.fuse_ms: list[float] = []  # per step, all views fused that step
        self.plan_ms: list[float] = []
        self.render_ms: list[float] = []  # look-around renders per step
        self.fuse_cpu_ms: list[float] = []  # thread CPU time of the same work
        self.plan_cpu_ms: list[float] = []
        self.snapshots: list[tuple[int, PlannerMaps, list[tuple[float, float]]]] = []
        self._step_fuse = self._step_fuse_cpu = 0.0

    # -------------------------------------------------------------- WaypointProposer API
    def reset(self, episode: Episode, sim: Simulator, rng: np.random.Generator) -> None:
        """New TSDF over the navmesh bounds at the start floor; the planner samples ``rng``."""
        start = np.asarray(episode.meta["start_position"], dtype=float)
        start_n = geo.habitat_to_normal(start)
        self.sim = sim
        self.planner.reset(
            bounds_normal(sim), float(start_n[2]), rng=rng, start_position_normal=start_n
        )
        self.counts = dict.fromkeys(SOURCES, 0)
        self.fuse_ms, self.plan_ms, self.render_ms, self.snapshots = [], [], [], []
        self.fuse_cpu_ms, self.plan_cpu_ms = [], []
        self._step_fuse = self._step_fuse_cpu = 0.0

    def update(self, obs: Observation, agent_state: AgentState) -> None:
        """Fuse the forward view (CPU pool; no simulator call)."""
        self._fuse(obs, agent_state)

    def propose(self, agent_state: AgentState) -> Waypoint:
        """Look around (simulator thread), then plan the next pose."""
        if self.config.look_around_deg and self.sim is not None:
            self._look_around(agent_state)
        t0, c0 = time.perf_counter(), time.thread_time()
        with self.times.part("plan"):
            wp = self.planner.next_pose(
                agent_state.position_normal, agent_yaw=agent_state.yaw, step=agent_state.step
            )
        self.plan_ms.append((time.perf_counter() - t0) * 1e3)
        self.plan_cpu_ms.append((time.thread_time() - c0) * 1e3)
        self.fuse_ms.append(self._step_fuse)
        self.fuse_cpu_ms.append(self._step_fuse_cpu)
        self._step_fuse = self._step_fuse_cpu = 0.0
        self.counts[wp.source] = self.counts.get(wp.source, 0) + 1
        if (
            self.config.save_maps
            and self.artifacts_dir is not None
            and self.planner.maps is not None
        ):
            # the maps' arrays are fresh per plan: keeping references is a snapshot
            self.snapshots.append(
                (agent_state.step, self.planner.maps, list(self.planner.path_normal))
            )
        info = dict(wp.info)
        info["views_fused"] = 1 + len(self.config.look_around_deg)
        return Waypoint(wp.position_normal, wp.angle, wp.source, info)

    def finish(self) -> dict[str, Any]:
        """Episode end (CPU pool): write the top-down PNGs; return the trace fields."""
        written: list[str] = []
        if self.artifacts_dir is not None and self.snapshots:
            from eqa_runner.mapping.topdown import save_topdown

            for step, maps, path in self.snapshots:
                out = self.artifacts_dir / f"topdown_{step:03d}.png"
                save_topdown(maps, out, path, scale=self.config.map_scale)
                written.append(out.name)
            self.snapshots = []
        return {
            "source_counts": dict(self.counts),
            "views_per_step": 1 + len(self.config.look_around_deg),
            "fuse_ms_median": _median(self.fuse_ms),
            "plan_ms_median": _median(self.plan_ms),
            "look_around_render_ms_median": _median(self.render_ms),
            "topdown_maps": written,
        }

    # -------------------------------------------------------------- pieces
    def _fuse(self, obs: Observation, agent_state: AgentState) -> None:
        t0, c0 = time.perf_counter(), time.thread_time()
        pose = geo.cam_pose_tsdf(obs.cam_to_world)
        with self.times.part("fuse"):
            self.planner.update(obs.depth, obs.intrinsics, pose, agent_state.position_normal)
        self._step_fuse += (time.perf_counter() - t0) * 1e3
        self._step_fuse_cpu += (time.thread_time() - c0) * 1e3

    def _look_around(self, state: AgentState) -> None:
        sim = self.sim
        assert sim is not None
        t_render = 0.0
        for off in map(math.radians, self.config.look_around_deg):
            t0 = time.perf_counter()
            sim.set_agent_pose(state.position, geo.yaw_to_quat(state.yaw + off))
            with self.times.part("render"):
                obs = sim.observe()
            t_render += time.perf_counter() - t0
            self._fuse(obs, state)
        sim.set_agent_pose(state.position, state.rotation)
        self.render_ms.append(t_render * 1e3)


def _median(xs: list[float]) -> float | None:
    return round(float(np.median(xs)), 3) if xs else None
