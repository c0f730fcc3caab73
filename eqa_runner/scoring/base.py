"""The small base class every judge implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from eqa_runner.llm import LLMClient
from eqa_runner.policies.base import RequestEstimate
from eqa_runner.types import Episode, Prediction, Score

JUDGE_LLM_KEYS = (
    "model",
    "temperature",
    "max_tokens",
    "seed",
    "api_base",
    "api_key_env",
    "api_key",
)


class Judge(ABC):
    """Scores a prediction; its LLM settings (``judge.model`` ...) are kept in ``llm_overrides``."""

    name: str = "judge"
    headline: str = "score"

    def __init__(self, **llm_overrides: Any) -> None:
        self.llm_overrides = {k: v for k, v in llm_overrides.items() if k in JUDGE_LLM_KEYS}
        unknown = set(llm_overrides) - set(JUDGE_LLM_KEYS)
        if unknown:
            raise TypeError(f"judge: unknown option(s) {sorted(unknown)}")

    @abstractmethod
    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        """Judge one prediction. An unparsable reply is ``Score(ok=False)``, never a number."""

    @abstractmethod
    def aggregate(
        self, records: Sequence[dict[str, Any]], *, bootstrap_samples: int = 1000, seed: int = 0
    ) -> dict[str, Any]:
        """Headline metrics, breakdowns and intervals from final per-episode records."""

    def running_metric(self, metrics: Sequence[dict[str, float]]) -> float | None:
        """The headline metric so far (for the progress bar)."""
        vals = [m[self.headline] for m in metrics if self.headline in m]
        return 100.0 * sum(vals) / len(vals) if vals else None

    def estimate_requests(self, episode: Episode, prompts_dir: str | None) -> list[RequestEstimate]:
        return []

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {}
