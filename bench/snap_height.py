"""Why ``snap_point`` heights differ between the backends on stairs, terrain and a scan's bumpy
floor (issue 23): each backend's snapped height against the true surface under it (a downward ray
on the mesh), and the mesh/habitat difference, with habitat-sim's detail-mesh settings at their
defaults and finer. Needs habitat-sim (the habitat-cpu chroot); prints numbers only.

    bash ../shared/habitat-cpu/run.sh /opt/habitat-cpu --bind "$PWD:/project" -- \\
        python /project/bench/snap_height.py [--points 200]

The points are those of ``tests/sim/test_parity.py``: 0.2-0.5 m above random points of the
mesh backend's largest island (every storey), the agent on that island.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eqa_runner.demo.house import generate_house  # noqa: E402
from eqa_runner.demo.mesh_files import write_ply  # noqa: E402
from eqa_runner.sim.base import SceneSpec  # noqa: E402
from eqa_runner.sim.mesh import MeshSimulator  # noqa: E402
from eqa_runner.sim.mesh_io import load_mesh_file  # noqa: E402
from tests.sim.parity import main_floor_points  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# (detail_sample_dist, detail_sample_max_error) in voxels; habitat-sim's defaults first
DETAIL = [(6.0, 1.0), (1.0, 1.0), (1.0, 0.2)]


def surface_error(mesh: MeshSimulator, snapped: np.ndarray) -> np.ndarray:
    """|snapped height - the mesh surface under it| per point (NaN where nothing is below)."""
    out = np.full(len(snapped), np.nan)
    for i, q in enumerate(snapped):
        if np.all(np.isfinite(q)):
            t = float(
                mesh.cast(q[None] + [0.0, 0.3, 0.0], np.array([[0.0, -1.0, 0.0]]))["t_hit"][0]
            )
            out[i] = abs(0.3 - t) if math.isfinite(t) else np.nan
    return out


def habitat_snaps(spec, start, points, dist: float, err: float) -> np.ndarray:
    from eqa_runner.sim.habitat import HabitatSimulator

    hab = HabitatSimulator(width=16, height=16)
    project_settings = hab.navmesh_settings

    def settings():
        s = project_settings()
        s.detail_sample_dist, s.detail_sample_max_error = dist, err
        return s

    hab.navmesh_settings = settings  # type: ignore[method-assign]
    hab.load_scene(spec, start_position=start)
    out = np.array([hab.snap_point(p) for p in points])
    hab.close()
    return out


def cm(a: np.ndarray) -> str:
    a = a[np.isfinite(a)]
    p95, med = np.percentile(a, 95), np.median(a)
    return f"max {100 * a.max():5.1f}  p95 {100 * p95:5.1f}  median {100 * med:4.1f} cm"


def scene(name: str, path: Path, n: int) -> None:
    mesh = MeshSimulator(width=16, height=16)
    spec = SceneSpec(path.stem, path)
    mesh.load_scene(spec)
    start = main_floor_points(mesh, 1, np.random.default_rng(1))[0]
    mesh.set_agent_pose(start, [1.0, 0.0, 0.0, 0.0])
    rng = np.random.default_rng(0)
    pts = main_floor_points(mesh, n, rng)
    pts = pts + np.column_stack(
        [np.zeros(len(pts)), rng.uniform(0.2, 0.5, len(pts)), np.zeros(len(pts))]
    )
    sm = np.array([mesh.snap_point(p) for p in pts])
    print(f"{name}: {len(pts)} points")
    print(f"  mesh snap vs surface            {cm(surface_error(mesh, sm))}")
    for dist, err in DETAIL:
        sh = habitat_snaps(spec, start, pts, dist, err)
        tag = f"habitat detail {dist:g}/{err:g} voxels"
        print(f"  {tag:<31} vs surface {cm(surface_error(mesh, sh))}")
        print(f"  {'':<31} vs mesh 3-D {cm(np.linalg.norm(sh - sm, axis=1))}, "
              f"x-z {cm(np.hypot(*(sh - sm)[:, [0, 2]].T))}")  # fmt: skip
    mesh.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=200)
    args = ap.parse_args()
    import habitat_sim

    d = habitat_sim.NavMeshSettings()
    d.set_defaults()
    print(f"habitat-sim {habitat_sim.__version__} defaults: detail_sample_dist "
          f"{d.detail_sample_dist:g}, detail_sample_max_error {d.detail_sample_max_error:g} "
          "(voxels: x cell_size / x cell_height, both 0.05 m here)")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        glb, _ = generate_house().write(Path(tmp), "DemoHouse2F")
        terrain = load_mesh_file(ROOT / "tests/data/scenes/stage_floor1.glb", up_axis="y")
        ply = Path(tmp) / "stage_floor1.ply"
        write_ply(ply, terrain.vertices, terrain.triangles, terrain.vertex_colors)
        scene("DemoHouse2F (stairs)", glb, args.points)
        scene("stage_floor1 (terrain)", ply, args.points)
        scene("hololens_room (scan)", ROOT / "tests/data/scenes/hololens_room.ply", args.points)


if __name__ == "__main__":
    main()
