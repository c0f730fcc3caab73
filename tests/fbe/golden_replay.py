"""Replay the upstream-planner golden fixture (tests/golden/fbe/) through the project's planner.

The fixture holds the frames (depth, camera and agent poses) of closed-loop episodes driven by
upstream EXPRESS-Bench's planner and what that planner computed at each step; see its README.
:func:`replay` feeds the same frames to :class:`FrontierPlanner` and counts the steps on which
each output differs.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np

from eqa_runner.mapping import FrontierPlanner
from eqa_runner.sim import geometry as geo

GOLDEN = Path(os.environ.get("EQA_FBE_GOLDEN", Path(__file__).parents[1] / "golden" / "fbe"))
KINDS = ("maps", "frontiers", "weights", "chosen", "next_cell", "yaw", "source", "target")
# upstream point_type -> the project's Waypoint.source
SOURCE = {"frontier": "frontier", "commit": "commit", "current": "fallback"}


def load(golden: Path = GOLDEN) -> tuple[dict, dict]:
    with np.load(golden / "inputs.npz") as a, np.load(golden / "upstream.npz") as b:
        return dict(a), dict(b)


def _unpack(bits: np.ndarray, dims) -> np.ndarray:
    n = int(dims[0]) * int(dims[1])
    return np.unpackbits(bits)[:n].reshape(int(dims[0]), int(dims[1])).astype(bool)


def replay(golden: Path = GOLDEN, **overrides) -> tuple[Counter, int, list[str]]:
    """(mismatching steps per kind, steps compared, first few mismatch descriptions)."""
    inp, up = load(golden)
    seeds, steps = inp["fused"].shape
    h, w = inp["depth"].shape[2:]
    k = geo.intrinsics_from_hfov(90.0, w, h)
    offs = np.concatenate([[0], np.cumsum(up["frontier_counts"].ravel())])
    bad: Counter = Counter()
    notes: list[str] = []
    dims = up["grid_dims"]
    for s in range(seeds):
        planner = FrontierPlanner(**overrides)
        start_n = geo.habitat_to_normal(inp["pos_h"][s, 0])
        bnds = inp["tsdf_bnds"][s]
        planner.reset(bnds[:2], float(start_n[2]), rng=int(inp["seeds"][s]),
                      start_position_normal=start_n)  # fmt: skip
        for t in range(steps):
            pos_n = geo.habitat_to_normal(inp["pos_h"][s, t])
            if inp["fused"][s, t]:
                depth = inp["depth"][s, t].astype(np.float32) / np.float32(1000.0)
                planner.update(depth, k, geo.cam_pose_tsdf(inp["cam"][s, t]), pos_n)
            yaw = geo.quat_to_yaw(inp["rot"][s, t])
            wp = planner.next_pose(pos_n, agent_yaw=yaw, step=t)
            i = s * steps + t
            diffs = _compare(planner, wp, up, s, t, offs[i], offs[i + 1], dims)
            for kind in diffs:
                bad[kind] += 1
                if len(notes) < 12:
                    notes.append(f"seed {s} step {t}: {kind}")
    return bad, seeds * steps, notes


def _compare(planner, wp, up, s, t, a, b, dims) -> list[str]:
    m = planner.maps
    assert m is not None
    out = []
    ref_un = _unpack(up["map_unoccupied"][s, t], dims)
    ref_is = _unpack(up["map_island"][s, t], dims)
    ref_ux = _unpack(up["map_unexplored"][s, t], dims)
    if not (
        np.array_equal(m.unoccupied, ref_un)
        and np.array_equal(m.island, ref_is)
        and np.array_equal(~m.explored, ref_ux)
    ):
        out.append("maps")
    fr = up["frontiers"][a:b]
    if not np.array_equal(m.frontiers, fr):
        out.append("frontiers")
    else:
        ref_w = up["weights"][a:b]
        got = m.frontier_weights
        if up["point_type"][s, t] != "commit" and not np.allclose(got, ref_w, rtol=1e-9, atol=0):
            out.append("weights")
    if SOURCE[str(up["point_type"][s, t])] != wp.source:
        out.append("source")
    chosen = (-1, -1) if m.chosen_cell is None else m.chosen_cell
    if up["point_type"][s, t] != "current" and tuple(up["max_point"][s, t]) != tuple(chosen):
        out.append("chosen")
    if tuple(up["next_cell"][s, t]) != tuple(m.next_cell or (-9, -9)):
        out.append("next_cell")
    ref_yaw = float(up["next_yaw"][s, t])
    if abs(geo.wrap_angle(ref_yaw - wp.angle)) > 1e-9:
        out.append("yaw")
    target = (-1, -1) if m.target_cell is None else m.target_cell
    if tuple(up["target"][s, t]) != tuple(target):
        out.append("target")
    return out
