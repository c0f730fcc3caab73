"""One simulator shared by a run's concurrent episodes, and the steps run on its thread.

A :class:`SimSession` runs every simulator call on one dedicated thread behind an
``asyncio.Lock`` (each step first re-places its episode's agent, so set-pose + observe is
atomic), and scene leases keep one scene loaded while any episode still uses it (episodes are
sorted by scene, so a scene is loaded once). The run builds the simulator and closes it; the
session only owns its thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.policies.proposer import AgentState, Waypoint, WaypointProposer
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import Observation, SceneSpec, Simulator


class SimSession:
    """One simulator shared by the run's episodes: serialised calls and scene leases."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="eqa-sim")
        self._lock: asyncio.Lock | None = None
        self._cond: asyncio.Condition | None = None
        self._scene: str | None = None
        self._users = 0
        self.loaded: Path | None = None
        self.scene_loads = 0

    def _sync(self) -> tuple[asyncio.Lock, asyncio.Condition]:
        if self._lock is None or self._cond is None:
            self._lock, self._cond = asyncio.Lock(), asyncio.Condition()
        return self._lock, self._cond

    @contextlib.asynccontextmanager
    async def lease(self, scene_key: str) -> AsyncIterator[SimSession]:
        """Hold ``scene_key`` loaded for one episode; another scene waits until it is free."""
        _, cond = self._sync()
        async with cond:
            await cond.wait_for(lambda: self._users == 0 or self._scene == scene_key)
            self._scene = scene_key
            self._users += 1
        try:
            yield self
        finally:
            async with cond:
                self._users -= 1
                cond.notify_all()

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the simulator thread, atomically w.r.t. other episodes."""
        lock, _ = self._sync()
        async with lock:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def ensure_scene(self, spec: SceneSpec, start_position: Any) -> None:
        """(simulator thread) Load ``spec`` unless it is the loaded scene."""
        if self.loaded is None or Path(spec.mesh_path) != self.loaded:
            self.sim.load_scene(spec, start_position=start_position)
            self.loaded = Path(spec.mesh_path)
            self.scene_loads += 1

    def close(self) -> None:
        """Stop the simulator thread after the call in flight, if any (waiting up to 60 s).

        The simulator itself is the run's: it closes it after the policy's ``close()``.
        """
        try:
            self._pool.submit(lambda: None).result(timeout=60)
        finally:
            self._pool.shutdown(wait=False)


# ----------------------------------------------------------------------------- simulator steps
# (all run on the simulator thread; each first re-places this episode's agent)


def observe_at(sim: Simulator, pos: np.ndarray, rot: np.ndarray) -> Observation:
    sim.set_agent_pose(pos, rot)
    return sim.observe()


@dataclass
class Hop:
    """One teleport: where the agent ended up, the geodesic length, and how it got there."""

    position: np.ndarray
    length: float
    snapped: bool
    fallback: bool
    stayed: bool


def hop_to(
    sim: Simulator,
    last: AgentState,
    wp: Waypoint,
    fallback_radius: float,
    rng: np.random.Generator,
) -> Hop:
    sim.set_agent_pose(last.position, last.rotation)
    x, y = (float(v) for v in wp.position_normal)
    p = np.full(3, np.nan)
    if math.isfinite(x) and math.isfinite(y):
        p = np.asarray(sim.snap_point(geo.normal_to_habitat([x, y, last.floor_height])), float)
    snapped = bool(np.all(np.isfinite(p)))
    fallback = stayed = False
    if not snapped:
        fallback = True
        p = np.asarray(sim.random_navigable_point_near(last.position, fallback_radius, rng), float)
    if not np.all(np.isfinite(p)):
        stayed, p = True, np.asarray(last.position, float).copy()
    return Hop(p, float(sim.geodesic_distance(last.position, p)), snapped, fallback, stayed)


def propose_and_hop(
    proposer: WaypointProposer,
    sim: Simulator,
    state: AgentState,
    fallback_radius: float,
    rng: np.random.Generator,
) -> tuple[Waypoint, Hop]:
    sim.set_agent_pose(state.position, state.rotation)
    wp = proposer.propose(state)
    return wp, hop_to(sim, state, wp, fallback_radius, rng)


def goal_distance(sim: Simulator, state: AgentState, goal: np.ndarray) -> float:
    sim.set_agent_pose(state.position, state.rotation)
    return float(sim.geodesic_distance(state.position, goal))
