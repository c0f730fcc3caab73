"""Typed schema of the frontier planner (``policy.proposer.planner`` of ``policy=fbe``).

Defaults are the upstream values (upstream ``fine_eqa.yaml`` ``planner:`` block, identical
in explore-eqa ``cfg/vlm_exp.yaml``) unless noted "ours".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from eqa_runner.schema import bounded, one_of

FALLBACKS = ("turn", "random_hop")
HOP_RULES = ("path_nodes", "path_length")
HOP_PATHS = ("dijkstra", "mcp")
RANDOM_SOURCES = ("upstream", "generator")
PENALTY_YAWS = ("planned", "agent")
KEEP_COMMITS = ("always", "on_island")


@dataclass
class FrontierPlannerConfig:
    """Planner parameters (eqa_runner/mapping/frontier.py ``FrontierPlanner``)."""

    # --- volume / fusion
    voxel_size: float = bounded(0.1, gt=0)  # TSDF voxel side, metres (tsdf_grid_size)
    trunc_voxels: float = bounded(5.0, gt=0)  # truncation distance in voxels (5 * voxel_size)
    below_floor: float = bounded(0.2, ge=0)  # volume starts this far below the start floor, m
    above_floor: float = bounded(3.5, gt=0)  # volume ends this far above the start floor, m
    # x-y margin around the navmesh bounds, metres (upstream 0; a margin adds frontiers in the
    # padding strips beside the outer walls; 0.5 was this project's default before)
    bounds_margin: float = bounded(0.0, ge=0)
    # explored view drops this share of the width per side
    margin_w_ratio: float = bounded(0.25, ge=0, lt=0.5)
    # explored view drops this share of the height from the top
    margin_h_ratio: float = bounded(0.6, ge=0, lt=1)
    # start disc forced free + explored (0.5 doubled by main.py)
    init_clearance: float = bounded(1.0, ge=0)
    # ours: skip voxels above the camera when the narrowed (explored) view looks down; lossless
    # for every map the planner reads (false = upstream)
    clip_to_camera_height: bool = True
    # --- free space / island (tsdf.get_island_around_pts defaults)
    occupancy_height: float = bounded(0.4, ge=0)  # free-space slice, metres above the volume bottom
    fill_dim: float = bounded(0.4, ge=0)  # morphological closing square side, metres
    # --- frontier detection and weighting
    # min unexplored 8-neighbours of a frontier cell
    frontier_min_neighbors: int = bounded(3, ge=0, le=8)
    # max unexplored 8-neighbours of a frontier cell
    frontier_max_neighbors: int = bounded(4, ge=0, le=8)
    eps: float = bounded(1.0, gt=0)  # DBSCAN eps, grid cells
    dbscan_min_samples: int = bounded(2, ge=1)  # DBSCAN min_samples
    # cluster only when more frontier cells than this
    cluster_min_frontiers: int = bounded(10, ge=0)
    unexplored_T: float = bounded(0.2, gt=0)  # temperature of the unexplored-along-normal rate
    unoccupied_T: float = bounded(2.0, gt=0)  # temperature of the free-along-normal rate
    dist_T: float = bounded(10.0, gt=0)  # metres: weight *= exp(-distance / dist_T)
    max_unexplored_check_frontier: float = bounded(3.0, ge=0)  # metres along the normal checked
    max_unoccupied_check_frontier: float = bounded(1.0, ge=0)  # metres along the normal checked
    normal_check_cells: int = bounded(10, ge=1)  # cells counted each way to orient a normal
    min_dist_from_cur: float = bounded(0.5, ge=0)  # near-and-faced penalty radius (next field)
    # upstream compares metres to min_dist_from_cur / voxel_size (5 m at 0.1 m voxels);
    # false uses metres
    close_penalty_upstream_units: bool = True
    close_penalty: float = bounded(1e-3, ge=0)  # weight factor for near frontiers already faced
    # "already faced": normal within 30 deg of the yaw
    close_penalty_angle: float = bounded(math.pi / 6, ge=0)
    # false (upstream): |yaw - normal angle| as is (both atan2 - pi/2, so headings 2 pi apart
    # count as different); true: the difference wrapped to [-pi, pi)
    angle_wrap: bool = False
    # the yaw of the penalty: planned (upstream) = the planner's previous heading, 0 before its
    # first plan (main.py's init_angle) | agent = the agent's actual yaw
    penalty_yaw: str = one_of("planned", PENALTY_YAWS)
    # where the random draws come from (eqa_runner/mapping/streams.py): upstream = Python's
    # random + numpy's legacy stream, per episode, as upstream consumes them | generator = the
    # episode's numpy Generator for every draw
    random_source: str = one_of("upstream", RANDOM_SOURCES)
    # --- pose selection
    frontier_spacing: float = bounded(1.5, ge=0)  # max back-off from the frontier, metres
    min_backtrack: int = bounded(2, ge=0)  # cells the back-off must achieve
    max_sample_tries: int = bounded(50, ge=1)  # frontier resampling attempts (upstream max_try)
    # hop cap, metres (commit to farther targets over several hops; see hop_rule)
    max_dist_from_cur: float = bounded(3.0, gt=0)
    # path_nodes (upstream): cut the island path after max_dist_from_cur / voxel_size nodes
    # (diagonal steps count as one: up to ~4.2 m) | path_length: after max_dist_from_cur metres
    hop_rule: str = one_of("path_nodes", HOP_RULES)
    # path of a cut hop: dijkstra (upstream: from the agent's cell, an unreachable target is
    # moved to directly) | mcp (from the nearest island cell; unreachable: nearest reachable)
    hop_path: str = one_of("dijkstra", HOP_PATHS)
    # a committed far target: always kept (upstream) | on_island: dropped once off the island
    keep_commit: str = one_of("always", KEEP_COMMITS)
    # --- no qualifying frontier: turn (upstream: stay in place, random heading) | random_hop
    # (a random island cell 0.5-3 m away)
    fallback: str = one_of("turn", FALLBACKS)
    # --- semantic weighting (explore-eqa's semantic exploration; off = fbe, unchanged). On: a
    # semantic value map (values splatted by policy=vlm_explore, see integrate_semantic) scales
    # each frontier's weight by exp(val[f] / val_T) * exp(val_dir / val_dir_T), from the step
    # min_random_init_steps on; val = the map gaussian-smoothed by smooth_sigma voxels, val_dir =
    # the mean of its non-zero values along the frontier normal over max_val_check_frontier m.
    semantic: bool = False
    val_T: float = bounded(0.5, gt=0)  # temperature of the value at the frontier cell
    val_dir_T: float = bounded(0.5, gt=0)  # temperature of the value along the frontier normal
    max_val_check_frontier: float = bounded(3.0, ge=0)  # metres along the normal averaged
    smooth_sigma: float = bounded(5.0, ge=0)  # gaussian smoothing of the value map, voxels
    semantic_radius: float = bounded(1.0, ge=0)  # a value is splatted this close, metres
    min_random_init_steps: int = bounded(2, ge=0)  # steps before values weight frontiers

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VisualPromptConfig:
    """Where ``policy=vlm_explore`` draws its letters (explore-eqa ``visual_prompt:`` block):
    up to ``num_prompt_points`` reachable free-floor points in view, ``point_min_dist`` to
    ``point_max_dist`` metres away (upstream values unless noted)."""

    num_prompt_points: int = bounded(3, ge=1, le=8)  # farthest-point samples (letters A, B, C)
    min_num_prompt_points: int = bounded(2, ge=1)  # fewer kept points: no direction question
    num_max_unoccupied: int = bounded(300, ge=1)  # random subsample of the candidate cells
    min_points_for_clustering: int = bounded(3, ge=1)  # fewer candidate cells: no points
    cluster_threshold: float = bounded(1.0, ge=0)  # drop a point this close to a kept one, m
    point_min_dist: float = bounded(2.0, ge=0)  # metres from the agent
    point_max_dist: float = bounded(10.0, gt=0)
    cam_offset: float = bounded(0.6, ge=0)  # the in-view test moves the camera this far forward
    max_occupied_crossed: int = bounded(1, ge=0)  # line of sight: non-free cells crossed, at most
    margin_top_px: int = bounded(100, ge=0)  # letters stay this far below the top edge
    margin_side_px: int = bounded(30, ge=0)  # and this far from the side edges
    circle_radius: int = bounded(18, ge=1)  # letter disc radius, pixels

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
