"""The project's HM-EQA defaults reproduce explore-eqa's own outputs (tests/golden/hmeqa: 12 case
sets scored by upstream ``run_vlm_exp.py``): the black-frame test, the black-step branch (uniform
answer, P(Yes) = 0.01, the step kept), first-letter ties, both rules' letters, the success flags
and the success rates over every episode, with accuracy on the same denominator."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eqa_runner.benchmarks.hmeqa.choice_rules import apply_rule
from eqa_runner.benchmarks.hmeqa.judge import HMEQAJudge
from eqa_runner.policies.explore import _frame_info
from eqa_runner.types import Episode, Prediction

GOLDEN = Path(__file__).parents[1] / "golden" / "hmeqa"
INPUTS = json.loads((GOLDEN / "inputs.json").read_text())
UPSTREAM = {c["name"]: c for c in json.loads((GOLDEN / "upstream.json").read_text())["case_sets"]}
CASES = [c["name"] for c in INPUTS["case_sets"]]
LETTERS = "ABCD"


def _frame(black_pixels: int) -> np.ndarray:
    w, h = INPUTS["frame"]["width"], INPUTS["frame"]["height"]
    rgb = np.full((h, w, 3), 128, np.uint8)
    rgb.reshape(-1, 3)[:black_pixels] = 0
    return rgb


def step_records(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace the exploration loop and the HM-EQA protocol record for these frames/replies."""
    out = []
    for t, s in enumerate(steps):
        black = _frame_info(_frame(s["black_pixels"]), INPUTS["black_pixel_ratio"])[1]
        rec: dict[str, Any] = {"step": t, "black": bool(black)}
        if not black:
            rec.update(answer_source="logprobs", answer_probs=s["pred"], confidence=s["rel"][0],
                       confidence_source="logprobs")  # fmt: skip
        out.append(rec)
    return out


def _record(ep: Episode, answer: str | None, steps: list[dict[str, Any]], judge: HMEQAJudge):
    trace = {"steps": steps, "choices": ["a", "b", "c", "d"]}
    s = asyncio.run(judge.score(ep, Prediction(answer=answer, trace=trace), llm=None))  # type: ignore[arg-type]
    return {"episode_id": ep.episode_id, "answer": ep.answer, "status": "ok", "judge_ok": s.ok,
            "metrics": s.metrics, "category": "c", "subset": None, "scene": ep.scene,
            "trace": trace, "error": None, "prediction": answer}  # fmt: skip


def project_case(case: dict[str, Any], answer_rule: str = "weighted"):
    judge = HMEQAJudge()
    letters, records = [], []
    for e in case["episodes"]:
        steps = step_records(e["steps"])
        got = {}
        for rule in ("weighted", "max"):
            k = apply_rule(rule, steps).index
            got[rule] = None if k is None else LETTERS[k]
        letters.append((e["id"], got["weighted"], got["max"]))
        ep = Episode(e["id"], "q?", e["answer"], "c", [], f"00000-{e['id']}", {})
        records.append(_record(ep, got[answer_rule], steps, judge))
    return letters, records, judge.aggregate(records, bootstrap_samples=10)


@pytest.mark.parametrize("name", CASES)
def test_project_reproduces_upstream(name: str) -> None:
    case = next(c for c in INPUTS["case_sets"] if c["name"] == name)
    up = UPSTREAM[name]
    letters, records, summary = project_case(case)
    mismatches = [
        (i, (w, m), (u["pred_weighted"], u["pred_max"]))
        for (i, w, m), u in zip(letters, up["episodes"], strict=True)
        if (w, m) != (u["pred_weighted"], u["pred_max"])
    ]
    assert mismatches == []
    for r, u in zip(records, up["episodes"], strict=True):
        assert r["metrics"]["success_weighted"] == float(u["success_weighted"])
        assert r["metrics"]["success_max"] == float(u["success_max"])
    head = summary["headline"]
    assert head["success_weighted"]["n"] == head["success_max"]["n"] == up["n_episodes"]
    assert head["accuracy"]["n"] == up["n_episodes"]
    assert head["success_weighted"]["mean"] == pytest.approx(up["success_weighted"], abs=1e-9)
    assert head["success_max"]["mean"] == pytest.approx(up["success_max"], abs=1e-9)
    # the run's own answer is the weighted rule's here: accuracy is success_weighted
    assert head["accuracy"]["mean"] == pytest.approx(up["success_weighted"], abs=1e-9)


def test_black_steps_as_upstream_stores_them() -> None:
    """Every step the upstream code took as black is black here, and the others are not."""
    for case in INPUTS["case_sets"]:
        for e, u in zip(case["episodes"], UPSTREAM[case["name"]]["episodes"], strict=True):
            assert [s["black"] for s in step_records(e["steps"])] == [
                s["black"] for s in u["steps"]
            ]


def test_fixture_size() -> None:
    assert len(CASES) >= 10
    assert sum(len(c["episodes"]) for c in INPUTS["case_sets"]) == 114
