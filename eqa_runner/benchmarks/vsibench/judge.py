"""VSI-Bench scoring: lmms-eval's rules (:mod:`eqa_runner.benchmarks.vsibench.scoring`); no model
is called.

Metrics (all in %, higher is better):

- ``overall`` (headline): the mean of the per-type scores, the three relative-direction types
  merged into one (their mean) first: VSI-Bench's "Avg." column;
- ``score`` per episode: 100 (right letter) / 0 for multiple choice, MRA·100 for numbers; its
  plain mean is reported as ``micro``;
- ``by_category``: each question type's mean score, plus the merged ``object_rel_direction``
  (the paper's table columns).

``episode_values()['overall']`` are the episodes' scores times their macro weights (each type
weighs the same, each direction type a third): their mean is exactly the headline, so paired
comparisons and intervals of two runs on the same questions compare like with like.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.vsibench.config import VSIBenchJudgeConfig as Schema
from eqa_runner.benchmarks.vsibench.scoring import (
    MCA_TYPES,
    macro_weights,
    overall,
    score_reply,
    type_means,
)
from eqa_runner.llm import LLMClient
from eqa_runner.scoring.aggregate import breakdown, clusters_of, interval_of, mean_with_ci
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.comparability import as_missing
from eqa_runner.scoring.declare import RATE, Metric
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score


def _value(r: EpisodeRecord) -> float:
    return float(r["metrics"].get("score") or 0.0)


def _scored(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [
        r
        for r in records
        if r["status"] == "ok" and r["judge_ok"] and r["metrics"].get("score") is not None
    ]


class VSIBenchJudge(Judge):
    """Exact letter match or Mean Relative Accuracy, per question type."""

    reads = frozenset({cap.QUESTION})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category"}), metrics=frozenset({"score"}), trace=frozenset()
    )
    headline = "overall"
    metric_list = (
        Metric("overall", per_category=True),  # by_category: each question type's score
        Metric("score", scale=RATE, headline=False, row=True),  # per question: match or MRA
    )
    category_label = "question type"
    needs_model = False

    config_class = Schema
    config: Schema

    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        value = score_reply(episode.category, prediction.answer, episode.answer)
        rule = "exact match" if episode.category in MCA_TYPES else "MRA"
        raw = f"{rule}: {prediction.answer!r} vs {episode.answer!r} -> {value:.4g}"
        return Score(ok=True, raw=raw, metrics={"score": value})

    def missing_record(self, record: EpisodeRecord) -> EpisodeRecord | None:
        """lmms-eval's scorer on a sample without a reply (the export writes an error record's
        reply null): no first token to match, no number, so 0 for every question type."""
        return as_missing(record, {"score": 0.0})

    def progress_value(self, metrics: Any) -> float | None:
        return metrics.get("score")

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Macro-weighted scores (their mean is ``overall``), in %."""
        scored = _scored(records)
        weights = macro_weights(str(r["category"]) for r in scored)
        return {
            "overall": {
                str(r["episode_id"]): 100.0 * w * _value(r)
                for r, w in zip(scored, weights, strict=True)
            }
        }

    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        scored = _scored(records)
        kw: dict[str, Any] = {"scale": 100.0, "samples": bootstrap_samples, "seed": seed}
        clusters = clusters_of(scored)
        headline = {
            name: interval_of(vals, clusters, method=interval, samples=bootstrap_samples, seed=seed)
            for name, vals in self.episode_values(scored).items()
        }
        means = type_means((str(r["category"]), _value(r)) for r in scored)
        exact = overall(means)
        if exact is not None:  # the reference's number, not the weighted mean's rounding
            headline["overall"]["mean"] = 100.0 * exact
        by_type = breakdown(
            scored, lambda r: str(r["category"]), lambda r: r["metrics"].get("score"), **kw
        )
        return {
            "headline": headline,
            "metric_note": (
                "overall: the mean of the per-question-type scores (the three relative-direction "
                "types merged into their mean first), in %: multiple choice by exact match of "
                "the reply's first token, numbers by Mean Relative Accuracy over thresholds "
                ".50:.95:.05 (lmms-eval's scorer; eqa_runner/benchmarks/vsibench/README.md)"
            ),
            "type_scores": {t: 100.0 * v for t, v in means.items()},
            "micro": mean_with_ci([_value(r) for r in scored], **kw),
            "by_category": by_type,
        }
