"""MT-HM3D's exploration protocol: HM-EQA's per-step questions (an answer over the options and
"can you answer from this view?"), MemoryEQA's stop and answer: the exploration stops at the
first confident step (``stop_confidence``, P(Yes) >= 0.5 by default; MemoryEQA stops when its
confidence reply is above "very low"), and the answer is that step's letter (``last``: the last
answered step's argmax, first letter on ties), or explore-eqa's ``max`` / ``weighted`` rules.

Each step's record is upstream's per-step record in our names: ``answer_probs`` (its
``smx_vlm_pred``), ``confidence`` (its ``smx_vlm_rel``), ``position`` / ``rotation`` (``pts`` /
``angle``); the judge reads a step's letter as the argmax of ``answer_probs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eqa_runner.benchmarks.hmeqa.protocol import HMEQAProtocol
from eqa_runner.benchmarks.mt_hm3d.config import MTHM3DProtocolConfig as Schema
from eqa_runner.llm.choice import option_letters
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import AnswerStep, Exploration
from eqa_runner.types import Episode


def step_letter(step: dict[str, Any], n_options: int = 4) -> str | None:
    """A step's letter: the argmax of its answer distribution (first on ties), None without."""
    probs = step.get("answer_probs")
    if not probs:
        return None
    k = max(range(len(probs)), key=lambda i: (probs[i], -i))
    return option_letters(n_options)[k] if k < n_options else None


def last_letter(
    steps: Sequence[dict[str, Any]], n_options: int = 4
) -> tuple[str | None, int | None]:
    """(letter, step index) of the last step with an answer."""
    for s in reversed(steps):
        letter = step_letter(s, n_options)
        if letter is not None:
            return letter, int(s.get("step", 0))
    return None, None


class MTHM3DProtocol(HMEQAProtocol):
    """HM-EQA's questions per step; stop when confident; answer with the last answer."""

    name = "mt_hm3d"

    config_class = Schema
    config: Schema

    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        rule = self.config.answer_rule
        if rule != "last":
            return await super().answer(episode, ctx, x)
        self.config.answer_rule = "max"  # the base computes both of its rules for the trace
        try:
            step = await super().answer(episode, ctx, x)
        finally:
            self.config.answer_rule = rule
        letter, at = last_letter(x.steps, len(episode.meta["choices"]))
        step.answer = letter
        step.trace.update(answer_rule="last", answer_step=at)
        step.trace["rule_answers"]["last"] = letter
        return step
