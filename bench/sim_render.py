"""Benchmark the mesh simulator: render time per 512x512 RGB-D frame on a ~100k-triangle
procedural apartment (the production path: compiled z-buffer rasteriser + compiled shading;
the same with the numpy reference shading; the first ray-cast renderer, kept here as the
baseline), open3d's ray cast of the frame's 262,144 pixel-centre rays alone (the floor of any
ray-cast renderer), grid build time and geodesic-query time, and, where habitat-sim is
importable, the real habitat-sim rendering the same scene (written as the demo's HM3D-convention
``.glb``) from the same poses, interleaved with the mesh backend. Prints numbers only.

    python bench/sim_render.py [--triangles 100000] [--frames 40] [--queries 40]
    # with real habitat-sim (CPU, software EGL) in the habitat-cpu chroot:
    bash ../shared/habitat-cpu/run.sh /opt/habitat-cpu --bind "$PWD:/project" -- \
        python /project/bench/sim_render.py

The machine may be shared: every timing is reported as wall and CPU (``process_time``, all
threads) and the render paths are interleaved frame by frame, so their ratios hold under
load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eqa_runner.demo.apartment import generate_apartment  # noqa: E402
from eqa_runner.sim import geometry as geo  # noqa: E402
from eqa_runner.sim.mesh import _LIGHT, MeshSimulator, _o3d  # noqa: E402


class BaselineRenderer:
    """The first render path (one open3d ray cast per pixel centre, python-built rays,
    normals from open3d, float shading per pixel, no back-face culling), kept to measure
    against and to check the new output."""

    def __init__(self, sim: MeshSimulator) -> None:
        self.sim = sim
        s = sim.sensor
        k = geo.intrinsics_from_hfov(s.hfov_deg, s.width, s.height)
        v, u = np.meshgrid(np.arange(s.height), np.arange(s.width), indexing="ij")
        d = np.empty((s.height * s.width, 3), dtype=np.float32)
        d[:, 0] = ((u + 0.5 - k[0, 2]) / k[0, 0]).reshape(-1)  # through pixel centres
        d[:, 1] = (-(v + 0.5 - k[1, 2]) / k[1, 1]).reshape(-1)
        d[:, 2] = -1.0
        self.norm = np.linalg.norm(d, axis=1).astype(np.float32)
        self.buf = np.empty((len(d), 6), dtype=np.float32)
        self.x = np.ascontiguousarray(d[:, 0])
        self.y = np.ascontiguousarray(d[:, 1])

    def render(self, cam_to_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        o3d = _o3d()
        sim, s = self.sim, self.sim.sensor
        rot = cam_to_world[:3, :3].astype(np.float32)
        rays = self.buf
        rays[:, :3] = cam_to_world[:3, 3]
        for i in range(3):
            rays[:, 3 + i] = self.x * rot[i, 0] + self.y * rot[i, 1] - rot[i, 2]
        dirs = rays[:, 3:]
        out = sim._rc.cast_rays(o3d.core.Tensor.from_numpy(rays))
        t = out["t_hit"].numpy()
        hit = np.isfinite(t)
        pid = np.where(hit, out["primitive_ids"].numpy(), 0)
        if sim.config.interpolate_colors and not sim._flat_colors:
            uv = out["primitive_uvs"].numpy()
            tri = sim._tri32[pid]
            w0 = (1.0 - uv[:, 0] - uv[:, 1])[:, None]
            col = (
                sim._vcol[tri[:, 0]] * w0
                + sim._vcol[tri[:, 1]] * uv[:, 0:1]
                + sim._vcol[tri[:, 2]] * uv[:, 1:2]
            )
        else:
            col = sim._fcol[pid]
        n = out["primitive_normals"].numpy()
        head = np.abs(np.einsum("ij,ij->i", n, dirs)) / self.norm
        sun = np.abs(n[:, 0] * _LIGHT[0] + n[:, 1] * _LIGHT[1] + n[:, 2] * _LIGHT[2])
        shade = 0.35 * 255.0 + 0.45 * 255.0 * head + 0.2 * 255.0 * sun
        rgb = np.minimum(col * shade[:, None], 255.0).astype(np.uint8)
        rgb[~hit] = 0
        depth = np.where(hit, t, np.float32(0.0))
        return rgb.reshape(s.height, s.width, 3), depth.reshape(s.height, s.width)


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w0) * 1e3, (time.process_time() - c0) * 1e3


def _stats(ms: list[float]) -> str:
    a = np.asarray(ms)
    return f"median {np.median(a):7.2f}  p90 {np.percentile(a, 90):7.2f}"


def _row(name: str, pairs: list[tuple[float, float]]) -> None:
    wall, cpu = zip(*pairs, strict=True)
    print(f"  {name:<22} wall {_stats(list(wall))} ms   cpu {_stats(list(cpu))} ms")


def _median(pairs: list[tuple[float, float]], i: int) -> float:
    return float(np.median([p[i] for p in pairs]))


def habitat_side_by_side(apt, sim: MeshSimulator, poses, size: int) -> None:
    """The same poses rendered (RGB-D ``observe``) by the mesh backend and the real habitat-sim,
    interleaved; frames/s of both and the ratio."""
    import importlib.util
    import tempfile

    if importlib.util.find_spec("habitat_sim") is None:
        print("habitat-sim: not importable here (run this inside the habitat-cpu chroot)")
        return
    from eqa_runner.sim.base import SceneSpec
    from eqa_runner.sim.habitat import HabitatSimulator

    with tempfile.TemporaryDirectory() as tmp:
        glb, _ = apt.write(Path(tmp), "BenchApt")
        hab = HabitatSimulator(width=size, height=size)
        t0 = time.perf_counter()
        hab.load_scene(SceneSpec("BenchApt", glb), start_position=poses[0][0])
        t_load = time.perf_counter() - t0
    hab.observe()  # warm-up
    m, h = [], []
    for pos, q in poses:
        sim.set_agent_pose(pos, q)
        hab.set_agent_pose(pos, q)
        m.append(_timed(sim.observe))
        h.append(_timed(hab.observe))
    import habitat_sim

    print(
        f"real habitat-sim {habitat_sim.__version__} (load + navmesh bake {t_load:.1f} s), "
        f"{size}x{size} RGB-D observe(), same {len(poses)} poses, interleaved:"
    )
    _row("mesh backend", m)
    _row("habitat-sim", h)
    fm, fh = 1e3 / _median(m, 0), 1e3 / _median(h, 0)
    print(
        f"  frames/s (wall median): mesh {fm:.1f}, habitat-sim {fh:.1f}; "
        f"ratio habitat/mesh {fh / fm:.2f} (>1: habitat-sim faster); CPU ms mesh/habitat "
        f"{_median(m, 1) / _median(h, 1):.2f}"
    )
    hab.close()


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
    load = os.getloadavg()
    print(
        f"cpus: {os.cpu_count()}  load avg: {load[0]:.2f} {load[1]:.2f}  "
        f"triangles: {len(apt.triangles)}  rooms: {len(apt.rooms)}  objects: {len(apt.objects)}"
    )
    print(
        f"generate {t_gen * 1e3:.0f} ms   load/BVH {t_load * 1e3:.0f} ms   "
        f"nav grid {t_grid * 1e3:.0f} ms ({grid.shape[0]}x{grid.shape[1]} cells, "
        f"{int(grid.navigable.sum())} navigable)"
    )

    rng = np.random.default_rng(args.seed)
    cams, poses = [], []
    for _ in range(args.frames):
        poses.append(
            (sim.random_navigable_point(rng), geo.yaw_to_quat(float(rng.uniform(-np.pi, np.pi))))
        )
        sim.set_agent_pose(*poses[-1])
        cams.append(sim.camera_pose())
    base = BaselineRenderer(sim)
    o3d = _o3d()
    k_o3d = o3d.core.Tensor(sim._pixel_terms()[0])

    def rays_for(cam: np.ndarray):
        ext = o3d.core.Tensor(geo.invert_pose(cam @ np.diag([1.0, -1.0, -1.0, 1.0])))
        return o3d.t.geometry.RaycastingScene.create_rays_pinhole(k_o3d, ext, args.size, args.size)

    sim.render(cams[0]), base.render(cams[0])  # warm-up
    new, new_np, old, cast = [], [], [], []
    max_depth_err, rgb_diff, rgb_max = 0.0, 0.0, 0
    for cam in cams:  # interleaved, so load hits every path alike
        new.append(_timed(lambda cam=cam: sim.render(cam)))
        new_np.append(_timed(lambda cam=cam: sim.render(cam, reference=True)))
        old.append(_timed(lambda cam=cam: base.render(cam)))
        rays = rays_for(cam)
        cast.append(_timed(lambda rays=rays: sim._rc.cast_rays(rays, nthreads=0)))
        (rgb_n, d_n), (rgb_o, d_o) = sim.render(cam), base.render(cam)
        max_depth_err = max(max_depth_err, float(np.abs(d_n - d_o).max()))
        diff = np.abs(rgb_n.astype(int) - rgb_o)
        rgb_diff = max(rgb_diff, float((diff > 0).mean()))
        rgb_max = max(rgb_max, int(diff.max()))
    hit = float((d_n > 0).mean())
    print(f"render {args.size}x{args.size} RGB-D, {args.frames} frames (hit ratio {hit:.2f}):")
    _row("new", new)
    _row("new, numpy shading", new_np)
    _row("baseline", old)
    _row("open3d cast_rays only", cast)
    print(
        f"  ratio new/baseline: wall {_median(new, 0) / _median(old, 0):.2f}  "
        f"cpu {_median(new, 1) / _median(old, 1):.2f};  new / bare open3d cast: wall "
        f"{_median(new, 0) / _median(cast, 0):.2f}  cpu {_median(new, 1) / _median(cast, 1):.2f}"
    )
    print(
        f"  output vs baseline: depth max |diff| {max_depth_err:.2e} m; rgb: "
        f"{rgb_diff:.2%} of values differ, max {rgb_max}/255"
    )

    habitat_side_by_side(apt, sim, poses, args.size)

    pts = [sim.random_navigable_point(rng) for _ in range(args.queries + 1)]
    src = pts[0]
    cold, warm, other = [], [], []
    for q in pts[1:]:
        sim.navgrid._sources.clear()
        cold.append(_timed(lambda q=q: sim.geodesic_distance(src, q)))
        warm.append(_timed(lambda q=q: sim.geodesic_distance(src, q)))
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        other.append(_timed(lambda a=a, b=b: sim.geodesic_distance(a, b)))
    print(f"geodesic distance, {args.queries} queries:")
    _row("new source", cold)
    _row("cached source", warm)
    _row("mixed pairs", other)
    t0 = time.perf_counter()
    for q in pts:
        sim.snap_point(q + [0.3, 0.0, 0.3])
    print(f"snap_point: {(time.perf_counter() - t0) * 1e3 / len(pts):.3f} ms/query")


if __name__ == "__main__":
    main()
