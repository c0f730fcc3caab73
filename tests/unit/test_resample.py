"""Bootstrap means in blocks of rows (issue 27): the same numbers as one (samples, k) draw,
with memory bounded whatever the number of episodes."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from eqa_runner.scoring import resample
from eqa_runner.scoring.aggregate import bootstrap_ci
from eqa_runner.scoring.resample import resampled_means
from eqa_runner.scoring.stats import mean_interval


def _one_draw(sums: np.ndarray, sizes: np.ndarray | None, samples: int, seed: int) -> np.ndarray:
    idx = np.random.default_rng(seed).integers(0, sums.size, size=(samples, sums.size))
    if sizes is None:
        return sums[idx].mean(axis=1)
    return sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)


@pytest.mark.parametrize("block", [1, 7, 1000, resample.BLOCK])
@pytest.mark.parametrize("k", [1, 2, 5, 64, 174, 2044])
def test_blocks_give_the_numbers_of_one_draw(monkeypatch, block: int, k: int) -> None:
    monkeypatch.setattr(resample, "BLOCK", block)
    rng = np.random.default_rng(k)
    sums = np.sort(rng.normal(size=k) * 31.7)
    sizes = rng.integers(1, 9, size=k).astype(float)
    for sz in (None, sizes):
        got = resampled_means(sums, sz, 300, np.random.default_rng(11))
        assert got.tobytes() == _one_draw(sums, sz, 300, 11).tobytes()


def test_an_iid_interval_over_thousands_of_episodes_stays_small() -> None:
    x = [float(v) for v in np.random.default_rng(0).uniform(0, 100, size=4088)]
    values = {str(i): v for i, v in enumerate(x)}
    bootstrap_ci(x[:10], samples=10)  # numpy's lazy set-up outside the measurement
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        ci = bootstrap_ci(x, samples=1000, seed=3)
        iv = mean_interval(values, method="iid", samples=1000, seed=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one (1000, 4088) draw: 33 MB of indexes, 33 MB of gathered values
    assert peak < 8 * 2**20, peak / 2**20
    assert (iv.lo, iv.hi) == ci
