"""MP3D-EQA's per-episode numbers, as habitat-lab and habitat-baselines compute them.

* ``answer_accuracy`` (habitat-lab ``AnswerAccuracy``): 1 when the answer's index in the answer
  vocabulary is the episode's ``answer_token``, else 0. A reply is mapped to a vocabulary entry
  by :func:`match_answer`; a reply naming no entry is an out-of-vocabulary answer and scores 0,
  as any index other than ``answer_token`` does upstream.
* the navigation numbers (habitat-baselines' EQA navigation evaluation): with ``d_t`` the
  geodesic distance from the agent to the goal's ``position`` after step t (t = 0: the start),
  ``d_0``, ``d_T`` = the last, ``d_D`` (d_Δ) = ``d_0 - d_T``, ``d_min`` = the smallest. An
  episode whose start cannot reach the goal (``d_0`` infinite) is left out of them, as upstream
  counts it invalid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence


def nav_metrics(distances: Sequence[float | None]) -> dict[str, float] | None:
    """``d_0, d_T, d_D, d_min`` (metres) from the goal distances of one episode, start first
    (None: unreachable, as the trace records an infinite one); None when the start cannot reach
    the goal (or nothing was measured)."""
    d = [math.inf if v is None else float(v) for v in distances]
    if not d or not math.isfinite(d[0]) or d[0] < 0:
        return None
    finite = [v for v in d if math.isfinite(v)]
    d_t = d[-1]
    return {
        "d_0": d[0],
        "d_T": d_t,
        "d_D": d[0] - d_t,
        "d_min": min(finite),
    }


def normalise(text: str) -> str:
    """Lower case, punctuation but hyphens to spaces, single spaces (``"Off-white."`` ->
    ``off-white``)."""
    return " ".join(re.sub(r"[^\w\s-]", " ", text.lower()).replace("_", " ").split())


def match_answer(reply: str | None, vocabulary: Sequence[str]) -> str | None:
    """The vocabulary entry a reply names: the whole reply (normalised), else the one entry
    that appears in it as a phrase (the longest when one contains another); None otherwise."""
    if not reply:
        return None
    words = {normalise(w): w for w in vocabulary if w and not w.startswith("<")}
    said = normalise(reply.split("\n", 1)[0]) or normalise(reply)
    if said in words:
        return words[said]
    found = [w for w in words if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", said)]
    found = [w for w in found if not any(w != o and w in o for o in found)]
    return words[found[0]] if len(found) == 1 else None
