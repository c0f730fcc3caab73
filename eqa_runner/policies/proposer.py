"""The proposer API: where an exploration policy looks next.

An exploration policy (``policies/explore.py``) runs one loop for every exploration task; what
differs between agents is the :class:`WaypointProposer` that picks the next pose. A new agent is
a proposer class plus ``conf/policy/<name>.yaml`` with ``proposer._target_``: the policy builds
one proposer per episode from that node (:func:`new_proposer`).

A proposer that asks a model about the current frame (``vlm_explore``, ``vlm_waypoint``) is a
:class:`GuidedProposer`: the loop awaits its :meth:`~GuidedProposer.assess` before the stop
decision (a stop confidence) and its :meth:`~GuidedProposer.propose_async` before the move (a
waypoint of its own, nothing — then ``propose`` plans as usual — or a :class:`DesignedStop`).
docs/policies.md walks through writing one.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from eqa_runner.configured import Configured
from eqa_runner.errors import ConfigError
from eqa_runner.policies.config import RandomProposerConfig
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import Observation, Simulator
from eqa_runner.timing import OFF, PartTimes
from eqa_runner.types import Episode

if TYPE_CHECKING:
    from eqa_runner.policies.context import EpisodeContext


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
    # a proposer that mixes in eqa_runner.configured.Configured takes its typed config
    config_key: ClassVar[str] = "policy.proposer"
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
    times: PartTimes = OFF  # the episode's part timer, set by the loop (run.profile=true)

    def finish(self) -> dict[str, Any]:
        """(CPU pool) Episode end: write artifacts; the returned fields are added to the trace."""
        return {}


class RandomProposer(Configured, WaypointProposer):
    """``re``: a random navigable point within ``radius_m`` and a uniform yaw, from ``ctx.rng``."""

    name = "re"
    needs_sim = True

    config_class = RandomProposerConfig
    config: RandomProposerConfig

    def __init__(self, config: RandomProposerConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.sim: Simulator | None = None
        self.rng: np.random.Generator | None = None

    def reset(self, episode: Episode, sim: Simulator, rng: np.random.Generator) -> None:
        self.sim, self.rng = sim, rng

    def propose(self, agent_state: AgentState) -> Waypoint:
        assert self.sim is not None and self.rng is not None, "reset() was not called"
        p = self.sim.random_navigable_point_near(
            agent_state.position, self.config.radius_m, self.rng
        )
        yaw = float(self.rng.uniform(-math.pi, math.pi))
        pn = geo.habitat_to_normal(np.asarray(p, dtype=np.float64))
        return Waypoint((float(pn[0]), float(pn[1])), yaw, "random", {})


def proposer_class(config: Any) -> type[WaypointProposer]:
    """The :class:`WaypointProposer` class ``policy.proposer._target_`` names (imported when the
    policy is built, so a wrong name fails before the first episode)."""
    target = str(_keys(config).get("_target_") or "")
    module, _, attr = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr) if module else None
    except ImportError as e:
        raise ConfigError(f"policy.proposer._target_={target}: {e}") from None
    except AttributeError:
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, WaypointProposer)):
        raise ConfigError(f"policy.proposer._target_={target}: not a WaypointProposer class")
    return cls


def new_proposer(cls: type[WaypointProposer], config: Any) -> WaypointProposer:
    """One episode's proposer: ``cls(config)`` for a :class:`Configured` class (its typed
    schema), else ``cls(**keys)`` (the node's keys but ``_target_`` and ``_partial_``)."""
    if issubclass(cls, Configured):
        own = config if isinstance(config, cls.config_class) else _keys(config)
        return cast(WaypointProposer, cls(own))
    keys = {k: v for k, v in _keys(config).items() if k not in ("_target_", "_partial_")}
    return cls(**keys)


def _keys(config: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    return dict(config or {})


@dataclass(frozen=True)
class StepView:
    """What a :class:`GuidedProposer` sees of the current step (after the map update)."""

    episode: Episode
    state: AgentState
    obs: Observation
    frame: bytes  # PNG of ``obs.rgb``, the image the stop check sees
    black: bool  # the frame is mostly black (no map update, no stop check)
    budget: int  # the episode's step budget
    record: dict[str, Any]  # the step's trace entry: fields added here are recorded


@dataclass(frozen=True)
class DesignedStop:
    """A proposer ends the exploration on purpose (e.g. an unparsable model action).

    The loop stops without an error and records ``reason`` as the trace's ``stop_reason``; the
    task answers through its budget-exhausted branch (the view was not judged sufficient)."""

    reason: str
    detail: str = ""


class GuidedProposer(WaypointProposer):
    """A proposer that consults a model on the current frame each step (both hooks optional).

    ``assess`` runs on the event loop after the map update and before the stop decision of
    non-black frames; ``propose_async`` before every move. Blocking work belongs in
    ``ctx.run_cpu``; the model is ``ctx.llm`` (the run's cache and accounting apply).
    """

    async def assess(self, view: StepView, ctx: EpisodeContext) -> float | None:
        """The model's confidence in [0, 1] that the question can be answered from this view
        (read by the policy's stop rule), or None for no opinion."""
        return None

    async def propose_async(
        self, view: StepView, ctx: EpisodeContext
    ) -> Waypoint | DesignedStop | None:
        """Before the move: a waypoint (the loop snaps it and hops), a designed stop, or None
        (the loop then calls :meth:`propose` as for any proposer)."""
        return None
