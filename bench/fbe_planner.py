"""Benchmark the ``fbe`` proposer against ``re`` and an every-voxel fusion baseline.

    .venv/bin/python bench/fbe_planner.py [--steps 30] [--seeds 0 1 2] [--look-around 90 180 270]

Scene: a procedural 5-room apartment (``eqa_runner.demo.apartment``, seed ``--scene-seed``)
on the mesh simulator, stretched to ``--footprint`` (default 12 x 10 m; the generator draws at
most ~12 x 9 m for 5 rooms). Per seed one start pose; every policy runs the same episodes
through the real proposer API (``reset`` / ``update`` / ``propose``, navmesh snap, geodesic
hop length), without the model calls. Printed per mode: fuse ms (all views fused in a step)
and plan ms, median and p90 (wall | thread CPU), coverage (explored share of the free floor
reachable from the start) after each step, path length, hop sources, peak RSS.

Modes: ``fbe`` (frustum-restricted fusion, compiled numba kernel: the default),
``fbe/numpy`` (the same frustum restriction, vectorised numpy kernel), ``fbe/every-voxel``
(the same proposer fusing the upstream way: every voxel of the volume projected each frame;
numpy here, numba upstream), ``fbe/margin-0.5+3m`` (the planner defaults before issue 13: a
0.5 m margin around the navmesh bounds and hops cut at 3 m of path; now upstream's margin 0 and
30 path nodes), ``fbe/pre-24`` (the planner's own rules that issue 24 turned into options:
Generator draws, wrapped angle against the agent's yaw, random-hop fallback, MCP hop paths,
commits dropped off the island) and ``re`` (random hops within 3 m, forward view only, fused only
to measure coverage). The numba kernel is loaded (compiled on a fresh install) before any
timing; that one-off cost is printed separately.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqa_runner.mapping import FrontierPlanner, FuseStats, TSDFVolume  # noqa: E402
from eqa_runner.mapping.tsdf import warm_up  # noqa: E402
from eqa_runner.policies.explore import AgentState, RandomProposer  # noqa: E402
from eqa_runner.policies.frontier import FrontierProposer, bounds_normal  # noqa: E402
from eqa_runner.sim import geometry as geo  # noqa: E402
from eqa_runner.types import Episode  # noqa: E402

# --------------------------------------------------------------------------- baseline


class EveryVoxelVolume(TSDFVolume):
    """Upstream-style fusion: precomputed world coords of ALL voxels, projected each frame."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        idx = np.indices(self.tsdf.shape).reshape(3, -1).T
        self._pts = (self.origin + idx * self.voxel_size).astype(np.float32)  # (N, 3)

    def integrate(self, depth, intrinsics, cam_to_world, rgb=None, margin_h=0, margin_w=0,
                  obs_weight=1.0, restrict_to_frustum=True,
                  max_height=None) -> FuseStats:  # fmt: skip
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


# --------------------------------------------------------------------------- scene


def make_sim(seed: int, footprint: tuple[float, float] | None, px: int):
    """Mesh simulator on procedural apartment ``seed`` (5 rooms), optionally stretched in x-z."""
    from eqa_runner.demo.apartment import generate_apartment
    from eqa_runner.sim.mesh import MeshSimulator, TriangleMeshData

    apt = generate_apartment(seed, n_rooms=5)
    v = np.asarray(apt.vertices, dtype=float).copy()
    if footprint is not None:
        lo, hi = v[:, [0, 2]].min(axis=0), v[:, [0, 2]].max(axis=0)
        scale = np.array(footprint) / (hi - lo - 0.2)  # walls are 0.1 m thick outside
        v[:, [0, 2]] = lo + (v[:, [0, 2]] - lo) * scale
    sim = MeshSimulator(width=px, height=px, hfov_deg=90.0, sensor_height_m=1.5)
    sim.load_arrays(TriangleMeshData(v, apt.triangles, apt.vertex_colors))
    lo, hi = sim.bounds()
    closed = [o.room for o in apt.objects if o.name == "door" and o.state == "closed"]
    name = (
        f"procedural apartment seed {seed}, {len(apt.rooms)} rooms, navmesh bounds "
        f"{hi[0] - lo[0]:.1f} x {hi[2] - lo[2]:.1f} m, closed doors: {closed or 'none'}"
    )
    return sim, name


def free_floor_mask(sim, vol: TSDFVolume, start_h: np.ndarray) -> np.ndarray:
    """Navigable cells reachable from the start, rasterised on the TSDF grid."""
    g = sim.navgrid
    si, sj = g.cell_of(start_h[0], start_h[2])
    reach = g.navigable & (g.labels == g.labels[si, sj])
    xy = vol.cell_points_xy()
    i = np.floor((xy[..., 0] - g.x0) / g.c).astype(int)
    j = np.floor((-xy[..., 1] - g.z0) / g.c).astype(int)
    ok = (i >= 0) & (i < g.shape[0]) & (j >= 0) & (j < g.shape[1])
    out = np.zeros(ok.shape, dtype=bool)
    out[ok] = reach[i[ok], j[ok]]
    return out


# --------------------------------------------------------------------------- episodes


def run_episode(sim, mode: str, start: np.ndarray, seed: int, steps: int, look: list[float]):
    rng = np.random.default_rng(seed)
    yaw0 = float(np.random.default_rng(seed + 7).uniform(-math.pi, math.pi))
    ep = Episode(
        f"bench{seed}", "?", "", "", scene="bench", meta={"start_position": start.tolist()}
    )
    floor = float(start[1])
    sim.set_agent_pose(start, geo.yaw_to_quat(yaw0))
    if mode == "re":
        prop = RandomProposer(radius_m=3.0)
        tracker = FrontierPlanner()
        tracker.reset(
            bounds_normal(sim),
            float(geo.habitat_to_normal(start)[2]),
            start_position_normal=geo.habitat_to_normal(start),
        )
    else:
        planner = {}
        if mode == "fbe/margin-0.5+3m":  # the defaults before issue 13
            planner = {"bounds_margin": 0.5, "hop_rule": "path_length"}
        if mode == "fbe/pre-24":  # the project's rules, options since issue 24
            planner = {
                "random_source": "generator",
                "angle_wrap": True,
                "penalty_yaw": "agent",
                "fallback": "random_hop",
                "hop_path": "mcp",
                "keep_commit": "on_island",
            }
        prop = FrontierProposer(planner=planner, look_around_deg=look)
        tracker = prop.planner
    prop.reset(ep, sim, rng)
    if mode == "fbe/numpy":  # the numpy fusion: the compiled kernel's test oracle
        v = prop.planner.volume
        b = v.bounds - [[0.0, 1e-6]]  # same dims despite rounding
        prop.planner.volume = TSDFVolume(
            b, v.voxel_size, prop.config.planner.trunc_voxels, kernel="numpy"
        )
        tracker = prop.planner
    if mode == "fbe/every-voxel":
        v = prop.planner.volume
        b = v.bounds - [[0.0, 1e-6]]  # same dims despite rounding
        prop.planner.volume = EveryVoxelVolume(b, v.voxel_size, prop.config.planner.trunc_voxels)
        tracker = prop.planner
    free = free_floor_mask(sim, tracker.volume, start)
    state = AgentState(0, start.copy(), geo.yaw_to_quat(yaw0), floor)
    cov, path, sources = [], 0.0, []
    for step in range(steps):
        state = AgentState(step, state.position, state.rotation, floor)
        sim.set_agent_pose(state.position, state.rotation)
        obs = sim.observe()
        if mode == "re":
            tracker.update(
                obs.depth,
                obs.intrinsics,
                geo.cam_pose_tsdf(obs.cam_to_world),
                state.position_normal,
            )
        else:
            prop.update(obs, state)
        sim.set_agent_pose(state.position, state.rotation)
        wp = prop.propose(state)
        cov.append(tracker.explored_floor_fraction(free))
        sources.append(wp.source)
        x, y = wp.position_normal
        p = np.asarray(sim.snap_point(geo.normal_to_habitat([x, y, floor])), float)
        if not np.all(np.isfinite(p)):
            p = np.asarray(sim.random_navigable_point_near(state.position, 3.0, rng), float)
        if not np.all(np.isfinite(p)):
            p = state.position.copy()
        hop = sim.geodesic_distance(state.position, p)
        path += hop if math.isfinite(hop) else 0.0
        state = AgentState(step, p, geo.yaw_to_quat(wp.angle), floor)
    out = {"cov": np.array(cov), "path": path, "sources": sources}
    if mode != "re":
        out.update(
            fuse=np.array(prop.fuse_ms),
            plan=np.array(prop.plan_ms),
            fuse_cpu=np.array(prop.fuse_cpu_ms),
            plan_cpu=np.array(prop.plan_cpu_ms),
            render=np.array(prop.render_ms or [0.0]),
        )
    return out


def pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--scene-seed", type=int, default=41, help="apartment seed (41: 11.9 x 8.5 m)")
    ap.add_argument("--footprint", default="12x10", help="stretch to W x D metres ('none': as is)")
    ap.add_argument("--size", type=int, default=512, help="image side (px)")
    ap.add_argument(
        "--look-around",
        type=float,
        nargs="*",
        default=None,
        help="look-around yaw offsets (deg); default: conf/policy/fbe.yaml's",
    )
    ap.add_argument("--modes", nargs="+", default=["fbe", "fbe/numpy", "fbe/every-voxel", "re"])
    args = ap.parse_args()
    look = args.look_around
    if look is None:  # the policy's default: fbe.yaml's value, else its schema's
        from omegaconf import OmegaConf

        from eqa_runner.policies.config import FrontierProposerConfig

        fbe_yaml = OmegaConf.load(ROOT / "eqa_runner" / "conf" / "policy" / "fbe.yaml")
        default = FrontierProposerConfig().look_around_deg
        look = list(OmegaConf.select(fbe_yaml, "proposer.look_around_deg", default=default))
    fp = None if args.footprint == "none" else tuple(float(x) for x in args.footprint.split("x"))
    sim, name = make_sim(args.scene_seed, fp, args.size)
    starts = {
        s: np.asarray(sim.random_navigable_point(np.random.default_rng(1000 + s)))
        for s in args.seeds
    }
    print(f"scene: {name}")
    print(
        f"{args.steps} steps x seeds {args.seeds}; {args.size}px HFOV 90; fbe look-around "
        f"{look or 'none'} deg ({1 + len(look)} view{'s' if look else ''}/step); load avg "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(f"numba fusion kernel load (compile on first use): {warm_up():.0f} ms")
    results = {}
    for mode in args.modes:
        runs = [run_episode(sim, mode, starts[s], s, args.steps, look) for s in args.seeds]
        results[mode] = runs
        print(f"\n== {mode}")
        if mode != "re":
            cat = {
                k: np.concatenate([r[k] for r in runs])
                for k in ("fuse", "plan", "fuse_cpu", "plan_cpu", "render")
            }
            rows = (
                ("fuse", cat["fuse"], cat["fuse_cpu"]),
                ("plan", cat["plan"], cat["plan_cpu"]),
                ("fuse+plan", cat["fuse"] + cat["plan"], cat["fuse_cpu"] + cat["plan_cpu"]),
            )
            print("  per step (ms)   wall: median    p90 | thread CPU: median    p90")
            for label, a, b in rows:
                print(
                    f"  {label:9s}            {np.median(a):7.2f} {pct(a, 90):6.2f} |"
                    f"             {np.median(b):7.2f} {pct(b, 90):6.2f}"
                )
            rend = np.median(cat["render"])
            print(f"  look-around renders per step (not in fuse): median {rend:.0f} ms")
        for s, r in zip(args.seeds, runs, strict=True):
            src = {k: r["sources"].count(k) for k in sorted(set(r["sources"]))}
            cov = r["cov"][-1]
            print(f"  seed {s}: coverage@{args.steps} {cov:.3f}  path {r['path']:.1f} m  {src}")
            print("    after each step: " + " ".join(f"{c:.2f}" for c in r["cov"]))
        print(
            f"  mean coverage@{args.steps}: {np.mean([r['cov'][-1] for r in runs]):.3f};"
            f" peak RSS so far {peak_rss_mb():.0f} MiB"
        )

    print("\n== comparison (same episodes)")
    means = {m: float(np.mean([r["cov"][-1] for r in rs])) for m, rs in results.items()}
    cov_txt = ", ".join(f"{m} {c:.3f}" for m, c in means.items())
    print(f"  mean coverage@{args.steps}: {cov_txt}")
    if "fbe" in results and "re" in results:
        wins = sum(
            a["cov"][-1] > b["cov"][-1] for a, b in zip(results["fbe"], results["re"], strict=True)
        )
        print(f"  fbe > re on {wins}/{len(args.seeds)} episodes")
    for other in ("fbe/numpy", "fbe/every-voxel"):
        if "fbe" not in results or other not in results:
            continue
        f, b = results["fbe"], results[other]
        fm = np.median(np.concatenate([r["fuse_cpu"] for r in f]))
        bm = np.median(np.concatenate([r["fuse_cpu"] for r in b]))
        fw = np.median(np.concatenate([r["fuse"] for r in f]))
        bw = np.median(np.concatenate([r["fuse"] for r in b]))
        same = all(
            np.array_equal(x["cov"], y["cov"]) and x["sources"] == y["sources"]
            for x, y in zip(f, b, strict=True)
        )
        print(
            f"  fuse speed-up of fbe vs {other}: {bw / fw:.1f}x wall, {bm / fm:.1f}x CPU "
            f"(median); same trajectories and coverage: {same}"
        )


if __name__ == "__main__":
    main()
