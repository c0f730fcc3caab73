"""LLM-Match (OpenEQA): a judge LLM marks a prediction 1..5; per question (s-1)/4."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.openeqa_em.config import LLMMatchJudgeConfig as Schema
from eqa_runner.llm import OFFLINE_TAG, LLMClient, RequestEstimate, user
from eqa_runner.llm.replies import tidy_reply
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.scoring.aggregate import breakdown, clusters_of, interval_of
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.comparability import as_missing
from eqa_runner.scoring.declare import MARK, Metric
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

PROMPTS = shipped_dir(__file__)  # the prompt files shipped in this package

log = logging.getLogger(__name__)

PROMPT, PROMPT_EXTRA = "mmbench", "mmbench-extra"
REASK = "Reply with only your mark: one whole number from 1 to 5."
_TAGGED = re.compile(
    r"(?<![a-z])(?:your\s+)?(?:mark|score|rating|grade)\s*(?:is)?\s*[:=\-]?\s*\**\s*"
    r"(\d+(?:\.\d+)?)"  # the mark
    r"(?:\s*(?:/|out\s+of)\s*(\d+))?"  # an optional scale ("/5", "out of 10")
    r"([ \t]*(?:-|\u2013|to|or)[ \t]*\d)?",  # a hedge ("3-4", "3 or 4")
    re.I,
)
_OVER5 = re.compile(r"\b(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*5\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")


def _as_mark(token: str) -> int | None:
    try:
        v = float(token)
    except ValueError:
        return None
    return int(v) if v.is_integer() and 1 <= v <= 5 else None


def parse_mark(reply: str | None) -> int | None:
    """The integer 1..5 in a judge reply, or None when there is no unambiguous mark."""
    text = tidy_reply(reply).strip().strip("*` ").strip()
    if not text:
        return None
    if re.fullmatch(r"\d+(?:\.\d+)?\.?", text):
        return _as_mark(text.rstrip("."))
    tagged = _TAGGED.findall(text)
    if tagged:
        mark, scale, hedge = tagged[-1]
        if hedge or (scale and scale != "5"):
            return None
        return _as_mark(mark)
    over5 = _OVER5.findall(text)
    if over5:
        return _as_mark(over5[-1])
    first = re.fullmatch(r"[*`#\s]*(\d)[.*`\s]*", text.splitlines()[0])
    if first:  # a bare mark on the first line, explanation below
        return _as_mark(first.group(1))
    numbers = set(_NUMBER.findall(text))
    if len(numbers) == 1:
        return _as_mark(numbers.pop())
    return None


def strip_after_last_period(prediction: str) -> str:
    """open-eqa's post-processing: drop anything after the last period ("2.5 m" → "2.")."""
    end = prediction.rfind(".")
    if end >= 0 and end + 1 < len(prediction):
        return prediction[: end + 1]
    return prediction


NO_PREDICTION = "(no prediction: scored 0 %, as open-eqa's get_llm_match_score scores None)"
# a null answer's metrics: open-eqa's get_llm_match_score returns 0 for None (mark 1, 0 %)
NULL_ANSWER_METRICS = {"score_1to5": 1.0, "llm_match": 0.0, "no_prediction": 1.0}


class LLMMatchJudge(Judge):
    """OpenEQA's LLM-Match with the extra-answers prompt variant and tolerant parsing."""

    reads = frozenset({cap.QUESTION, cap.OPEN_ANSWER})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category", "subset"}), metrics=frozenset({"llm_match", "score_1to5"})
    )

    headline = "llm_match"
    metric_list: ClassVar[tuple[Metric, ...]] = (
        Metric("llm_match", per_category=True),
        Metric(
            "score_1to5",
            scale=MARK,
            headline=False,
            row=True,
            levels=(1, 2, 3, 4, 5),
            label="mark 1–5",
        ),
    )

    config_class = Schema
    config: Schema

    def prepare(self, episode: Episode, prediction: str) -> tuple[str, bool]:
        """The prediction as the judge sees it, and whether post-processing changed it."""
        if not self.config.strip_after_last_period:
            return prediction, False
        cut = strip_after_last_period(prediction)
        return cut, cut != prediction

    def _messages(
        self, episode: Episode, prediction: str, prompts_dir: str | None
    ) -> list[dict[str, Any]]:
        extra = episode.extra_answers
        prompt = load_prompt(PROMPTS, PROMPT_EXTRA if extra else PROMPT, prompts_dir)
        text = prompt.format(
            question=episode.question,
            answer=episode.answer,
            prediction=prediction,
            extra_answers=extra,
        )
        return [user(text)]

    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        if prediction.answer is None:  # open-eqa's get_llm_match_score: None scores 0 (0 %)
            return Score(ok=True, raw=NO_PREDICTION, metrics=dict(NULL_ANSWER_METRICS))
        answer = prediction.answer
        shown, changed = self.prepare(episode, answer)
        if changed:
            log.info(
                "%s: prediction cut after its last period: %r -> %r",
                episode.episode_id,
                answer,
                shown,
            )
        messages = self._messages(episode, shown, prompts_dir)
        raw, mark = await self.ask_and_parse(
            llm,
            messages,
            parse_mark,
            offline_reply=f"Your mark: 3 {OFFLINE_TAG}",
            reask=REASK if self.config.reask_unparsable else None,
        )
        if mark is None:
            return Score(ok=False, raw=raw, metrics={})
        metrics = {"score_1to5": float(mark), "llm_match": (mark - 1) / 4}
        if changed:
            metrics["prediction_cut"] = 1.0
        return Score(ok=True, raw=raw, metrics=metrics)

    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        scored = [r for r in records if r["status"] == "ok" and r["judge_ok"]]
        vals = {
            str(r["episode_id"]): v for r in scored if (v := r["metrics"]["llm_match"]) is not None
        }
        kw: dict[str, Any] = {
            "scale": 100.0,
            "samples": bootstrap_samples,
            "seed": seed,
            "method": interval,
        }
        return {
            "headline": {"llm_match": interval_of(vals, clusters_of(scored), **kw)},
            "metric_note": "llm_match: OpenEQA LLM-Match in percent, mean of 100*(s-1)/4 over "
            "episodes with a parsable judgement",
            "by_category": breakdown(
                scored, lambda r: r["category"], lambda r: r["metrics"]["llm_match"], **kw
            ),
            "by_subset": breakdown(
                scored, lambda r: r["subset"], lambda r: r["metrics"]["llm_match"], **kw
            ),
            "score_histogram": {
                str(s): sum(1 for r in scored if r["metrics"]["score_1to5"] == s)
                for s in range(1, 6)
            },
        }

    def missing_record(self, record: EpisodeRecord) -> EpisodeRecord | None:
        """open-eqa: a question that failed is a null answer (its baselines' ``--force``:
        ``ask_question`` returns None), which ``get_llm_match_score`` scores 0 without a judge
        call: mark 1, 0 % (README.md, "Error records")."""
        return as_missing(record, NULL_ANSWER_METRICS)

    def estimate_requests(self, episode: Episode, prompts_dir: str | None) -> list[RequestEstimate]:
        return [RequestEstimate("judge", self._messages(episode, episode.answer, prompts_dir))]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {n: load_prompt(PROMPTS, n, prompts_dir).record() for n in (PROMPT, PROMPT_EXTRA)}
