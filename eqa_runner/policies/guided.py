"""``GuidedExplorePolicy``: the exploration loop with a stop rule that can read a guided
proposer's stop confidence (``policy=vlm_explore | vlm_waypoint``)."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, ClassVar

from eqa_runner.llm import RequestEstimate
from eqa_runner.policies.config import GuidedPolicyConfig
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import Exploration
from eqa_runner.policies.explore import ExplorePolicy
from eqa_runner.policies.proposer import GuidedProposer, StepView
from eqa_runner.policies.vlm_questions import CONFIDENT_STOP, _r
from eqa_runner.types import Episode


class GuidedExplorePolicy(ExplorePolicy):
    """The exploration loop with a stop rule that can read a guided proposer's confidence.

    ``stop_rule``: ``protocol`` — the task protocol's per-step check decides (as ``re``/``fbe``);
    ``confidence`` — stop when the proposer's stop confidence reaches ``stop_threshold``;
    ``either`` — whichever says stop first. With ``protocol_check`` (default) the protocol's
    per-step question is asked every step under every rule (a protocol may record its per-step
    answer there); ``false`` skips it under ``confidence`` (saves a stop check call per step).
    """

    config_class: ClassVar[type[Any]] = GuidedPolicyConfig
    config: GuidedPolicyConfig

    @property
    def protocol_check(self) -> bool:
        """Whether the protocol's per-step question is asked (always with stop_rule=protocol)."""
        return self.config.protocol_check or self.config.stop_rule == "protocol"

    async def check_step(self, x: Exploration, view: StepView, ctx: EpisodeContext) -> bool:
        """The stop confidence and the protocol's check (concurrently), combined by the rule."""
        rec = view.record
        conf_task = (
            x.proposer.assess(view, ctx) if isinstance(x.proposer, GuidedProposer) else _none()
        )
        proto_task = self.protocol.check_step(x, rec, ctx) if self.protocol_check else _false()
        t0 = time.perf_counter()
        conf, proto = await asyncio.gather(conf_task, proto_task)
        confident = conf is not None and conf >= self.config.stop_threshold
        rec["stop_confidence"] = _r(conf)
        rec["confident"] = bool(confident)
        if self.protocol_check:
            rec["protocol_stop"] = bool(proto)
        rec["t_check_s"] = round(time.perf_counter() - t0, 4)
        rule = self.config.stop_rule
        if rule == "protocol":
            return bool(proto)
        stop = confident if rule == "confidence" else confident or bool(proto)
        if stop and (rule == "confidence" or not proto):
            x.stop_reason = CONFIDENT_STOP
        return bool(stop)

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        """The protocol's requests (its per-step question only when asked) plus the proposer's
        extra questions, every step of ``max_steps`` (else ``estimate_steps``)."""
        n = self.dry_run_steps
        base = self.protocol.estimate_requests(
            episode, prompts_dir, n if self.protocol_check else 0
        )
        extra: list[RequestEstimate] = []
        step_requests = getattr(self._estimating, "step_requests", None)
        if callable(step_requests):
            extra = list(step_requests(episode, self.protocol.terms.frame_size)) * n
        return extra + base

    @functools.cached_property
    def _estimating(self) -> Any:
        """One proposer for every episode's estimate: its step requests follow from its
        settings and the episode only, and building one types its config (~15 ms, once per
        question of a dry run otherwise)."""
        return self.proposer_factory()

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        out = dict(self.protocol.prompts(prompts_dir))
        records = getattr(self.proposer_factory(), "prompt_records", None)
        if callable(records):
            out.update(records())
        return out


async def _none() -> None:
    return None


async def _false() -> bool:
    return False
