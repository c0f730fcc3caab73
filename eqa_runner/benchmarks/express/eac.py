"""EXPRESS-Bench Exploration-Answer Consistency (EAC): a judge LLM returns "σ, δ".

σ ∈ {0, 0.5, 1} grades whether the response is grounded in the final frame, δ ∈ 1..5 its
correctness. Per episode ``c = σ·δ`` and ``c* = δ``; the path weight is ``L / max(P, L)``
(L = reference geodesic length, P = the agent's path length). Aggregates (as the upstream
``evaluation.py``)::

    C      = mean(100 · clip(c, 0, 5) / 5)
    C*     = mean(100 · clip(δ, 0, 5) / 5)
    E_path = mean(100 · clip(c, 0, 5) / 5 · weight)
    d_T    = mean final geodesic distance to the goal, over episodes where it is finite

``judge.inf_policy=exclude`` (the paper's): episodes with an infinite path length are left out
of C, C* and E_path, and those with an infinite goal distance out of d_T. ``penalize`` keeps
them as failures instead: an infinite path scores c = c* = 0 (and E_path 0), an infinite goal
distance counts as the reference geodesic distance L (no progress from the start).
Zero-length paths: weight = 1 when P ≤ L (so P = L = 0 gives 1, not 0/0).
Record JSON holds no inf: a null path length / goal distance is read as infinite.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.express.config import EACJudgeConfig
from eqa_runner.benchmarks.express.protocol import express_prompt
from eqa_runner.llm import OFFLINE_TAG, ImagePart, LLMClient, Message, RequestEstimate, system, user
from eqa_runner.llm.replies import tidy_reply
from eqa_runner.scoring.aggregate import clusters_of, interval_of
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.comparability import as_missing
from eqa_runner.scoring.declare import MARK, METRES, Metric
from eqa_runner.scoring.efficiency import path_weight
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

log = logging.getLogger(__name__)

PROMPT = "evaluation"
REASK = (
    "Reply with only the two marks separated by a comma: grounding (0, 0.5 or 1) first, "
    "then correctness (a whole number from 1 to 5), e.g. 1, 4"
)
SIGMAS = (0.0, 0.5, 1.0)
_NUM = r"\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?"
_PAIR = re.compile(rf"(?<![\w.\-])({_NUM})\s*(?:,|;|\band\b)\s*({_NUM})(?![\w.]*\d)", re.I)
_MARK = re.compile(r"(?:mark|marks|score|scores|rating|output|answer)\s*(?:is|are)?\s*[:=]?", re.I)
_SIGMA_L = re.compile(rf"(?:σ|sigma|grounding)[^\d\n]{{0,20}}?({_NUM})", re.I)
_DELTA_L = re.compile(rf"(?:δ|delta|correctness|accuracy)[^\d\n]{{0,20}}?({_NUM})", re.I)


def _value(token: str) -> Fraction | None:
    token = re.sub(r"\s+", "", token)
    try:
        if "/" in token:
            a, b = token.split("/", 1)
            fb = Fraction(b)
            return None if fb == 0 else Fraction(a) / fb
        return Fraction(token)
    except (ValueError, ZeroDivisionError):
        return None


def _sigma(token: str) -> float | None:
    v = _value(token)
    return float(v) if v is not None and float(v) in SIGMAS else None


def _delta(token: str) -> int | None:
    t = re.sub(r"\s+", "", token)
    if "/" in t and t.split("/", 1)[1] in ("5", "5.0"):  # "4/5": a mark out of 5
        t = t.split("/", 1)[0]
    v = _value(t)
    return int(v) if v is not None and v.denominator == 1 and 1 <= v <= 5 else None


def parse_eac(reply: str | None) -> tuple[float, int] | None:
    """(σ, δ) from a judge reply, or None when there is no valid, unambiguous pair.

    Accepts ``1, 4``, ``Your mark: 0.5, 3``, ``0.5,3``, ``1/2, 3``, ``1, 4/5``, markdown,
    brackets, labelled marks (``grounding: 1 ... correctness: 4``) and trailing explanations.
    σ must be 0, 0.5 or 1 and δ a whole number 1..5; anything else is unparsable.
    """
    text = tidy_reply(reply).replace("½", "1/2").replace("，", ",").replace("\u2009", " ")
    text = re.sub(r"[*_`#\[\]()]", " ", text).strip()
    if not text:
        return None
    s_lab, d_lab = _SIGMA_L.findall(text), _DELTA_L.findall(text)
    if s_lab and d_lab:
        s, d = _sigma(s_lab[-1]), _delta(d_lab[-1])
        return (s, d) if s is not None and d is not None else None
    tags = list(_MARK.finditer(text))
    region = text[tags[-1].end() :] if tags else text
    pair = _PAIR.search(region)
    if pair is None and tags:
        pair = _PAIR.search(text)
    if pair is None:
        return None
    s, d = _sigma(pair.group(1)), _delta(pair.group(2))
    return (s, d) if s is not None and d is not None else None


def _num(v: Any) -> float:
    """A record number; None / missing / non-numbers are infinite (JSON has no inf)."""
    if v is None or isinstance(v, bool):
        return math.inf
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.inf


class EACJudge(Judge):
    """EXPRESS-Bench EAC judge: σ (grounding in the final frame) and δ (correctness)."""

    reads = frozenset({cap.QUESTION, cap.OPEN_ANSWER, cap.GOAL, cap.TRAJECTORY, cap.FINAL_FRAME})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category", "subset"}),
        metrics=frozenset(
            {"c", "c_star", "path_len", "gt_geodesic", "d_t", "d_t_valid", "sigma", "delta"}
        ),
        trace=frozenset({"d_t", "d_t_valid", "gt_geodesic", "stopped_early"}),
    )

    headline = "C"
    metric_list = (
        Metric("C", per_category=True),
        Metric("C_star", per_category=True),
        Metric("E_path", per_category=True),
        Metric("d_T", scale=METRES, higher_is_better=False, per_category=True),
        Metric("c", scale=MARK, headline=False, row=True),
        Metric("sigma", scale=MARK, headline=False, levels=SIGMAS, label="σ"),
        Metric("delta", scale=MARK, headline=False, row=True, levels=(1, 2, 3, 4, 5), label="δ"),
    )
    category_label = "question type"

    config_class = EACJudgeConfig
    config: EACJudgeConfig

    @property
    def inf_policy(self) -> str:
        return self.config.inf_policy

    @property
    def image_size(self) -> tuple[int, int]:
        """The final frame's (width, height), for dry-run estimates."""
        return (int(self.config.image_size[0]), int(self.config.image_size[1]))

    # -------------------------------------------------------------- judging
    def messages(
        self, episode: Episode, response: str, prompts_dir: str | None, *images: ImagePart
    ) -> list[Message]:
        sys_text, user_text, _ = express_prompt(PROMPT, prompts_dir)
        text = (
            f"{user_text}\n\nQuestion: {episode.question}\nAnswer: {episode.answer}\n"
            f"Response: {response}\nYour mark: "
        )
        return [*([system(sys_text)] if sys_text else []), user(text, *images)]

    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        images = [ImagePart(b) for b in prediction.images_for_judge[:1] if b]
        if not images:
            log.warning(
                "%s: no final frame for the EAC judge; judging text only", episode.episode_id
            )
        messages = self.messages(episode, prediction.answer or "", prompts_dir, *images)
        raw, parsed = await self.ask_and_parse(
            llm,
            messages,
            parse_eac,
            offline_reply=f"Your mark: 1, 3 {OFFLINE_TAG}",
            reask=REASK if self.config.reask_unparsable else None,
        )
        if parsed is None:
            return Score(ok=False, raw=raw, metrics={})
        return Score(ok=True, raw=raw, metrics=self.episode_metrics(*parsed, prediction.trace))

    @staticmethod
    def episode_metrics(sigma: float, delta: int, trace: dict[str, Any]) -> dict[str, float]:
        """Per-episode numbers; path numbers come from the policy's trace."""
        c = sigma * delta
        path, gt, d_t = (
            _num(trace.get("path_len")),
            _num(trace.get("gt_geodesic")),
            _num(trace.get("d_t")),
        )
        w = path_weight(gt, path)
        weight = math.nan if w is None else w  # unknown reference length: no E_path
        return {
            "sigma": float(sigma),
            "delta": float(delta),
            "c": float(c),
            "c_star": float(delta),
            "path_len": path,
            "gt_geodesic": gt,
            "weight": weight,
            "e_path": min(max(c, 0.0), 5.0) / 5.0 * weight,
            "d_t": d_t,
            "d_t_valid": float(math.isfinite(d_t)),
            "steps_taken": float(trace.get("steps_taken") or 0),
            "num_steps": float(trace.get("num_steps") or 0),
            "stopped_early": float(bool(trace.get("stopped_early"))),
        }

    # -------------------------------------------------------------- aggregation
    def _answer_values(self, m: Mapping[str, Any]) -> tuple[float, float, float] | None:
        """(C, C*, E_path) contributions in [0, 1] of one judged episode; None = excluded."""
        path = _num(m.get("path_len"))
        if math.isinf(path) or math.isnan(path):
            if self.inf_policy == "exclude":
                return None
            return 0.0, 0.0, 0.0
        c = min(max(float(m["c"]), 0.0), 5.0) / 5.0
        cs = min(max(float(m["c_star"]), 0.0), 5.0) / 5.0
        w = path_weight(_num(m.get("gt_geodesic")), path)
        return c, cs, c * (math.nan if w is None else w)

    def _distance(self, r: EpisodeRecord) -> float | None:
        """Final goal distance of an ok record (from the trace); None = excluded."""
        t = r["trace"]
        src = t if "d_t" in t else r["metrics"]
        d = _num(src.get("d_t"))
        if src.get("d_t_valid") in (False, 0, 0.0):
            d = math.inf
        if math.isfinite(d):
            return d
        if self.inf_policy == "penalize":
            gt = _num(t.get("gt_geodesic", r["metrics"].get("gt_geodesic")))
            return gt if math.isfinite(gt) else None
        return None

    def missing_record(self, record: EpisodeRecord) -> EpisodeRecord | None:
        """EXPRESS-Bench's ``evaluation.score`` (@e8789da lines 7, 14) leaves an item out of C,
        C* and E_path when its ``path_len`` is inf and out of d_T when its ``goal_dis`` is: a
        question without a measured episode has both infinite (the export writes it so), and
        ``judge.inf_policy`` scores it (``exclude``, the paper's: out of every mean;
        ``penalize``: a failure, c = c* = 0; its d_T left out, the record has no reference
        length)."""
        return as_missing(
            record,
            {"path_len": None, "d_t": None, "d_t_valid": 0.0},
            {"d_t": None, "d_t_valid": False},
        )

    def progress_value(self, metrics: Mapping[str, float | None]) -> float | None:
        v = self._answer_values(metrics) if "c" in metrics else None
        return None if v is None else v[0]

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Per-episode C, C_star, E_path (percent; excluded episodes left out) and d_T (m)."""
        out: dict[str, dict[str, float]] = {"C": {}, "C_star": {}, "E_path": {}, "d_T": {}}
        for r in records:
            if r["status"] != "ok":
                continue
            i = str(r["episode_id"])
            if r["judge_ok"] and (v := self._answer_values(r["metrics"])) is not None:
                out["C"][i], out["C_star"][i], out["E_path"][i] = (100.0 * x for x in v)
            if (d := self._distance(r)) is not None:
                out["d_T"][i] = d
        return out

    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        ok = [r for r in records if r["status"] == "ok"]
        scored = [r for r in ok if r["judge_ok"]]
        clusters = clusters_of(ok)
        in_c = sum(1 for r in scored if self._answer_values(r["metrics"]) is not None)

        def block(rs: Sequence[EpisodeRecord]) -> dict[str, dict[str, Any]]:
            return {
                m: interval_of(v, clusters, method=interval, samples=bootstrap_samples, seed=seed)
                for m, v in self.episode_values(rs).items()
            }

        def groups(key: Literal["category", "subset"]) -> dict[str, dict[str, Any]]:
            names = sorted({str(r[key]) for r in ok if r[key] is not None})
            return {g: block([r for r in ok if str(r[key]) == g]) for g in names}

        inf_path = sum(1 for r in scored if math.isinf(_num(r["metrics"].get("path_len"))))
        inf_goal = sum(1 for r in ok if not math.isfinite(self._raw_distance(r)))
        head = block(ok)
        return {
            "headline": head,
            "metric_note": (
                "EXPRESS-Bench EAC in percent: C = mean 100*clip(sigma*delta,0,5)/5, C_star = "
                "mean 100*clip(delta,0,5)/5, E_path = mean 100*clip(c,0,5)/5*L/max(P,L) over "
                "episodes with a parsable judgement; d_T = mean final geodesic distance to the "
                f"goal (m). inf_policy={self.inf_policy}"
            ),
            "inf_policy": self.inf_policy,
            "excluded": {
                "infinite_path_len": inf_path if self.inf_policy == "exclude" else 0,
                "infinite_goal_distance": inf_goal if self.inf_policy == "exclude" else 0,
                "penalized_path_len": inf_path if self.inf_policy == "penalize" else 0,
                "penalized_goal_distance": inf_goal if self.inf_policy == "penalize" else 0,
            },
            "counts_eac": {
                "scored": len(scored),
                "in_C": in_c,
                "in_d_T": sum(1 for r in ok if self._distance(r) is not None),
                "stopped_early": sum(1 for r in ok if r["trace"].get("stopped_early")),
            },
            "by_category": groups("category"),
            "by_subset": groups("subset"),  # the split: val / train by HM3D scene number
            "sigma_histogram": {
                str(s): sum(1 for r in scored if r["metrics"].get("sigma") == s) for s in SIGMAS
            },
            "delta_histogram": {
                str(d): sum(1 for r in scored if r["metrics"].get("delta") == d)
                for d in range(1, 6)
            },
        }

    @staticmethod
    def _raw_distance(r: EpisodeRecord) -> float:
        t = r["trace"]
        src = t if "d_t" in t else r["metrics"]
        return math.inf if src.get("d_t_valid") in (False, 0, 0.0) else _num(src.get("d_t"))

    # -------------------------------------------------------------- dry run / prompts
    def estimate_requests(self, episode: Episode, prompts_dir: str | None) -> list[RequestEstimate]:
        msgs = self.messages(episode, episode.answer, prompts_dir)
        return [RequestEstimate("judge", msgs, [self.image_size])]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {PROMPT: express_prompt(PROMPT, prompts_dir)[2].record()}
