"""Bootstrap intervals, means and group breakdowns."""

from __future__ import annotations

import numpy as np
import pytest

from eqa_runner.scoring.aggregate import bootstrap_ci, breakdown, mean_with_ci

VALUES = [0.0, 0.25, 0.25, 0.5, 0.75, 1.0, 1.0, 0.0, 0.5, 0.75, 1.0, 0.25]


def test_ci_contains_mean_and_is_ordered() -> None:
    lo, hi = bootstrap_ci(VALUES, samples=2000, seed=3)
    assert lo is not None and hi is not None
    assert lo < np.mean(VALUES) < hi
    assert lo >= 0.0 and hi <= 1.0


def test_ci_does_not_depend_on_record_order() -> None:
    shuffled = list(np.random.default_rng(1).permutation(VALUES))
    assert bootstrap_ci(shuffled, samples=500, seed=7) == bootstrap_ci(VALUES, samples=500, seed=7)


def test_ci_deterministic_under_seed() -> None:
    assert bootstrap_ci(VALUES, samples=500, seed=7) == bootstrap_ci(VALUES, samples=500, seed=7)
    others = {bootstrap_ci(VALUES, samples=500, seed=s) for s in range(5)}
    assert len(others) > 1  # the seed actually matters


def test_ci_narrows_with_more_data() -> None:
    rng = np.random.default_rng(0)
    small = rng.random(20).tolist()
    big = rng.random(2000).tolist()
    w = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert w(bootstrap_ci(big, samples=500)) < w(bootstrap_ci(small, samples=500)) / 3


def test_ci_level() -> None:
    lo95, hi95 = bootstrap_ci(VALUES, samples=2000, level=0.95)
    lo50, hi50 = bootstrap_ci(VALUES, samples=2000, level=0.5)
    assert lo95 < lo50 < hi50 < hi95


def test_ci_degenerate() -> None:
    assert bootstrap_ci([0.4] * 30, samples=300) == pytest.approx((0.4, 0.4))
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([]) == (None, None)
    assert bootstrap_ci([0.0, 1.0], samples=0) == (0.5, 0.5)


def test_mean_with_ci_scales() -> None:
    out = mean_with_ci([0.0, 0.5, 1.0, 0.75], scale=100.0, samples=300, seed=0)
    assert out["mean"] == pytest.approx(56.25)
    assert out["n"] == 4
    lo, hi = out["ci95"]
    assert 0.0 <= lo <= out["mean"] <= hi <= 100.0
    assert mean_with_ci([]) == {"mean": None, "ci95": [None, None], "n": 0}


def test_breakdown_groups() -> None:
    recs = [
        {"cat": "b", "v": 1.0},
        {"cat": "a", "v": 0.0},
        {"cat": "b", "v": 0.5},
        {"cat": None, "v": 1.0},  # no group: skipped
        {"cat": "a", "v": None},  # no value: skipped
        {"cat": "c", "v": 0.25},
    ]
    out = breakdown(recs, lambda r: r["cat"], lambda r: r["v"], scale=100.0, samples=100)
    assert list(out) == ["a", "b", "c"]
    assert (out["a"]["mean"], out["a"]["n"]) == (0.0, 1)
    assert (out["b"]["mean"], out["b"]["n"]) == (75.0, 2)
    assert out["c"]["ci95"] == [25.0, 25.0]
    assert breakdown([], lambda r: "x", lambda r: 1.0) == {}
