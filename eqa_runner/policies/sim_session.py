"""The run's simulators shared by its concurrent episodes, and the steps run on their threads.

A :class:`SimSession` runs every call to one simulator on one dedicated thread behind an
``asyncio.Lock`` (each step first re-places its episode's agent, so set-pose + observe is
atomic), and a scene lease keeps one scene loaded while any episode still uses it.

With ``sim.instances=N`` (a :class:`~eqa_runner.sim.pool.SimulatorPool`) the session holds N
such lanes, one per simulator, each with its own thread and lease; :meth:`SimSession.lease`
yields the lane an episode runs on. An episode of scene S joins a lane where S is in use;
else it takes an idle lane (one with S still loaded first, then one never used, then the
lowest index); when every lane is busy with other scenes it waits. So episodes of different
scenes run side by side, and as episodes arrive sorted by scene, each scene loads once (once
per instance at most). The run builds the simulators and closes them; the session only owns
its threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.policies.proposer import AgentState, Waypoint, WaypointProposer
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import Observation, SceneSpec, Simulator
from eqa_runner.sim.pool import instances_of
from eqa_runner.timing import OFF, PartTimes


class SimSession:
    """The run's simulator(s) shared by its episodes: serialised calls and scene leases."""

    def __init__(self, sim: Simulator, *, index: int = 0) -> None:
        sims = instances_of(sim)
        self.index = index
        self.sim = sims[0]  # this lane's simulator (the first one for a multi-lane session)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"eqa-sim{index}")
        self._lock: asyncio.Lock | None = None
        self._cond: asyncio.Condition | None = None
        self._scene: str | None = None
        self._users = 0
        self.loaded: Path | None = None
        self._loads = 0
        self.load_log: list[str] = []  # scenes this lane loaded, in order
        # one lane per simulator; a single simulator's session is its own only lane
        self.lanes: list[SimSession] = [self] + [
            SimSession(s, index=i) for i, s in enumerate(sims[1:], start=1)
        ]

    @property
    def scene_loads(self) -> int:
        """Scene loads so far, over all lanes."""
        return sum(lane._loads for lane in self.lanes)

    def _sync(self) -> tuple[asyncio.Lock, asyncio.Condition]:
        if self._lock is None or self._cond is None:
            self._lock, self._cond = asyncio.Lock(), asyncio.Condition()
        return self._lock, self._cond

    def _pick(self, scene_key: str) -> SimSession | None:
        """The lane for an episode of ``scene_key`` now (None: wait); see the module docstring."""
        active = [ln for ln in self.lanes if ln._users > 0 and ln._scene == scene_key]
        if active:  # join the scene where it is loaded: no second load
            return min(active, key=lambda ln: (ln._users, ln.index))
        idle = [ln for ln in self.lanes if ln._users == 0]
        if not idle:
            return None
        # an idle lane: one that has this scene loaded, else one never used, else the first
        return min(
            idle, key=lambda ln: (ln.loaded_key != scene_key, ln.loaded is not None, ln.index)
        )

    @property
    def loaded_key(self) -> str | None:
        return str(self.loaded) if self.loaded is not None else None

    @contextlib.asynccontextmanager
    async def lease(self, scene_key: str) -> AsyncIterator[SimSession]:
        """Hold ``scene_key`` loaded on one lane for one episode; yields that lane (use it for
        this episode's simulator calls). Another scene waits until a lane is free."""
        _, cond = self._sync()
        async with cond:
            lane = self._pick(scene_key)
            while lane is None:
                await cond.wait()
                lane = self._pick(scene_key)
            lane._scene = scene_key
            lane._users += 1
        try:
            yield lane
        finally:
            async with cond:
                lane._users -= 1
                cond.notify_all()

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on this lane's simulator thread, atomically w.r.t. other episodes."""
        lock, _ = self._sync()
        async with lock:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def ensure_scene(self, spec: SceneSpec, start_position: Any) -> None:
        """(simulator thread) Load ``spec`` unless it is the loaded scene."""
        if self.loaded is None or Path(spec.mesh_path) != self.loaded:
            self.sim.load_scene(spec, start_position=start_position)
            self.loaded = Path(spec.mesh_path)
            self._loads += 1
            self.load_log.append(str(spec.mesh_path))

    def close(self) -> None:
        """Stop the simulator threads after the calls in flight, if any (waiting up to 60 s).

        The simulators themselves are the run's: it closes them after the policy's ``close()``.
        """
        for lane in self.lanes[1:]:
            lane.close()
        try:
            self._pool.submit(lambda: None).result(timeout=60)
        finally:
            self._pool.shutdown(wait=False)


# ----------------------------------------------------------------------------- simulator steps
# (all run on the simulator thread; each first re-places this episode's agent)


def observe_at(
    sim: Simulator, pos: np.ndarray, rot: np.ndarray, times: PartTimes = OFF
) -> Observation:
    sim.set_agent_pose(pos, rot)
    with times.part("render"):
        return sim.observe()


@dataclass
class Hop:
    """One teleport: where the agent ended up, the geodesic length, and how it got there."""

    position: np.ndarray
    length: float
    snapped: bool
    fallback: bool
    stayed: bool
    points: list[np.ndarray] = field(default_factory=list)  # the geodesic's points, both ends


def hop_to(
    sim: Simulator,
    last: AgentState,
    wp: Waypoint,
    fallback_radius: float,
    rng: np.random.Generator,
    times: PartTimes = OFF,
) -> Hop:
    """Snap the waypoint to the navmesh (else a random point near), and its geodesic length."""
    with times.part("hop"):
        return _hop(sim, last, wp, fallback_radius, rng)


def _hop(
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
    length, points = sim.geodesic_path(last.position, p)
    return Hop(p, float(length), snapped, fallback, stayed, points)


def propose_and_hop(
    proposer: WaypointProposer,
    sim: Simulator,
    state: AgentState,
    fallback_radius: float,
    rng: np.random.Generator,
) -> tuple[Waypoint, Hop]:
    sim.set_agent_pose(state.position, state.rotation)
    wp = proposer.propose(state)
    return wp, hop_to(sim, state, wp, fallback_radius, rng, proposer.times)


def goal_distance(
    sim: Simulator, state: AgentState, goal: np.ndarray, times: PartTimes = OFF
) -> float:
    return goal_path(sim, state, goal, times)[0]


def goal_path(
    sim: Simulator, state: AgentState, goal: np.ndarray, times: PartTimes = OFF
) -> tuple[float, list[np.ndarray]]:
    """The geodesic length from the agent to the goal and its path's points (the map draws the
    line to the goal along them)."""
    sim.set_agent_pose(state.position, state.rotation)
    with times.part("geodesic"):
        d, points = sim.geodesic_path(state.position, goal)
        return float(d), points
