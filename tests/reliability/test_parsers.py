"""Issue 25, item 4: every reply parser runs in linear time on adversarial input and answers
parsed-or-unparsable, never an exception (defect 18); token log-probabilities are validated
and the bad ones counted (defect 19); the letter choice reads the position where the reply says
its letter (defect 11). Hypothesis generates long, nested, unicode and numeric-edge replies."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eqa_runner.benchmarks.express.eac import SIGMAS, parse_eac
from eqa_runner.benchmarks.hmeqa.judge import chosen_letter
from eqa_runner.benchmarks.hmeqa.protocol import confidence_from_logprobs, parse_yes_no
from eqa_runner.benchmarks.openeqa_em.llm_match import parse_mark
from eqa_runner.llm.choice import choice_from_logprobs, parse_choice, pick
from eqa_runner.llm.logprobs import validated_logprobs
from eqa_runner.policies.vlm_questions import letter_probs, yes_probability
from eqa_runner.policies.vlm_waypoint import parse_waypoint
from tests.reliability import tally

# A parser may take this long on an input of n characters (generous: a shared, busy CI machine;
# the super-polynomial mark parser took 18 s on 406 characters, the choice parser 1.5 s on 8,000).
BASE_S, PER_CHAR_S = 0.25, 20e-6


def _mark(r: Any) -> bool:
    return r is None or (isinstance(r, int) and 1 <= r <= 5)


def _eac(r: Any) -> bool:
    return r is None or (r[0] in SIGMAS and isinstance(r[1], int) and 1 <= r[1] <= 5)


def _letter(r: Any) -> bool:
    return r is None or r in "ABCD"


def _yes_no(r: Any) -> bool:
    return r in (None, 0.0, 1.0)


def _waypoint(r: Any) -> bool:
    if not r.ok:
        return isinstance(r.error, str)
    x, y = r.position_normal
    return all(math.isfinite(v) and abs(v) <= 1e6 for v in (x, y, r.angle))


PARSERS: dict[str, tuple[Callable[[str], Any], Callable[[Any], bool]]] = {
    "llm_match mark": (parse_mark, _mark),
    "eac sigma, delta": (parse_eac, _eac),
    "choice letter": (lambda t: parse_choice(t, ["sofa", "bed", "sink", "chair"]), _letter),
    "hmeqa letter": (lambda t: chosen_letter(t, 4), _letter),
    "yes/no": (parse_yes_no, _yes_no),
    "vlm yes/no": (lambda t: yes_probability(t, None)[0], _yes_no),
    "waypoint json": (parse_waypoint, _waypoint),
}

FRAGMENTS = [" ", "\t", "\n", "score", "mark", "is", ":", "=", "-", "*", "**", "answer", "(", ")",
             "[", "]", "{", "}", "A", "B", "or", ",", "1", "5", "0.5", "/", "σ", "δ", "yes", "no",
             '"position_normal"', "1e308", "-0", "NaN", "inf", "\u2009", "\u00a0", "。", "🙂",
             "9" * 40, "answer is", "grounding", "correctness"]  # fmt: skip


@st.composite
def replies(draw: st.DrawFn) -> str:
    """Long runs of one fragment, random mixes, nestings, unicode text and numeric edges."""
    kind = draw(st.integers(0, 4))
    if kind == 0:  # a keyword, then a long run of one fragment, then junk
        head, run, tail = (draw(st.sampled_from(FRAGMENTS)) for _ in range(3))
        return head + run * draw(st.integers(1, 8000)) + tail
    if kind == 1:
        return "".join(draw(st.lists(st.sampled_from(FRAGMENTS), max_size=400)))
    if kind == 2:  # nesting
        depth = draw(st.integers(1, 30000))
        o, c = draw(st.sampled_from([("{", "}"), ("[", "]"), ("(", ")"), ('{"a": ', "}")]))
        return o * depth + draw(st.sampled_from(["1", "", "x"])) + c * depth
    if kind == 3:
        return draw(st.text(max_size=2000))
    num = draw(st.sampled_from(["1e308", "-1e308", "1e-400", "nan", "Infinity", "10" * 300, "-0"]))
    return draw(st.sampled_from([
        f"Your mark: {num}", f"{num}, {num}", f'{{"position_normal": [{num}, 1], "angle": {num}}}',
        f"Answer: ({num})", f"score {num}/5",
    ]))  # fmt: skip


def _check(name: str, text: str) -> None:
    fn, valid = PARSERS[name]
    tally.add("bad inputs tried")
    t0 = time.perf_counter()
    result = fn(text)
    elapsed = time.perf_counter() - t0
    bound = BASE_S + PER_CHAR_S * len(text)
    tally.add("parser inputs timed")
    tally.add("parser inputs over bound", int(elapsed > bound))
    assert elapsed <= bound, f"{name}: {elapsed:.2f} s on {len(text)} chars (bound {bound:.2f})"
    assert valid(result), f"{name}: {result!r} is neither parsed nor unparsable"


def _property(name: str) -> Callable[..., None]:
    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(text=replies())
    @example(text="score" + " " * 400 + "x")  # defect 18: 18 s before
    @example(text="Your score" + " " * 5000 + "x")
    @example(text="answer is" + " " * 8000 + "x")  # the quadratic choice parser
    @example(text="{" * 30000 + "}" * 30000)
    @example(text='{"position_normal": [1e308, 1e308], "angle": 0}')
    def prop(text: str) -> None:
        _check(name, text)

    return prop


test_mark_parser_is_bounded = pytest.mark.slow(_property("llm_match mark"))
test_eac_parser_is_bounded = _property("eac sigma, delta")
test_choice_parser_is_bounded = _property("choice letter")
test_hmeqa_letter_parser_is_bounded = _property("hmeqa letter")
test_yes_no_parser_is_bounded = _property("yes/no")
test_vlm_yes_no_parser_is_bounded = _property("vlm yes/no")
test_waypoint_parser_is_bounded = _property("waypoint json")


def test_the_known_slow_inputs_are_fast_now():
    for text in ("score" + " " * 400 + "x", "Your score" + " " * 400 + "x"):
        _check("llm_match mark", text)
    _check("choice letter", "answer is" + " " * 8000 + "x")


# --- token log-probabilities ------------------------------------------------------------------

LOGPROB = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-9, 3.2, math.inf, -math.inf, math.nan, -1e308]),
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["A", "B", " C", "D", "Yes", "No", "x"]),
                                   LOGPROB), max_size=6), max_size=5))  # fmt: skip
def test_logprobs_are_validated_and_bad_ones_counted(raw):
    tally.add("bad inputs tried")
    content = [{"token": alts[0][0] if alts else "x", "logprob": alts[0][1] if alts else 0.0,
                "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alts]}
               for alts in raw]  # fmt: skip
    positions, bad = validated_logprobs({"logprobs": {"content": content}})
    for alts in positions or []:
        assert all(math.isfinite(lp) and lp <= 0.0 for _, lp in alts)
    n_bad = sum(1 for alts in raw for _, lp in alts if not (math.isfinite(lp) and lp <= 1e-6))
    n_bad += sum(
        1 for alts in raw if alts and not (math.isfinite(alts[0][1]) and alts[0][1] <= 1e-6)
    )
    assert bad == n_bad
    c = choice_from_logprobs(positions or [], 4)
    assert c is None or abs(sum(c.probs.values()) - 1.0) < 1e-9
    r = confidence_from_logprobs(positions)
    assert r is None or 0.0 <= r <= 1.0


def test_inf_logprob_is_dropped_and_counted_not_a_crash():
    tally.add("bad inputs tried")
    choice = {"logprobs": {"content": [{"token": "B", "logprob": math.inf, "top_logprobs": [
        {"token": "B", "logprob": math.inf}, {"token": "A", "logprob": -1.2}]}]}}  # fmt: skip
    positions, bad = validated_logprobs(choice)
    assert bad == 2 and positions == [[("A", -1.2)]]
    assert letter_probs("B", positions, 4)[1] in ("logprobs", "parsed")  # no "max() arg" crash
    yes = {"logprobs": {"content": [{"token": "Yes", "logprob": math.inf, "top_logprobs": [
        {"token": "Yes", "logprob": math.inf}, {"token": "No", "logprob": -0.1}]}]}}  # fmt: skip
    p, _ = validated_logprobs(yes)
    assert yes_probability("Yes", p)[0] != 0.0 or p == [[("No", -0.1)]]


def test_letter_choice_reads_the_position_the_reply_answers():
    tally.add("bad inputs tried")
    # "The answer is B.": the article "A" is among the FIRST token's alternatives
    positions = [
        [("The", -0.05), ("A", -3.0)],
        [(" answer", -0.01)],
        [(" is", -0.01)],
        [(" B", math.log(0.8)), (" C", math.log(0.15)), (" A", math.log(0.05))],
        [(".", 0.0)],
    ]
    c = pick("The answer is B.", positions, ["sofa", "bed", "sink", "chair"])
    tally.add("runs mislabelled", int(c.letter != "B"))
    assert c.letter == "B" and c.source == "logprobs"
    assert c.probs["B"] > 0.75 and c.probs["A"] < 0.1


def _reply_positions(reply: str) -> list[list[tuple[str, float]]]:
    """The reply as sampled tokens (words with their leading space, punctuation apart), each
    offering the letter "A" as its strongest alternative (the article's log-probability)."""
    toks = re.findall(r"\s*[^\s.,:;!?()]+|[.,:;!?()]", reply)
    return [
        [
            (t, math.log(0.7)),
            *((k, math.log(0.2 if k == "A" else 0.03)) for k in "ABCD" if k != t.strip().upper()),
        ]  # fmt: skip
        for t in toks
    ]


OPTIONS = ["bed", "sink", "chair", "lamp"]


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("A sofa is there, so the answer is B.", "B"),
        ("A good fit is B.", "B"),
        ("It is a sofa, I choose B.", "B"),
        ("A sofa stands there; option C.", "C"),
        ("A sofa, so B or C.", None),  # hedged: no letter, and never the article
        ("It is a sofa.", None),  # names no option: the article " a" is no answer position
    ],
)
def test_the_article_a_is_never_taken_for_the_option(reply, letter):
    tally.add("bad inputs tried")
    for c in (pick(reply, None, OPTIONS), pick(reply, _reply_positions(reply), OPTIONS)):
        tally.add("runs mislabelled", int(c.letter == "A"))
        assert c.letter == letter, (reply, c)


@pytest.mark.parametrize(
    "reply",
    ["A", "A.", "a", "(A)", "Answer: A", "The answer is A.", "I choose A", "A, the bed.",
     "A is the answer.", "A is correct.", "A seems right.", "A because the bed is red."],
)  # fmt: skip
def test_a_reply_whose_only_letter_is_a_in_an_option_position_is_read_as_a(reply):
    tally.add("bad inputs tried")
    for positions in (None, _reply_positions(reply)):
        c = pick(reply, positions, OPTIONS)
        tally.add("runs mislabelled", int(c.letter != "A"))
        assert c.letter == "A", (reply, c)
        assert c.source == ("logprobs" if positions else "parsed")
