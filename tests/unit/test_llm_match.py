"""LLM-Match judge: reply parsing, prediction post-processing, aggregation."""

from __future__ import annotations

from typing import Any

import pytest

from eqa_runner.benchmarks.openeqa_em.llm_match import (
    LLMMatchJudge,
    parse_mark,
    strip_after_last_period,
)

PARSABLE = [
    ("4", 4),
    ("Your mark: 5", 5),
    ("Your mark:3", 3),
    ("**Your mark:** 2", 2),
    ("your mark: 4\nThe response matches", 4),
    ("4/5", 4),
    ("I'd rate it 3 out of 5.", 3),
    ("Score: 5", 5),
    ("Mark = 2", 2),
    ("The response is partially correct. 3", 3),
    ("5.", 5),
    (" 1 ", 1),
    ("**4**", 4),
    ("**Your mark: 4**", 4),
    ("Your mark: **3**", 3),
    ("`5`", 5),
    ("## Your mark: 3", 3),
    ("__Your mark__: 4", 4),
    ("Your mark is 3.", 3),
    ("Your mark: 4/5", 4),
    ("Rating: 2 out of 5", 2),
    ("Grade - 1", 1),
    ("Mark: 4 (mostly correct)", 4),
    ("The response matches the reference answer.\n\nYour mark: 5", 5),
    ("Your Mark: 2\n\nExplanation: the response says 3 chairs, the answer says 1.", 2),
    ("4\n\nThe response names 2 of the 3 chairs.", 4),
    ("Your mark: 4\n- lists 2 chairs instead of 3", 4),
    ("Your mark: 1 (the response says 3 chairs, the answer is 2)", 1),
]

UNPARSABLE = [
    "",
    "   ",
    "N/A",
    "Your mark: 6",
    "0",
    "Your mark: 0",
    "Your mark: 4.5",
    "4.5",
    "between 3 and 4",
    "I cannot grade this.",
    "Marks: 2 or 3",
    "Your mark: 3 or 4",
    "Your mark: 3-4",
    "Your mark: 4 out of 10",
    "The answer has 2 chairs and 3 tables",
    "10",
    "-1",
    "6/5",
]


@pytest.mark.parametrize("reply,mark", PARSABLE, ids=[repr(r)[:40] for r, _ in PARSABLE])
def test_parse_mark(reply: str, mark: int) -> None:
    assert parse_mark(reply) == mark


@pytest.mark.parametrize("reply", UNPARSABLE, ids=[repr(r)[:40] for r in UNPARSABLE])
def test_parse_mark_unparsable(reply: str) -> None:
    assert parse_mark(reply) is None


def test_parse_mark_none() -> None:
    assert parse_mark(None) is None


def test_table_size() -> None:
    assert len(PARSABLE) + len(UNPARSABLE) >= 24


@pytest.mark.parametrize(
    "pred,out",
    [
        ("It is 2.5 m", "It is 2."),
        ("A chair.", "A chair."),
        ("no period", "no period"),
        ("The sofa. It is red", "The sofa."),
        ("", ""),
    ],
)
def test_strip_after_last_period(pred: str, out: str) -> None:
    assert strip_after_last_period(pred) == out


def test_prepare_reports_cut() -> None:
    ep: Any = None
    assert LLMMatchJudge(model="offline").prepare(ep, "It is 2.5 m") == ("It is 2.", True)
    assert LLMMatchJudge(model="offline").prepare(ep, "A chair.") == ("A chair.", False)
    assert LLMMatchJudge(model="offline", strip_after_last_period=False).prepare(
        ep, "It is 2.5 m"
    ) == (
        "It is 2.5 m",
        False,
    )


def r(eid: str, mark: int | None, category: str, subset: str, status: str = "ok") -> dict[str, Any]:
    ok = mark is not None and status == "ok"
    metrics = {"score_1to5": float(mark), "llm_match": (mark - 1) / 4} if ok else {}
    return {
        "episode_id": eid,
        "status": status,
        "judge_ok": ok,
        "category": category,
        "subset": subset,
        "metrics": metrics,
    }


RECORDS = [
    r("a", 5, "object recognition", "hm3d"),
    r("b", 3, "object recognition", "scannet"),
    r("c", 1, "world knowledge", "scannet"),
    r("d", 4, "world knowledge", "hm3d"),
    r("e", None, "world knowledge", "hm3d"),  # unparsable judge reply
    r("f", None, "object recognition", "scannet", status="error"),
]


def test_aggregate_excludes_unparsable_and_errors() -> None:
    agg = LLMMatchJudge(model="offline").aggregate(RECORDS, bootstrap_samples=200, seed=1)
    head = agg["headline"]["llm_match"]
    # 100*(s-1)/4 for s = 5, 3, 1, 4 -> 100, 50, 0, 75; the unparsable one is not a 0
    assert head["n"] == 4
    assert head["mean"] == pytest.approx((100 + 50 + 0 + 75) / 4)
    lo, hi = head["ci95"]
    assert 0 <= lo <= head["mean"] <= hi <= 100
    assert agg["score_histogram"] == {"1": 1, "2": 0, "3": 1, "4": 1, "5": 1}


def test_aggregate_breakdowns() -> None:
    agg = LLMMatchJudge(model="offline").aggregate(RECORDS, bootstrap_samples=200)
    cats = agg["by_category"]
    assert list(cats) == ["object recognition", "world knowledge"]
    assert cats["object recognition"]["mean"] == pytest.approx(75.0)
    assert cats["object recognition"]["n"] == 2
    assert cats["world knowledge"]["mean"] == pytest.approx(37.5)
    subs = agg["by_subset"]
    assert subs["hm3d"] == {**subs["hm3d"], "mean": pytest.approx(87.5), "n": 2}
    assert subs["scannet"]["mean"] == pytest.approx(25.0)


def test_aggregate_nothing_scored() -> None:
    agg = LLMMatchJudge(model="offline").aggregate([r("e", None, "world knowledge", "hm3d")])
    assert agg["headline"]["llm_match"] == {"mean": None, "ci95": [None, None], "n": 0}
    assert agg["by_category"] == {}
