"""``vlm_explore``: frontier exploration steered by a VLM (explore-eqa's semantic exploration).

Each step of the exploration loop (``policies/explore.py``), on a non-black frame:

1. ``update`` fuses the depth frame into the planner's TSDF (as ``fbe``);
2. :meth:`VLMExploreProposer.assess` asks the **stop confidence** question on the plain frame
   ("are you confident you can answer now?", Yes/No): P(Yes) from the token log-probabilities
   where the model returns them, else 1.0 / 0.0 for a parsed yes / no (None when unparsable);
3. :class:`~eqa_runner.policies.guided.GuidedExplorePolicy` decides whether to stop
   (``policy.stop_rule``: the confidence against ``policy.stop_threshold``, the task
   protocol's own per-step check, or either);
4. :meth:`VLMExploreProposer.propose_async` marks up to 3 reachable free-floor points 2-10 m away
   in view with letters (the **visual prompt**, saved as ``step_NNN_prompt.png`` with
   ``run.save_artifacts``) and asks two questions at once: which letter to explore (the **local
   semantic value** LSV = softmax over the drawn letters x n/3, one-hot for a parsed letter) and
   whether any direction in view is worth exploring (the **global semantic value** GSV =
   exp(P(Yes) / gsv_T) / gsv_F). Each point's value ``lsv_i * gsv`` is splatted into the
   planner's semantic value map (running mean within 1 m);
5. ``propose`` plans as ``fbe`` with the semantic weighting on: every frontier's weight is
   multiplied by ``exp(val[f] / val_T) * exp(val_dir / val_dir_T)`` from step
   ``min_random_init_steps`` on (``mapping/frontier.py``).

Per step that is up to 3 model calls more than ``fbe`` (the task protocol's own per-step question
is still asked unless ``policy.protocol_check=false``); the dry run counts them. Every value and
reply is in the step's trace entry under ``vlm``; ``stop_confidence`` beside it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from eqa_runner.llm import (
    OFFLINE_TAG,
    ImagePart,
    RequestEstimate,
)
from eqa_runner.llm.choice import option_letters
from eqa_runner.mapping.frontier import PromptPoints
from eqa_runner.policies.config import (
    VLMExploreProposerConfig,
)
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.frontier import FrontierProposer
from eqa_runner.policies.guided import GuidedExplorePolicy  # re-exported (__all__)
from eqa_runner.policies.proposer import (
    AgentState,
    DesignedStop,
    GuidedProposer,
    StepView,
    Waypoint,
)
from eqa_runner.policies.protocol import OFFLINE_STOP_AFTER
from eqa_runner.policies.vlm_questions import (
    CONFIDENT,
    DIRECTION,
    PROMPTS,
    WORTH,
    _r,
    accepts_logprobs,
    ask_letter,
    ask_yes,
    confident_messages,
    direction_messages,
    draw_letters,
    letter_probs,
    vlm_prompt,
    worth_messages,
    yes_probability,
)
from eqa_runner.sim import geometry as geo
from eqa_runner.types import Episode

T = TypeVar("T")
YES_NO = ("Yes", "No")


class VLMExploreProposer(FrontierProposer, GuidedProposer):
    """The frontier planner with semantic weighting from the VLM's answers (see module doc)."""

    name = "vlm_explore"

    config_class = VLMExploreProposerConfig
    config: VLMExploreProposerConfig

    def __init__(self, config: VLMExploreProposerConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.last_points: PromptPoints | None = None  # this step's lettered points
        self.last_drawn: bytes | None = None  # and the frame they are drawn on
        self._reset_stats()

    def _reset_stats(self) -> None:
        self.calls = {CONFIDENT: 0, DIRECTION: 0, WORTH: 0}
        self.sources: dict[str, int] = {}
        self.prompt_images: list[str] = []
        self.prompted_steps = 0
        self.missing_letters = 0  # option letters a score could not see (counted, never 0)

    def reset(self, episode: Episode, sim: Any, rng: np.random.Generator) -> None:
        super().reset(episode, sim, rng)
        self._reset_stats()

    def _count(self, question: str, source: str) -> None:
        self.calls[question] += 1
        key = f"{question}:{source}"
        self.sources[key] = self.sources.get(key, 0) + 1

    # ------------------------------------------------------------------ GuidedProposer hooks
    async def assess(self, view: StepView, ctx: EpisodeContext) -> float | None:
        """The stop confidence: P(Yes) of "can you answer from this view?" on the plain frame."""
        if not self.config.ask_confidence:
            return None
        word = "Yes" if view.state.step >= OFFLINE_STOP_AFTER else "No"
        with self.times.part("prompt"):
            msgs = confident_messages(view.episode, ImagePart(view.frame))
        p, s = await ask_yes(ctx.llm, msgs, f"{word} {OFFLINE_TAG}", self.config.top_logprobs)
        self._count(CONFIDENT, s.source)
        vlm = view.record.setdefault("vlm", {})
        vlm.update(confidence=_r(p), confidence_source=s.source, confidence_reply=s.text[:200])
        return p

    async def propose_async(
        self, view: StepView, ctx: EpisodeContext
    ) -> Waypoint | DesignedStop | None:
        """Mark the prompt points, ask LSV and GSV, splat the values; the planner then plans."""
        if view.black:
            return None
        t0 = time.perf_counter()
        pts = await self._prompt_points(view, ctx)
        vlm = view.record.setdefault("vlm", {})
        vlm["candidates"] = int(pts.candidates)
        self.last_points, self.last_drawn = pts, None  # read by subclasses (fine_eqa)
        if len(pts) < self.config.visual_prompt.min_num_prompt_points:
            vlm["points"] = []
            return None
        n = len(pts)
        radius = self.config.visual_prompt.circle_radius
        drawn = await ctx.run_cpu(
            self._timed, "encode", draw_letters, view.obs.rgb, pts.pixels, radius
        )
        self.last_drawn = drawn
        if self.config.save_prompt_images and self.artifacts_dir is not None:
            vlm["prompt_image"] = self._save_prompt_image(view.state.step, drawn)
        lsv_task = self._lsv(view.episode, drawn, n, ctx, vlm)
        gsv_task = self._gsv(view.episode, view.frame, ctx, vlm)
        with self.times.span("model"):  # both questions at once, minus their prompt building
            lsv, gsv = await asyncio.gather(lsv_task, gsv_task)
        values = [v * gsv for v in lsv]
        await ctx.run_cpu(
            self._timed, "semantic", self.planner.integrate_semantic, pts.xy, np.asarray(values)
        )
        self.prompted_steps += 1
        vlm.update(
            points=[
                {
                    "letter": k,
                    "xy": [round(float(a), 3) for a in xy],
                    "pixel": [int(p) for p in px],
                    "value": round(float(v), 5),
                }
                for k, xy, px, v in zip(option_letters(n), pts.xy, pts.pixels, values, strict=True)
            ],
            lsv=[round(float(v), 5) for v in lsv],
            gsv=round(float(gsv), 5),
            t_semantic_s=round(time.perf_counter() - t0, 4),
        )
        return None

    async def _prompt_points(self, view: StepView, ctx: EpisodeContext) -> PromptPoints:
        """(CPU pool) The frontier points visible in this frame, to be lettered."""
        obs = view.obs
        pose = geo.cam_pose_tsdf(obs.cam_to_world)
        hw = (int(obs.rgb.shape[0]), int(obs.rgb.shape[1]))
        vp, at = self.config.visual_prompt, view.state.position_normal
        pts: PromptPoints = await ctx.run_cpu(
            self._timed, "points", self.planner.prompt_points, at, pose, obs.intrinsics, hw, vp
        )
        return pts

    def _save_prompt_image(self, step: int, drawn: bytes) -> str:
        """Write the lettered frame as ``step_NNN_prompt.png``; its name."""
        assert self.artifacts_dir is not None
        name = f"step_{step:03d}_prompt.png"
        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        with self.times.part("artifacts"):
            (self.artifacts_dir / name).write_bytes(drawn)
        self.prompt_images.append(name)
        return name

    async def _lsv(
        self, ep: Episode, drawn: bytes, n: int, ctx: EpisodeContext, vlm: dict[str, Any]
    ) -> list[float]:
        """softmax over the drawn letters x n / num_prompt_points (uniform when off/unparsable)."""
        scale = n / self.config.visual_prompt.num_prompt_points
        if not self.config.use_lsv:
            return [scale / n] * n
        with self.times.part("prompt"):
            msgs = direction_messages(ep, n, ImagePart(drawn))
        s = await ask_letter(ctx.llm, msgs, f"A {OFFLINE_TAG}", self.config.top_logprobs, n)
        probs = s.probs
        self._count(DIRECTION, s.source)
        vlm.update(direction_source=s.source, direction_reply=s.text[:200])
        if s.missing:  # letters outside the returned top-k / prompt position: counted
            vlm["direction_missing"] = list(s.missing)
            self.missing_letters += len(s.missing)
        if probs is None:
            probs = [1.0 / n] * n
        return [p * scale for p in probs]

    async def _gsv(
        self, ep: Episode, frame: bytes, ctx: EpisodeContext, vlm: dict[str, Any]
    ) -> float:
        """exp(P(Yes) / gsv_T) / gsv_F (1 when off; P(Yes) = 0.5 when unparsable)."""
        if not self.config.use_gsv:
            return 1.0
        with self.times.part("prompt"):
            msgs = worth_messages(ep, ImagePart(frame))
        p, s = await ask_yes(ctx.llm, msgs, f"Yes {OFFLINE_TAG}", self.config.top_logprobs)
        self._count(WORTH, s.source)
        vlm.update(worth=_r(p), worth_source=s.source, worth_reply=s.text[:200])
        return math.exp((0.5 if p is None else p) / self.config.gsv_T) / self.config.gsv_F

    def _timed(self, part: str, fn: Callable[..., T], *args: Any) -> T:
        """(CPU pool) ``fn(*args)`` timed as ``part`` of the step (run.profile)."""
        with self.times.part(part):
            return fn(*args)

    # ------------------------------------------------------------------ planning and episode end
    def propose(self, agent_state: AgentState) -> Waypoint:
        wp = super().propose(agent_state)
        maps = self.planner.maps
        if maps is not None and maps.semantic is not None and maps.chosen_cell is not None:
            info = dict(wp.info)
            info["semantic_value"] = round(float(maps.semantic[maps.chosen_cell]), 5)
            wp = Waypoint(wp.position_normal, wp.angle, wp.source, info)
        return wp

    def finish(self) -> dict[str, Any]:
        out = super().finish()
        out["vlm"] = {
            "calls": dict(self.calls),
            "sources": dict(sorted(self.sources.items())),
            "prompted_steps": self.prompted_steps,
            "missing_letters": self.missing_letters,
            "prompt_images": list(self.prompt_images),
        }
        return out

    # ------------------------------------------------------------------ dry run / provenance
    def step_requests(self, episode: Episode, size: tuple[int, int]) -> list[RequestEstimate]:
        """The extra requests of one step (worst case: points drawn every step)."""
        out = []
        if self.config.ask_confidence:
            out.append(RequestEstimate("policy", confident_messages(episode), [size], YES_NO))
        if self.config.use_lsv:
            n = self.config.visual_prompt.num_prompt_points
            msgs = direction_messages(episode, n)
            out.append(RequestEstimate("policy", msgs, [size], tuple(option_letters(n))))
        if self.config.use_gsv:
            out.append(RequestEstimate("policy", worth_messages(episode), [size], YES_NO))
        return out

    def prompt_records(self) -> dict[str, dict[str, object]]:
        names = [CONFIDENT] if self.config.ask_confidence else []
        names += [DIRECTION] if self.config.use_lsv else []
        names += [WORTH] if self.config.use_gsv else []
        return {f"{PROMPTS}/{n}": vlm_prompt(n)[2].record() for n in names}


__all__ = [
    "GuidedExplorePolicy",
    "VLMExploreProposer",
    "accepts_logprobs",
    "draw_letters",
    "letter_probs",
    "yes_probability",
]
