"""``published_comparability``: whether a row can stand beside the benchmark's published rows.

Every summary has this block. A judge may say its scoring protocol differs from the published
one (its aggregate's own ``published_comparability``, e.g. a baseline it needs is absent);
on top of that, an error record is left out of the headline (the project's guarantee), while
the benchmark's own scorer would count that question as a missing prediction, so a row with
error records is not the published protocol until they are resolved: by a resume that
retries them, or by ``judge.error_records=missing``, which scores each as the benchmark's
scorer scores a question without a prediction (the judge's :meth:`~eqa_runner.scoring.base.
Judge.missing_record`: :func:`headline_records` puts it in the records the headline is
computed from; the records on disk stay error records).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from eqa_runner.scoring.base import Judge
from eqa_runner.types import EpisodeRecord

SCORED_AS_PUBLISHED = "scored as the benchmark's own scorer scores these records"
MISSING = "missing"  # judge.error_records=missing
# the metrics flag of an error record scored as a missing prediction (as_missing)
MISSING_MARK = "error_scored_as_missing"


def as_missing(
    record: Mapping[str, Any],
    metrics: Mapping[str, float | None],
    trace: Mapping[str, Any] | None = None,
) -> EpisodeRecord:
    """The error ``record`` as an ``ok`` record without a prediction, judged with ``metrics``
    (the benchmark's rule) and flagged ``MISSING_MARK``; its identity (id, scene, category,
    answer ...) kept."""
    out = {
        **dict(record),
        "status": "ok",
        "judge_ok": True,
        "prediction": None,
        "error": None,
        "judge_raw": "(an error record, scored as a missing prediction)",
        "metrics": {**metrics, MISSING_MARK: 1.0},
        "trace": dict(trace or {}),
    }
    return cast(EpisodeRecord, out)


def error_records_mode(judge: Judge) -> str:
    """The judge's ``judge.error_records`` (``excluded`` for a config without the key)."""
    return str(getattr(judge.config, "error_records", None) or "excluded")


def headline_records(
    judge: Judge, records: Sequence[EpisodeRecord]
) -> tuple[list[EpisodeRecord], int]:
    """The records a headline is computed from, and how many error records were scored as
    missing predictions: with ``judge.error_records=missing`` each error record the judge has
    a rule for (:meth:`Judge.missing_record`) is replaced by what the rule makes of it."""
    if error_records_mode(judge) != MISSING:
        return list(records), 0
    out, n = [], 0
    for r in records:
        m = judge.missing_record(r) if r["status"] == "error" else None
        out.append(r if m is None else m)
        n += m is not None
    return out, n


def published_comparability(
    judge_block: Mapping[str, Any] | None,
    errors: int,
    scored_as_missing: int = 0,
    mode: str = "excluded",
) -> dict[str, Any]:
    """The block: ``comparable``, ``error_records_excluded``, ``error_records_scored_as_missing``
    (``judge.error_records=missing``), ``scoring_comparable`` (the judge's own verdict) and a
    ``note`` naming the reason and the ways out."""
    base = dict(judge_block or {"comparable": True, "note": SCORED_AS_PUBLISHED})
    scoring_ok = base.get("comparable") is not False
    excluded = int(errors) - int(scored_as_missing)
    out = {
        "comparable": scoring_ok and excluded == 0,
        "scoring_comparable": scoring_ok,
        "error_records": mode,
        "error_records_excluded": excluded,
        "error_records_scored_as_missing": int(scored_as_missing),
    }
    said = str(base.get("note") or SCORED_AS_PUBLISHED)
    if scored_as_missing:
        said += (
            f"; {scored_as_missing} error record(s) scored as missing predictions "
            "(judge.error_records=missing), as the benchmark's own scorer scores a question "
            "without one; a resume (run.resume=true) still retries them"
        )
    if excluded == 0:
        return {**out, "note": said}
    why = (
        f"NOT comparable with the published rows: {excluded} error record(s) are left out of "
        "the headline, where the benchmark's own scorer counts each as a missing prediction. "
        "Resume (run.resume=true) to retry them, or score each as that scorer scores a "
        "missing prediction: judge.error_records=missing (on a resume or a rejudge; the "
        "export then writes them so, for the upstream scorer: python -m eqa_runner.report "
        "<run> --export <format> prints its command)"
    )
    if mode == MISSING:
        why += (
            ". judge.error_records=missing is set, but this benchmark's scorer has no rule "
            "for a missing prediction (its README says why)"
        )
    if not scoring_ok:
        why += f". Also: {base.get('note')}"
    return {**out, "note": why}


def errors_part(
    recs: Sequence[EpisodeRecord], aggregate: Mapping[str, Any], error_records: tuple[str, int]
) -> dict[str, Any]:
    """``errors_by_type``, ``errors_note`` and ``published_comparability`` of a summary."""
    errors: dict[str, int] = {}
    for r in recs:
        if r["status"] == "error":
            t = r["error"]["type"] if r["error"] else "Error"
            errors[t] = errors.get(t, 0) + 1
    n, (mode, scored) = sum(errors.values()), error_records
    note = (
        f"{n} error record(s): an error is never scored, under any scoring rule (not in the "
        "headline, not a missing prediction), unless judge.error_records=missing scores it "
        "as the benchmark's scorer scores a missing prediction; run.resume=true retries them"
    )
    if scored:
        note += f"; {scored} scored as missing predictions (judge.error_records=missing)"
    comp = published_comparability(aggregate.get("published_comparability"), n, scored, mode)
    return {"errors_by_type": errors, "errors_note": note, "published_comparability": comp}
