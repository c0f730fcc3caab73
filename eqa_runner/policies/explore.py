"""Exploration agents: one exploration loop, pluggable waypoint proposers, an answer step.

One step (as upstream's ``main.py``): place the agent → observe → unless the
frame is mostly black, update the proposer's map and ask the stop check "does this view suffice
to answer?" (a reply starting with "yes" stops) → otherwise the proposer gives the next pose
``{position_normal: (x, y), angle}``, which is lifted to the start floor, navmesh-snapped (NaN →
a random navigable point within ``fallback_radius_m`` of the last one) and teleported to; the
hop's geodesic length is added to the path length. An early stop answers with the decision
frame; an exhausted budget answers blind (the "random answer" prompt).

:meth:`ExplorePolicy.predict` is two parts with one seam between them:

- :meth:`~ExplorePolicy.explore`, the exploration loop, advances an :class:`Exploration` (the
  per-episode state: agent pose, steps, path length, stop flag, last frame) step by step
  (``_step`` = ``_observe`` → ``_stop_check`` → ``_move``) and returns it;
- :meth:`~ExplorePolicy.answer`, the answer step, turns the finished :class:`Exploration` into
  an :class:`AnswerStep` (the answer text, prompt used, parameters sent, judge images).

What differs between exploration tasks is the task's :class:`ExploreProtocol`
(:mod:`eqa_runner.policies.protocol`): the step budget, the question asked at every step (a
stop check), a hook for every frame (a frame memory) and the answer step. The task's
config picks it (``protocol: <name>``, its conf/protocol/) and the policy receives it as
``policy.protocol: ${protocol}``; so ``policy=fbe`` runs on every exploration task.

The proposer API lives in :mod:`eqa_runner.policies.proposer`, the shared simulator (one thread,
scene leases) in :mod:`eqa_runner.policies.sim_session`. The run builds the simulator from
``cfg.sim`` and hands it over in :meth:`ExplorePolicy.open`.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from eqa_runner import capabilities as cap
from eqa_runner.configured import Configured
from eqa_runner.errors import ConfigError
from eqa_runner.images import black_pixels, encode_png
from eqa_runner.llm import LLMClient, RequestEstimate
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies.base import Policy
from eqa_runner.policies.config import ExplorePolicyConfig
from eqa_runner.policies.context import EpisodeContext, RunResources
from eqa_runner.policies.exploration import AnswerStep, Exploration, vec
from eqa_runner.policies.proposer import (
    AgentState,
    DesignedStop,
    GuidedProposer,
    RandomProposer,
    StepView,
    Waypoint,
    WaypointProposer,
    new_proposer,
    proposer_class,
)
from eqa_runner.policies.protocol import ExploreProtocol, LoopTerms
from eqa_runner.policies.sim_session import (
    SimSession,
    goal_distance,
    goal_path,
    hop_to,
    observe_at,
    propose_and_hop,
)
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import OFF_FLOOR_M, Observation, SceneSpec
from eqa_runner.timing import OFF, PartTimes, clock
from eqa_runner.types import Episode, Prediction

# policy.stop_llm: the stop check's own endpoint, key variable and price
STOP_ENDPOINT_KEYS = ("api_base", "api_key_env", "input_usd_per_mtok", "output_usd_per_mtok")

__all__ = [  # the proposer API and the session are re-exported for existing imports
    "AgentState",
    "AnswerStep",
    "Exploration",
    "ExplorePolicy",
    "RandomProposer",
    "SimSession",
    "Waypoint",
    "WaypointProposer",
]

log = logging.getLogger(__name__)


class ExplorePolicy(Configured, Policy):
    """Exploration with a pluggable :class:`WaypointProposer` (``re``, ``fbe``) under a task's
    :class:`ExploreProtocol`.

    Built as ``Cls(config=None, *, protocol, **overrides)`` (:mod:`eqa_runner.configured`): the
    config is an :class:`ExplorePolicyConfig` (``REPolicyConfig``, ``FBEPolicyConfig`` ...);
    ``protocol`` is the task's protocol object, which the run builds from ``policy.protocol``
    (``components``). One proposer per episode is built from ``policy.proposer``."""

    config_class: ClassVar[type[Any]] = ExplorePolicyConfig
    config: ExplorePolicyConfig
    # schema keys that are another component's config: the run builds them and passes the
    # objects as keyword arguments (eqa_runner.run.build)
    components: ClassVar[dict[str, type]] = {"protocol": ExploreProtocol}
    needs_sim = True
    needs = frozenset({cap.QUESTION, cap.SIMULATOR, cap.PROTOCOL})
    provides = frozenset({cap.TRAJECTORY, cap.FINAL_FRAME})

    def __init__(
        self, config: Any = None, *, protocol: ExploreProtocol | None = None, **overrides: Any
    ) -> None:
        super().__init__(config, **overrides)
        if not isinstance(protocol, ExploreProtocol):  # the task's (null: a task without one)
            raise ConfigError(
                f"policy={self.name} explores under its task's protocol, and this task has none "
                f"(got {type(protocol).__name__}); pick a task that provides one."
            )
        self.protocol = protocol.bind(LoopTerms.of(self.config))  # the budget, stop_match …
        self.proposer_class = proposer_class(self.config.proposer)
        self._stop_clients: dict[int, LLMClient] = {}
        self.session: SimSession | None = None  # set by open(), for the run

    def proposer_factory(self) -> WaypointProposer:
        """A fresh proposer (one per episode) from ``policy.proposer``."""
        return new_proposer(self.proposer_class, self.config.proposer)

    # -------------------------------------------------------------- per-run lifecycle
    def open(self, resources: RunResources) -> None:
        """Check the stop model's credentials and share the run's simulator between episodes."""
        stop = self.extra_models(resources.llm.cfg).get("stop")
        if stop is not None:
            missing = LLMClient(stop, role="stop").missing_credentials()
            if missing:
                raise ConfigError(
                    f"policy.stop_model={self.config.stop_model}: environment variable(s) "
                    f"{', '.join(missing)} not set; export it, set policy.stop_llm.api_key_env "
                    "(and policy.stop_llm.api_base for a self-hosted model), or unset "
                    "policy.stop_model."
                )
        if resources.sim is None:
            raise ConfigError(f"policy={self.name} needs a simulator (the run's sim: group)")
        from eqa_runner.mapping.hop import load_kernels

        load_kernels()  # numba here, on the run's thread: first imports on worker threads race
        self.session = SimSession(resources.sim)

    def close(self) -> None:
        session, self.session = self.session, None
        self._stop_clients.clear()
        if session is not None:
            session.close()

    def budget(self, scene_area: float) -> int:
        """The task's step budget for a scene of ``scene_area`` m² (e.g. sqrt(area) * 3)."""
        return self.protocol.budget(scene_area)

    def extra_models(self, base: LLMConfig) -> dict[str, LLMConfig]:
        """``{"stop": config}`` when the stop check has its own model: ``policy.stop_model`` on
        ``policy.stop_llm``'s endpoint, key variable and price (none inherited from ``llm:``)."""
        model = self.config.stop_model
        if not model or model == base.model:
            return {}
        own: dict[str, Any] = {k: getattr(self.config.stop_llm, k) for k in STOP_ENDPOINT_KEYS}
        return {"stop": replace(base, model=model, **own)}

    def stop_client(self, ctx: EpisodeContext) -> LLMClient:
        """The stop check's model: ``policy.stop_model`` or the policy's own model."""
        stop = self.extra_models(ctx.llm.cfg).get("stop")
        if stop is None:
            return ctx.llm
        key = id(ctx.llm)
        if key not in self._stop_clients:
            self._stop_clients[key] = LLMClient(
                stop,
                role="stop",
                cache=ctx.llm.cache,
                cache_salt=ctx.llm.cache_salt,
                ceiling=ctx.llm.ceiling,
            )
        return self._stop_clients[key]

    # -------------------------------------------------------------- one episode
    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        x = await self.explore(episode, ctx)
        answer = await self.answer(episode, ctx, x)
        trace = x.trace(answer)
        with ctx.times.part("finish"):
            trace.update(await ctx.run_cpu(x.proposer.finish))
        if ctx.times.enabled:  # run.profile: the parts outside the steps (answer step …)
            trace["profile"] = ctx.times.take()
        return Prediction(
            answer=answer.answer, images_for_judge=answer.images_for_judge, trace=trace
        )

    # -------------------------------------------------------------- the exploration loop
    async def explore(self, episode: Episode, ctx: EpisodeContext) -> Exploration:
        """Explore until the stop check says the view suffices or the step budget is spent."""
        session = self.session
        if session is None:
            raise RuntimeError("ExplorePolicy.predict before open(): the run opens the policy")
        meta = episode.meta
        start = np.asarray(meta["start_position"], dtype=float)
        rot0 = np.asarray(meta["start_rotation"], dtype=float)  # verbatim (w, x, y, z)
        spec = await ctx.run_cpu(ctx.task.resolve_scene, episode, session.sim)
        proposer = self.proposer_factory()
        proposer.artifacts_dir, proposer.times = ctx.artifacts_dir, ctx.times
        x = Exploration(
            episode=episode,
            proposer=proposer,
            stop_llm=self.stop_client(ctx),
            goal=None if meta.get("goal_position") is None else np.asarray(meta["goal_position"]),
            state=AgentState(0, start, rot0, float(start[1])),
        )
        if x.goal is not None and self.protocol.goal_distance_each_step:
            x.goal_distances = []
        t_start, times = time.perf_counter(), ctx.times
        async with session.lease(str(spec.mesh_path)) as lane:  # one simulator of the run's
            with times.span("setup"):  # run.profile: the scene load is its own part
                x.area = await lane.call(_setup, lane, spec, x, ctx.rng, times)
                floor_goal = x.goal if self.protocol.goal_on_floor else None
                await lane.call(check_on_floor, lane.sim, start, floor_goal)
                if ctx.scene_maps is not None:  # once per scene and floor per run
                    ctx.scene_map = await lane.call(
                        ctx.scene_maps.get, lane.sim, str(spec.mesh_path), x.state.floor_height
                    )
            setup = times.take()  # the steps' parts are each step's own
            x.budget = self.budget(x.area)
            for step in range(x.budget):
                if await self._step(x, step, lane, ctx):
                    break
            if x.goal is not None:
                x.d_t, to_goal = await lane.call(goal_path, lane.sim, x.state, x.goal, times)
                x.goal_via = [vec(p) for p in to_goal[1:-1]]
                if x.goal_distances is not None:
                    x.goal_distances.append(x.d_t)
        times.merge(setup)
        x.explore_s = time.perf_counter() - t_start
        return x

    async def _step(
        self, x: Exploration, step: int, session: SimSession, ctx: EpisodeContext
    ) -> bool:
        """Observe → (not black: map update + stop check) → move. True: stop exploring."""
        started, times = clock(), ctx.times
        s = x.state
        x.state = AgentState(step, s.position, s.rotation, s.floor_height)
        rec: dict[str, Any] = {
            "step": step,
            "position": vec(x.state.position),
            "rotation": vec(x.state.rotation),
        }
        if x.goal_distances is not None and x.goal is not None:
            d = await session.call(goal_distance, session.sim, x.state, x.goal, times)
            x.goal_distances.append(d)
            rec["goal_distance"] = round(d, 5) if math.isfinite(d) else None
        obs, black = await self._observe(x, rec, session, ctx)
        view = StepView(x.episode, x.state, obs, x.last_frame, black, x.budget, rec)
        if not black:
            t1 = time.perf_counter()
            await ctx.run_cpu(x.proposer.update, obs, x.state)
            rec["t_update_s"] = round(time.perf_counter() - t1, 4)
            self.protocol.on_frame(x, obs, x.last_frame)
            with times.span("model"):  # the stop check's model calls, minus their prompts
                x.stopped = await self.check_step(x, view, ctx)
        stop = x.stopped or await self._move(x, rec, session, ctx, view)
        if times.enabled:
            rec["profile"] = times.step(started)
        x.steps.append(rec)
        return stop

    async def check_step(self, x: Exploration, view: StepView, ctx: EpisodeContext) -> bool:
        """The stop decision of a non-black frame: the task protocol's per-step question
        (subclasses combine it with a proposer's confidence, policies/vlm_explore.py)."""
        return await self.protocol.check_step(x, view.record, ctx)

    async def _observe(
        self, x: Exploration, rec: dict[str, Any], session: SimSession, ctx: EpisodeContext
    ) -> tuple[Observation, bool]:
        """Render the current view; keep it as ``x.last_frame`` (and as an artifact)."""
        t0 = time.perf_counter()
        pose = (x.state.position, x.state.rotation)
        obs = await session.call(observe_at, session.sim, *pose, ctx.times)
        x.last_frame, black = await ctx.run_cpu(
            _frame_info, obs.rgb, self.config.black_pixel_ratio, ctx.times
        )
        rec["black"] = bool(black)
        rec["t_observe_s"] = round(time.perf_counter() - t0, 4)
        if ctx.artifacts_dir is not None:
            ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
            with ctx.times.part("artifacts"):
                (ctx.artifacts_dir / f"step_{rec['step']:03d}.png").write_bytes(x.last_frame)
        return obs, black

    async def _move(
        self,
        x: Exploration,
        rec: dict[str, Any],
        session: SimSession,
        ctx: EpisodeContext,
        view: StepView | None = None,
    ) -> bool:
        """The proposer's next pose, snapped and teleported to; the hop adds to the path.
        True: a guided proposer ended the exploration by design (:class:`DesignedStop`)."""
        t1 = time.perf_counter()
        state, radius = x.state, self.config.fallback_radius_m
        guided: Waypoint | DesignedStop | None = None
        if isinstance(x.proposer, GuidedProposer) and view is not None:
            guided = await x.proposer.propose_async(view, ctx)
        if isinstance(guided, DesignedStop):
            x.stop_reason = guided.reason
            rec.update(stop_reason=guided.reason, stop_detail=guided.detail)
            rec["t_propose_s"] = round(time.perf_counter() - t1, 4)
            return True
        if isinstance(guided, Waypoint):
            wp = guided
            hop = await session.call(hop_to, session.sim, state, wp, radius, ctx.rng, ctx.times)
        elif x.proposer.needs_sim:
            wp, hop = await session.call(
                propose_and_hop, x.proposer, session.sim, state, radius, ctx.rng
            )
        else:
            wp = await ctx.run_cpu(x.proposer.propose, state)
            hop = await session.call(hop_to, session.sim, state, wp, radius, ctx.rng, ctx.times)
        if math.isfinite(hop.length):
            x.path_len += hop.length
        else:
            x.unreachable += 1
            if self.config.unreachable_hop == "inf":
                x.path_len = math.inf
        yaw = wp.angle if math.isfinite(wp.angle) else state.yaw
        rec.update(
            source=wp.source,
            waypoint_normal=vec(wp.position_normal),
            angle=round(float(yaw), 5),
            next_position=vec(hop.position),
            hop_m=round(hop.length, 5) if math.isfinite(hop.length) else None,
            snapped=hop.snapped,
            fallback=hop.fallback,
            stayed=hop.stayed,
            t_propose_s=round(time.perf_counter() - t1, 4),
        )
        if len(hop.points) > 2:  # the geodesic bends: its corners, for the trajectory map
            rec["hop_via"] = [vec(p) for p in hop.points[1:-1]]
        if wp.info:
            rec["info"] = wp.info
        x.state = AgentState(state.step, hop.position, geo.yaw_to_quat(yaw), state.floor_height)
        return False

    # -------------------------------------------------------------- the answer step
    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        """The task protocol's answer from the finished exploration."""
        return await self.protocol.answer(episode, ctx, x)

    # -------------------------------------------------------------- dry run / prompts
    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        """Without a simulator: ``max_steps`` (else ``estimate_steps``) steps + the answer."""
        return self.protocol.estimate_requests(episode, prompts_dir, self.dry_run_steps)

    @property
    def dry_run_steps(self) -> int:
        """The dry run's steps per episode: ``max_steps``, else ``estimate_steps``."""
        return self.config.max_steps or self.config.estimate_steps

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return self.protocol.prompts(prompts_dir)


def _setup(
    session: SimSession,
    spec: SceneSpec,
    x: Exploration,
    rng: np.random.Generator,
    times: PartTimes = OFF,
) -> float:
    """(simulator thread) Load the scene, place the agent at the start, reset the proposer."""
    with times.part("load"):
        session.ensure_scene(spec, x.state.position)
    session.sim.set_agent_pose(x.state.position, x.state.rotation)
    area = session.sim.scene_area()
    x.proposer.reset(x.episode, session.sim, rng)
    return area


class OffFloorError(ValueError):
    """A start or goal pose that is not on the navigable floor (nothing could be explored)."""


def floor_distance(sim: Any, point: np.ndarray) -> tuple[float, bool]:
    """Metres from ``point`` (habitat frame) to the nearest navigable point, and whether that
    is exact (False: nothing snapped, the distance to the navmesh bounds, a lower bound)."""
    p = np.asarray(point, dtype=float)
    snapped = np.asarray(sim.snap_point(p), dtype=float)
    if np.all(np.isfinite(snapped)):
        return float(np.linalg.norm(snapped - p)), True
    lo, hi = (np.asarray(b, dtype=float) for b in sim.bounds())
    return float(np.linalg.norm(np.maximum(np.maximum(lo - p, 0.0), p - hi))), False


def check_on_floor(sim: Any, start: np.ndarray, goal: np.ndarray | None) -> None:
    """The start on an island (``sim.check_start``: a :class:`SceneError` naming the scene and
    the distance) and the goal, when given, on the floor (:class:`OffFloorError` naming the
    distance); else an "ok" episode would explore nothing and earn full path-efficiency
    credit."""
    sim.check_start(start)
    if goal is None:  # tasks without a goal pose, or a goal above the floor
        return
    d, exact = floor_distance(sim, goal)
    if d > OFF_FLOOR_M or not exact:
        far = f"{d:.2f} m" if exact else f"at least {d:.2f} m"
        raise OffFloorError(
            f"goal_position {[round(float(v), 3) for v in goal]} is off the navigable floor "
            f"({far} from it; more than {OFF_FLOOR_M} m): check the episode's pose and scene"
        )


def _frame_info(rgb: np.ndarray, black_ratio: float, times: PartTimes = OFF) -> tuple[bytes, bool]:
    """(PNG bytes, whether the frame is mostly black: >= black_ratio of the pixels are 0)."""
    n_black = black_pixels(rgb)
    with times.part("encode"):
        png = encode_png(rgb)
    return png, n_black >= black_ratio * rgb.shape[0] * rgb.shape[1]
