"""Benchmark the frontier planner: frustum-restricted fusion vs. every-voxel fusion.

    .venv/bin/python bench/fbe_planner.py [--steps 30] [--seeds 0 1 2] [--scene auto]

Per step: fuse ms and plan ms (median, p90), explored-floor fraction, path length.
The baseline fuses the way the upstream ``TSDFPlanner.integrate`` does (every voxel of the
volume transformed and projected each frame; numpy here, numba upstream); it feeds the same
planner. Scenes: ``sim`` = the mesh simulator on a procedural 5-room apartment
(``eqa_runner.sim``), ``analytic`` = a 12 m x 10 m, 5-room box apartment rendered by ray
casting (tests/mapping/mapping_boxworld.py); ``auto`` picks ``sim`` when it imports.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "mapping"))

from eqa_runner.mapping import (  # noqa: E402
    FrontierPlanner,
    FrontierPlannerConfig,
    FuseStats,
    TSDFVolume,
    cam_to_world_habitat_to_normal_cv,
    position_habitat_to_normal,
    position_normal_to_habitat,
)

# --------------------------------------------------------------------------- baseline


class EveryVoxelVolume(TSDFVolume):
    """Upstream-style fusion: precomputed world coords of ALL voxels, projected each frame."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        idx = np.indices(self.tsdf.shape).reshape(3, -1).T
        self._pts = (self.origin + idx * self.voxel_size).astype(np.float32)  # (N, 3)

    def integrate(self, depth, intrinsics, cam_to_world, rgb=None, margin_h=0, margin_w=0,
                  obs_weight=1.0, restrict_to_frustum=True) -> FuseStats:  # fmt: skip
        depth = np.asarray(depth, dtype=np.float32)
        h, w = depth.shape
        inv = np.linalg.inv(cam_to_world)
        hom = np.hstack([self._pts, np.ones((len(self._pts), 1), dtype=np.float32)])
        cam = (inv @ hom.T).T[:, :3]
        z = cam[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.round(cam[:, 0] * intrinsics[0, 0] / z + intrinsics[0, 2])
            v = np.round(cam[:, 1] * intrinsics[1, 1] / z + intrinsics[1, 2])
        ok = (u >= 0) & (u < w) & (v >= 0) & (v < h) & (z > 0)
        d = np.zeros(len(z), dtype=np.float32)
        d[ok] = depth[v[ok].astype(int), u[ok].astype(int)]
        diff = d - z
        upd = (d > 0) & (diff >= -self.trunc)
        narrow = upd & (u >= margin_w) & (u < w - margin_w) & (v >= margin_h)
        tsdf = self.tsdf.reshape(-1)
        wgt = self.weight.reshape(-1)
        w_old = wgt[upd]
        w_new = w_old + obs_weight
        dist = np.clip(diff[upd] / self.trunc, -1, 1)
        tsdf[upd] = (w_old * tsdf[upd] + obs_weight * dist) / w_new
        wgt[upd] = w_new
        self.explored.reshape(-1)[narrow] = True
        self.explored_2d |= narrow.reshape(self.tsdf.shape).any(axis=2)
        return FuseStats(len(z), int(upd.sum()), int(narrow.sum()))


# --------------------------------------------------------------------------- scenes


@dataclass
class Scene:
    name: str
    bounds_xy: np.ndarray  # (2, 2) normal frame
    floor: float
    starts: list[np.ndarray]  # normal frame (x, y, floor)
    observe: object  # (pos_normal, yaw) -> (depth, K, cam_to_world_normal)
    snap: object  # pos_normal -> pos_normal (navigable) or None
    geodesic: object  # (a, b) -> metres
    free_mask: object  # (origin, voxel, dims, start) -> bool grid of floor reachable from start
    meta: dict = field(default_factory=dict)


def sim_scene(seed: int, hw: int) -> Scene:
    from eqa_runner.sim import geometry as geo
    from eqa_runner.sim.mesh import MeshSimulator
    from eqa_runner.sim.procedural import generate_apartment

    apt = generate_apartment(seed, n_rooms=5)
    sim = MeshSimulator(width=hw, height=hw, hfov_deg=90.0, sensor_height_m=1.5)
    sim.load_arrays(apt.mesh_data())
    floor_h = sim.floor_height
    lo, hi = sim.bounds()
    lo_n, hi_n = position_habitat_to_normal(lo), position_habitat_to_normal(hi)
    bounds = np.array(
        [
            [min(lo_n[0], hi_n[0]), max(lo_n[0], hi_n[0])],
            [min(lo_n[1], hi_n[1]), max(lo_n[1], hi_n[1])],
        ]
    )
    rng = np.random.default_rng(1000 + seed)
    starts = [position_habitat_to_normal(sim.random_navigable_point(rng)) for _ in range(16)]

    def observe(pos_n, yaw):
        sim.set_agent_pose(position_normal_to_habitat(pos_n), geo.yaw_to_quat(yaw))
        obs = sim.observe()
        return obs.depth, obs.intrinsics, cam_to_world_habitat_to_normal_cv(obs.cam_to_world)

    def snap(pos_n):
        p = sim.snap_point(position_normal_to_habitat(pos_n))
        return None if not np.all(np.isfinite(p)) else position_habitat_to_normal(p)

    def geodesic(a, b):
        return sim.geodesic_distance(position_normal_to_habitat(a), position_normal_to_habitat(b))

    def free_mask(origin, voxel, dims, start):
        g = sim.navgrid
        si, sj = g.cell_of(*position_normal_to_habitat(start)[[0, 2]])
        reach = g.navigable & (g.labels == g.labels[si, sj])
        xs = origin[0] + np.arange(dims[0]) * voxel
        ys = origin[1] + np.arange(dims[1]) * voxel
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        i = np.floor((gx - g.x0) / g.c).astype(int)
        j = np.floor((-gy - g.z0) / g.c).astype(int)
        ok = (i >= 0) & (i < g.shape[0]) & (j >= 0) & (j < g.shape[1])
        out = np.zeros(gx.shape, dtype=bool)
        out[ok] = reach[i[ok], j[ok]]
        return out

    size = bounds[:, 1] - bounds[:, 0]
    closed = [o.room for o in apt.objects if o.name == "door" and o.state == "closed"]
    name = (
        f"sim apartment seed {seed} ({len(apt.rooms)} rooms, {size[0]:.1f} x {size[1]:.1f} m"
        f" navmesh bounds, closed doors: {closed or 'none'})"
    )
    return Scene(name, bounds, floor_h, starts, observe, snap, geodesic, free_mask)


def analytic_scene(hw: int) -> Scene:
    from mapping_boxworld import HEIGHT, WALL, BoxWorld
    from skimage import graph

    from eqa_runner.mapping import camera_pose_normal, intrinsics_from_hfov

    world = BoxWorld((0.0, 12.0, 0.0, 10.0))
    world.add((-WALL, -WALL, 0), (12 + WALL, 0, HEIGHT))
    world.add((-WALL, 10, 0), (12 + WALL, 10 + WALL, HEIGHT))
    world.add((-WALL, 0, 0), (0, 10, HEIGHT))
    world.add((12, 0, 0), (12 + WALL, 10, HEIGHT))

    def wall_x(x, y0, y1, d0, d1):
        world.add((x, y0, 0), (x + WALL, d0, HEIGHT))
        world.add((x, d1, 0), (x + WALL, y1, HEIGHT))

    def wall_y(y, x0, x1, d0, d1):
        world.add((x0, y, 0), (d0, y + WALL, HEIGHT))
        world.add((d1, y, 0), (x1, y + WALL, HEIGHT))

    # rooms: A [0,5]x[0,5], B [5,12]x[0,5], C [0,4]x[5,10], D [4,8]x[5,10], E [8,12]x[5,10]
    wall_x(5.0, 0.0, 5.0, 2.0, 3.0)
    wall_y(5.0, 0.0, 12.0, 1.5, 2.5)
    world.add((2.5, 5.0, 0), (6.0, 5.0 + WALL, HEIGHT))
    world.add((7.0, 5.0, 0), (9.5, 5.0 + WALL, HEIGHT))
    world.add((10.5, 5.0, 0), (12.0, 5.0 + WALL, HEIGHT))
    wall_x(4.0, 5.0, 10.0, 7.0, 8.0)
    wall_x(8.0, 5.0, 10.0, 7.5, 8.5)
    for lo, hi in [((1, 1, 0), (2.5, 2, 0.8)), ((9, 3, 0), (11, 4.5, 0.75)),
                   ((5.5, 8.8, 0), (7, 9.9, 1.0)), ((0.2, 8, 0), (1, 9.8, 2.0))]:  # fmt: skip
        world.add(lo, hi)
    k = intrinsics_from_hfov(90.0, hw, hw)
    voxel = 0.05
    nav_origin = np.array([0.0, 0.0])
    nav = world.free_floor_mask(nav_origin, voxel, np.array([241, 201]))
    # erode by an agent radius of ~0.2 m for navigability
    from scipy import ndimage

    nav = ndimage.binary_erosion(nav, np.ones((7, 7), bool))
    cells = np.argwhere(nav)

    def observe(pos_n, yaw):
        pose = camera_pose_normal(np.asarray(pos_n) + [0, 0, 1.5], yaw)
        return world.render(pose, k, hw, hw), k, pose

    def to_cell(p):
        return np.round((np.asarray(p[:2]) - nav_origin) / voxel).astype(int)

    def snap(pos_n):
        c = to_cell(pos_n)
        near = cells[np.argmin(((cells - c) ** 2).sum(axis=1))]
        if np.linalg.norm(near - c) * voxel > 2.0:
            return None
        return np.array([*(nav_origin + near * voxel), 0.0])

    def geodesic(a, b):
        mcp = graph.MCP_Geometric(np.where(nav, 1.0, np.inf))
        cost, _ = mcp.find_costs([tuple(to_cell(a))], [tuple(to_cell(b))])
        return float(cost[tuple(to_cell(b))]) * voxel

    def free_mask(origin, vox, dims, start):
        xs = origin[0] + np.arange(dims[0]) * vox
        ys = origin[1] + np.arange(dims[1]) * vox
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        i = np.round(gx / voxel).astype(int)
        j = np.round(gy / voxel).astype(int)
        ok = (i >= 0) & (i < nav.shape[0]) & (j >= 0) & (j < nav.shape[1])
        out = np.zeros(gx.shape, dtype=bool)
        out[ok] = nav[i[ok], j[ok]]
        return out

    starts = [np.array([1.0, 4.0, 0.0]), np.array([10.0, 1.0, 0.0]), np.array([6.0, 7.0, 0.0])]
    return Scene("analytic 12 x 10 m, 5 rooms", np.array([[0.0, 12.0], [0.0, 10.0]]), 0.0,
                 starts, observe, snap, geodesic, free_mask)  # fmt: skip


# --------------------------------------------------------------------------- episode


def run(scene: Scene, seed: int, steps: int, baseline: bool, overrides: dict) -> dict:
    planner = FrontierPlanner(FrontierPlannerConfig(**overrides))
    start = scene.starts[seed % len(scene.starts)]
    planner.reset(scene.bounds_xy, scene.floor, rng=seed, start_position_normal=start)
    if baseline:
        v = planner.volume
        planner.volume = EveryVoxelVolume(v.bounds, v.voxel_size, planner.cfg.trunc_voxels)
    vol = planner.volume
    free = scene.free_mask(vol.origin, vol.voxel_size, vol.dims, start)
    pos, yaw = np.asarray(start, dtype=float), 0.0
    fuse_ms, plan_ms, fuse_cpu, plan_cpu, cov, sources = [], [], [], [], [], []
    path_len = 0.0
    for _ in range(steps):
        depth, k, pose = scene.observe(pos, yaw)
        t0, c0 = time.perf_counter(), time.thread_time()
        planner.update(depth, k, pose, pos)
        t1, c1 = time.perf_counter(), time.thread_time()
        wp = planner.next_pose(pos, agent_yaw=yaw)
        t2, c2 = time.perf_counter(), time.thread_time()
        fuse_ms.append((t1 - t0) * 1e3)
        plan_ms.append((t2 - t1) * 1e3)
        fuse_cpu.append((c1 - c0) * 1e3)
        plan_cpu.append((c2 - c1) * 1e3)
        cov.append(planner.explored_floor_fraction(free))
        sources.append(wp.source)
        nxt = scene.snap(np.array([*wp.position_normal, scene.floor]))
        if nxt is None:
            nxt = pos
        hop = scene.geodesic(pos, nxt)
        if math.isfinite(hop):
            path_len += hop
        pos, yaw = nxt, wp.angle
    return {
        "fuse": np.array(fuse_ms),
        "plan": np.array(plan_ms),
        "fuse_cpu": np.array(fuse_cpu),
        "plan_cpu": np.array(plan_cpu),
        "cov": np.array(cov),
        "path": path_len,
        "sources": sources,
        "nbytes": vol.nbytes() + (vol._pts.nbytes if baseline else 0),  # type: ignore[attr-defined]
    }


def pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--scene", choices=["auto", "sim", "analytic"], default="auto")
    ap.add_argument(
        "--scene-seed", type=int, default=4, help="apartment seed (4: 12 x 8 m, doors open)"
    )
    ap.add_argument("--size", type=int, default=512, help="image side (px)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="FrontierPlannerConfig overrides, e.g. fallback=turn",
    )
    args = ap.parse_args()
    overrides = {}
    defaults = FrontierPlannerConfig()
    for kv in args.set:
        key, val = kv.split("=", 1)
        typ = type(getattr(defaults, key))
        overrides[key] = (val.lower() in ("1", "true", "yes")) if typ is bool else typ(val)

    scene = None
    if args.scene in ("auto", "sim"):
        try:
            scene = sim_scene(args.scene_seed, args.size)
        except Exception as exc:  # noqa: BLE001
            if args.scene == "sim":
                raise
            print(f"[mesh simulator unavailable: {type(exc).__name__}: {exc}] -> analytic scene")
    if scene is None:
        scene = analytic_scene(args.size)
    print(f"scene: {scene.name}; {args.steps} steps x seeds {args.seeds}; {args.size}px, HFOV 90")
    print(
        f"config overrides: {overrides or 'none (upstream defaults)'}; load avg "
        f"{' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}"
    )

    results = {}
    for mode in ["frustum"] + ([] if args.no_baseline else ["every-voxel"]):
        runs = [run(scene, s, args.steps, mode != "frustum", overrides) for s in args.seeds]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        fuse = np.concatenate([r["fuse"] for r in runs])
        plan = np.concatenate([r["plan"] for r in runs])
        fuse_c = np.concatenate([r["fuse_cpu"] for r in runs])
        plan_c = np.concatenate([r["plan_cpu"] for r in runs])
        total, total_c = fuse + plan, fuse_c + plan_c
        results[mode] = (runs, fuse, plan, total, fuse_c, total_c)
        print(f"\n== {mode} fusion   (wall ms | thread-CPU ms)")
        for label, a, b in (("fuse", fuse, fuse_c), ("plan", plan, plan_c),
                            ("fuse+plan", total, total_c)):  # fmt: skip
            print(
                f"  {label:9s} median {np.median(a):6.2f} p90 {pct(a, 90):6.2f} | "
                f"median {np.median(b):6.2f} p90 {pct(b, 90):6.2f}"
            )
        for s, r in zip(args.seeds, runs, strict=True):
            traj = " ".join(f"{c:.2f}" for c in r["cov"][4::5])
            src = {k: r["sources"].count(k) for k in ("frontier", "commit", "fallback")}
            print(f"  seed {s}: coverage@{args.steps} {r['cov'][-1]:.3f}  path {r['path']:.1f} m"
                  f"  every 5 steps [{traj}]  {src}")  # fmt: skip
        print(f"  mean coverage@{args.steps}: {np.mean([r['cov'][-1] for r in runs]):.3f}")
        print(f"  volume arrays {runs[0]['nbytes'] / 2**20:.1f} MiB; peak RSS so far {rss:.0f} MiB")

    if "every-voxel" in results:
        f, b = results["frustum"], results["every-voxel"]
        print("\n== comparison")
        print(f"  fuse speed-up (median wall): {np.median(b[1]) / np.median(f[1]):.1f}x, "
              f"(median CPU): {np.median(b[4]) / np.median(f[4]):.1f}x;  fuse+plan (CPU): "
              f"{np.median(b[5]) / np.median(f[5]):.1f}x")  # fmt: skip
        cf = np.mean([r["cov"][-1] for r in f[0]])
        cb = np.mean([r["cov"][-1] for r in b[0]])
        print(f"  coverage@{args.steps}: frustum {cf:.3f} vs every-voxel {cb:.3f}")


if __name__ == "__main__":
    main()
