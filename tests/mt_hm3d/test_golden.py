"""MT-HM3D's metrics equal MemoryEQA's eval_results_on_json.py on every golden sample
(golden/README.md: how they were made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqa_runner.benchmarks.mt_hm3d import scoring as S

GOLDEN = Path(__file__).parent / "golden"
SAMPLES = json.loads((GOLDEN / "inputs.json").read_text())
REF = json.loads((GOLDEN / "reference_results.json").read_text())


def _printed(loc: dict) -> dict[str, float] | None:
    """The script's printed numbers, from its locals at return."""
    if loc["success_count"] == 0:
        return None
    out = {"success_rate": loc["success_count"] / loc["results_num"],
           "norm_success_step": loc["norm_steps"] / loc["success_count"]}  # fmt: skip
    if loc["early_count"]:
        out["early_success_rate"] = loc["early_count"] / loc["results_num"]
        out["norm_early_success_step"] = loc["norm_early_steps"] / loc["early_count"]
    return out


def test_each_sample_equals_the_reference() -> None:
    wrong = []
    for sample, ref in zip(SAMPLES, REF["per_sample"], strict=True):
        if ref["error"]:
            with pytest.raises((TypeError, IndexError)):
                S.reference_printout([sample])
            continue
        if S.question_values(sample) != ref["results"][0]:
            wrong.append((sample["meta"]["question_ind"], S.question_values(sample), ref))
        ours, theirs = S.reference_printout([sample]), _printed(ref)
        if (ours is None) != (theirs is None) or (ours and ours != pytest.approx(theirs)):
            wrong.append((sample["meta"]["question_ind"], ours, theirs))
    assert not wrong, wrong[:3]
    assert sum(r["error"] is None for r in REF["per_sample"]) > 150


def test_all_samples_aggregate_equals_the_reference() -> None:
    keep = set(REF["scorable_ids"])
    ok = [s for s in SAMPLES if s["meta"]["question_ind"] in keep]
    assert S.reference_printout(ok) == pytest.approx(_printed(REF["all_scorable"]))
    assert "成功率为22.10%" in REF["all_scorable"]["printed"]  # the printout it came with


def test_step_answer_rules_are_pinned() -> None:
    """Fails if the per-step reading of upstream's records changes."""
    assert [S.step_answer(p) for p in ("A", "a. sofa", "y", "N", "Yes", [0.1, 0.5, 0.5, 0])] == [
        "A", "a", "yes", "no", "Yes", "b",
    ]  # fmt: skip
    v = S.question_values({"meta": {"answer": "B", "max_steps": 4},
                           "step": [{"step": 0, "smx_vlm_pred": "b"},
                                    {"step": 1, "smx_vlm_pred": "B"}]})  # fmt: skip
    assert v == {"norm_early_success_step": 0.25, "norm_success_step": 0.5, "is_success": False}
    m = S.episode_metrics(["A", "b", "B"], "B", "B", 6)
    assert m == {"success": 1.0, "early_success": 1.0, "last_step_success": 1.0,
                 "norm_success_step": 0.5,
                 "norm_early_success_step": pytest.approx(2 / 6)}  # fmt: skip
