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
    cam_to_world_habitat_to_normal_cv,
    camera_pose_normal,
    habitat_cam_to_world,
    intrinsics_from_hfov,
    position_habitat_to_normal,
    position_normal_to_habitat,
    tsdf_bounds,
)

__all__ = [
    "FrontierPlanner",
    "FrontierPlannerConfig",
    "FuseStats",
    "PlannerMaps",
    "TSDFVolume",
    "Waypoint",
    "cam_to_world_habitat_to_normal_cv",
    "camera_pose_normal",
    "habitat_cam_to_world",
    "intrinsics_from_hfov",
    "position_habitat_to_normal",
    "position_normal_to_habitat",
    "tsdf_bounds",
]
