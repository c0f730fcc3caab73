"""Blind LLM baseline: answers from the question alone with a few-shot prompt."""

from __future__ import annotations

from typing import Any

from eqa_runner.benchmarks.openeqa_em.config import BlindPolicyConfig
from eqa_runner.configured import Configured
from eqa_runner.llm import OFFLINE_TAG, RequestEstimate, user
from eqa_runner.policies.base import Policy
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.types import Episode, Prediction

PROMPTS = shipped_dir(__file__)  # the prompt files shipped in this package

PROMPT = "blind-llm"


def parse_blind_answer(text: str) -> tuple[str, bool]:
    """The text of the ``A:`` line (as the paper's script); falls back to the whole reply."""
    for line in text.splitlines():
        s = line.strip()
        if s[:2].upper() == "A:":
            return s[2:].strip(), True
    return text.strip(), False


class BlindPolicy(Configured, Policy):
    """No frames: an LLM guesses from common sense (OpenEQA's blind baseline)."""

    config_class = BlindPolicyConfig
    config: BlindPolicyConfig

    def _messages(self, episode: Episode, prompts_dir: str | None) -> list[dict[str, Any]]:
        prompt = load_prompt(PROMPTS, PROMPT, prompts_dir)
        return [user(prompt.format(question=episode.question))]

    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        c = await ctx.llm.acomplete(
            self._messages(episode, ctx.prompts_dir),
            offline_reply=f"A: {OFFLINE_TAG} no answer\nExplanation: offline model",
        )
        answer, parsed = parse_blind_answer(c.text)
        return Prediction(
            answer=answer,
            trace={"raw_reply": c.text, "answer_line_found": parsed, "params": c.params},
        )

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        return [RequestEstimate("policy", self._messages(episode, prompts_dir))]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {PROMPT: load_prompt(PROMPTS, PROMPT, prompts_dir).record()}
