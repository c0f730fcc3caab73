"""A-EQA scoring (OpenEQA active mode): LLM-Match and its path-efficiency-weighted form.

Per question, with σ the judge's mark 1..5 (LLM-Match exactly as in EM-EQA: same prompts,
parsing, re-ask and pinned judge), ``l`` the reference path length and ``p`` the agent's::

    llm_match     = (σ − 1) / 4
    llm_match_spl = (σ − 1) / 4 · l / max(l, p)        (eqa_runner.scoring.efficiency)

The headline reports both as percentages (means over the questions, 95% bootstrap intervals),
per category too, with path statistics. ``p`` comes from the policy's trace: the summed geodesic
hop lengths (``judge.path_length=geodesic``, default) or the hops' top-down straight lengths
(``euclidean_xz``, 3D-Mem's measure); ``l`` from the trace (the task's reference length) or the
episode. A policy that does not move (``blind``) has no ``p``: its ``llm_match_spl`` is n/a.

A question without prediction — the answer is empty, or the policy failed on it (an error record
of stage ``policy``) — is scored by ``judge.missing_prediction``:

* ``zero`` (default; open-eqa's ``evaluate-predictions.py``: a None prediction scores 0 %):
  σ = 1 and weight 0, kept in both means;
* ``blind_fallback`` (3D-Mem's A-EQA scorer): σ = the blind-answer mark of that question from
  ``judge.blind_run_dir`` (a ``policy=blind`` run on the same questions) and ``p = ∞`` (weight 0);
  a question the blind run did not score counts as ``zero``;
* ``exclude`` (this project's convention elsewhere): left out of the means.

Every rule's uses are counted in the summary. A judge failure (unparsable reply, or an error
record of stage ``judge``) is never a missing prediction: it is excluded and counted.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.aeqa.config import AEQA_MISSING_RULES, AEQA_PATH_LENGTHS
from eqa_runner.benchmarks.aeqa.config import AEQAJudgeConfig as Schema
from eqa_runner.benchmarks.openeqa_em.llm_match import LLMMatchJudge
from eqa_runner.errors import ConfigError
from eqa_runner.llm import LLMClient
from eqa_runner.records import EPISODES_FILE, SUMMARY_FILE, final_records, read_records
from eqa_runner.scoring.aggregate import clusters_of, interval_of
from eqa_runner.scoring.efficiency import llm_match_spl, path_weight
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

log = logging.getLogger(__name__)

NO_PREDICTION = "(no prediction: not judged)"
HEADLINE = ("llm_match", "llm_match_spl")


def _num(v: Any) -> float | None:
    """A finite float, or None (null / missing / NaN / not a number)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


def load_blind_scores(source: Path) -> tuple[dict[str, int], str | None]:
    """{question_id: mark 1..5} of a blind run's ok, judged records (``source``: its run dir or
    one of its ``episodes*.jsonl``), and the judge model its summary names (if any)."""
    if source.is_dir():
        jsonl, summary = source / EPISODES_FILE, source / SUMMARY_FILE
    else:  # episodes.jsonl / episodes.rejudged-<tag>.jsonl beside summary[.rejudged-<tag>].json
        jsonl = source
        summary = source.with_name(source.name.replace("episodes", "summary", 1)).with_suffix(
            ".json"
        )
    recs = final_records(read_records(jsonl))
    scores = {
        i: int(s)
        for i, r in recs.items()
        if r["status"] == "ok" and r["judge_ok"] and (s := _num(r["metrics"].get("score_1to5")))
    }
    model = None
    if summary.is_file():
        try:
            model = json.loads(summary.read_text()).get("models", {}).get("judge")
        except (OSError, json.JSONDecodeError):
            model = None
    return scores, model


class AEQAJudge(LLMMatchJudge):
    """LLM-Match with the A-EQA path-efficiency weight (see the module docstring)."""

    reads = frozenset({cap.QUESTION, cap.OPEN_ANSWER, cap.REFERENCE_PATH})

    name = "aeqa"
    headline = "llm_match"

    def __init__(
        self,
        name: str = Schema.name,
        missing_prediction: str = Schema.missing_prediction,
        blind_run_dir: str | None = Schema.blind_run_dir,
        path_length: str = Schema.path_length,
        strip_after_last_period: bool = Schema.strip_after_last_period,
        reask_unparsable: bool = Schema.reask_unparsable,
        **llm: Any,
    ) -> None:
        super().__init__(name, strip_after_last_period, reask_unparsable, **llm)
        if missing_prediction not in AEQA_MISSING_RULES:
            raise ConfigError(
                f"judge.missing_prediction={missing_prediction}: expected one of "
                f"{', '.join(AEQA_MISSING_RULES)}"
            )
        if path_length not in AEQA_PATH_LENGTHS:
            raise ConfigError(
                f"judge.path_length={path_length}: expected one of {', '.join(AEQA_PATH_LENGTHS)}"
            )
        self.missing_prediction = missing_prediction
        self.path_length = path_length
        self.blind_run_dir = Path(blind_run_dir) if blind_run_dir else None
        if missing_prediction == "blind_fallback":
            src = self.blind_run_dir
            if src is None:
                raise ConfigError(
                    "judge.missing_prediction=blind_fallback needs judge.blind_run_dir: the run "
                    "dir of a policy=blind run on the same questions (experiment=aeqa_blind)."
                )
            if not (src / EPISODES_FILE if src.is_dir() else src).is_file():
                raise ConfigError(
                    f"judge.blind_run_dir={src}: no {EPISODES_FILE} there; run the blind "
                    "baseline first (python -m eqa_runner experiment=aeqa_blind ...)."
                )

    # -------------------------------------------------------------- one question
    def path_metrics(self, episode: Episode, trace: dict[str, Any]) -> dict[str, float]:
        """p, l and the weight from the policy's trace (NaN where not applicable)."""
        ref = _num(trace.get("reference_path_length", episode.meta.get("reference_path_length")))
        if "path_len" not in trace:  # a policy that does not explore (blind): no path at all
            return {"reference_path_length": _nan(ref), "has_path": 0.0}
        geo = _num(trace.get("path_len"))  # null in a record: an infinite (unreachable) path
        geodesic = math.inf if geo is None else geo
        xz = _num(trace.get("path_len_xz"))
        p = geodesic if self.path_length == "geodesic" or xz is None else xz
        if math.isinf(geodesic):
            p = math.inf
        w = path_weight(ref, p)
        return {
            "has_path": 1.0,
            "path_len": p,
            "path_len_geodesic": geodesic,
            "path_len_xz": _nan(xz),
            "reference_path_length": _nan(ref),
            "weight": _nan(w),
            "path_infinite": float(math.isinf(p)),
            "steps_taken": float(trace.get("steps_taken") or 0),
            "num_steps": float(trace.get("num_steps") or 0),
            "stopped_early": float(bool(trace.get("stopped_early"))),
        }

    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        path = self.path_metrics(episode, prediction.trace)
        if not (prediction.answer or "").strip():
            return Score(ok=True, raw=NO_PREDICTION, metrics={**path, "missing_prediction": 1.0})
        s = await super().score(episode, prediction, llm, prompts_dir)
        if not s.ok:
            return s
        mark = int(s.metrics["score_1to5"])
        ref = _num(path.get("reference_path_length"))
        spl = llm_match_spl(mark, ref, path["path_len"]) if path["has_path"] else None
        return Score(ok=True, raw=s.raw, metrics={**s.metrics, **path, "llm_match_spl": _nan(spl)})

    # -------------------------------------------------------------- aggregation
    def _missing_kind(self, r: EpisodeRecord) -> str | None:
        """Why a record has no prediction to judge ("empty", "policy_error"), else None."""
        if r["status"] == "ok":
            return "empty" if r["metrics"].get("missing_prediction") else None
        err = r["error"]
        return "policy_error" if err is None or err.get("stage") != "judge" else None

    def progress_value(self, metrics: Mapping[str, float | None]) -> float | None:
        if metrics.get("missing_prediction"):
            return None if self.missing_prediction == "exclude" else 0.0
        return metrics.get("llm_match")

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Per-question llm_match and llm_match_spl (in %), missing predictions by the rule."""
        vals = self._values(records)[0]
        return {
            "llm_match": {str(r["episode_id"]): 100.0 * lm for r, lm, _ in vals},
            "llm_match_spl": {str(r["episode_id"]): 100.0 * s for r, _, s in vals if s is not None},
        }

    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        vals, counts, blind, blind_model = self._values(records)
        clusters = clusters_of(records)

        def ci(xs: dict[str, float]) -> dict[str, Any]:
            return interval_of(xs, clusters, method=interval, scale=100.0,
                               samples=bootstrap_samples, seed=seed)  # fmt: skip

        def block(vs: Sequence[tuple[EpisodeRecord, float, float | None]]) -> dict[str, Any]:
            return {
                "llm_match": ci({str(r["episode_id"]): v for r, v, _ in vs}),
                "llm_match_spl": ci({str(r["episode_id"]): s for r, _, s in vs if s is not None}),
            }

        def groups(key: str) -> dict[str, dict[str, Any]]:
            names = sorted({str(r.get(key)) for r, _, _ in vals if r.get(key) is not None})
            return {g: block([v for v in vals if str(v[0].get(key)) == g]) for g in names}

        return self._summary(records, vals, counts, blind, blind_model, block(vals), groups)

    def _values(
        self, records: Sequence[EpisodeRecord]
    ) -> tuple[
        list[tuple[EpisodeRecord, float, float | None]], dict[str, int], dict[str, int], Any
    ]:
        """(record, llm_match, llm_match_spl) per counted question, the counts, blind scores."""
        blind: dict[str, int] = {}
        blind_model = None
        if self.missing_prediction == "blind_fallback" and self.blind_run_dir is not None:
            blind, blind_model = load_blind_scores(self.blind_run_dir)
        explores = any(r["metrics"].get("has_path") for r in records if r["status"] == "ok")
        counts = {"judged": 0, "no_reference_length": 0, "judge_failed": 0,
                  "missing_empty": 0, "missing_policy_error": 0, "blind_fallback_used": 0,
                  "blind_fallback_absent": 0}  # fmt: skip
        # per question: (record, llm_match in [0,1], llm_match_spl in [0,1] or None)
        vals: list[tuple[EpisodeRecord, float, float | None]] = []
        for r in records:
            kind = self._missing_kind(r)
            if kind is None:
                if r["status"] != "ok" or not r["judge_ok"]:
                    counts["judge_failed"] += 1
                    continue
                m = r["metrics"]
                lm = _num(m.get("llm_match"))
                if lm is None:
                    counts["judge_failed"] += 1
                    continue
                spl = _num(m.get("llm_match_spl"))
                if spl is None and m.get("has_path"):
                    counts["no_reference_length"] += 1
                counts["judged"] += 1
                vals.append((r, lm, spl))
                continue
            counts[f"missing_{kind}"] += 1
            if self.missing_prediction == "exclude":
                continue
            lm = 0.0
            if self.missing_prediction == "blind_fallback":
                mark = blind.get(r["episode_id"])
                counts["blind_fallback_used" if mark else "blind_fallback_absent"] += 1
                lm = 0.0 if mark is None else (min(max(mark, 1), 5) - 1) / 4
            vals.append((r, lm, 0.0 if explores else None))

        return vals, counts, blind, blind_model

    def _summary(
        self,
        records: Sequence[EpisodeRecord],
        vals: list[tuple[EpisodeRecord, float, float | None]],
        counts: dict[str, int],
        blind: dict[str, int],
        blind_model: Any,
        headline: dict[str, Any],
        groups: Any,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "headline": headline,
            "metric_note": (
                "A-EQA in percent over the questions: llm_match = mean 100*(s-1)/4 (LLM-Match); "
                "llm_match_spl = mean 100*(s-1)/4 * l/max(l, p) (efficiency-weighted LLM-Match; "
                f"p = {self.path_length} path length, l = reference path length). Missing "
                f"predictions: {self.missing_prediction}."
            ),
            "missing_prediction": self.missing_prediction,
            "path_length": self.path_length,
            "counts_aeqa": counts,
            "by_category": groups("category"),
            "by_subset": groups("subset"),
            "path_stats": self.path_stats(records),
            "score_histogram": {
                str(s): sum(1 for r, _, _ in vals if _num(r["metrics"].get("score_1to5")) == s)
                for s in range(1, 6)
            },
        }
        if self.missing_prediction == "blind_fallback":
            out["blind_fallback"] = {"source": str(self.blind_run_dir), "judge_model": blind_model,
                                     "questions": len(blind)}  # fmt: skip
            mine = self.llm_overrides.get("model")
            if blind_model and mine and blind_model != mine:
                out["blind_fallback"]["note"] = (
                    f"the blind run was judged by {blind_model}, this run by {mine}"
                )
        return out

    @staticmethod
    def path_stats(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        """Path lengths (m), weights and steps of the ok records that explored."""
        ms = [r["metrics"] for r in records if r["status"] == "ok" and r["metrics"].get("has_path")]

        def summary(key: str) -> dict[str, Any]:
            xs = [v for m in ms if (v := _num(m.get(key))) is not None and math.isfinite(v)]
            if not xs:
                return {"mean": None, "median": None, "min": None, "max": None, "n": 0}
            return {"mean": statistics.fmean(xs), "median": statistics.median(xs),
                    "min": min(xs), "max": max(xs), "n": len(xs)}  # fmt: skip

        return {
            "episodes": len(ms),
            "path_len": summary("path_len"),
            "path_len_geodesic": summary("path_len_geodesic"),
            "path_len_xz": summary("path_len_xz"),
            "reference_path_length": summary("reference_path_length"),
            "weight": summary("weight"),
            "steps_taken": summary("steps_taken"),
            "infinite_paths": sum(1 for m in ms if m.get("path_infinite")),
            "zero_paths": sum(1 for m in ms if _num(m.get("path_len")) == 0.0),
            "stopped_early": sum(1 for m in ms if m.get("stopped_early")),
        }
