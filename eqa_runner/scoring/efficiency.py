"""Path efficiency: how a score is discounted by the length of the path that earned it.

``weight = l / max(l, p)`` with ``l`` the reference path length and ``p`` the agent's (the
weight of the benchmarks' efficiency-weighted scores). ``p = 0`` (answered from the start
pose) keeps the full score, ``p = inf`` (no path: an unreachable or missing episode) gives 0,
``l = p = 0`` (started at the goal, did not move) gives 1, and a missing ``l`` gives None: the
episode is left out of that mean and counted.
"""

from __future__ import annotations

import math


def path_weight(reference: float | None, path: float | None) -> float | None:
    """``l / max(l, p)`` in [0, 1]; None when either length is unknown (or ``l`` is negative)."""
    if reference is None or not math.isfinite(reference) or reference < 0:
        return None
    if path is None or math.isnan(path):
        return None
    if math.isinf(path):
        return 0.0
    denom = max(reference, path)
    return 1.0 if denom <= 0 else reference / denom


def weighted_mark(mark: int, reference: float | None, path: float | None) -> float | None:
    """A 1-5 mark as an efficiency-weighted score in [0, 1]: ``(s-1)/4 * weight``."""
    w = path_weight(reference, path)
    return None if w is None else (min(max(mark, 1), 5) - 1) / 4 * w
