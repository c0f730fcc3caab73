"""Means, 95% bootstrap intervals and group breakdowns over per-episode metrics."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from eqa_runner.scoring.resample import resampled_means
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
    means = resampled_means(x, None, samples, rng)  # in blocks: memory bounded
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
    method: str = "iid",
) -> dict[str, dict[str, Any]]:
    """Per-group mean and interval (groups sorted by name); records whose value is None skipped.

    ``method="cluster"``: each group's interval resamples the scenes within the group.
    """
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    labels: dict[str, Hashable] = {}
    for i, r in enumerate(records):
        g, v = key(r), value(r)
        if g is not None and v is not None:
            groups[g][str(i)] = v
            if method == "cluster":
                labels[str(i)] = _cluster(r)
    clusters = labels if method == "cluster" else None
    return {
        g: interval_of(groups[g], clusters, method=method, scale=scale, samples=samples, seed=seed)
        for g in sorted(groups)
    }


# -- headline intervals: clustered where clusters exist (docs/statistics.md) ------------------

INTERVAL_METHODS = ("cluster", "iid")


def clusters_of(records: Sequence[EpisodeRecord]) -> dict[str, str]:
    """``episode_id -> cluster``: the record's ``scene`` (an episode history or a
    scene). An episode without a scene is a cluster of its own."""
    return {str(r["episode_id"]): _cluster(r) for r in records}


def _cluster(r: Mapping[str, Any]) -> str:
    return str(r.get("scene") or "") or f"\x00{r.get('episode_id')}"


def interval_of(
    values: Mapping[str, float],
    clusters: Mapping[str, Hashable] | None = None,
    *,
    method: str = "cluster",
    scale: float = 1.0,
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """``{"mean", "ci95", "n", "n_clusters", "interval"}`` of ``episode_id -> value``.

    The one place a summary's intervals come from. ``method="cluster"`` resamples whole
    clusters when ``clusters`` name at least two (else episodes, and ``interval`` says
    ``"iid"``); ``"iid"`` resamples episodes exactly as :func:`bootstrap_ci` always did.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"interval method must be one of {INTERVAL_METHODS}, not {method!r}")
    scaled = {k: float(v) * scale for k, v in values.items()}
    if not scaled:
        return {"mean": None, "ci95": [None, None], "n": 0}
    if method == "iid" or clusters is None:
        out = mean_with_ci(list(scaled.values()), samples=samples, seed=seed)
        return {**out, "n_clusters": out["n"], "interval": "iid"}
    from eqa_runner.scoring.stats import mean_interval

    iv = mean_interval(scaled, {k: clusters[k] for k in scaled}, samples=samples, seed=seed)
    if iv.method == "iid":  # fewer than two clusters: the i.i.d. interval, same numbers as before
        out = mean_with_ci(list(scaled.values()), samples=samples, seed=seed)
        return {**out, "n_clusters": iv.n_clusters, "interval": "iid"}
    return {
        "mean": iv.mean,
        "ci95": [iv.lo, iv.hi],
        "n": iv.n,
        "n_clusters": iv.n_clusters,
        "interval": iv.method,
    }


def intervals_note(method: str, samples: int) -> dict[str, Any]:
    """What a summary records about its intervals (``summary["intervals"]``)."""
    return {
        "method": method,
        "level": 0.95,
        "bootstrap_samples": samples,
        "cluster": "the record's scene (an episode history or a scene)",
        "note": "percentile bootstrap; 'cluster' resamples whole clusters where a metric's "
        "episodes fall in at least two (each metric's own 'interval' says which was used); "
        "docs/statistics.md",
    }
