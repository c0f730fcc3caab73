"""VSI-Bench's scorer equals lmms-eval's on every golden case (golden/README.md: how they were
made), and its constants are the reference's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.benchmarks.vsibench import scoring as S

GOLDEN = Path(__file__).parent / "golden"
INPUTS = json.loads((GOLDEN / "inputs.json").read_text())
REFERENCE = json.loads((GOLDEN / "reference_scores.json").read_text())
BY_ID = {r["id"]: r for r in REFERENCE["per_question"]}


def _ours(case: dict) -> float | str:
    try:
        return S.score_reply(case["question_type"], case["prediction"], case["ground_truth"])
    except ZeroDivisionError:
        return "ZeroDivisionError"


def test_each_case_equals_the_reference() -> None:
    """Case by case (one test, the mismatches listed): every answer shape on every type."""
    wrong = []
    for case in INPUTS:
        ref, ours = BY_ID[case["id"]], _ours(case)
        want = ref.get("error", ref.get("score"))
        same = ours == want if isinstance(want, str) else ours == pytest.approx(want, abs=1e-12)
        if not same:
            wrong.append((case, want, ours))
    assert not wrong, wrong[:5]
    assert len(INPUTS) == len(BY_ID) > 1000


def _rows(cases):
    return [(c["question_type"], v) for c in cases if not isinstance(v := _ours(c), str)]


def test_aggregate_equals_the_reference() -> None:
    means = S.type_means(_rows(INPUTS))
    ref = REFERENCE["aggregate_all"]
    for qtype, value in means.items():
        key = next(k for k in ref if k.startswith(qtype + "_") or k == qtype + "_accuracy")
        assert value == pytest.approx(ref[key], abs=1e-12), qtype
    assert len(means) == len(ref) - 1  # all types + overall
    assert S.overall(means) == pytest.approx(ref["overall"], abs=1e-12)
    assert round(S.overall(means), 6) == REFERENCE["overall_all"]


def test_subset_aggregate_equals_the_reference() -> None:
    keep = [c for c in INPUTS if c["question_type"].startswith("object_rel_direction")
            or c["question_type"] == "object_counting"]  # fmt: skip
    means = S.type_means(_rows(keep))
    ref = REFERENCE["aggregate_directions_and_counting"]
    assert means["object_rel_direction"] == pytest.approx(ref["object_rel_direction_accuracy"])
    assert S.overall(means) == pytest.approx(ref["overall"], abs=1e-12)


def test_macro_weights_give_the_overall_mean() -> None:
    rows = _rows(INPUTS)
    w = S.macro_weights(t for t, _ in rows)
    assert np.mean(w) == pytest.approx(1.0)
    weighted = sum(wi * v for wi, (_, v) in zip(w, rows, strict=True)) / len(rows)
    assert weighted == pytest.approx(S.overall(S.type_means(rows)), abs=1e-12)


def test_the_scoring_rules_are_pinned() -> None:
    """Fails if the thresholds, the fuzzy match or the merged-direction mean change."""
    assert S.MRA_THRESHOLDS.tolist() == pytest.approx([0.5 + 0.05 * i for i in range(10)])
    assert len(S.MRA_THRESHOLDS) == 10
    # |p-g|/g = 0.1 passes the thresholds .50 .. .90 (9 of 10); 0.5 passes only .50
    assert S.mean_relative_accuracy(1.1, 1.0) == pytest.approx(0.9)
    assert S.mean_relative_accuracy(1.5, 1.0) == pytest.approx(0.1)
    assert S.mean_relative_accuracy(1.51, 1.0) == 0.0
    assert [S.choice_score(r, "B") for r in ("B.", "b", "b) sofa", " B", "B is it")] == [
        1.0, 1.0, 0.0, 0.0, 1.0,
    ]  # fmt: skip
    means = S.type_means(
        [("object_rel_direction_easy", 1.0), ("object_rel_direction_easy", 0.0),
         ("object_rel_direction_medium", 1.0), ("object_rel_direction_hard", 0.0),
         ("object_counting", 0.25)]
    )  # fmt: skip
    assert means == {"object_counting": 0.25, "object_rel_direction": pytest.approx(0.5)}
    assert S.overall(means) == pytest.approx(0.375)
