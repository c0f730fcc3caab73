"""Frame index selection strategies and the blind baseline's answer parsing."""

from __future__ import annotations

import numpy as np
import pytest

from eqa_runner.benchmarks.openeqa_em.blind import parse_blind_answer
from eqa_runner.benchmarks.openeqa_em.frames import FramesPolicy, select_indices
from eqa_runner.errors import ConfigError
from eqa_runner.policies.config import STRATEGIES


@pytest.mark.parametrize("n,k", [(100, 50), (237, 50), (51, 50), (10, 3), (2, 2), (1000, 7)])
def test_linspace_matches_paper(n: int, k: int) -> None:
    expected = np.round(np.linspace(0, n - 1, k)).astype(int).tolist()
    assert select_indices(n, k, "linspace") == expected
    assert len(set(expected)) == k  # for these n >= k, no duplicates were merged


def test_linspace_endpoints() -> None:
    idx = select_indices(600, 50, "linspace")
    assert idx[0] == 0 and idx[-1] == 599 and len(idx) == 50


@pytest.mark.parametrize("n", [1, 2, 5, 6, 99, 100])
def test_middle_single_frame(n: int) -> None:
    assert select_indices(n, 1, "middle") == [n // 2]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("n,k", [(5, 50), (1, 3), (3, 3)])
def test_k_at_least_n_returns_all_frames_once(strategy: str, n: int, k: int) -> None:
    if strategy == "middle" and k == 1:
        pytest.skip("K=1 is the single middle frame")
    idx = select_indices(n, k, strategy)
    if strategy == "first_last_middle":
        assert set(idx) <= set(range(n)) and {0, n // 2, n - 1} <= set(idx)
    else:
        assert idx == list(range(n))


def test_stride() -> None:
    assert select_indices(10, 3, "stride") == [0, 3, 6]
    assert select_indices(100, 4, "stride") == [0, 25, 50, 75]
    assert select_indices(7, 7, "stride") == list(range(7))


@pytest.mark.parametrize("n,k", [(100, 3), (101, 3), (100, 5), (100, 10), (9, 4), (1000, 50)])
def test_first_last_middle(n: int, k: int) -> None:
    idx = select_indices(n, k, "first_last_middle")
    assert {0, n // 2, n - 1} <= set(idx)
    assert len(idx) <= k
    assert idx == sorted(set(idx)) and all(0 <= i < n for i in idx)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_output_sorted_unique_in_range(strategy: str) -> None:
    for n in (1, 2, 3, 17, 250):
        for k in (1, 2, 5, 50):
            idx = select_indices(n, k, strategy)
            assert idx == sorted(set(idx))
            assert 1 <= len(idx) <= min(n, k)
            assert all(isinstance(i, int) and 0 <= i < n for i in idx)


def test_no_frames() -> None:
    assert select_indices(0, 5, "linspace") == []


def test_invalid_strategy() -> None:
    with pytest.raises(ValueError, match="strategy"):
        select_indices(10, 3, "random")
    with pytest.raises(ConfigError, match="^policy.strategy=every_other: must be one of"):
        FramesPolicy(strategy="every_other")
    with pytest.raises(ConfigError, match="^policy.num_frames=0: must be >= 1$"):
        FramesPolicy(num_frames=0)
    with pytest.raises(ConfigError, match="^policy.image_format=gif: must be one of png, jpeg$"):
        FramesPolicy(image_format="gif")


@pytest.mark.parametrize(
    "reply,answer,found",
    [
        ("A: a red sofa\nExplanation: sofas are often red.", "a red sofa", True),
        ("Q: What colour is the sofa?\nA: red", "red", True),
        ("  a: in the kitchen  ", "in the kitchen", True),
        ("Answer: blue", "Answer: blue", False),
        ("The sofa is probably grey.", "The sofa is probably grey.", False),
        ("  \n", "", False),
    ],
)
def test_parse_blind_answer(reply: str, answer: str, found: bool) -> None:
    assert parse_blind_answer(reply) == (answer, found)
