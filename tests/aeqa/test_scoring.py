"""A-EQA scoring on hand-made records: LLM-Match, l/max(l, p) with p = 0 and p = inf, a missing
reference length, the missing-prediction rules, judge failures."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from eqa_runner.benchmarks.aeqa.judge import NO_PREDICTION, AEQAJudge
from eqa_runner.errors import ConfigError
from eqa_runner.types import Episode, Prediction

L = 8.0


def ep(i="q", ref=L, cat="object recognition"):
    return Episode(i, "What is it?", "A sofa", cat, [], "00800-X", {"reference_path_length": ref})


def metrics(judge, mark, trace, ref=L):
    """The per-question metrics score() records for a judge mark (the judge model not called)."""
    path = judge.path_metrics(ep(ref=ref), trace)
    from eqa_runner.scoring.efficiency import weighted_mark

    spl = weighted_mark(mark, path.get("reference_path_length"), path.get("path_len"))
    if not path["has_path"] or math.isnan(path["reference_path_length"]):
        spl = None
    return {"score_1to5": float(mark), "llm_match": (mark - 1) / 4, **path,
            "llm_match_spl": math.nan if spl is None else spl}  # fmt: skip


def rec(i, m, *, status="ok", judge_ok=True, cat="object recognition", error=None, pred="x"):
    return {"episode_id": i, "status": status, "judge_ok": judge_ok, "metrics": m,
            "category": cat, "subset": "hm3d", "trace": {}, "error": error,
            "prediction": pred}  # fmt: skip


def explored(p, ref=L, xz=None):
    return {"path_len": p, "path_len_xz": xz, "reference_path_length": ref, "steps_taken": 3,
            "num_steps": 50, "stopped_early": True}  # fmt: skip


def test_path_weight_cases():
    j = AEQAJudge(model="offline")
    # p = 0: answered from the start pose, full score
    m0 = metrics(j, 5, explored(0.0))
    assert m0["weight"] == 1.0 and m0["llm_match_spl"] == 1.0
    # p > l: (s-1)/4 * l/p = 0.75 * 8/16
    m1 = metrics(j, 4, explored(16.0))
    assert m1["llm_match_spl"] == pytest.approx(0.75 * 0.5)
    # p = inf (an unreachable hop with policy.unreachable_hop=inf; null in a record): weight 0
    for p in (math.inf, None):
        mi = metrics(j, 5, explored(p))
        assert mi["path_infinite"] == 1.0 and mi["weight"] == 0.0 and mi["llm_match_spl"] == 0.0
    # missing reference length: no weight, no llm_match_spl (not 0)
    mn = metrics(j, 5, explored(3.0, ref=None), ref=None)
    assert math.isnan(mn["weight"]) and math.isnan(mn["llm_match_spl"])
    # the blind policy has no path at all
    mb = j.path_metrics(ep(), {"raw_reply": "A: x"})
    assert mb == {"reference_path_length": L, "has_path": 0.0}


def test_path_length_choice_and_reference_from_episode():
    geo = AEQAJudge(model="offline")
    xz = AEQAJudge(model="offline", path_length="euclidean_xz")
    t = {"path_len": 12.0, "path_len_xz": 10.0}  # no reference in the trace: the episode's
    assert geo.path_metrics(ep(), t)["path_len"] == 12.0
    m = xz.path_metrics(ep(), t)
    assert m["path_len"] == 10.0 and m["weight"] == pytest.approx(8 / 10)
    assert m["reference_path_length"] == L
    # an infinite geodesic stays infinite whatever the measure
    assert xz.path_metrics(ep(), {"path_len": None, "path_len_xz": 3.0})["weight"] == 0.0


def test_empty_prediction_is_not_judged():
    j = AEQAJudge(model="offline")
    s = asyncio.run(j.score(ep(), Prediction(answer="  ", trace=explored(2.0)), llm=None))
    assert s.ok and s.raw == NO_PREDICTION and s.metrics["missing_prediction"] == 1.0


def _records(j):
    return [
        rec("a", metrics(j, 5, explored(0.0))),  # 1.0, spl 1.0
        rec("b", metrics(j, 3, explored(16.0)), cat="world knowledge"),  # 0.5, spl 0.25
        rec("c", metrics(j, 4, explored(None))),  # 0.75, spl 0 (p = inf)
        rec("d", metrics(j, 5, explored(2.0, ref=None), ref=None)),  # 1.0, spl n/a
        rec("e", {**j.path_metrics(ep(), explored(2.0)), "missing_prediction": 1.0}, pred=""),
        rec("f", {}, status="error", error={"type": "RuntimeError", "stage": "policy"}),
        rec("g", {}, status="error", error={"type": "LLMError", "stage": "judge"}),
        rec("h", {}, judge_ok=False),  # unparsable judge reply
    ]


def test_aggregate_zero_rule():
    j = AEQAJudge(model="offline", missing_prediction="zero")
    out = j.aggregate(_records(j), bootstrap_samples=50)
    h = out["headline"]
    # a b c d + e as 0; f (an error record: never a number, issue 25), g h excluded
    assert h["llm_match"]["n"] == 5
    assert h["llm_match"]["mean"] == pytest.approx(100 * (1 + 0.5 + 0.75 + 1 + 0) / 5)
    assert h["llm_match_spl"]["n"] == 4  # d has no reference length
    assert h["llm_match_spl"]["mean"] == pytest.approx(100 * (1 + 0.25 + 0 + 0) / 4)
    c = out["counts_aeqa"]
    assert (c["judged"], c["missing_empty"], c["errors_excluded"]) == (4, 1, 1)
    assert (c["judge_failed"], c["no_reference_length"]) == (2, 1)
    assert out["by_category"]["world knowledge"]["llm_match_spl"]["mean"] == pytest.approx(25.0)
    ps = out["path_stats"]
    assert ps["infinite_paths"] == 1 and ps["zero_paths"] == 1 and ps["episodes"] == 5
    assert out["missing_prediction"] == "zero"


def test_aggregate_exclude_rule():
    j = AEQAJudge(model="offline", missing_prediction="exclude")
    h = j.aggregate(_records(j), bootstrap_samples=50)["headline"]
    assert h["llm_match"]["n"] == 4 and h["llm_match_spl"]["n"] == 3
    assert h["llm_match"]["mean"] == pytest.approx(100 * 3.25 / 4)


def test_aggregate_blind_fallback(tmp_path):
    blind = tmp_path / "blind"
    blind.mkdir()
    lines = [{"episode_id": "e", "status": "ok", "judge_ok": True, "metrics": {"score_1to5": 4}}]
    (blind / "episodes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (blind / "summary.json").write_text(json.dumps({"models": {"judge": "openai/other"}}))
    j = AEQAJudge(
        model="openai/mine", missing_prediction="blind_fallback", blind_run_dir=str(blind)
    )
    out = j.aggregate(_records(j), bootstrap_samples=50)
    h = out["headline"]
    # upstream's denominator is the blind run's questions: only e counts, with the blind mark 4
    # -> 0.75 and p = inf (spl 0); a..d, f, g, h are outside the blind run
    assert h["llm_match"]["n"] == 1 and h["llm_match"]["mean"] == pytest.approx(75.0)
    assert h["llm_match_spl"]["mean"] == 0.0
    c = out["counts_aeqa"]
    assert c["blind_fallback_used"] == 1 and c["outside_blind_run"] == 7
    assert out["published_comparability"]["comparable"] is True
    assert out["blind_fallback"]["judge_model"] == "openai/other"
    assert "openai/mine" in out["blind_fallback"]["note"]


def test_blind_fallback_needs_a_blind_run(tmp_path):
    # without a blind run the default rule cannot apply: zero, and the row is not comparable
    j = AEQAJudge(model="offline")
    assert j.config.missing_prediction == "blind_fallback" and j.applied_rule == "zero"
    assert j.comparability()["comparable"] is False
    with pytest.raises(ConfigError, match="no episodes.jsonl"):
        AEQAJudge(model="offline", missing_prediction="blind_fallback", blind_run_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="missing_prediction"):
        AEQAJudge(model="offline", missing_prediction="sometimes")


def test_blind_policy_run_has_no_spl():
    j = AEQAJudge(model="offline")
    m = {**metrics(j, 5, {"raw_reply": "A: x"}), "has_path": 0.0}
    out = j.aggregate([rec("a", m), rec("b", {}, status="error", error=None)], bootstrap_samples=10)
    # b: an error record is never a number (issue 25; it scored 0 before)
    assert out["headline"]["llm_match"]["mean"] == 100.0 and out["headline"]["llm_match"]["n"] == 1
    assert out["headline"]["llm_match_spl"] == {"mean": None, "ci95": [None, None], "n": 0}
