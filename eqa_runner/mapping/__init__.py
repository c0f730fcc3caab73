"""TSDF fusion and frontier-based exploration planning (used by the ``fbe`` policy)."""

from __future__ import annotations

from eqa_runner.mapping.frontier import (
    FrontierPlanner,
    FrontierPlannerConfig,
    PlannerMaps,
    Waypoint,
)
from eqa_runner.mapping.tsdf import (
    FuseStats,
    TSDFVolume,
    tsdf_bounds,
)

__all__ = [
    "FrontierPlanner",
    "FrontierPlannerConfig",
    "FuseStats",
    "PlannerMaps",
    "TSDFVolume",
    "Waypoint",
    "tsdf_bounds",
]
