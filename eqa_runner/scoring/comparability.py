"""``published_comparability``: whether a row can stand beside the benchmark's published rows.

Every summary has this block. A judge may say its scoring protocol differs from the published
one (its aggregate's own ``published_comparability``, e.g. a baseline it needs is absent);
on top of that, an error record is left out of the headline (the project's guarantee), while
the benchmark's own scorer would count that question as a missing prediction, so a row with
error records is not the published protocol until they are resolved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SCORED_AS_PUBLISHED = "scored as the benchmark's own scorer scores these records"


def published_comparability(judge_block: Mapping[str, Any] | None, errors: int) -> dict[str, Any]:
    """The block: ``comparable``, ``error_records_excluded``, ``scoring_comparable`` (the
    judge's own verdict) and a ``note`` naming the reason and the ways out."""
    base = dict(judge_block or {"comparable": True, "note": SCORED_AS_PUBLISHED})
    scoring_ok = base.get("comparable") is not False
    out = {"comparable": scoring_ok and errors == 0, "scoring_comparable": scoring_ok,
           "error_records_excluded": int(errors)}  # fmt: skip
    if errors == 0:
        return {**out, "note": str(base.get("note") or SCORED_AS_PUBLISHED)}
    why = (f"NOT comparable with the published rows: {errors} error record(s) are left out of "
           "the headline, where the benchmark's own scorer counts each as a missing prediction. "
           "Resume (run.resume=true) to retry them, or score the export with the upstream "
           "scorer (python -m eqa_runner.report <run> --export <format>; it prints the "
           "command), which scores them as missing predictions")  # fmt: skip
    if not scoring_ok:
        why += f". Also: {base.get('note')}"
    return {**out, "note": why}
