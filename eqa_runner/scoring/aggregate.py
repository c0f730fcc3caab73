"""Means, 95% bootstrap intervals and group breakdowns over per-episode metrics."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from eqa_runner.types import EpisodeRecord


def bootstrap_ci(
    values: Sequence[float], *, samples: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean.

    The values are sorted first, so the interval does not depend on record order (shards
    merged by the report give the same interval as one unsharded run).
    """
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        return None, None
    if x.size == 1 or samples <= 0:
        return float(x.mean()), float(x.mean())
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(samples, x.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def mean_with_ci(
    values: Sequence[float], *, scale: float = 1.0, samples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """``{"mean", "ci95": [lo, hi], "n"}`` with values multiplied by ``scale``."""
    vals = [float(v) * scale for v in values]
    if not vals:
        return {"mean": None, "ci95": [None, None], "n": 0}
    lo, hi = bootstrap_ci(vals, samples=samples, seed=seed)
    return {"mean": float(np.mean(vals)), "ci95": [lo, hi], "n": len(vals)}


def breakdown(
    records: Sequence[EpisodeRecord],
    key: Callable[[EpisodeRecord], str | None],
    value: Callable[[EpisodeRecord], float | None],
    *,
    scale: float = 1.0,
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Per-group mean and interval (groups sorted by name); records whose value is None skipped."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r in records:
        g, v = key(r), value(r)
        if g is not None and v is not None:
            groups[g].append(v)
    return {
        g: mean_with_ci(groups[g], scale=scale, samples=samples, seed=seed) for g in sorted(groups)
    }
