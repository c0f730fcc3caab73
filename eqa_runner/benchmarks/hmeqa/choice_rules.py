"""HM-EQA's two rules for one final answer from per-step answers (explore-eqa, end of episode).

At every step t the model gives an answer distribution p_t over the options and a confidence
r_t = P(Yes) that the current view suffices to answer. With s_t = r_t · p_t:

* ``weighted`` (upstream's ``success_weighted``): answer = argmax_k max_t s_t[k], a column-wise
  maximum over the steps of the confidence-weighted distributions (not a sum or a mean);
* ``max`` (upstream's ``success_max``): t* = argmax_t r_t (the first on ties), answer =
  argmax_k p_{t*}[k].

Ties between options, which upstream breaks by the first index (numpy's argmax) and which do not
happen with real-valued log-probabilities, are broken here by the larger sum of p_t[k] over the
steps, then by the first index: with parsed replies (p_t one-hot, r_t 1 for Yes and 0 for No) the
``weighted`` rule then picks, among the letters chosen at a confident step, the one chosen most
often (and the most chosen letter when no step was confident) instead of always the first.

A step enters the rules when its answer has a distribution (a parsed or log-probability answer);
an unparsable confidence counts as 0. Step records (the exploration trace) carry
``answer_probs`` (list or None) and ``confidence`` (float or None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RULES = ("weighted", "max")


@dataclass(frozen=True)
class RuleResult:
    """The option index a rule picks (None without usable steps) and the step it came from."""

    index: int | None
    step: int | None  # the step whose answer decided (max: t*; weighted: the argmax's step)


def _argmax_options(values: Sequence[float], votes: Sequence[float]) -> int:
    top = max(values)
    tied = [k for k, v in enumerate(values) if v >= top - 1e-12]
    return max(tied, key=lambda k: (votes[k], -k))


def usable_steps(steps: Sequence[Mapping[str, Any]]) -> list[tuple[int, list[float], float]]:
    """(step number, p_t, r_t) of every step record whose answer has a distribution."""
    out = []
    for i, s in enumerate(steps):
        p = s.get("answer_probs")
        if not p:
            continue
        r = s.get("confidence")
        out.append(
            (int(s.get("step", i)), [float(v) for v in p], float(r) if r is not None else 0.0)
        )
    return out


def rule_weighted(probs: Sequence[Sequence[float]], conf: Sequence[float]) -> RuleResult:
    """argmax_k max_t r_t · p_t[k]."""
    if not probs:
        return RuleResult(None, None)
    n = len(probs[0])
    col = [max(r * p[k] for p, r in zip(probs, conf, strict=True)) for k in range(n)]
    votes = [sum(p[k] for p in probs) for k in range(n)]
    k = _argmax_options(col, votes)
    t = max(range(len(probs)), key=lambda i: (conf[i] * probs[i][k], -i))
    return RuleResult(k, t)


def rule_max(probs: Sequence[Sequence[float]], conf: Sequence[float]) -> RuleResult:
    """argmax_k p_{t*}[k] with t* = argmax_t r_t (the first on ties)."""
    if not probs:
        return RuleResult(None, None)
    t = max(range(len(conf)), key=lambda i: (conf[i], -i))
    return RuleResult(_argmax_options(probs[t], probs[t]), t)


def apply_rule(rule: str, steps: Sequence[Mapping[str, Any]]) -> RuleResult:
    """A rule over step records; ``step`` is the decisive record's ``step`` number."""
    if rule not in RULES:
        raise ValueError(f"answer rule {rule!r}: expected one of {', '.join(RULES)}")
    used = usable_steps(steps)
    fn = rule_weighted if rule == "weighted" else rule_max
    res = fn([p for _, p, _ in used], [r for _, _, r in used])
    return RuleResult(res.index, None if res.step is None else used[res.step][0])
