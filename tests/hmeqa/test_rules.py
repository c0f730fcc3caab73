"""Upstream's two aggregate rules on hand-made step records, the protocol's per-step answer and
confidence (log-probability softmax and parsing), and the exact-match judge."""

from __future__ import annotations

import asyncio
import math

import pytest

from eqa_runner.benchmarks.hmeqa.choice_rules import apply_rule, rule_max, rule_weighted
from eqa_runner.benchmarks.hmeqa.judge import HMEQAJudge, chosen_letter, rule_metrics
from eqa_runner.benchmarks.hmeqa.protocol import (
    answer_path,
    confidence,
    confidence_from_logprobs,
    format_options,
    parse_yes_no,
)
from eqa_runner.types import Episode, Prediction


def _step(t, probs, conf, source="logprobs"):
    return {"step": t, "answer_source": source, "answer_probs": probs, "confidence": conf}


# Three steps where the rules disagree:
#   s_0 = 0.3 * [0.1, 0.7, 0.1, 0.1] -> B 0.21
#   s_1 = 0.6 * [0.5, 0.1, 0.3, 0.1] -> A 0.30  (the most confident step)
#   s_2 = 0.55 * [0.0, 0.0, 0.1, 0.9] -> D 0.495
STEPS = [
    _step(0, [0.1, 0.7, 0.1, 0.1], 0.3),
    _step(1, [0.5, 0.1, 0.3, 0.1], 0.6),
    _step(2, [0.0, 0.0, 0.1, 0.9], 0.55),
]


def test_weighted_is_the_column_max_of_confidence_weighted_distributions():
    res = apply_rule("weighted", STEPS)
    assert (res.index, res.step) == (3, 2)  # D: 0.495 beats A 0.30 and B 0.21
    # a column maximum, not a sum: five steps lean to A, one confident step says D
    steps = [_step(t, [0.6, 0.0, 0.0, 0.4], 0.5) for t in range(5)]
    steps.append(_step(5, [0.0, 0.0, 0.0, 1.0], 0.35))
    # max_t r_t p_t: A 0.30, D 0.35 -> D (summed over steps A 1.5 > D 1.35 would give A)
    assert apply_rule("weighted", steps).index == 3
    assert rule_weighted([s["answer_probs"] for s in steps], [0.5] * 5 + [0.35]).step == 5


def test_max_is_the_answer_at_the_most_confident_step():
    res = apply_rule("max", STEPS)
    assert (res.index, res.step) == (0, 1)  # step 1 (r = 0.6) answers A
    # first step on ties of the confidence (numpy argmax)
    assert rule_max([[1, 0, 0, 0], [0, 1, 0, 0]], [0.7, 0.7]).index == 0
    assert rule_max([[1, 0, 0, 0], [0, 1, 0, 0]], [0.7, 0.71]).index == 1


def test_rules_skip_unanswered_steps_and_zero_unparsable_confidence():
    steps = [
        _step(0, None, 0.99, "unparsable"),  # no answer: left out even though most confident
        _step(1, [0.0, 1.0, 0.0, 0.0], None, "parsed"),  # unparsable confidence counts as 0
        _step(2, [0.0, 0.0, 1.0, 0.0], 0.2, "parsed"),
    ]
    assert apply_rule("max", steps).index == 2 and apply_rule("max", steps).step == 2
    assert apply_rule("weighted", steps).index == 2
    assert apply_rule("max", [steps[0]]).index is None
    assert apply_rule("weighted", []).index is None
    with pytest.raises(ValueError, match="answer rule"):
        apply_rule("mean", steps)


def test_ties_go_to_the_first_letter_and_votes_is_the_named_alternative():
    one_hot = {k: [float(i == k) for i in range(4)] for k in range(4)}
    # both C (step 0) and A (steps 1, 2) at a confident step: upstream takes the first letter, A
    assert rule_weighted([one_hot[2], one_hot[0], one_hot[0]], [1.0, 1.0, 1.0]).index == 0
    assert rule_weighted([one_hot[2], one_hot[3], one_hot[3]], [1.0, 1.0, 1.0]).index == 2
    # tie_break=votes: the letter chosen more often (D)
    assert rule_weighted([one_hot[2], one_hot[3], one_hot[3]], [1.0] * 3, "votes").index == 3
    # no confident step at all: upstream's all-zero column max -> A; votes -> the most chosen
    assert rule_weighted([one_hot[3], one_hot[1], one_hot[3]], [0.0, 0.0, 0.0]).index == 0
    assert rule_weighted([one_hot[3], one_hot[1], one_hot[3]], [0.0] * 3, "votes").index == 3
    # max: the argmax of r * p at the most confident step (r = 0 there: A, as upstream)
    assert rule_max([one_hot[2]], [0.0]).index == 0
    assert rule_max([one_hot[2]], [0.0], "votes").index == 2


def test_rule_metrics_against_the_answer():
    assert rule_metrics(STEPS, "D") == {"success_weighted": 1.0, "success_max": 0.0}
    assert rule_metrics(STEPS, "A") == {"success_weighted": 0.0, "success_max": 1.0}
    # a black step only: upstream's uniform answer and P(Yes) 0.01 -> A for both rules
    black = [{"step": 0, "black": True}]
    assert rule_metrics(black, "A") == {"success_weighted": 1.0, "success_max": 1.0}
    # black=skip: no step with an answer, the episode still counts (as a failure)
    assert rule_metrics(black, "A", black="skip") == {"success_weighted": 0.0, "success_max": 0.0}
    assert rule_metrics([], "A") == {}  # a policy that did not explore


# ------------------------------------------------------------------ per-step confidence


def _lp(**probs):
    return [(k, math.log(v)) for k, v in probs.items()]


def test_confidence_softmax_over_yes_no_tokens():
    assert confidence_from_logprobs([_lp(Yes=0.6, No=0.2, Maybe=0.2)]) == pytest.approx(0.75)
    # the first position offering either label decides; case, spaces and SentencePiece marks
    pos = [_lp(**{"Sure": 0.9, ",": 0.1}), [(" yes", math.log(0.3)), ("▁NO", math.log(0.1))]]
    assert confidence_from_logprobs(pos) == pytest.approx(0.75)
    # the best of several spellings of one label; a label outside the top-k gets 0
    assert confidence_from_logprobs([[("Yes", -1.0), (" Yes", -0.5), ("No", -0.5)]]) == 0.5
    assert confidence_from_logprobs([_lp(No=0.9, Hmm=0.1)]) == 0.0
    assert (
        confidence_from_logprobs([_lp(Hmm=1.0)]) is None and confidence_from_logprobs(None) is None
    )


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("Yes", 1.0),
        ("yes.", 1.0),
        ("**Yes**, the lamp is visible", 1.0),
        ("No", 0.0),
        ("no, I can't see it", 0.0),
        ("I would say yes", 1.0),
        ("Definitely not sure; no.", 0.0),
        ("Yes and no", 1.0),  # the first word decides
        ("It could be yes or no", None),
        ("Maybe", None),
        ("", None),
        ("Nope", None),
    ],
)
def test_parse_yes_no(reply, expected):
    assert parse_yes_no(reply) == expected


def test_confidence_source_per_reply():
    assert confidence("No", [_lp(Yes=0.4, No=0.6)]) == (pytest.approx(0.4), "logprobs")
    assert confidence("Yes", None) == (1.0, "parsed")
    assert confidence("Yes", [_lp(**{"I": 1.0})]) == (1.0, "parsed")  # no label in top-k
    assert confidence("hmm", None) == (None, "unparsable")


def test_answer_path_and_options():
    assert answer_path(["logprobs", "logprobs", "unparsable"]) == "logprobs"
    assert answer_path(["parsed", "logprobs"]) == "mixed"
    assert answer_path(["unparsable"]) == "none" == answer_path([])
    pad = "(Do not choose this option)"
    assert format_options(["yes", pad, "no", pad]) == (f"A. yes\nB. {pad}\nC. no\nD. {pad}")


# ------------------------------------------------------------------ judge


def _score(pred, answer="B", steps=()):
    ep = Episode("7", "q?", answer, "state", meta={"choices": ["a", "b", "c", "d"]})
    judge = HMEQAJudge(model="openai/gpt-4o")  # a judge.model override is ignored
    assert judge.llm_overrides["model"] == "none" and not judge.needs_model
    return asyncio.run(judge.score(ep, Prediction(pred, trace={"steps": list(steps)}), None))


def test_judge_exact_match_and_unparsable():
    s = _score("B")
    assert s.ok and s.metrics == {"accuracy": 1.0, "unparsable": 0.0}
    assert _score("C").metrics["accuracy"] == 0.0
    assert _score("The answer is (B).").metrics["accuracy"] == 1.0
    none = _score(None)
    assert none.ok and none.metrics == {"accuracy": 0.0, "unparsable": 1.0}
    assert _score("A or B").metrics["unparsable"] == 1.0  # never mapped to a letter
    assert chosen_letter("e") is None and chosen_letter("d") == "D"
    with_steps = _score("A", answer="A", steps=STEPS)
    assert (
        with_steps.metrics["success_max"] == 1.0 and with_steps.metrics["success_weighted"] == 0.0
    )
