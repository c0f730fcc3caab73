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

A question without prediction — the answer is empty, or (with a blind run) it has no record at
all — is scored by ``judge.missing_prediction``:

* ``blind_fallback`` (default; 3D-Mem-AEQA-Eval's ``get-scores.py``, the scorer behind the
  published 3D-Mem rows): the denominator is every question the blind run (``judge.blind_run_dir``,
  a ``policy=blind`` run on the same questions) scored; a question without a mark takes the blind
  mark and ``p = ∞`` (weight 0); a judged question outside the blind run is not counted. Without
  ``judge.blind_run_dir`` the rule cannot apply: missing predictions score as ``zero`` and the
  summary says the row is not comparable with the published rows;
* ``zero`` (open-eqa's ``evaluate-predictions.py``: a None prediction scores 0 %): σ = 1 and
  weight 0, kept in both means;
* ``exclude`` (this project's convention elsewhere): left out of the means.

A judged question without a path length (its trace has no ``path_len``) in a run that explores keeps
its mark with weight 0 (``judge.missing_path=weight0``, upstream: ``p = ∞``), or is left out of the
``llm_match_spl`` mean (``exclude``). Marks are used as recorded, ``(σ − 1)/4`` unclipped, as
upstream (the project's judge parser only yields 1..5; a blind file may hold others).

Every rule's uses are counted in the summary. A judge failure (unparsable reply, or an error of
stage ``judge``) is excluded and counted (``judge_failed``), any other error record (data,
simulator, model endpoint, the policy failing) too (``errors_excluded``): it says the run did
not measure that question, and ``run.resume=true`` retries it. Under
``judge.error_records=missing`` an error record is scored instead as a missing prediction by the
rule (``missing_error_record``), as get-scores.py scores a question without one.
(``judge.blind_run_dir`` must be a finished ``policy=blind`` run of the same question file:
:mod:`eqa_runner.benchmarks.aeqa.blind`.)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.aeqa.blind import check_blind_source, load_blind_run
from eqa_runner.benchmarks.aeqa.blind import number_or_none as _num
from eqa_runner.benchmarks.aeqa.config import AEQAJudgeConfig as Schema
from eqa_runner.benchmarks.aeqa.path_stats import path_stats
from eqa_runner.benchmarks.openeqa_em.llm_match import LLMMatchJudge
from eqa_runner.errors import ConfigError
from eqa_runner.llm import LLMClient
from eqa_runner.records import EPISODES_FILE
from eqa_runner.scoring.aggregate import clusters_of, interval_of
from eqa_runner.scoring.base import AggregateReads
from eqa_runner.scoring.comparability import MISSING_MARK, as_missing
from eqa_runner.scoring.declare import Metric, RunInput
from eqa_runner.scoring.efficiency import path_weight
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

log = logging.getLogger(__name__)

NO_PREDICTION = "(no prediction: not judged)"
BLIND_SELF = "self"  # judge.blind_run_dir=self: the run is the blind baseline itself
HEADLINE = ("llm_match", "llm_match_spl")


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


class AEQAJudge(LLMMatchJudge):
    """LLM-Match with the A-EQA path-efficiency weight (see the module docstring)."""

    reads = frozenset({cap.QUESTION, cap.OPEN_ANSWER, cap.REFERENCE_PATH})
    aggregate_reads = AggregateReads(
        fields=frozenset({"category", "subset"}),
        metrics=frozenset(
            {
                "llm_match",
                "llm_match_spl",
                "score_1to5",
                "has_path",
                "missing_prediction",
                "path_len",
                "path_len_geodesic",
                "path_len_xz",
                "reference_path_length",
                "weight",
                "steps_taken",
                "path_infinite",
                "stopped_early",
            }
        ),
    )

    headline = "llm_match"
    metric_list = (
        Metric("llm_match", per_category=True),
        Metric("llm_match_spl", per_category=True),
        *LLMMatchJudge.metric_list[1:],  # the per-episode mark
    )
    run_inputs = (RunInput("blind_run_dir", EPISODES_FILE, "a blind run's marks (blind_fallback)"),)

    config_class = Schema
    config: Schema

    def __init__(self, config: Schema | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.blind_run_dir = (
            Path(c.blind_run_dir) if c.blind_run_dir and not self.is_blind_baseline else None
        )
        # blind_fallback without a blind run cannot apply: missing predictions score as zero
        self.applied_rule = (
            "zero"
            if c.missing_prediction == "blind_fallback" and self.blind_run_dir is None
            else c.missing_prediction
        )
        if self.applied_rule == "blind_fallback" and self.blind_run_dir is not None:
            src = self.blind_run_dir
            if not (src / EPISODES_FILE if src.is_dir() else src).is_file():
                raise ConfigError(
                    f"judge.blind_run_dir={src}: no {EPISODES_FILE} there; run the blind "
                    "baseline first (python -m eqa_runner experiment=aeqa_blind ...)."
                )

    @property
    def is_blind_baseline(self) -> bool:
        """``judge.blind_run_dir=self``: this run is the blind baseline (its own marks are the
        blind file)."""
        return self.config.blind_run_dir == BLIND_SELF

    def check_inputs(self, task_name: str | None, data: Mapping[str, Any]) -> None:
        """With ``blind_fallback``, the blind run must be a finished ``policy=blind`` run of this
        task over the same question file (:func:`.blind.check_blind_source`)."""
        if self.applied_rule == "blind_fallback" and self.blind_run_dir is not None:
            check_blind_source(self.blind_run_dir, task_name, data)

    # -------------------------------------------------------------- one question
    def path_metrics(self, episode: Episode, trace: dict[str, Any]) -> dict[str, float]:
        """p, l and the weight from the policy's trace (NaN where not applicable)."""
        ref = _num(trace.get("reference_path_length", episode.meta.get("reference_path_length")))
        if "path_len" not in trace:  # a policy that does not explore (blind): no path at all
            return {"reference_path_length": _nan(ref), "has_path": 0.0}
        geo = _num(trace.get("path_len"))  # null in a record: an infinite (unreachable) path
        geodesic = math.inf if geo is None else geo
        xz = _num(trace.get("path_len_xz"))
        p = geodesic if self.config.path_length == "geodesic" or xz is None else xz
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
        return Score(ok=True, raw=s.raw, metrics={**s.metrics, **self.judged_metrics(path, s)})

    @staticmethod
    def judged_metrics(path: dict[str, float], s: Score) -> dict[str, float]:
        """A judged question's path metrics and ``llm_match_spl`` (NaN without a path or a
        reference length)."""
        mark = int(s.metrics["score_1to5"])
        if not path["has_path"]:
            return {**path, "llm_match_spl": math.nan}
        w = path_weight(_num(path.get("reference_path_length")), path["path_len"])
        spl = None if w is None else (mark - 1) / 4 * w  # unclipped, as upstream
        return {**path, "llm_match_spl": _nan(spl)}

    # -------------------------------------------------------------- aggregation
    def missing_record(self, record: EpisodeRecord) -> EpisodeRecord | None:
        """3D-Mem-AEQA-Eval: a question without an answer in the predictions is a missing
        prediction (``get-scores.py``: the blind mark at ``p = ∞``), which is how the export
        leaves an error record; scored by ``judge.missing_prediction`` like an empty answer."""
        return as_missing(record, {"missing_prediction": 1.0, "has_path": 0.0})

    @staticmethod
    def _missing_kind(r: EpisodeRecord) -> str | None:
        """What a record without a mark is: "empty" (no answer, scored by the rule),
        "error_record" (an error record under judge.error_records=missing: scored by the rule
        too), "error" (an error record outside the judge stage: never scored, under any rule),
        else None (judged, or a judge failure)."""
        if r["status"] == "ok":
            if not r["metrics"].get("missing_prediction"):
                return None
            return "error_record" if r["metrics"].get(MISSING_MARK) else "empty"
        err = r["error"]
        return "error" if err is None or err.get("stage") != "judge" else None

    def progress_value(self, metrics: Mapping[str, float | None]) -> float | None:
        if metrics.get("missing_prediction"):
            return None if self.applied_rule == "exclude" else 0.0
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
        clusters = clusters_of([r for r, _, _ in vals])  # blind stand-ins too

        def ci(xs: dict[str, float]) -> dict[str, Any]:
            return interval_of(
                xs, clusters, method=interval, scale=100.0, samples=bootstrap_samples, seed=seed
            )

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
        """(record, llm_match, llm_match_spl) per counted question, the counts, blind scores.

        With ``blind_fallback`` and a blind run the counted questions are the blind run's (in its
        order after the records'): one without a record is a missing prediction (``not_run``)
        standing on the blind record; a record outside the blind run is left out."""
        blind: dict[str, int] = {}
        blind_model: Any = None
        blind_recs: dict[str, EpisodeRecord] = {}
        if self.applied_rule == "blind_fallback" and self.blind_run_dir is not None:
            blind, blind_model, blind_recs = load_blind_run(self.blind_run_dir)
        explores = any(r["metrics"].get("has_path") for r in records if r["status"] == "ok")
        counts = dict.fromkeys(
            (
                "judged",
                "no_reference_length",
                "no_path_length",
                "judge_failed",
                "missing_empty",
                "missing_error_record",
                "errors_excluded",
                "missing_not_run",
                "outside_blind_run",
                "blind_fallback_used",
                "blind_fallback_absent",
            ),
            0,
        )
        # per question: (record, llm_match, llm_match_spl or None); marks unclipped (upstream)
        vals: list[tuple[EpisodeRecord, float, float | None]] = []
        seen: set[str] = set()
        for r in records:
            if blind_recs and str(r["episode_id"]) not in blind_recs:
                counts["outside_blind_run"] += 1
                continue
            seen.add(str(r["episode_id"]))
            kind = self._missing_kind(r)
            if kind == "error":  # data / infrastructure / policy failure: no number at all
                counts["errors_excluded"] += 1
                continue
            v = (
                self._judged(r, explores, counts)
                if kind is None
                else self._missing(r, f"missing_{kind}", blind, explores, counts)
            )
            if v is not None:
                vals.append(v)
        for i, r in blind_recs.items():
            if i not in seen and (v := self._missing(r, "missing_not_run", blind, True, counts)):
                vals.append(v)
        return vals, counts, blind, blind_model

    def _judged(
        self, r: EpisodeRecord, explores: bool, counts: dict[str, int]
    ) -> tuple[EpisodeRecord, float, float | None] | None:
        if (
            r["status"] != "ok"
            or not r["judge_ok"]
            or (lm := _num(r["metrics"].get("llm_match"))) is None
        ):
            counts["judge_failed"] += 1
            return None
        m = r["metrics"]
        spl = _num(m.get("llm_match_spl"))
        if spl is None and m.get("has_path"):
            counts["no_reference_length"] += 1
        elif spl is None and explores:  # judged, but the trace has no path length
            counts["no_path_length"] += 1
            spl = 0.0 if self.config.missing_path == "weight0" else None
        counts["judged"] += 1
        return r, lm, spl

    def _missing(
        self,
        r: EpisodeRecord,
        kind: str,
        blind: dict[str, int],
        explores: bool,
        counts: dict[str, int],
    ) -> tuple[EpisodeRecord, float, float | None] | None:
        counts[kind] += 1
        if self.applied_rule == "exclude":
            return None
        if self.applied_rule == "zero":
            return r, 0.0, 0.0 if explores else None
        mark = blind.get(str(r["episode_id"]))
        counts["blind_fallback_used" if mark is not None else "blind_fallback_absent"] += 1
        return r, 0.0 if mark is None else (mark - 1) / 4, 0.0  # p = inf: weight 0

    def comparability(self) -> dict[str, Any]:
        """Whether this row can stand beside the published A-EQA rows (3D-Mem's scorer)."""
        why = []
        if self.config.missing_prediction != "blind_fallback":
            why.append(
                f"judge.missing_prediction={self.config.missing_prediction} (published: "
                "blind_fallback)"
            )
        elif self.blind_run_dir is None and not self.is_blind_baseline:
            why.append(
                "scored without a blind run (judge.blind_run_dir is unset), so missing "
                "predictions scored 0 instead of the blind answer's mark"
            )
        if self.config.missing_path != "weight0":
            why.append(f"judge.missing_path={self.config.missing_path} (published: weight0)")
        if not why:
            what = "the blind baseline" if self.is_blind_baseline else "scored"
            return {"comparable": True, "note": f"{what} as the published rows (3D-Mem-AEQA-Eval)"}
        reasons = "; ".join(why)
        note = (
            f"NOT comparable with the published A-EQA rows: {reasons}. Run "
            "experiment=aeqa_published (eqa_runner/benchmarks/aeqa/README.md)."
        )
        return {"comparable": False, "note": note}

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
                f"p = {self.config.path_length} path length, l = reference path length). Missing "
                f"predictions: {self.applied_rule}. {self.comparability()['note']}"
            ),
            "missing_prediction": self.config.missing_prediction,
            "missing_prediction_applied": self.applied_rule,
            "missing_path": self.config.missing_path,
            "published_comparability": self.comparability(),
            "path_length": self.config.path_length,
            "counts_aeqa": counts,
            "by_category": groups("category"),
            "by_subset": groups("subset"),
            "path_stats": path_stats(records),
            "score_histogram": {
                str(s): sum(1 for r, _, _ in vals if _num(r["metrics"].get("score_1to5")) == s)
                for s in range(1, 6)
            },
        }
        if self.applied_rule == "blind_fallback":
            out["blind_fallback"] = {
                "source": str(self.blind_run_dir),
                "judge_model": blind_model,
                "questions": len(blind),
            }
            mine = self.llm_overrides.get("model")
            if blind_model and mine and blind_model != mine:
                out["blind_fallback"]["note"] = (
                    f"the blind run was judged by {blind_model}, this run by {mine}"
                )
        return out
