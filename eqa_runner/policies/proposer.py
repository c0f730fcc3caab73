"""The proposer API: where an exploration policy looks next.

An exploration policy (``policies/explore.py``) runs one loop for every exploration task; what
differs between agents is the :class:`WaypointProposer` that picks the next pose. A new agent is
a proposer class plus ``conf/policy/<name>.yaml`` with ``proposer._target_`` (and
``_partial_: true``: the policy builds one proposer per episode).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.policies.config import RandomProposerConfig
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import Observation, Simulator
from eqa_runner.types import Episode


@dataclass(frozen=True)
class Waypoint:
    """The next pose: a point in the normal (z-up) frame and a habitat yaw (radians)."""

    position_normal: tuple[float, float]
    angle: float
    source: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentState:
    """Where the agent is at ``step`` (habitat frame, quaternion w, x, y, z)."""

    step: int
    position: np.ndarray
    rotation: np.ndarray
    floor_height: float  # habitat y of the start floor; waypoints are lifted to it

    @property
    def position_normal(self) -> np.ndarray:
        return geo.habitat_to_normal(self.position)

    @property
    def yaw(self) -> float:
        return geo.quat_to_yaw(self.rotation)


class WaypointProposer(ABC):
    """Chooses where to look next. One instance per episode (built from a factory).

    ``reset`` (and ``propose`` when ``needs_sim`` is true) run on the simulator thread with the
    episode's scene loaded and its agent placed; ``update`` runs on the CPU pool and must not
    touch the simulator.
    """

    name: str = "proposer"
    needs_sim: bool = False

    def reset(self, episode: Episode, sim: Simulator, rng: np.random.Generator) -> None:
        """Start a new episode (build maps from ``sim.bounds()``, keep ``rng``)."""
        return None

    def update(self, obs: Observation, agent_state: AgentState) -> None:
        """Fuse a (non-black) observation into the proposer's map."""
        return None

    @abstractmethod
    def propose(self, agent_state: AgentState) -> Waypoint:
        """The next pose; NaN coordinates ask the loop for its random fallback."""

    artifacts_dir: Path | None = None  # set by the loop when run.save_artifacts=true

    def finish(self) -> dict[str, Any]:
        """(CPU pool) Episode end: write artifacts; the returned fields are added to the trace."""
        return {}


class RandomProposer(WaypointProposer):
    """``re``: a random navigable point within ``radius_m`` and a uniform yaw, from ``ctx.rng``."""

    name = "re"
    needs_sim = True

    def __init__(self, radius_m: float = RandomProposerConfig.radius_m) -> None:
        self.radius_m = float(radius_m)
        self.sim: Simulator | None = None
        self.rng: np.random.Generator | None = None

    def reset(self, episode: Episode, sim: Simulator, rng: np.random.Generator) -> None:
        self.sim, self.rng = sim, rng

    def propose(self, agent_state: AgentState) -> Waypoint:
        assert self.sim is not None and self.rng is not None, "reset() was not called"
        p = self.sim.random_navigable_point_near(agent_state.position, self.radius_m, self.rng)
        yaw = float(self.rng.uniform(-math.pi, math.pi))
        pn = geo.habitat_to_normal(np.asarray(p, dtype=np.float64))
        return Waypoint((float(pn[0]), float(pn[1])), yaw, "random", {})
