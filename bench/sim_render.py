"""Benchmark the mesh simulator: render time per 512x512 RGB-D frame on a ~100k-triangle
procedural apartment, grid build time and geodesic-query time. Prints numbers only.

    python bench/sim_render.py [--triangles 100000] [--frames 40] [--queries 40]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eqa_runner.sim import geometry as geo  # noqa: E402
from eqa_runner.sim.mesh import MeshSimulator  # noqa: E402
from eqa_runner.sim.procedural import generate_apartment  # noqa: E402


def _stats(ms: list[float]) -> str:
    a = np.asarray(ms)
    return f"median {np.median(a):7.2f} ms   p90 {np.percentile(a, 90):7.2f} ms   n={len(a)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triangles", type=int, default=100_000)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    apt = generate_apartment(args.seed, min_triangles=args.triangles)
    t_gen = time.perf_counter() - t0
    sim = MeshSimulator(width=args.size, height=args.size)
    t0 = time.perf_counter()
    sim.load_arrays(apt.mesh_data())
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    grid = sim.navgrid
    t_grid = time.perf_counter() - t0
    print(
        f"cpus: {os.cpu_count()}  triangles: {len(apt.triangles)}  rooms: {len(apt.rooms)}  "
        f"objects: {len(apt.objects)}"
    )
    print(
        f"generate {t_gen * 1e3:.0f} ms   load/BVH {t_load * 1e3:.0f} ms   "
        f"nav grid {t_grid * 1e3:.0f} ms ({grid.shape[0]}x{grid.shape[1]} cells, "
        f"{int(grid.navigable.sum())} navigable)"
    )

    rng = np.random.default_rng(args.seed)
    poses = [
        (sim.random_navigable_point(rng), float(rng.uniform(-np.pi, np.pi)))
        for _ in range(args.frames)
    ]
    sim.set_agent_pose(poses[0][0], geo.yaw_to_quat(poses[0][1]))
    sim.observe()  # warm-up (ray directions, allocations)
    ms = []
    for p, yaw in poses:
        sim.set_agent_pose(p, geo.yaw_to_quat(yaw))
        t0 = time.perf_counter()
        obs = sim.observe()
        ms.append((time.perf_counter() - t0) * 1e3)
    hit = float((obs.depth > 0).mean())
    print(
        f"render {args.size}x{args.size} RGB-D:  {_stats(ms)}   "
        f"({1e3 / np.median(ms):.1f} fps; target 40 ms -> ratio {np.median(ms) / 40:.2f}; "
        f"hit ratio {hit:.2f})"
    )

    pts = [sim.random_navigable_point(rng) for _ in range(args.queries + 1)]
    src = pts[0]
    cold, warm, other = [], [], []
    for q in pts[1:]:
        sim.navgrid._sources.clear()
        t0 = time.perf_counter()
        sim.geodesic_distance(src, q)
        cold.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        sim.geodesic_distance(src, q)
        warm.append((time.perf_counter() - t0) * 1e3)
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        t0 = time.perf_counter()
        sim.geodesic_distance(a, b)
        other.append((time.perf_counter() - t0) * 1e3)
    print(f"geodesic, new source:     {_stats(cold)}")
    print(f"geodesic, cached source:  {_stats(warm)}")
    print(f"geodesic, mixed pairs:    {_stats(other)}")
    t0 = time.perf_counter()
    for q in pts:
        sim.snap_point(q + [0.3, 0.0, 0.3])
    print(f"snap_point: {(time.perf_counter() - t0) * 1e3 / len(pts):.3f} ms/query")


if __name__ == "__main__":
    main()
