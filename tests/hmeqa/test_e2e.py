"""HM-EQA end to end on the demo apartments against the local model server: the logprob path
and the parse path (a provider without log-probabilities), both scored; resume; the report."""

from __future__ import annotations

import json

import pytest

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides

KEY = r'([^\n"]*\?)'  # the question: every question has its own per-step counter
ANSWER_PROBS = [
    {"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1},
    {"C": 0.45, "B": 0.4, "A": 0.1, "D": 0.05},
    {"A": 0.9, "B": 0.05, "C": 0.03, "D": 0.02},
]
YES_PROBS = [{"No": 0.8, "Yes": 0.2}, {"Yes": 0.9, "No": 0.1}, {"Yes": 0.85, "No": 0.15}]
# steps 0, 1, 2: the model answers A, C, A; confidences 0.2, 0.9, 0.85 (parsed: No, Yes, Yes).
# max rule: t* = 1 -> C (both paths). weighted: logprobs max_t r_t p_t = A 0.765 > C 0.405 -> A;
# parsed: A and C both chosen at a confident step, A chosen more often -> A.
RULES = [
    {"pattern": r"How many.*Reply with the letter", "reply": "I cannot tell from here."},
    {"pattern": "Reply with the letter", "key": KEY, "reply": ["A", "C", "A"],
     "token_probs": ANSWER_PROBS},
    {"pattern": "Reply with Yes or No", "key": KEY, "reply": ["No", "Yes", "Yes"],
     "token_probs": YES_PROBS},
]  # fmt: skip


def _overrides(demo, srv, *extra):
    return [
        "task=hmeqa",
        "policy=fbe",
        f"task.data_dir={demo}",
        "policy.max_steps=3",
        "sim.width=96",
        "sim.height=72",
        "run.workers=4",
        "run.cache=false",
        "run.bootstrap_samples=100",
        *server_overrides(srv),
        *extra,
    ]


def _expected(recs, letter):
    counts = [r for r in recs if not r["question"].startswith("How many")]
    return 100.0 * sum(r["answer"] == letter for r in counts) / len(recs)


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "parsed"])
@pytest.mark.slow
def test_both_paths_scored(tmp_path, compose_cfg, llm_server, hmeqa_demo, logprobs):
    llm_server.configure(rules=RULES, logprobs=logprobs)
    out_dir = tmp_path / "run"
    run(compose_cfg(_overrides(hmeqa_demo, llm_server), out=out_dir))
    summary = json.loads((out_dir / "summary.json").read_text())
    recs = read_records(out_dir / "episodes.jsonl")
    assert len(recs) == 10 and all(r["status"] == "ok" and r["judge_ok"] for r in recs)
    path = "logprobs" if logprobs else "parsed"
    counting = [r for r in recs if r["question"].startswith("How many")]
    others = [r for r in recs if r not in counting]
    assert counting and others
    for r in others:
        t = r["trace"]
        assert t["steps_asked"] == 3 and t["answer_path"] == path
        assert t["answer_sources"] == {path: 3} and t["confidence_sources"] == {path: 3}
        assert t["rule_answers"] == {"max": "C", "weighted": "A"} and t["answer_step"] == 1
        assert r["prediction"] == "C"  # the default rule: max
        conf = [s["confidence"] for s in t["steps"]]
        assert conf == ([0.2, 0.9, 0.85] if logprobs else [0.0, 1.0, 1.0])
        if logprobs:
            assert t["steps"][1]["answer_probs"] == pytest.approx([0.1, 0.4, 0.45, 0.05])
        else:
            assert t["steps"][1]["answer_probs"] == [0.0, 0.0, 1.0, 0.0]
    for r in counting:  # unparsable at every step: counted, never scored as a choice
        assert r["prediction"] is None and r["trace"]["answer_path"] == "none"
        assert r["metrics"]["unparsable"] == 1.0 and r["metrics"]["accuracy"] == 0.0
        assert r["metrics"]["success_max"] == 0.0 == r["metrics"]["success_weighted"]
    head = summary["headline"]
    assert head["accuracy"]["mean"] == pytest.approx(_expected(recs, "C"))
    assert head["success_max"]["mean"] == pytest.approx(_expected(recs, "C"))
    assert head["success_weighted"]["mean"] == pytest.approx(_expected(recs, "A"))
    answers = summary["answers"]
    assert answers["unparsable"] == len(counting) and answers["answered"] == len(others)
    assert answers["answer_paths"] == {path: len(others), "none": len(counting)}
    assert summary["models"]["judge"] == "none" and summary["counts"]["scored"] == 10
    # two calls per step, each with the frame; the answer step and the judge call no model
    assert len(llm_server.requests) == 10 * 3 * 2
    body = llm_server.requests[0]["body"]
    assert (body["logprobs"], body["top_logprobs"]) == (True, 20)
    assert all(
        any(p.get("type") == "image_url" for p in q["body"]["messages"][0]["content"])
        for q in llm_server.requests
    )


@pytest.mark.slow
def test_resume_and_report(tmp_path, compose_cfg, llm_server, hmeqa_demo, capsys):
    from eqa_runner.report.cli import main as report

    llm_server.configure(rules=RULES)
    out_dir = tmp_path / "run"
    run(compose_cfg(_overrides(hmeqa_demo, llm_server, "run.limit=4"), out=out_dir))
    assert len(read_records(out_dir / "episodes.jsonl")) == 4
    n = len(llm_server.requests)
    run(compose_cfg(_overrides(hmeqa_demo, llm_server, "run.resume=true"), out=out_dir))
    assert len(llm_server.requests) - n == 6 * 3 * 2  # only the 6 new episodes ran
    assert len(read_records(out_dir / "episodes.jsonl")) == 10
    capsys.readouterr()
    assert report([str(out_dir), "--by", "category"]) == 0
    text = capsys.readouterr().out
    for word in ("hmeqa", "accuracy", "success_weighted", "success_max", "location", "count"):
        assert word in text, word
    on_disk = json.loads((out_dir / "summary.json").read_text())
    assert on_disk["counts"]["ok"] == 10 and on_disk["headline"]["accuracy"]["n"] == 10
