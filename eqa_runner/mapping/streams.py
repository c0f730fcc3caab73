"""The frontier planner's random draws (``planner.random_source``).

``upstream`` (the default) draws where the upstream planners draw, in the same
order and from the same kind of stream: the frontier-normal orientation (a zero gradient's
normal, ``[random(), random()]`` normalised, and the coin on a tie) from Python's ``random``,
the frontier sample and the turn-in-place heading from numpy's legacy global stream. Upstream
uses the process-global streams unseeded; here each episode owns its instances, seeded from
the episode's seed, so runs are deterministic per ``run.seed`` and concurrent episodes do not
share state. ``generator`` (this project's rule before issue 24) draws everything from the
episode's ``numpy.random.Generator``, with a uniform normal angle and a uniform heading.
"""

from __future__ import annotations

import math
import random

import numpy as np

from eqa_runner.mapping.config import RANDOM_SOURCES


def episode_seed(rng: np.random.Generator | int | None) -> int | None:
    """The integer seed of an episode's upstream-style streams (one draw from a Generator)."""
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(2**32))
    return None if rng is None else int(rng)


class PlannerDraws:
    """One episode's random draws, upstream-style or from a Generator (module docstring)."""

    def __init__(self, source: str, rng: np.random.Generator | int | None) -> None:
        if source not in RANDOM_SOURCES:
            raise ValueError(f"random_source must be one of {RANDOM_SOURCES}, got {source!r}")
        self.source = source
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        seed = episode_seed(rng)
        self.py = random.Random(seed)  # upstream: Python's random (src/geom.py, src/tsdf.py)
        self.legacy = np.random.RandomState(seed)  # upstream: np.random's global stream

    def zero_gradient_normal(self) -> np.ndarray:
        """Unit normal where the unexplored map has no gradient."""
        if self.source == "upstream":
            g = np.array([self.py.random(), self.py.random()])
            return g / np.linalg.norm(g)
        ang = self.rng.uniform(0, 2 * np.pi)
        return np.array([np.cos(ang), np.sin(ang)])

    def coin(self) -> bool:
        """The tie-break: flip the normal when True (probability 1/2)."""
        if self.source == "upstream":
            return self.py.random() < 0.5
        return bool(self.rng.random() < 0.5)

    def choose(self, weights: np.ndarray) -> int:
        """Index sampled with probability proportional to ``weights`` (upstream's scaling)."""
        red = weights / np.mean(weights)
        p = red / np.sum(red)
        if self.source == "upstream":
            return int(self.legacy.choice(len(weights), p=p))
        return int(self.rng.choice(len(weights), p=p))

    def turn_direction(self) -> np.ndarray:
        """Grid direction of a random heading (the fallback's turn in place)."""
        if self.source == "upstream":
            d = self.legacy.rand(2) - 0.5
            return d / np.linalg.norm(d)
        ang = self.rng.uniform(-math.pi, math.pi)
        return np.array([-math.sin(ang), math.cos(ang)])  # habitat yaw ang -> grid direction

    def integers(self, n: int) -> int:
        """A uniform index below ``n`` (the project's random hop)."""
        return int(self.rng.integers(n))
