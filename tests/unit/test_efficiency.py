"""The path-efficiency weight l / max(l, p) on hand-made cases."""

from __future__ import annotations

import math

import pytest

from eqa_runner.scoring.efficiency import path_weight, weighted_mark


@pytest.mark.parametrize(
    "ref,path,want",
    [
        (10.0, 5.0, 1.0),  # shorter than the human path: no bonus above 1
        (10.0, 10.0, 1.0),
        (10.0, 20.0, 0.5),
        (10.0, 0.0, 1.0),  # answered from the start pose
        (10.0, math.inf, 0.0),  # no path (unreachable / missing prediction rule)
        (None, 5.0, None),  # unknown reference: left out, not 0
        (0.0, 5.0, 0.0),  # EXPRESS: started at the goal, then walked away
        (0.0, 0.0, 1.0),  # started at the goal, did not move
        (-1.0, 5.0, None),
        (10.0, None, None),
        (10.0, math.nan, None),
    ],
)
def test_path_weight(ref, path, want):
    assert path_weight(ref, path) == want


def test_llm_match_spl_two_hand_checked_questions():
    # s = 5, l = 5.537, p = 11.074 -> 1.0 * 0.5
    assert weighted_mark(5, 5.537, 11.074) == pytest.approx(0.5)
    # s = 3, l = 12, p = 8 -> 0.5 * 1.0
    assert weighted_mark(3, 12.0, 8.0) == pytest.approx(0.5)
    assert weighted_mark(1, 12.0, 1.0) == 0.0
    assert weighted_mark(4, 12.0, math.inf) == 0.0
    assert weighted_mark(4, None, 3.0) is None
