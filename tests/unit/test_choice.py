"""Multiple-choice letters from replies (parse table) and from token log-probabilities."""

from __future__ import annotations

import math

import pytest

from eqa_runner.llm.choice import choice_from_logprobs, parse_choice, pick, softmax_letters

OPTIONS = ["the kitchen", "the bedroom", "the living room", "(Do not choose this option)"]

PARSE_TABLE = [
    ("B", "B"),
    ("b", "B"),
    ("C.", "C"),
    ("(D)", "D"),
    ("A) the kitchen", "A"),
    ("B: the bedroom", "B"),
    ("**C**", "C"),
    ("Answer: B", "B"),
    ("answer: c", "C"),
    ("The answer is (C).", "C"),
    ('The correct answer is: "D"', "D"),
    ("Option A is correct.", "A"),
    ("I choose D", "D"),
    ("I'd go with B.", "B"),
    ("I think it's C", "C"),
    ("It is A.", "A"),
    ("B\nExplanation: a chair is next to the bed.", "B"),
    ("(A) The kitchen, because I can see a stove.", "A"),
    ("The sofa is in the living room.", "C"),
    ("the bedroom", "B"),
    ("a", "A"),
    # unparsable: none, several, hedged, out of range, prose article
    ("", None),
    ("   ", None),
    ("A or B", None),
    ("It could be B or C.", None),
    ("Both A and C are possible", None),
    ("A/B", None),
    ("E", None),
    ("None of the options.", None),
    ("A sofa is next to the window.", None),
    ("I cannot tell from this view.", None),
    ("I choose a red one", None),
    ("The answer is B, no wait, D.", None),
]


@pytest.mark.parametrize("reply,letter", PARSE_TABLE)
def test_parse_table(reply, letter):
    assert parse_choice(reply, OPTIONS) == letter


def test_parse_table_is_large():
    assert len(PARSE_TABLE) >= 20 and sum(x is None for _, x in PARSE_TABLE) >= 8


def test_softmax_over_letters():
    p = softmax_letters({"A": math.log(0.2), "B": math.log(0.6), "C": math.log(0.1),
                         "D": math.log(0.1), "The": 0.0}, "ABCD")  # fmt: skip
    assert p == pytest.approx({"A": 0.2, "B": 0.6, "C": 0.1, "D": 0.1})
    # renormalised over the letters only: a letter-free token does not take mass
    q = softmax_letters({"A": -1.0, "B": -1.0}, "ABCD")
    assert q == pytest.approx({"A": 0.5, "B": 0.5, "C": 0.0, "D": 0.0})
    assert softmax_letters({"x": 0.0}, "ABCD") == {}


def test_choice_from_logprobs_uses_first_position_with_letters():
    positions = [
        [("The", -0.1), ("Answer", -2.5)],  # no letter yet
        [(" B", math.log(0.5)), (" C", math.log(0.3)), ("(A", math.log(0.1)), (" D", -9.0)],
        [("A", 0.0)],  # later letters are ignored
    ]
    c = choice_from_logprobs(positions, 4)
    assert c is not None and c.letter == "B" and c.source == "logprobs"
    assert sum(c.probs.values()) == pytest.approx(1.0)
    assert c.probs["B"] > c.probs["C"] > c.probs["A"] > c.probs["D"]
    assert c.confidence == pytest.approx(c.probs["B"])
    assert c.missing == ()


def test_letters_missing_from_top_k_are_reported():
    c = choice_from_logprobs([[("C", -0.2), ("D", -2.0)]], 4)
    assert c is not None and c.letter == "C" and c.missing == ("A", "B")
    assert c.probs["A"] == 0.0 and c.probs["B"] == 0.0


def test_pick_falls_back_to_parsing():
    assert pick("Answer: D", None, OPTIONS).source == "parsed"
    assert pick("Answer: D", [[("Answer", -0.1)], [(":", 0.0)]], OPTIONS).letter == "D"
    c = pick("no idea", None, OPTIONS)
    assert c.letter is None and c.source == "unparsable"
    assert pick("D", [[("D", -0.1), ("A", -3.0)]], OPTIONS).source == "logprobs"
