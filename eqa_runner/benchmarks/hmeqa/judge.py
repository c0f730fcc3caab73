"""HM-EQA scoring: exact match of the chosen letter; no model is called.

Per episode: ``accuracy`` 1/0 (an unparsable answer, ``prediction`` null, is counted in
``unparsable`` and scores 0: it is never mapped to a letter), and, when the exploration recorded
per-step answers and confidences, upstream's two aggregate rules recomputed from those steps:
``success_weighted`` (argmax_k max_t r_t·p_t[k]) and ``success_max`` (the answer at the most
confident step), :mod:`eqa_runner.benchmarks.hmeqa.choice_rules`, with the trace's
``black_steps`` and ``tie_break`` (upstream's by default: a black step enters with a uniform
answer and P(Yes) = 0.01, ties go to the first letter). The run's own answer is the one of
``protocol.answer_rule``; both rules are always reported, over the same episodes as ``accuracy``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.hmeqa.choice_rules import apply_rule
from eqa_runner.benchmarks.hmeqa.config import HMEQAJudgeConfig as Schema
from eqa_runner.llm import LLMClient
from eqa_runner.llm.choice import option_letters, parse_choice
from eqa_runner.scoring.aggregate import breakdown, clusters_of, interval_of, mean_with_ci
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.comparability import MISSING_MARK, as_missing
from eqa_runner.scoring.declare import Metric
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

PADDING = "(Do not choose this option)"


def chosen_letter(answer: str | None, n_options: int = 4) -> str | None:
    """The letter of a prediction (a bare letter, or a reply naming exactly one), else None."""
    if not answer:
        return None
    s = answer.strip().upper()
    if len(s) == 1 and s in option_letters(n_options):
        return s
    return parse_choice(answer, n_options=n_options)


def rule_metrics(
    steps: Sequence[dict[str, Any]],
    answer: str,
    n_options: int = 4,
    *,
    black: str = "uniform",
    tie_break: str = "first",
) -> dict[str, float]:
    """``success_weighted`` / ``success_max`` from per-step records ({} without any step: a
    policy that did not explore). Every exploring episode gets both (0 when no step has an
    answer), so they share accuracy's denominator."""
    if not steps:
        return {}
    letters = option_letters(n_options)
    out = {}
    for rule in ("weighted", "max"):
        k = apply_rule(rule, steps, n_options=n_options, black=black, tie_break=tie_break).index
        out[f"success_{rule}"] = float(k is not None and letters[k] == answer)
    return out


class HMEQAJudge(Judge):
    """Exact match against the answer letter, with upstream's per-step rules."""

    reads = frozenset({cap.CHOICES, cap.TRAJECTORY})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category", "answer"}),
        metrics=frozenset({"accuracy", "success_weighted", "success_max", "unparsable"}),
        trace=frozenset(
            {"answer_path", "answer_sources", "confidence_sources", "choices", "answer_rule"}
        ),
    )

    headline = "accuracy"
    metric_list = (
        Metric("accuracy", per_category=True, row=True),  # per episode: 1 right, 0 wrong
        Metric("success_weighted"),  # upstream's two rules: no breakdown
        Metric("success_max"),
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
        letter = chosen_letter(prediction.answer, n)
        metrics = {
            "accuracy": float(letter is not None and letter == episode.answer),
            "unparsable": float(letter is None),
        }
        black, ties = trace.get("black_steps", "uniform"), trace.get("tie_break", "first")
        steps = trace.get("steps") or []
        metrics.update(rule_metrics(steps, episode.answer, n, black=black, tie_break=ties))
        raw = f"exact match: {letter or 'unparsable'} vs {episode.answer}"
        return Score(ok=True, raw=raw, metrics=metrics)

    def missing_record(self, record: EpisodeRecord) -> EpisodeRecord | None:
        """explore-eqa scores a question by ``pred_token == answer`` (run_vlm_exp.py @18381da
        lines 349, 354) and has no rule for a question that failed (an exception ends its
        run): a question without an answer is not a success, under accuracy and both rules, as
        the export writes it (``no_answer``: every step's mass on a wrong option)."""
        return as_missing(
            record,
            {"accuracy": 0.0, "unparsable": 1.0, "success_weighted": 0.0, "success_max": 0.0},
        )

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Per-episode accuracy and, where recorded, both upstream rules (in %); an error record
        scored as missing enters a rule only when the run's episodes have it (an exploring
        policy)."""
        scored = [r for r in records if r["status"] == "ok" and r["judge_ok"]]
        out: dict[str, dict[str, float]] = {}
        for name in ("accuracy", "success_weighted", "success_max"):
            vals = {
                str(r["episode_id"]): 100.0 * float(v)
                for r in scored
                if (v := r["metrics"].get(name)) is not None
            }
            measured = any(
                name in r["metrics"] and not r["metrics"].get(MISSING_MARK) for r in scored
            )
            if measured or name == "accuracy":
                out[name] = vals
        return out

    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        scored = [r for r in records if r["status"] == "ok" and r["judge_ok"]]
        kw: dict[str, Any] = {"scale": 100.0, "samples": bootstrap_samples, "seed": seed}
        clusters = clusters_of(scored)
        headline = {
            name: interval_of(vals, clusters, method=interval, samples=bootstrap_samples, seed=seed)
            for name, vals in self.episode_values(scored).items()
        }
        answered = [r for r in scored if not r["metrics"].get("unparsable")]
        paths = Counter(str(r["trace"].get("answer_path", "unknown")) for r in scored)
        step_sources: dict[str, Counter[str]] = {"answer": Counter(), "confidence": Counter()}
        for r in scored:
            step_sources["answer"].update(r["trace"].get("answer_sources") or {})
            step_sources["confidence"].update(r["trace"].get("confidence_sources") or {})
        padding = sum(
            1
            for r in scored
            if (ch := r["trace"].get("choices"))
            and r["answer"] in option_letters(len(ch))
            and ch[option_letters(len(ch)).index(r["answer"])] == PADDING
        )
        return {
            "headline": headline,
            "metric_note": (
                "accuracy: percent of episodes whose chosen letter is the answer (exact match; an "
                "unparsable answer counts as wrong and is never mapped to a letter); "
                "success_weighted / success_max: upstream explore-eqa's two rules recomputed "
                "from the per-step answers (eqa_runner/benchmarks/hmeqa/README.md)"
            ),
            "answers": {
                "answered": len(answered),
                "unparsable": len(scored) - len(answered),
                "accuracy_answered": mean_with_ci(
                    [float(r["metrics"].get("accuracy") or 0.0) for r in answered], **kw
                ),
                "answer_rule": dict(Counter(str(r["trace"].get("answer_rule")) for r in scored)),
                "answer_paths": dict(sorted(paths.items())),
                "step_sources": {k: dict(sorted(v.items())) for k, v in step_sources.items()},
                "answer_is_padding": padding,
            },
            "by_category": breakdown(
                scored, lambda r: r["category"], lambda r: r["metrics"].get("accuracy"), **kw
            ),
        }
