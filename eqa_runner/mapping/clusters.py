"""Frontier cells to frontiers: DBSCAN clusters, one representative each (upstream
``find_next_pose``)."""

from __future__ import annotations

import math

import numpy as np

from eqa_runner.mapping.config import FrontierPlannerConfig
from eqa_runner.mapping.lazy import ndimage, sklearn_cluster


def dbscan_cells(cells: np.ndarray, eps: float, min_samples: int, shape) -> np.ndarray:
    """DBSCAN labels (-1 = noise) of distinct integer grid cells, as scikit-learn's DBSCAN.

    With ``min_samples == 2`` and ``eps < 2`` a cell is a core point iff it has a neighbour
    within ``eps``, so clusters are exactly the connected components (size >= 2) of the
    cells under the 3x3 neighbourhood that ``eps`` reaches; they are labelled in the order of
    their first cell, as scikit-learn does. Other settings call scikit-learn.
    """
    cells = np.asarray(cells, dtype=int)
    if min_samples != 2 or not (1.0 <= eps < 2.0) or len(cells) == 0:
        return sklearn_cluster.DBSCAN(eps=eps, min_samples=min_samples).fit(cells).labels_
    grid = np.zeros(tuple(int(s) for s in shape), dtype=bool)
    grid[cells[:, 0], cells[:, 1]] = True
    structure = np.ones((3, 3), dtype=bool) if eps >= math.sqrt(2) else None
    comp, _ = ndimage.label(grid, structure=structure)
    lab = comp[cells[:, 0], cells[:, 1]]
    sizes = np.bincount(lab)
    out = np.full(len(cells), -1, dtype=int)
    keep = sizes[lab] >= 2
    _, first = np.unique(lab[keep], return_index=True)
    order = np.argsort(first)
    remap = np.full(sizes.size, -1, dtype=int)
    remap[np.unique(lab[keep])[order]] = np.arange(order.size)
    out[keep] = remap[lab[keep]]
    return out


def cluster_frontiers(cells: np.ndarray, c: FrontierPlannerConfig, shape) -> np.ndarray:
    """DBSCAN the frontier cells (more than ``cluster_min_frontiers`` of them); one
    representative, the member nearest the cluster mean, per cluster; noise dropped."""
    if len(cells) <= c.cluster_min_frontiers:
        return cells.astype(int)
    labels = dbscan_cells(cells, c.eps, c.dbscan_min_samples, shape)
    reps = []
    for lab in np.unique(labels):
        if lab < 0:
            continue
        members = cells[labels == lab]
        d2 = ((members - members.mean(axis=0)) ** 2).sum(axis=1)
        reps.append(members[np.argmin(d2)])
    return np.array(reps, dtype=int).reshape(-1, 2)
