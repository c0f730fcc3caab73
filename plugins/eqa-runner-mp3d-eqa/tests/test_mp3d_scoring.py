"""MP3D-EQA's numbers: accuracy in the answer vocabulary, d_T / d_D / d_min, their aggregate."""

from __future__ import annotations

import asyncio
import math

import pytest

from eqa_runner.types import Episode, Prediction
from eqa_runner_mp3d_eqa.judge import MP3DEQAJudge
from eqa_runner_mp3d_eqa.metrics import match_answer, nav_metrics

VOCAB = ["<unk>", "black", "blue", "living room", "room", "off-white", "kitchen"]


def test_nav_metrics_are_upstreams_definitions():
    # d_0 = 5, then the agent got to 1.5 and ended at 2.0 (habitat-baselines' pacman eval)
    m = nav_metrics([5.0, 3.0, 1.5, 2.0])
    assert m == {"d_0": 5.0, "d_T": 2.0, "d_D": 3.0, "d_min": 1.5}
    assert nav_metrics([math.inf, 2.0]) is None  # an unreachable spawn point: invalid
    assert nav_metrics([None, 2.0]) is None  # (the trace writes an infinite distance as null)
    assert nav_metrics([]) is None
    assert nav_metrics([2.0, 4.0])["d_D"] == -2.0  # walking away is negative progress


@pytest.mark.parametrize(
    ("reply", "word"),
    [
        ("blue", "blue"),
        ("Blue.", "blue"),
        ("The answer is: living room", "living room"),  # the longer entry, not "room"
        ("off-white [offline placeholder]", "off-white"),
        ("kitchen\nbecause I saw a stove", "kitchen"),
        ("blue or black", None),  # two entries: no answer
        ("purple", None),
        ("", None),
        (None, None),
        ("<unk>", None),
    ],
)
def test_reply_to_vocabulary_entry(reply, word):
    assert match_answer(reply, VOCAB) == word


def _episode(token: int = 2) -> Episode:
    return Episode(
        "7",
        "what color is the sofa?",
        VOCAB[token],
        "color",
        scene="mp3d/h/h.glb",
        meta={"answer_vocab": VOCAB, "answer_token": token},
    )


def _score(answer, distances):
    judge = MP3DEQAJudge()
    pred = Prediction(answer=answer, trace={"goal_distances": distances})
    return asyncio.run(judge.score(_episode(), pred, llm=None))


def test_score_one_episode():
    s = _score("Blue", [4.0, 1.0, 2.5])
    assert s.ok and s.metrics["accuracy"] == 1.0 and s.metrics["out_of_vocab"] == 0.0
    assert (s.metrics["d_T"], s.metrics["d_D"], s.metrics["d_min"]) == (2.5, 1.5, 1.0)
    wrong = _score("black", [math.inf])
    assert wrong.metrics["accuracy"] == 0.0 and wrong.metrics["nav_valid"] == 0.0
    assert "d_T" not in wrong.metrics
    assert _score("a purple sofa", [1.0]).metrics["out_of_vocab"] == 1.0


def _record(i, metrics, scene="mp3d/a/a.glb", category="color"):
    return {
        "episode_id": str(i),
        "status": "ok",
        "judge_ok": True,
        "metrics": metrics,
        "scene": scene,
        "category": category,
        "trace": {},
    }


def test_aggregate_means_over_valid_episodes():
    recs = [
        _record(0, {"accuracy": 1.0, "nav_valid": 1.0, "d_T": 1.0, "d_D": 3.0, "d_min": 0.5}),
        _record(
            1,
            {"accuracy": 0.0, "nav_valid": 1.0, "d_T": 3.0, "d_D": 1.0, "d_min": 2.0},
            scene="mp3d/b/b.glb",
            category="location",
        ),
        _record(2, {"accuracy": 1.0, "nav_valid": 0.0, "out_of_vocab": 0.0}),
    ]
    out = MP3DEQAJudge().aggregate(recs, bootstrap_samples=50)
    h = out["headline"]
    assert h["accuracy"]["mean"] == pytest.approx(200 / 3)
    assert h["d_T"]["mean"] == 2.0 and h["d_D"]["mean"] == 2.0 and h["d_min"]["mean"] == 1.25
    assert h["d_T"]["n"] == 2 and out["excluded"]["unreachable_goal"] == 1
    assert set(out["by_category"]) == {"color", "location"}
