"""Shortest 8-connected paths on the free-floor island, for cutting long hops
(``planner.hop_path``).

``dijkstra`` (upstream ``run_dijkstra``): from the agent's cell (on the island or not) over
island cells, steps of 1 and sqrt(2), the heap ordered by (cost, row, column) with strict
relaxation; an unreachable goal gives the path ``[goal]`` (upstream then moves straight to the
far target). ``mcp`` (this project's rule before issue 24): scikit-image's minimum-cost path
from the island cell nearest the agent; an unreachable goal is replaced by the nearest
reachable cell.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable
from typing import Any

import numpy as np


def _dijkstra_prev_py(free: np.ndarray, start: int, goal: int) -> np.ndarray:
    """Predecessor (flat index, -1 = none) of each cell, as upstream's heap Dijkstra."""
    rows, cols = free.shape
    dist = np.full(rows * cols, np.inf)
    prev = np.full(rows * cols, -1, dtype=np.int64)
    dr = np.array([0, 1, 0, -1, 1, 1, -1, -1])
    dc = np.array([1, 0, -1, 0, 1, -1, 1, -1])
    cost = np.array([1.0, 1.0, 1.0, 1.0, np.sqrt(2.0), np.sqrt(2.0), np.sqrt(2.0), np.sqrt(2.0)])
    dist[start] = 0.0
    heap = [(0.0, start)]
    while len(heap) > 0:
        d, cur = heapq.heappop(heap)
        if cur == goal:
            break
        r, c = cur // cols, cur % cols
        for n in range(8):
            rr, cc = r + dr[n], c + dc[n]
            if 0 <= rr < rows and 0 <= cc < cols and free[rr, cc]:
                nd = d + cost[n]
                nxt = rr * cols + cc
                if nd < dist[nxt]:
                    dist[nxt] = nd
                    heapq.heappush(heap, (nd, nxt))
                    prev[nxt] = cur
    return prev


@functools.cache
def _dijkstra_prev() -> Callable[..., Any]:
    """:func:`_dijkstra_prev_py` compiled by numba, imported here (about half a second, which
    building the policy for a dry run or ``--cfg job`` should not pay)."""
    from numba import njit

    return njit(cache=True, nogil=True)(_dijkstra_prev_py)


def load_kernels() -> None:
    """Import numba and wrap the kernels (compiled at their first call); a run calls this on its
    own thread before the episodes (concurrent first imports on worker threads race)."""
    _dijkstra_prev()


def dijkstra_path(island: np.ndarray, start: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """(L, 2) cells from ``start`` to ``goal`` (upstream ``run_dijkstra``; ``[goal]`` when
    the goal cannot be reached)."""
    cols = island.shape[1]
    s = int(start[0]) * cols + int(start[1])
    g = int(goal[0]) * cols + int(goal[1])
    prev = _dijkstra_prev()(np.ascontiguousarray(island, dtype=np.bool_), s, g)
    path = [g]
    while path[-1] != s and prev[path[-1]] >= 0:
        path.append(int(prev[path[-1]]))
    flat = np.array(path[::-1])
    return np.stack([flat // cols, flat % cols], axis=1)


def mcp_path(island: np.ndarray, start: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, bool]:
    """(L, 2) cells of a minimum-cost island path, and whether ``goal`` itself was reached."""
    from skimage import graph

    start = start if island[start[0], start[1]] else nearest_on(island, start)
    costs = np.where(island, 1.0, np.inf)
    costs[tuple(start)] = 1.0
    mcp = graph.MCP_Geometric(costs, fully_connected=True)
    cum, _ = mcp.find_costs([tuple(start)], [tuple(goal)])
    reached = bool(np.isfinite(cum[tuple(goal)]))
    end = goal if reached else nearest_on(np.isfinite(cum), goal)
    return np.array(mcp.traceback(tuple(end))), reached


def nearest_on(mask: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """The ``mask`` cell nearest to ``cell`` (first in row-major order on ties)."""
    cand = np.argwhere(mask)
    if cand.size == 0:
        return np.asarray(cell, dtype=int)
    return cand[np.argmin(((cand - cell) ** 2).sum(axis=1))]
