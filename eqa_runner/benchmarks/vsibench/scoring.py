"""VSI-Bench's scorer, rule for rule as lmms-eval's ``lmms_eval/tasks/vsibench/utils.py``
(read at ``75571cf``; the golden cases in ``tests/vsibench/golden/`` are that code's numbers).

- multiple choice (six types): the reply's first space-separated token, trailing periods and
  whitespace stripped, equals the answer letter, case-insensitively (``"B."`` is right,
  ``"b) sofa"`` and ``" B"`` are wrong);
- numeric (four types): the first number of the reply (digits, or English number words
  when they come first: ``"three"`` is 3, ``"1,250"`` is 1) against the ground truth by Mean
  Relative Accuracy: the fraction of thresholds θ in .50, .55, …, .95 with
  ``|pred − gt| / gt ≤ 1 − θ``; no number in the reply, or a ground truth that is not a
  number, scores 0; a ground truth of 0 is undefined (upstream raises ZeroDivisionError);
  a negative ground truth makes the ratio negative, so every threshold passes (as upstream);
- aggregate: the mean per question type; the three relative-direction types are replaced by
  the mean of their three means; the overall score is the mean of the remaining type scores.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

MCA_TYPES = (
    "object_rel_direction_easy",
    "object_rel_direction_medium",
    "object_rel_direction_hard",
    "object_rel_distance",
    "route_planning",
    "obj_appearance_order",
)
NA_TYPES = (
    "object_abs_distance",
    "object_counting",
    "object_size_estimation",
    "room_size_estimation",
)
QUESTION_TYPES = MCA_TYPES + NA_TYPES
DIRECTION_TYPES = MCA_TYPES[:3]
DIRECTION = "object_rel_direction"  # the merged type in the aggregate
# Mean Relative Accuracy thresholds: .50:.95:.05 (ten values, both ends included)
MRA_THRESHOLDS = np.linspace(0.5, 0.95, 10)

_WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80})
_WORDS.update({"ninety": 90, "hundred": 100, "thousand": 1000})
_DIGITS = re.compile(r"-?\d+(?:\.\d+)?")
_WORD = re.compile(r"[a-z]+")


def first_token(reply: str) -> str:
    """The reply's first space-separated token without trailing periods or whitespace."""
    return reply.split(" ")[0].rstrip(".").strip()


def choice_score(reply: str | None, answer: str) -> float:
    """1.0 when the reply's first token is the answer letter (any case), else 0.0."""
    return float(first_token(reply or "").lower() == str(answer).lower())


def _word_number(tokens: list[str]) -> float:
    total, current = 0, 0
    for tok in tokens:
        val = _WORDS[tok]
        if val == 100:
            current = max(current, 1) * 100
        elif val == 1000:
            total += max(current, 1) * 1000
            current = 0
        else:
            current += val
    return float(total + current)


def first_number(reply: str | None) -> float | None:
    """The first number of a reply: digits, or a run of number words if it starts earlier."""
    if reply is None:
        return None
    s = str(reply).strip().lower()
    digits = _DIGITS.search(s)
    start, words = None, []
    for m in _WORD.finditer(s):
        tok = m.group(0)
        if start is None:
            if tok in _WORDS:
                start = m.start()
                words.append(tok)
        elif tok in _WORDS:
            words.append(tok)
        elif tok != "and":
            break
    if digits is not None and (start is None or digits.start() < start):
        return float(digits.group(0))
    return _word_number(words) if start is not None else None


def as_number(text: Any) -> float | None:
    """The ground truth as a float (None when it is not one)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def mean_relative_accuracy(pred: float | None, gt: float | None) -> float:
    """MRA over :data:`MRA_THRESHOLDS`; 0.0 without a number on either side; a ground truth
    of 0 raises ZeroDivisionError (as upstream)."""
    if pred is None or gt is None:
        return 0.0
    if gt == 0:
        raise ZeroDivisionError("MRA is undefined for a ground truth of 0")
    rel = abs(pred - gt) / gt
    return float(np.mean(rel <= 1 - MRA_THRESHOLDS))


def score_reply(question_type: str, reply: str | None, answer: str) -> float:
    """One question's score in 0..1 (exact letter, or MRA)."""
    if question_type in MCA_TYPES:
        return choice_score(reply, answer)
    if question_type in NA_TYPES:
        return mean_relative_accuracy(first_number(reply), as_number(answer))
    raise ValueError(f"unknown VSI-Bench question type {question_type!r}")


def type_means(rows: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Mean score per question type, the direction types merged into ``object_rel_direction``
    (the mean of the present ones' means), of ``(question_type, score)`` pairs."""
    sums: dict[str, list[float]] = {}
    for qtype, value in rows:
        sums.setdefault(qtype, []).append(value)
    means = {t: sum(v) / len(v) for t, v in sums.items()}
    direction = [means.pop(t) for t in DIRECTION_TYPES if t in means]
    if direction:
        means[DIRECTION] = sum(direction) / len(direction)
    return dict(sorted(means.items()))


def overall(means: Mapping[str, float]) -> float | None:
    """The headline: the mean of the (merged) type means."""
    return sum(means.values()) / len(means) if means else None


def macro_weights(types: Iterable[str]) -> list[float]:
    """Per-question weights w with Σ w·score / Σ w = the overall macro mean (each question
    type weighs the same, the three direction types a third each), scaled to mean 1."""
    types = list(types)
    counts: dict[str, int] = {}
    for t in types:
        counts[t] = counts.get(t, 0) + 1
    groups = {DIRECTION if t in DIRECTION_TYPES else t for t in counts}
    n_dir = sum(1 for t in counts if t in DIRECTION_TYPES)
    raw = [(1.0 / n_dir if t in DIRECTION_TYPES else 1.0) / counts[t] / len(groups) for t in types]
    return [w * len(types) for w in raw]
