"""``fine_eqa``: Fine-EQA (HCPLab-SYSU's ``main.py``, the paper's own method) on the loop.

Per episode, before the first move, one text question (``prompts/vlm/regions.txt``, the model
of ``policy.region_model``, else the stop check's) names the question's relevant regions, parsed
against the 20 region names (:func:`~eqa_runner.mapping.regions.parse_regions`); none: the
method is ``vlm_explore``'s semantic frontier exploration.

Per step, on a non-black frame with enough lettered points, after ``vlm_explore``'s direction
(LSV) and worth-exploring (GSV) questions have splatted the semantic values:

* the **region question** (plain frame, letters A..T for the 20 region names) — the region is
  the most probable letter;
* unless it is "unknown", the **region point question** (the lettered frame): which point lies
  in that region; that point is painted into the region map
  (:class:`~eqa_runner.mapping.regions.RegionMap`).

Then, every step (black or not), the region state machine chooses the move: goal-oriented
exploration (GOE: a hop to the region target, source ``goe``, the heading kept; or a
turn-around step in place, source ``goe_turn``, the heading turned by ``turn_deg``), else the
semantic frontier planner (sources ``frontier``/``commit``/``fallback``). The step's trace entry
holds it under ``fine_eqa``; the episode's trace the region map's cell counts and the moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from eqa_runner.llm import OFFLINE_TAG, ImagePart, LLMClient, Message, RequestEstimate
from eqa_runner.llm.choice import leading_letter, option_letters
from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.letters import Scored
from eqa_runner.mapping.regions import REGION_NAMES, UNKNOWN, RegionMap, parse_regions
from eqa_runner.policies.config import FineEQAProposerConfig
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.explore import STOP_ENDPOINT_KEYS
from eqa_runner.policies.guided import GuidedExplorePolicy
from eqa_runner.policies.proposer import DesignedStop, StepView, Waypoint
from eqa_runner.policies.vlm_explore import VLMExploreProposer
from eqa_runner.policies.vlm_questions import PROMPTS, ask_letter, vlm_messages, vlm_prompt
from eqa_runner.sim import geometry as geo
from eqa_runner.types import Episode

REGIONS_Q, REGION_Q, POINT_Q = "regions", "region", "region_point"
MOVES = ("goe", "goe_turn", "fbe")


def regions_messages(ep: Episode) -> list[Message]:
    return vlm_messages(REGIONS_Q, (), question=ep.question, names=", ".join(REGION_NAMES))


def region_messages(*img: ImagePart) -> list[Message]:
    opts = "; ".join(f"{k}: {n}" for k, n in zip(option_letters(20), REGION_NAMES, strict=True))
    return vlm_messages(REGION_Q, img, options=opts)


def point_messages(region: str, n: int, *img: ImagePart) -> list[Message]:
    return vlm_messages(POINT_Q, img, region=region, letters=", ".join(option_letters(n)))


class FineEQAProposer(VLMExploreProposer):
    """vlm_explore's semantic frontier planner plus the region map and GOE (module doc)."""

    name = "fine_eqa"

    config_class = FineEQAProposerConfig
    config: FineEQAProposerConfig

    def __init__(self, config: FineEQAProposerConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        # the region question's model: set by FineEQAPolicy (else the policy's own model)
        self.region_client: Callable[[EpisodeContext], LLMClient] | None = None
        self.regions: RegionMap | None = None
        self._reset_fine()

    def _reset_fine(self) -> None:
        self.regions = None
        self.region_reply: str | None = None
        self.moves = dict.fromkeys(MOVES, 0)
        self.region_calls = {REGION_Q: 0, POINT_Q: 0}
        self.region_sources: dict[str, int] = {}

    def reset(self, episode: Episode, sim: Any, rng: np.random.Generator) -> None:
        super().reset(episode, sim, rng)
        self._reset_fine()

    async def _relevant(self, ep: Episode, ctx: EpisodeContext) -> RegionMap:
        """The relevant regions (one text call), and the episode's region map."""
        llm = self.region_client(ctx) if self.region_client is not None else ctx.llm
        c = await llm.acomplete(regions_messages(ep), offline_reply=f"unknown {OFFLINE_TAG}")
        self.region_reply = c.text
        rel = parse_regions(c.text.strip() if c.text else "", self.config.region_parse)
        vol, cfg = self.planner._vol, self.config
        return RegionMap(
            (int(vol.dims[0]), int(vol.dims[1])),
            vol.voxel_size,
            rel,
            max_exp=cfg.max_exp,
            radius=cfg.region_radius,
            exp_radius=cfg.exp_radius,
            smooth_sigma=cfg.planner.smooth_sigma,
            rand=self.planner.draws.py,
        )

    async def propose_async(
        self, view: StepView, ctx: EpisodeContext
    ) -> Waypoint | DesignedStop | None:
        """Semantic values (vlm_explore), the region questions, then GOE or the planner."""
        if self.regions is None:
            self.regions = await self._relevant(view.episode, ctx)
        self.last_points = self.last_drawn = None
        await super().propose_async(view, ctx)
        fe: dict[str, Any] = view.record.setdefault("fine_eqa", {})
        pts, regions = self.last_points, self.regions
        if (
            not view.black
            and pts is not None
            and len(pts) >= self.config.visual_prompt.min_num_prompt_points
        ):
            await self._observe_region(view, ctx, fe)
            regions.mark_unknown()
        kind, cell, goal = await ctx.run_cpu(
            self._timed, "regions", regions.move, self.planner.sem_value
        )
        fe.update(move=kind, goals=regions.snapshot())
        self.moves[kind] += 1
        if kind == "fbe" or cell is None:
            return None
        state = view.state
        info = {"region": REGION_NAMES[regions.goals[goal].region], "cell": list(cell)}
        fe["target_cell"] = list(cell)
        if kind == "goe_turn":
            pos = state.position_normal
            return Waypoint(
                (float(pos[0]), float(pos[1])),
                state.yaw + math.radians(self.config.turn_deg),
                kind,
                info,
            )
        xy = self.planner._vol.grid_to_world(np.asarray(cell, dtype=float))
        return Waypoint((float(xy[0]), float(xy[1])), state.yaw, kind, info)

    async def _observe_region(self, view: StepView, ctx: EpisodeContext, fe: dict) -> None:
        """The region the frame shows and, unless unknown, the point in it (into the map)."""
        assert self.regions is not None and self.last_points is not None
        msgs = region_messages(ImagePart(view.frame))
        s = await ask_letter(
            ctx.llm,
            msgs,
            f"T {OFFLINE_TAG}",
            self.config.region_top_logprobs,
            20,
            parse=leading_letter,
        )
        self._count_region(REGION_Q, s)
        region = UNKNOWN if s.probs is None else int(np.argmax(s.probs))
        fe.update(region=REGION_NAMES[region], region_source=s.source, region_reply=s.text[:200])
        if region == UNKNOWN:
            return
        pts = self.last_points
        n = len(pts)
        img = ImagePart(self.last_drawn or view.frame)
        msgs = point_messages(REGION_NAMES[region], n, img)
        s = await ask_letter(ctx.llm, msgs, f"A {OFFLINE_TAG}", self.config.top_logprobs, n)
        self._count_region(POINT_Q, s)
        k = 0 if s.probs is None else int(np.argmax(s.probs))
        fe.update(point=option_letters(n)[k], point_source=s.source, point_reply=s.text[:200])
        await ctx.run_cpu(self._timed, "regions", self.regions.integrate, pts.cells[k], region)

    def _region_points(self) -> list[dict[str, Any]]:
        """The painted region points in the habitat frame (the trajectory map draws them)."""
        r = self.regions
        if r is None or not r.painted or self.planner.volume is None:
            return []
        vol, z = self.planner._vol, self.planner.floor_height
        out = []
        for i, j, reg in r.painted:
            xy = vol.grid_to_world(np.array([i, j], dtype=float))
            h = geo.normal_to_habitat(np.array([xy[0], xy[1], z]))
            out.append({"region": REGION_NAMES[reg], "position": [round(float(v), 3) for v in h]})
        return out

    def _count_region(self, question: str, s: Scored) -> None:
        self.region_calls[question] += 1
        key = f"{question}:{s.source}"
        self.region_sources[key] = self.region_sources.get(key, 0) + 1
        self.missing_letters += len(s.missing)

    def finish(self) -> dict[str, Any]:
        out = super().finish()
        r = self.regions
        out.update(region_points=self._region_points(), region_radius_m=self.config.region_radius)
        out["fine_eqa"] = {
            "region_reply": None if self.region_reply is None else self.region_reply[:200],
            "relevant": [] if r is None else [REGION_NAMES[g.region] for g in r.goals],
            "region_cells": {} if r is None else r.counts(),
            "moves": dict(self.moves),
            "calls": dict(self.region_calls),
            "sources": dict(sorted(self.region_sources.items())),
        }
        return out

    # ------------------------------------------------------------------ dry run / provenance
    def step_requests(self, episode: Episode, size: tuple[int, int]) -> list[RequestEstimate]:
        """vlm_explore's questions plus the region and region point questions (worst case)."""
        n = self.config.visual_prompt.num_prompt_points
        return [
            *super().step_requests(episode, size),
            RequestEstimate("policy", region_messages(), [size], tuple(option_letters(20))),
            RequestEstimate(
                "policy", point_messages(REGION_NAMES[0], n), [size], tuple(option_letters(n))
            ),
        ]

    def episode_requests(self, episode: Episode) -> list[RequestEstimate]:
        """The region question, once per episode (the dry run prices every role at the
        policy's price, as it does the stop check's)."""
        return [RequestEstimate("policy", regions_messages(episode))]

    def prompt_records(self) -> dict[str, dict[str, object]]:
        out = super().prompt_records()
        for n in (REGIONS_Q, REGION_Q, POINT_Q):
            out[f"{PROMPTS}/{n}"] = vlm_prompt(n)[2].record()
        return out


class FineEQAPolicy(GuidedExplorePolicy):
    """The exploration loop for ``fine_eqa``: the region question gets its own model role."""

    def __init__(self, config: Any = None, *, protocol: Any = None, **overrides: Any) -> None:
        super().__init__(config, protocol=protocol, **overrides)
        c = self.config
        self.region_model = getattr(c, "region_model", None)
        own = getattr(c, "region_llm", None)
        self.region_llm: dict[str, Any] = {k: getattr(own, k, None) for k in STOP_ENDPOINT_KEYS}
        self._region_clients: dict[int, LLMClient] = {}

    def extra_models(self, base: LLMConfig) -> dict[str, LLMConfig]:
        """The stop check's role, and ``region`` when ``policy.region_model`` is its own model
        (its endpoint, key variable and price from ``policy.region_llm``)."""
        out = super().extra_models(base)
        if self.region_model and str(self.region_model) != base.model:
            from dataclasses import replace

            own: dict[str, Any] = dict(self.region_llm)
            out["region"] = replace(base, model=str(self.region_model), **own)
        return out

    def open(self, resources: Any) -> None:
        region = self.extra_models(resources.llm.cfg).get("region")
        if region is not None:
            from eqa_runner.errors import ConfigError

            missing = LLMClient(region, role="region").missing_credentials()
            if missing:
                raise ConfigError(
                    f"policy.region_model={self.region_model}: environment variable(s) "
                    f"{', '.join(missing)} not set; export it, set policy.region_llm.api_key_env "
                    "(and policy.region_llm.api_base for a self-hosted model), or unset "
                    "policy.region_model."
                )
        super().open(resources)

    def region_client(self, ctx: EpisodeContext) -> LLMClient:
        """``policy.region_model`` on its endpoint, else the stop check's model."""
        region = self.extra_models(ctx.llm.cfg).get("region")
        if region is None:
            return self.stop_client(ctx)
        key = id(ctx.llm)
        if key not in self._region_clients:
            self._region_clients[key] = LLMClient(
                region,
                role="region",
                cache=ctx.llm.cache,
                cache_salt=ctx.llm.cache_salt,
                ceiling=ctx.llm.ceiling,
            )
        return self._region_clients[key]

    def proposer_factory(self) -> Any:
        p = super().proposer_factory()
        if isinstance(p, FineEQAProposer):
            p.region_client = self.region_client
        return p

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        """The region question once, then the guided loop's per-step requests."""
        once = getattr(self._estimating, "episode_requests", None)
        extra = list(once(episode)) if callable(once) else []
        return extra + super().estimate_requests(episode, task, prompts_dir)
