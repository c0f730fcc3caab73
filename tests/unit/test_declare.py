"""Judges' declarations as shared code reads them: the blind run key of A-EQA's judge is a
hashed input and not a result key, found from the judge's ``run_inputs`` alone."""

from __future__ import annotations

from pathlib import Path

from eqa_runner.run.provenance import differences, judge_input_keys, result_config
from eqa_runner.scoring.declare import Declaration, Metric, declaration_for, merged

AEQA = {"_target_": "eqa_runner.benchmarks.aeqa.judge.AEQAJudge", "blind_run_dir": "/b"}


def test_a_declared_run_input_is_hashed_not_compared():
    cfg = {"judge": AEQA, "run": {"seed": 0}}
    assert judge_input_keys(cfg) == ("judge.blind_run_dir",)
    assert "judge.blind_run_dir" not in result_config(cfg) and "run.seed" in result_config(cfg)
    d = declaration_for(cfg)
    assert d is not None and d.input_files(AEQA) == [Path("/b") / "episodes.jsonl"]
    # a moved blind run is no difference; another content hash of it is
    old = {"config": result_config(cfg), "inputs": {"judge": {"blind": "aaa"}}}
    moved = {"judge": {**AEQA, "blind_run_dir": "/c"}, "run": {"seed": 0}}
    assert differences(old, moved, {"judge": {"blind": "aaa"}}) == []
    assert differences(old, moved, {"judge": {"blind": "bbb"}}) == [
        "judge blind content hash: aaa… -> bbb…"
    ]


def test_unknown_judges_fall_back_and_declarations_merge():
    assert declaration_for({"judge": {"_target_": "no.such.Judge"}}) is None
    assert declaration_for({}) is None
    a = Declaration((Metric("x"), Metric("d", scale="metres", higher_is_better=False)))
    b = Declaration((Metric("x", scale="rate"), Metric("y", per_category=True)), (), "type")
    m = merged([a, None, b])
    assert [x.name for x in m.metrics] == ["x", "d", "y"] and m.category_label == "type"
    assert m.get("d") is not None and m.get("d").digits == 2 and m.per_category() == ["y"]
