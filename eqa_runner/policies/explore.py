"""EXPRESS exploration agents: one generic exploration loop plus pluggable waypoint proposers.

One step (as the upstream EXPRESS-Bench ``main.py``): place the agent → observe → unless the
frame is mostly black, update the proposer's map and ask the stop check "does this view suffice
to answer?" (a reply starting with "yes" stops) → otherwise the proposer gives the next pose
``{position_normal: (x, y), angle}``, which is lifted to the start floor, navmesh-snapped (NaN →
a random navigable point within ``fallback_radius_m`` of the last one) and teleported to; the
hop's geodesic length is added to the path length. An early stop answers with the decision
frame; an exhausted budget answers blind (the "random answer" prompt).

The simulator is shared by concurrent episodes: a :class:`SimSession` runs every simulator call
on one dedicated thread behind an ``asyncio.Lock`` (each call re-places this episode's agent
first, so set-pose + observe is atomic), and scene leases keep one scene loaded while any
episode still uses it (episodes are sorted by scene, so a scene is loaded once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.images import encode_png
from eqa_runner.llm import OFFLINE_TAG, ImagePart, LLMClient, Message, RequestEstimate, system, user
from eqa_runner.policies.base import Policy
from eqa_runner.policies.config import (
    STOP_MATCHES,
    UNREACHABLE_HOPS,
    ExplorePolicyConfig,
    RandomProposerConfig,
    REPolicyConfig,
)
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.prompts import express_prompt
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import Observation, SceneSpec, Simulator
from eqa_runner.sim.config import SimConfig
from eqa_runner.types import Episode, Prediction

log = logging.getLogger(__name__)

STOP_PROMPT, ANSWER_PROMPT, BLIND_PROMPT = "explore", "answer", "random_answer"
JUDGE_IMAGES_DIR = "judge_images"
OFFLINE_STOP_AFTER = 2  # offline stand-in: "no" for steps 0 and 1, then "yes"


# ----------------------------------------------------------------------------- proposer API


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


# ----------------------------------------------------------------------------- simulator session


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
        try:
            self._pool.submit(self.sim.close).result(timeout=60)
        finally:
            self._pool.shutdown(wait=False)


# ----------------------------------------------------------------------------- simulator steps
# (all run on the simulator thread; each first re-places this episode's agent)


def _observe(sim: Simulator, pos: np.ndarray, rot: np.ndarray) -> Observation:
    sim.set_agent_pose(pos, rot)
    return sim.observe()


@dataclass
class _Hop:
    position: np.ndarray
    length: float
    snapped: bool
    fallback: bool
    stayed: bool


def _hop(
    sim: Simulator,
    last: AgentState,
    wp: Waypoint,
    fallback_radius: float,
    rng: np.random.Generator,
) -> _Hop:
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
    return _Hop(p, float(sim.geodesic_distance(last.position, p)), snapped, fallback, stayed)


def _propose_and_hop(
    proposer: WaypointProposer,
    sim: Simulator,
    state: AgentState,
    fallback_radius: float,
    rng: np.random.Generator,
) -> tuple[Waypoint, _Hop]:
    sim.set_agent_pose(state.position, state.rotation)
    wp = proposer.propose(state)
    return wp, _hop(sim, state, wp, fallback_radius, rng)


def _frame_info(rgb: np.ndarray, black_ratio: float) -> tuple[bytes, bool]:
    """(PNG bytes, whether the frame is mostly black: >= black_ratio of the pixels are 0)."""
    n_black = int(np.count_nonzero(rgb.reshape(-1, rgb.shape[-1]).sum(axis=1) == 0))
    return encode_png(rgb), n_black >= black_ratio * rgb.shape[0] * rgb.shape[1]


def _vec(a: Any) -> list[float]:
    return [round(float(v), 5) for v in np.asarray(a, dtype=float).reshape(-1)]


def _is_yes(reply: str, mode: str) -> bool:
    text = reply.strip().lower()
    if mode == "contains":  # the upstream script's test
        return "yes" in text
    return text.lstrip("*_`'\"“‘([ \t\n").startswith("yes")


# ----------------------------------------------------------------------------- the policy


class ExplorePolicy(Policy):
    """EXPRESS exploration with a pluggable :class:`WaypointProposer` (``re``, ``fbe``)."""

    def __init__(
        self,
        name: str = REPolicyConfig.name,
        proposer: Callable[[], WaypointProposer] | None = None,
        stop_model: str | None = ExplorePolicyConfig.stop_model,
        max_steps: int | None = ExplorePolicyConfig.max_steps,
        step_ratio: float = ExplorePolicyConfig.step_ratio,
        black_pixel_ratio: float = ExplorePolicyConfig.black_pixel_ratio,
        fallback_radius_m: float = ExplorePolicyConfig.fallback_radius_m,
        stop_match: str = ExplorePolicyConfig.stop_match,
        unreachable_hop: str = ExplorePolicyConfig.unreachable_hop,
        estimate_steps: int = ExplorePolicyConfig.estimate_steps,
        image_size: tuple[int, int] = (SimConfig.width, SimConfig.height),
    ) -> None:
        if stop_match not in STOP_MATCHES:
            raise ValueError(f"policy.stop_match={stop_match!r}: expected prefix or contains")
        if unreachable_hop not in UNREACHABLE_HOPS:
            raise ValueError(f"policy.unreachable_hop={unreachable_hop!r}: expected skip or inf")
        if proposer is None:
            proposer = RandomProposer
        if isinstance(proposer, WaypointProposer) or not callable(proposer):
            raise TypeError(
                "policy.proposer must be a factory (set `_partial_: true` next to its _target_), "
                f"got {type(proposer).__name__}"
            )
        self.name = name
        self.proposer_factory = proposer
        self.stop_model = stop_model
        self.max_steps = max_steps
        self.step_ratio = float(step_ratio)
        self.black_pixel_ratio = float(black_pixel_ratio)
        self.fallback_radius_m = float(fallback_radius_m)
        self.stop_match = stop_match
        self.unreachable_hop = unreachable_hop
        self.estimate_steps = int(estimate_steps)
        self.image_size = (int(image_size[0]), int(image_size[1]))
        self._stop_clients: dict[int, LLMClient] = {}

    # -------------------------------------------------------------- per-run resources
    def make_resources(self, cfg: Any, task: Any) -> dict[str, Any]:
        """Build the simulator (inside the job) and check the stop model's credentials."""
        from hydra.utils import instantiate
        from omegaconf import OmegaConf

        from eqa_runner.errors import ConfigError

        if self.stop_model and str(self.stop_model) != str(cfg.llm.model):
            base = OmegaConf.to_container(cfg.llm, resolve=True)
            probe = LLMClient({**base, "model": str(self.stop_model)}, role="stop")
            missing = probe.missing_credentials()
            if missing:
                raise ConfigError(
                    f"policy.stop_model={self.stop_model}: environment variable(s) "
                    f"{', '.join(missing)} not set; export it or unset policy.stop_model."
                )
        sim = instantiate(cfg.sim, _convert_="all")
        if not isinstance(sim, Simulator):
            raise ConfigError(
                f"sim._target_={cfg.sim.get('_target_')} built a {type(sim).__name__}, "
                "not a Simulator"
            )
        session = SimSession(sim)
        return {"sim_session": session, "close": session.close}

    def budget(self, scene_area: float) -> int:
        """EXPRESS step budget ``int(sqrt(area) * 3)`` (at least 1), capped by ``max_steps``."""
        n = max(1, int(math.sqrt(max(scene_area, 0.0)) * self.step_ratio))
        return min(n, int(self.max_steps)) if self.max_steps else n

    def stop_client(self, ctx: EpisodeContext) -> LLMClient:
        """The stop check's model: ``policy.stop_model`` or the policy's own model."""
        if not self.stop_model or str(self.stop_model) == ctx.llm.model:
            return ctx.llm
        key = id(ctx.llm)
        if key not in self._stop_clients:
            self._stop_clients[key] = LLMClient(
                replace(ctx.llm.cfg, model=str(self.stop_model)),
                role="stop",
                cache=ctx.llm.cache,
                cache_salt=ctx.llm.cache_salt,
            )
        return self._stop_clients[key]

    # -------------------------------------------------------------- messages
    @staticmethod
    def _msgs(name: str, prompts_dir: str | None, text: str, *images: ImagePart) -> list[Message]:
        sys_text, user_text, _ = express_prompt(name, prompts_dir)
        out = [system(sys_text)] if sys_text else []
        out.append(user(f"{user_text}\n\n{text}", *images))
        return out

    def stop_messages(self, ep: Episode, prompts_dir: str | None, *img: ImagePart) -> list[Message]:
        return self._msgs(STOP_PROMPT, prompts_dir, f"QUESTION: {ep.question}", *img)

    def answer_messages(
        self, ep: Episode, prompts_dir: str | None, *img: ImagePart
    ) -> list[Message]:
        name = ANSWER_PROMPT if img else BLIND_PROMPT
        return self._msgs(name, prompts_dir, f"Q: {ep.question}\nA:", *img)

    # -------------------------------------------------------------- one episode
    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        session: SimSession | None = ctx.resources.get("sim_session")
        if session is None:
            raise RuntimeError(
                "no simulator: ExplorePolicy needs the run loop's make_resources() hook "
                "(ctx.resources['sim_session'])"
            )
        meta = episode.meta
        start = np.asarray(meta["start_position"], dtype=float)
        rot0 = np.asarray(meta["start_rotation"], dtype=float)  # verbatim (w, x, y, z)
        goal = np.asarray(meta["goal_position"], dtype=float)
        spec = await ctx.run_cpu(ctx.task.resolve_scene, episode, session.sim)
        proposer = self.proposer_factory()
        proposer.artifacts_dir = ctx.artifacts_dir
        stop_llm = self.stop_client(ctx)
        rng = ctx.rng
        t_start = time.perf_counter()

        def setup() -> float:
            session.ensure_scene(spec, start)
            session.sim.set_agent_pose(start, rot0)
            area = session.sim.scene_area()
            proposer.reset(episode, session.sim, rng)
            return area

        steps: list[dict[str, Any]] = []
        state = AgentState(0, start, rot0, float(start[1]))
        path_len, unreachable = 0.0, 0
        stopped = False
        final_png = b""
        async with session.lease(str(spec.mesh_path)):
            area = await session.call(setup)
            budget = self.budget(area)
            for step in range(budget):
                state = AgentState(step, state.position, state.rotation, state.floor_height)
                rec: dict[str, Any] = {
                    "step": step,
                    "position": _vec(state.position),
                    "rotation": _vec(state.rotation),
                }
                t0 = time.perf_counter()
                obs = await session.call(_observe, session.sim, state.position, state.rotation)
                final_png, black = await ctx.run_cpu(_frame_info, obs.rgb, self.black_pixel_ratio)
                rec["black"] = bool(black)
                rec["t_observe_s"] = round(time.perf_counter() - t0, 4)
                if ctx.artifacts_dir is not None:
                    ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
                    (ctx.artifacts_dir / f"step_{step:03d}.png").write_bytes(final_png)
                if not black:
                    t1 = time.perf_counter()
                    await ctx.run_cpu(proposer.update, obs, state)
                    rec["t_update_s"] = round(time.perf_counter() - t1, 4)
                    t1 = time.perf_counter()
                    word = "yes" if step >= OFFLINE_STOP_AFTER else "no"
                    c = await stop_llm.acomplete(
                        self.stop_messages(episode, ctx.prompts_dir, ImagePart(final_png)),
                        offline_reply=f"{word} {OFFLINE_TAG}",
                    )
                    rec["stop_reply"] = c.text
                    rec["t_stop_s"] = round(time.perf_counter() - t1, 4)
                    if _is_yes(c.text, self.stop_match):
                        stopped = True
                        steps.append(rec)
                        break
                t1 = time.perf_counter()
                if proposer.needs_sim:
                    wp, hop = await session.call(
                        _propose_and_hop,
                        proposer,
                        session.sim,
                        state,
                        self.fallback_radius_m,
                        rng,
                    )
                else:
                    wp = await ctx.run_cpu(proposer.propose, state)
                    hop = await session.call(
                        _hop, session.sim, state, wp, self.fallback_radius_m, rng
                    )
                if math.isfinite(hop.length):
                    path_len += hop.length
                else:
                    unreachable += 1
                    if self.unreachable_hop == "inf":
                        path_len = math.inf
                yaw = wp.angle if math.isfinite(wp.angle) else state.yaw
                rec.update(
                    source=wp.source,
                    waypoint_normal=_vec(wp.position_normal),
                    angle=round(float(yaw), 5),
                    next_position=_vec(hop.position),
                    hop_m=round(hop.length, 5) if math.isfinite(hop.length) else None,
                    snapped=hop.snapped,
                    fallback=hop.fallback,
                    stayed=hop.stayed,
                    t_propose_s=round(time.perf_counter() - t1, 4),
                )
                if wp.info:
                    rec["info"] = wp.info
                steps.append(rec)
                state = AgentState(step, hop.position, geo.yaw_to_quat(yaw), state.floor_height)
            final_pos = state.position
            d_t = await session.call(_goal_distance, session.sim, state, goal)
        explore_s = time.perf_counter() - t_start

        t1 = time.perf_counter()
        images = (ImagePart(final_png),) if stopped else ()
        c = await ctx.llm.acomplete(
            self.answer_messages(episode, ctx.prompts_dir, *images),
            offline_reply=f"{OFFLINE_TAG} answer",
        )
        answer = c.text.replace("A:", "").strip()
        judge_images: list[str] = []
        if ctx.run_dir is not None and final_png:
            rel = Path(JUDGE_IMAGES_DIR) / f"{_safe(episode.episode_id)}.png"
            (ctx.run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (ctx.run_dir / rel).write_bytes(final_png)
            judge_images.append(rel.as_posix())
        trace: dict[str, Any] = {
            "proposer": proposer.name,
            "scene_area": round(float(area), 4),
            "num_steps": budget,
            "steps_taken": len(steps),
            "stopped_early": stopped,
            "stop_reason": "view_suffices" if stopped else "budget_exhausted",
            "answer_prompt": ANSWER_PROMPT if stopped else BLIND_PROMPT,
            "path_len": path_len,
            "unreachable_hops": unreachable,
            "gt_geodesic": float(meta["geodesic_distance"]),
            "d_t": float(d_t),
            "d_t_valid": bool(math.isfinite(d_t)),
            "final_position": _vec(final_pos),
            "goal_position": _vec(goal),
            "steps": steps,
            "judge_images": judge_images,
            "stop_model": stop_llm.model,
            "timings": {
                "explore_s": round(explore_s, 3),
                "answer_s": round(time.perf_counter() - t1, 3),
            },
            "params": c.params,
        }
        trace["source_counts"] = dict(Counter(s["source"] for s in steps if "source" in s))
        trace.update(await ctx.run_cpu(proposer.finish))
        return Prediction(answer=answer, images_for_judge=[final_png], trace=trace)

    # -------------------------------------------------------------- dry run / prompts
    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        """Without a simulator: ``max_steps`` (else ``estimate_steps``) stop checks + 1 answer."""
        n = int(self.max_steps) if self.max_steps else self.estimate_steps
        stop = RequestEstimate(
            "policy", self.stop_messages(episode, prompts_dir), [self.image_size]
        )
        answer = RequestEstimate(
            "policy", self._msgs(ANSWER_PROMPT, prompts_dir, f"Q: {episode.question}\nA:"),
            [self.image_size],
        )  # fmt: skip
        return [stop] * n + [answer]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {
            n: express_prompt(n, prompts_dir)[2].record()
            for n in (STOP_PROMPT, ANSWER_PROMPT, BLIND_PROMPT)
        }


def _goal_distance(sim: Simulator, state: AgentState, goal: np.ndarray) -> float:
    sim.set_agent_pose(state.position, state.rotation)
    return float(sim.geodesic_distance(state.position, goal))


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in s)[:120]
