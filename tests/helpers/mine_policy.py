"""A policy written outside the package (tests/config/test_capabilities.py): it needs an
episode's frames and answers with the question echoed."""

from __future__ import annotations

from eqa_runner import capabilities as cap
from eqa_runner.policies.base import Policy
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.types import Episode, Prediction


class EchoFramesPolicy(Policy):
    needs = frozenset({cap.QUESTION, cap.FRAMES})

    def __init__(self, name: str = "mine") -> None:
        self.name = name

    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        return Prediction(f"an answer to: {episode.question}")
