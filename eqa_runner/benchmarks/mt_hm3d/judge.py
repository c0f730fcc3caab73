"""MT-HM3D scoring: MemoryEQA's metrics from the run's per-step records; no model is called.

Per episode (:func:`eqa_runner.benchmarks.mt_hm3d.scoring.episode_metrics`): ``success`` (the
final letter is the answer), ``early_success`` (some step's letter was), ``last_step_success``,
``norm_success_step`` (steps taken / budget, when the last step is right) and
``norm_early_success_step`` (first right step / budget). A step's letter is the argmax of its
``answer_probs``; the budget is the trace's ``num_steps`` (MemoryEQA's ``max_steps``).

Aggregates (all higher-is-better except the two step ratios, lower is earlier):
``success_rate`` (headline, %), ``early_success_rate`` (%), ``norm_success_step`` and
``norm_early_success_step`` (means over the episodes they exist for, 0..1), per category the
success rate. MemoryEQA's own printout of an exported run (its doubled success count
included) is :func:`eqa_runner.benchmarks.mt_hm3d.scoring.reference_printout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.hmeqa.judge import chosen_letter
from eqa_runner.benchmarks.mt_hm3d.config import MTHM3DJudgeConfig as Schema
from eqa_runner.benchmarks.mt_hm3d.protocol import step_letter
from eqa_runner.benchmarks.mt_hm3d.scoring import episode_metrics
from eqa_runner.llm import LLMClient
from eqa_runner.scoring.aggregate import breakdown, clusters_of, interval_of
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.declare import RATE, Metric
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

RATES = ("success", "early_success")
STEPS = ("norm_success_step", "norm_early_success_step")


class MTHM3DJudge(Judge):
    """Success, early success and their normalised steps, as MemoryEQA's evaluation."""

    reads = frozenset({cap.CHOICES, cap.TRAJECTORY})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category", "answer"}),
        metrics=frozenset({*RATES, *STEPS, "last_step_success", "unparsable"}),
        trace=frozenset(),
    )
    headline = "success_rate"
    metric_list = (
        Metric("success_rate", per_category=True),  # by_category: success per question type
        Metric("early_success_rate"),
        Metric("success", scale=RATE, headline=False, row=True),  # per episode: 1 or 0
    )
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
        trace = prediction.trace or {}
        n = len(trace.get("choices") or episode.meta.get("choices") or "ABCD")
        final = chosen_letter(prediction.answer, n)
        steps = trace.get("steps") or []
        letters = [step_letter(s, n) for s in steps if "answer_source" in s or "answer_probs" in s]
        budget = int(trace.get("num_steps") or len(steps) or 1)
        metrics = episode_metrics(letters, final, episode.answer, budget)
        metrics["unparsable"] = float(final is None)
        seq = "".join(x or "-" for x in letters)
        raw = f"final {final or 'unparsable'} vs {episode.answer}; steps {seq}"
        return Score(ok=True, raw=raw, metrics=metrics)

    def progress_value(self, metrics: Any) -> float | None:
        return metrics.get("success")

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        scored = [r for r in records if r["status"] == "ok" and r["judge_ok"]]
        return {
            f"{name}_rate": {
                str(r["episode_id"]): 100.0 * float(r["metrics"].get(name) or 0.0) for r in scored
            }
            for name in RATES
        }

    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        scored = [r for r in records if r["status"] == "ok" and r["judge_ok"]]
        clusters = clusters_of(scored)
        kw: dict[str, Any] = {"samples": bootstrap_samples, "seed": seed}
        headline = {
            name: interval_of(vals, clusters, method=interval, **kw)
            for name, vals in self.episode_values(scored).items()
        }
        steps = {}
        for name in STEPS:
            vals = [float(v) for r in scored if (v := r["metrics"].get(name)) is not None]
            steps[name] = {"mean": sum(vals) / len(vals) if vals else None, "n": len(vals)}
        return {
            "headline": headline,
            "metric_note": (
                "success_rate: percent of episodes whose final letter is the answer; "
                "early_success_rate: percent where some step's letter was; norm_*_step: "
                "steps / budget at the last (right) step and at the first right step "
                "(MemoryEQA's metrics; eqa_runner/benchmarks/mt_hm3d/README.md)"
            ),
            "steps": steps,
            "by_category": breakdown(
                scored,
                lambda r: r["category"],
                lambda r: r["metrics"].get("success"),
                scale=100.0,
                **kw,
            ),
        }
