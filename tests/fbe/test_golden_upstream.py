"""The ``fbe`` planner against upstream EXPRESS-Bench's, step for step (tests/golden/fbe).

Each named option that departs from upstream must show up as mismatches on the same frames,
so the fixture can tell the defaults from the alternatives.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from eqa_runner.mapping import FrontierPlanner, FrontierPlannerConfig
from eqa_runner.mapping.streams import PlannerDraws

from .golden_replay import GOLDEN, replay


def _subset(tmp_path, seeds: list[int]):
    """A copy of the fixture restricted to ``seeds`` (the first steps of the chosen runs)."""
    inp = dict(np.load(GOLDEN / "inputs.npz"))
    up = dict(np.load(GOLDEN / "upstream.npz"))
    n_steps = inp["fused"].shape[1]
    counts = up["frontier_counts"]
    offs = np.concatenate([[0], np.cumsum(counts.ravel())]).reshape(-1)
    rows = [s * n_steps + t for s in seeds for t in range(n_steps)]
    fr = np.concatenate([up["frontiers"][offs[i] : offs[i + 1]] for i in rows])
    w = np.concatenate([up["weights"][offs[i] : offs[i + 1]] for i in rows])
    np.savez(tmp_path / "inputs.npz", **{k: v[seeds] for k, v in inp.items()})
    per_seed = {
        k: v[seeds] for k, v in up.items() if k not in ("frontiers", "weights", "grid_dims")
    }
    np.savez(tmp_path / "upstream.npz", frontiers=fr, weights=w, grid_dims=up["grid_dims"],
             **per_seed)  # fmt: skip
    return tmp_path


@pytest.mark.slow
def test_defaults_reproduce_upstream_on_every_step():
    """600 steps (20 seeds x 30): maps, frontiers, weights, choices, headings, targets. ~35 s."""
    bad, n, notes = replay()
    assert n == 600
    assert not bad, f"{dict(bad)} mismatching steps of {n}; first: {notes}"


def test_defaults_reproduce_upstream_first_seeds(tmp_path):
    bad, n, notes = replay(_subset(tmp_path, [0, 1]))
    assert n == 60 and not bad, f"{dict(bad)}; first: {notes}"


@pytest.mark.parametrize(
    ("option", "seeds"),
    [
        ({"random_source": "generator"}, [0]),
        ({"angle_wrap": True}, [0]),
        ({"penalty_yaw": "agent"}, [0, 1]),
        ({"hop_path": "mcp"}, [6]),  # the one seed on which the two paths differ
        ({"keep_commit": "on_island"}, [3]),
    ],
)
def test_each_project_option_departs_from_upstream(tmp_path, option, seeds):
    """Every named alternative changes some step of the fixture (a no-op option would pass)."""
    bad, _, _ = replay(_subset(tmp_path, seeds), **option)
    assert bad, f"{option} reproduces upstream on every step of seeds {seeds}"


def test_defaults_are_upstream():
    c = FrontierPlannerConfig()
    assert (c.random_source, c.angle_wrap, c.penalty_yaw, c.fallback) == (
        "upstream", False, "planned", "turn")  # fmt: skip
    assert (c.hop_path, c.keep_commit, c.hop_rule, c.bounds_margin) == (
        "dijkstra", "always", "path_nodes", 0.0)  # fmt: skip


def test_upstream_draws_are_pythons_random_and_numpys_legacy_stream():
    """Tie coins and zero-gradient normals: random.Random(seed) in call order; frontier samples
    and turn headings: np.random.RandomState(seed), with upstream's weight scaling."""
    d = PlannerDraws("upstream", 7)
    py, legacy = random.Random(7), np.random.RandomState(7)
    coins = [d.coin() for _ in range(20)]
    assert coins == [py.random() < 0.5 for _ in range(20)]
    g = d.zero_gradient_normal()
    a, b = py.random(), py.random()
    assert np.allclose(g, np.array([a, b]) / math.hypot(a, b))
    w = np.array([3.0, 0.5, 1e-3, 7.0])
    assert d.choose(w) == legacy.choice(4, p=(w / w.mean()) / (w / w.mean()).sum())
    t = legacy.rand(2) - 0.5
    assert np.allclose(d.turn_direction(), t / np.linalg.norm(t))
    # the episode's own instances: the process-global streams are untouched
    random.seed(1)
    state = random.getstate()
    PlannerDraws("upstream", 3).coin()
    assert random.getstate() == state


def test_angle_rule_does_not_wrap_by_default():
    """Upstream compares |yaw - (atan2(n) - pi/2)| raw: a previous heading of -3pi/2 and a
    normal whose heading is pi/2 (the same direction) are 2 pi apart, so no penalty;
    ``angle_wrap=true`` sees them as equal and multiplies the weight by 1e-3."""
    weights = {}
    for wrap in (False, True):
        pl = FrontierPlanner(angle_wrap=wrap)
        pl.reset(np.array([[0.0, 4.0], [0.0, 4.0]]), 0.0, rng=0)
        normal = np.array([-1.0, 0.0])  # atan2(0, -1) - pi/2 = pi/2
        plan = pl._maps_for(np.array([2.0, 2.0, 0.0]), None)
        weights[wrap] = pl._weight(np.array([21, 20]), normal, plan, -1.5 * math.pi)
    assert weights[True] == pytest.approx(weights[False] * 1e-3)
