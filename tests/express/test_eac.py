"""EAC judge: reply parsing, per-episode metrics and the C / C* / E_path / d_T aggregates."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from eqa_runner.benchmarks.express.eac import EACJudge, parse_eac, path_weight
from eqa_runner.records import to_jsonable
from eqa_runner.types import Episode, Prediction

PARSABLE = [
    ("1, 4", (1.0, 4)),
    ("Your mark: 0.5, 3", (0.5, 3)),
    ("0.5,3", (0.5, 3)),
    ("1/2, 3", (0.5, 3)),
    ("0, 1", (0.0, 1)),
    ("1,5.", (1.0, 5)),
    ("**1, 4**", (1.0, 4)),
    ("Your mark: 1, 4 (the chair is visible and red)", (1.0, 4)),
    ("1, 4\nThe response names the object seen in the image.", (1.0, 4)),
    ("(0.5, 2)", (0.5, 2)),
    ("[1, 5]", (1.0, 5)),
    ("1.0, 5.0", (1.0, 5)),
    ("Your mark:0.5 , 3", (0.5, 3)),
    ("1/1, 4/5", (1.0, 4)),
    ("½, 2", (0.5, 2)),
    ("Grounding: 1\nCorrectness: 4", (1.0, 4)),
    ("σ = 0.5, δ = 3", (0.5, 3)),
    ("The image shows 2 chairs.\nYour mark: 0, 2", (0.0, 2)),
    ("`1, 3`", (1.0, 3)),
    ("Your marks are 1 and 5", (1.0, 5)),
    ("0.50, 4", (0.5, 4)),
    ("Score: 1; 4", (1.0, 4)),
]
UNPARSABLE = [
    "",
    None,
    "I cannot evaluate this.",
    "4",
    "Your mark: 1",
    "2, 4",  # sigma not in {0, 0.5, 1}
    "1, 6",  # delta out of range
    "1, 0",
    "0.7, 3",
    "1, 3.5",
    "4, 1",  # reversed order is not guessed
    "1/0, 3",
    "-1, 3",
]


@pytest.mark.parametrize("reply, expected", PARSABLE)
def test_parse_eac_accepts(reply, expected):
    assert parse_eac(reply) == expected


@pytest.mark.parametrize("reply", UNPARSABLE)
def test_parse_eac_rejects(reply):
    assert parse_eac(reply) is None


def test_path_weight():
    assert path_weight(4.0, 8.0) == 0.5
    assert path_weight(4.0, 2.0) == 1.0  # shorter than the reference: full weight
    assert path_weight(0.0, 0.0) == 1.0  # start at the goal, no move: decided as 1
    assert path_weight(0.0, 3.0) == 0.0
    assert path_weight(4.0, math.inf) == 0.0


def _rec(i, sigma, delta, path, gt, d_t, category="object", subset="val", judge_ok=True):
    judge = EACJudge(model="offline")
    trace = {
        "path_len": path,
        "gt_geodesic": gt,
        "d_t": d_t,
        "d_t_valid": math.isfinite(d_t),
        "steps_taken": 3,
        "num_steps": 10,
        "stopped_early": True,
    }
    metrics = judge.episode_metrics(sigma, delta, trace) if judge_ok else {}
    rec = {
        "episode_id": str(i),
        "status": "ok",
        "judge_ok": judge_ok,
        "category": category,
        "subset": subset,
        "metrics": metrics,
        "trace": trace,
    }
    return json.loads(json.dumps(to_jsonable(rec)))  # as read back from episodes.jsonl


ROWS = [  # sigma, delta, P, L, d_T, category, subset
    (1.0, 5, 4.0, 4.0, 1.0, "object", "val"),
    (0.5, 4, 10.0, 5.0, 2.5, "object", "train"),
    (0.0, 3, 2.0, 6.0, 0.0, "counting", "val"),
    (1.0, 2, math.inf, 3.0, 4.0, "counting", "val"),  # infinite path length
    (1.0, 4, 0.0, 0.0, math.inf, "state", "train"),  # zero-length path, unreachable goal
    (0.5, 5, 6.0, 3.0, 7.0, "state", "val"),
]


def _records():
    recs = [_rec(i, *row) for i, row in enumerate(ROWS)]
    recs.append(_rec(99, 1.0, 5, 1.0, 1.0, 5.5, judge_ok=False))  # unparsable judgement
    recs.append({"episode_id": "err", "status": "error", "metrics": {}, "trace": {}})
    return recs


def _expected(rows, inf_policy):
    c, cs, e, d = [], [], [], []
    for s, dl, p, gt, _dt, *_ in rows:
        if math.isinf(p):
            if inf_policy == "penalize":
                c.append(0.0), cs.append(0.0), e.append(0.0)
        else:
            cc = s * dl
            w = 1.0 if max(p, gt) == 0 else gt / max(p, gt)
            c.append(100 * np.clip(cc, 0, 5) / 5)
            cs.append(100 * np.clip(dl, 0, 5) / 5)
            e.append(100 * np.clip(cc, 0, 5) / 5 * w)
    for row in [*rows, (1.0, 5, 1.0, 1.0, 5.5)]:  # d_T also counts the unparsable episode
        gt, dt = row[3], row[4]
        if math.isfinite(dt):
            d.append(dt)
        elif inf_policy == "penalize":
            d.append(gt)
    return {"C": np.mean(c), "C_star": np.mean(cs), "E_path": np.mean(e), "d_T": np.mean(d)}


@pytest.mark.parametrize("inf_policy", ["exclude", "penalize"])
def test_aggregate_matches_formulas(inf_policy):
    judge = EACJudge(model="offline", inf_policy=inf_policy)
    agg = judge.aggregate(_records(), bootstrap_samples=200, seed=0)
    want = _expected(ROWS, inf_policy)
    for k, v in want.items():
        assert agg["headline"][k]["mean"] == pytest.approx(v), k
        lo, hi = agg["headline"][k]["ci95"]
        assert lo <= agg["headline"][k]["mean"] <= hi
    n_c = 5 if inf_policy == "exclude" else 6
    assert agg["headline"]["C"]["n"] == n_c
    assert agg["headline"]["d_T"]["n"] == (6 if inf_policy == "exclude" else 7)
    ex = agg["excluded"]
    if inf_policy == "exclude":
        assert ex["infinite_path_len"] == 1 and ex["infinite_goal_distance"] == 1
    else:
        assert ex["penalized_path_len"] == 1 and ex["penalized_goal_distance"] == 1
    # breakdowns by question type and by split use the same formulas
    state = agg["by_category"]["state"]
    rows_state = [r for r in ROWS if r[5] == "state"]
    assert state["C"]["mean"] == pytest.approx(_expected(rows_state, inf_policy)["C"])
    val = agg["by_subset"]["val"]
    rows_val = [r for r in ROWS if r[6] == "val"]
    assert val["E_path"]["mean"] == pytest.approx(_expected(rows_val, inf_policy)["E_path"])


def test_paper_formula_on_upstream_style_numbers():
    """The headline equals a direct transcription of the paper's formulas (exclude policy)."""
    rows = [(1.0, 5, 12.0, 6.0, 2.0), (0.5, 3, 3.0, 6.0, 1.0), (0.0, 1, 9.0, 9.0, 3.0)]
    recs = [_rec(i, *r) for i, r in enumerate(rows)]
    agg = EACJudge(model="offline").aggregate(recs, bootstrap_samples=0)
    c = np.array([s * d for s, d, *_ in rows])
    p, gt = np.array([r[2] for r in rows]), np.array([r[3] for r in rows])
    assert agg["headline"]["C"]["mean"] == pytest.approx(np.mean(100 * np.clip(c, 0, 5) / 5))
    e = np.mean(100 * np.clip(c, 0, 5) / 5 * gt / np.maximum(p, gt))
    assert agg["headline"]["E_path"]["mean"] == pytest.approx(e)
    assert agg["headline"]["d_T"]["mean"] == pytest.approx(2.0)


def test_running_metric_is_C():
    judge = EACJudge(model="offline")
    metrics = [r["metrics"] for r in _records() if r.get("judge_ok")]
    assert judge.running_metric(metrics) == pytest.approx(_expected(ROWS, "exclude")["C"])


def test_episode_metrics_from_trace_with_null_distances():
    m = EACJudge.episode_metrics(0.5, 4, {"path_len": None, "gt_geodesic": 3.0, "d_t": None})
    assert m["c"] == 2.0 and m["c_star"] == 4.0
    assert math.isinf(m["path_len"]) and m["weight"] == 0.0 and m["e_path"] == 0.0
    assert m["d_t_valid"] == 0.0


def test_score_offline_and_prompt():
    import asyncio

    from eqa_runner.llm import LLMClient

    judge = EACJudge(model="offline")
    ep = Episode("1", "What color is the sofa?", "Red.", "attribute", scene="00800-X")
    pred = Prediction("Red", images_for_judge=[b"\x89PNG fake"], trace={"path_len": 2.0,
                      "gt_geodesic": 4.0, "d_t": 1.0, "d_t_valid": True})  # fmt: skip
    llm = LLMClient({"model": "offline"}, role="judge")
    score = asyncio.run(judge.score(ep, pred, llm))
    assert score.ok and score.metrics["sigma"] == 1.0 and score.metrics["delta"] == 3.0
    msgs = judge.messages(ep, "Red", None)
    text = msgs[-1]["content"][0]
    assert "Question: What color is the sofa?" in text and text.rstrip().endswith("Your mark:")
