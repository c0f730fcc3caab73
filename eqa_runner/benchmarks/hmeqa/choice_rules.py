"""HM-EQA's two rules for one final answer from per-step answers (explore-eqa, end of episode).

At every step t the model gives an answer distribution p_t over the options and a confidence
r_t = P(Yes) that the current view suffices to answer. With s_t = r_t · p_t:

* ``weighted`` (upstream's ``success_weighted``): answer = argmax_k max_t s_t[k], a column-wise
  maximum over the steps of the confidence-weighted distributions (not a sum or a mean);
* ``max`` (upstream's ``success_max``): t* = argmax_t r_t (the first on ties), answer =
  argmax_k p_{t*}[k].

Both follow upstream by default (``tie_break="first"``, ``black="uniform"``):

* ties between options go to the first letter (numpy's argmax), and ``max`` takes the argmax of
  the weighted row r_{t*} · p_{t*}, as upstream does; ``tie_break="votes"`` (this project's
  alternative) breaks a tie by the larger sum of p_t[k] over the steps, then the first letter: with
  parsed replies (p_t one-hot, r_t 1 for Yes, 0 for No) ``weighted`` then picks the letter chosen
  most often among the confident steps instead of always the first;
* a black step (the frame was mostly black, nothing was asked: ``black`` true in its record)
  enters with upstream's fixed values, p_t uniform and r_t = 0.01; ``black="skip"`` (this
  project's alternative) leaves it out.

A step that was asked enters the rules when its answer has a distribution (a parsed or
log-probability answer); an unparsable confidence counts as 0. Step records (the exploration
trace) carry ``answer_probs`` (list or None), ``confidence`` (float or None) and ``black``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RULES = ("weighted", "max")
TIE_BREAKS = ("first", "votes")  # first: upstream (numpy argmax) | votes: the larger sum of p_t[k]
BLACK_STEPS = ("uniform", "skip")  # uniform: upstream (p uniform, r = 0.01) | skip: left out
BLACK_CONFIDENCE = 0.01  # upstream's P(Yes) of a black step


@dataclass(frozen=True)
class RuleResult:
    """The option index a rule picks (None without usable steps) and the step it came from."""

    index: int | None
    step: int | None  # the step whose answer decided (max: t*; weighted: the argmax's step)


def _argmax_options(values: Sequence[float], votes: Sequence[float] | None = None) -> int:
    """The first maximum (numpy's argmax); with ``votes``, ties (within 1e-12) go to the larger
    vote, then the first."""
    if votes is None:
        return max(range(len(values)), key=lambda k: (values[k], -k))
    top = max(values)
    tied = [k for k, v in enumerate(values) if v >= top - 1e-12]
    return max(tied, key=lambda k: (votes[k], -k))


def is_black(step: Mapping[str, Any]) -> bool:
    """A step whose frame was black: nothing was asked on it."""
    return bool(step.get("black")) and "answer_source" not in step


def usable_steps(
    steps: Sequence[Mapping[str, Any]], n_options: int = 4, black: str = "uniform"
) -> list[tuple[int, list[float], float]]:
    """(step number, p_t, r_t) of every step record whose answer has a distribution, and of
    every black step with ``black="uniform"`` (p_t uniform, r_t = 0.01)."""
    if black not in BLACK_STEPS:
        raise ValueError(f"black steps {black!r}: expected one of {', '.join(BLACK_STEPS)}")
    out = []
    for i, s in enumerate(steps):
        if is_black(s):
            if black == "uniform":
                out.append((int(s.get("step", i)), [1.0 / n_options] * n_options, BLACK_CONFIDENCE))
            continue
        p = s.get("answer_probs")
        if not p:
            continue
        r = s.get("confidence")
        out.append(
            (int(s.get("step", i)), [float(v) for v in p], float(r) if r is not None else 0.0)
        )
    return out


def rule_weighted(
    probs: Sequence[Sequence[float]], conf: Sequence[float], tie_break: str = "first"
) -> RuleResult:
    """argmax_k max_t r_t · p_t[k]."""
    if not probs:
        return RuleResult(None, None)
    n = len(probs[0])
    col = [max(r * p[k] for p, r in zip(probs, conf, strict=True)) for k in range(n)]
    votes = [sum(p[k] for p in probs) for k in range(n)] if tie_break == "votes" else None
    k = _argmax_options(col, votes)
    t = max(range(len(probs)), key=lambda i: (conf[i] * probs[i][k], -i))
    return RuleResult(k, t)


def rule_max(
    probs: Sequence[Sequence[float]], conf: Sequence[float], tie_break: str = "first"
) -> RuleResult:
    """argmax_k r_{t*} · p_{t*}[k] with t* = argmax_t r_t (the first on ties); with
    ``tie_break="votes"`` argmax_k p_{t*}[k] (the same letter unless r_{t*} = 0)."""
    if not probs:
        return RuleResult(None, None)
    t = max(range(len(conf)), key=lambda i: (conf[i], -i))
    if tie_break == "votes":
        return RuleResult(_argmax_options(probs[t], probs[t]), t)
    return RuleResult(_argmax_options([conf[t] * v for v in probs[t]]), t)


def apply_rule(
    rule: str,
    steps: Sequence[Mapping[str, Any]],
    *,
    n_options: int = 4,
    black: str = "uniform",
    tie_break: str = "first",
) -> RuleResult:
    """A rule over step records; ``step`` is the decisive record's ``step`` number."""
    if rule not in RULES:
        raise ValueError(f"answer rule {rule!r}: expected one of {', '.join(RULES)}")
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie break {tie_break!r}: expected one of {', '.join(TIE_BREAKS)}")
    used = usable_steps(steps, n_options, black)
    fn = rule_weighted if rule == "weighted" else rule_max
    res = fn([p for _, p, _ in used], [r for _, _, r in used], tie_break)
    return RuleResult(res.index, None if res.step is None else used[res.step][0])
