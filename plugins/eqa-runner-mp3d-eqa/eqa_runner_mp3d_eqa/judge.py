"""MP3D-EQA scoring: habitat-lab's answer accuracy and habitat-baselines' navigation numbers;
no model is called.

Per episode (:mod:`eqa_runner_mp3d_eqa.metrics`): ``accuracy`` 1/0 (the reply's vocabulary
index against ``answer_token``; a reply naming no vocabulary entry is ``out_of_vocab`` and
scores 0, as a wrong index does upstream), and ``d_0``, ``d_T``, ``d_D``, ``d_min`` (metres) from
the goal distances the exploration recorded after every step. Aggregate: accuracy in percent
over all scored episodes; each distance the mean over episodes whose start reaches the goal
(upstream leaves the others out as invalid), counted in ``excluded``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.llm import LLMClient
from eqa_runner.scoring.aggregate import breakdown, clusters_of, interval_of
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.declare import METRES, Metric
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score
from eqa_runner_mp3d_eqa.config import MP3DEQAJudgeConfig as Schema
from eqa_runner_mp3d_eqa.episodes import Vocab
from eqa_runner_mp3d_eqa.metrics import match_answer, nav_metrics

DISTANCES = ("d_T", "d_D", "d_min")


class MP3DEQAJudge(Judge):
    """Exact match in the answer vocabulary, plus d_T / d_D / d_min from the trajectory."""

    headline = "accuracy"
    metric_list = (
        Metric("accuracy", per_category=True, row=True),  # per episode: 1 right, 0 wrong
        Metric("d_T", scale=METRES, higher_is_better=False),
        Metric("d_D", scale=METRES),  # d_0 - d_T: the distance gained towards the goal
        Metric("d_min", scale=METRES, higher_is_better=False),
    )
    needs_model = False
    reads = frozenset({cap.QUESTION, cap.GOAL, cap.TRAJECTORY})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category"}),
        metrics=frozenset({"accuracy", "nav_valid", "out_of_vocab", *DISTANCES}),
    )

    config_class = Schema
    config: Schema

    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        vocab = Vocab(episode.meta.get("answer_vocab") or [])
        said = match_answer(prediction.answer, vocab.words)
        token = vocab.token(said) if said is not None else None
        metrics: dict[str, float] = {
            "accuracy": float(token is not None and token == episode.meta.get("answer_token")),
            "out_of_vocab": float(said is None),
        }
        nav = nav_metrics((prediction.trace or {}).get("goal_distances") or [])
        metrics["nav_valid"] = float(nav is not None)
        metrics.update(nav or {})
        raw = f"vocabulary match: {said or 'none'} (token {token}) vs {episode.answer}"
        return Score(ok=True, raw=raw, metrics=metrics)

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Per-episode accuracy (%) and the three distances (m, reachable starts only)."""
        scored = [r for r in records if r["status"] == "ok" and r["judge_ok"]]
        out: dict[str, dict[str, float]] = {"accuracy": {}, **{d: {} for d in DISTANCES}}
        for r in scored:
            i, m = str(r["episode_id"]), r["metrics"]
            out["accuracy"][i] = 100.0 * float(m.get("accuracy") or 0.0)
            if m.get("nav_valid"):
                for d in DISTANCES:
                    out[d][i] = float(m.get(d) or 0.0)
        return out

    def progress_value(self, metrics: Mapping[str, float | None]) -> float | None:
        return metrics.get("accuracy")

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
        headline = {
            name: interval_of(vals, clusters, method=interval, samples=bootstrap_samples, seed=seed)
            for name, vals in self.episode_values(scored).items()
        }
        kw: dict[str, Any] = {"scale": 100.0, "samples": bootstrap_samples, "seed": seed}
        return {
            "headline": headline,
            "metric_note": (
                "accuracy: percent of episodes whose answer is answer_token in the answer "
                "vocabulary (habitat-lab AnswerAccuracy; an out-of-vocabulary reply is wrong); "
                "d_T / d_D / d_min: mean geodesic distance (m) to the goal at the end, its "
                "change from the start (d_0 - d_T) and its minimum over the steps, over "
                "episodes whose start reaches the goal (habitat-baselines EQA navigation eval)"
            ),
            "answers": {
                "out_of_vocab": sum(1 for r in scored if r["metrics"].get("out_of_vocab")),
            },
            "excluded": {
                "unreachable_goal": sum(1 for r in scored if not r["metrics"].get("nav_valid")),
            },
            "by_category": breakdown(
                scored, lambda r: r["category"], lambda r: r["metrics"].get("accuracy"), **kw
            ),
        }
