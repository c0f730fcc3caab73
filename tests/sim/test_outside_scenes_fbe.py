"""A short ``policy=fbe`` EXPRESS run on the scenes the project did not write (issue 23 item 5;
habitat-sim's two test stages and the HoloLens room scan, ``tests/data/scenes``):
every episode ends with a finite distance to its goal, on ``sim=mesh`` and on the real
habitat-sim (marker ``habitat``; CI runs it in the habitat-cpu chroot).

Episodes are made here: start and goal are points of the mesh backend's largest island at
least 2 m apart by geodesic, so the goal is reachable; a hop snapped onto a floor fragment the
agent cannot leave (the defect the issue found on a reconstruction) gives an infinite d_T.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.sim.conftest import require_habitat, short_fbe_express
from tests.sim.parity import main_floor_points

pytestmark = [pytest.mark.habitat, pytest.mark.slow]

SCENES = Path(__file__).resolve().parents[1] / "data" / "scenes"
EPISODES = 4
OUTSIDE = ["SimpleRoom", "StageFloor1", "HoloLensRoom"]
COPIED = {
    "SimpleRoom": (SCENES / "simple_room.glb", "00900-SimpleRoom"),
    "HoloLensRoom": (SCENES / "hololens_room.ply", "00902-HoloLensRoom"),
}


def _scene_file(root: Path, name: str) -> Path:
    """The scene as the EXPRESS layout stores it: ``scenes/val/<NNNNN-name>/<name>.<ext>``."""
    from eqa_runner.demo.mesh_files import write_ply
    from eqa_runner.sim.mesh_io import load_mesh_file

    if name in COPIED:  # as is: simple_room.glb z up (a .glb), the scan y up (a .ply)
        src, dir_name = COPIED[name]
        dst = root / "scenes" / "val" / dir_name / f"{name}{src.suffix}"
        dst.parent.mkdir(parents=True)
        shutil.copyfile(src, dst)
        return dst
    terrain = load_mesh_file(SCENES / "stage_floor1.glb", up_axis="y")  # y up: as a .ply
    dst = root / "scenes" / "val" / "00901-StageFloor1" / "StageFloor1.ply"
    dst.parent.mkdir(parents=True)
    write_ply(dst, terrain.vertices, terrain.triangles, terrain.vertex_colors)
    return dst


def _episodes(path: Path, scene_id: str) -> list[dict]:
    """Start/goal pairs on the mesh backend's largest island, >= 2 m apart by geodesic."""
    from eqa_runner.sim.base import SceneSpec
    from eqa_runner.sim.mesh import MeshSimulator

    sim = MeshSimulator(width=16, height=16)
    sim.load_scene(SceneSpec(scene_id, path))
    rng = np.random.default_rng(23)
    out: list[dict] = []
    while len(out) < EPISODES:
        a, b = main_floor_points(sim, 2, rng)
        d = sim.layered.geodesic_distance(a, b)
        if not (math.isfinite(d) and d >= 2.0):
            continue
        k = len(out)
        out.append(
            {
                "episode_id": f"{path.stem}-{k}",
                "trajectory_id": f"{path.stem}-{k:02d}",
                "scene_id": scene_id,
                "episode_path": f"episode/{k:04d}-{path.stem}",
                "type": "attribute",
                "question": "What is in front of you?",
                "answer": "a wall",
                "start_position": np.round(a, 4).tolist(),
                "start_rotation": [1.0, 0.0, 0.0, 0.0],
                "goal_position": np.round(b, 4).tolist(),
                "goal_rotation": [1.0, 0.0, 0.0, 0.0],
                "geodesic_distance": round(d, 4),
                "step_length": 0.25,
                "actions": [],
            }
        )
    sim.close()
    return out


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> dict[str, Path]:
    """scene name -> an EXPRESS data dir holding that one scene and its episodes."""
    out = {}
    for name in OUTSIDE:
        root = tmp_path_factory.mktemp(name)
        path = _scene_file(root, name)
        eps = _episodes(path, f"hm3d/val/{path.parent.name}")
        (root / "express-bench.json").write_text(json.dumps(eps, indent=1))
        out[name] = root
    return out


@pytest.mark.parametrize("scene", OUTSIDE)
@pytest.mark.parametrize("backend", ["mesh", "habitat"])
def test_fbe_reaches_a_finite_goal_distance_on_outside_scenes(
    compose_cfg, tmp_path, outside, scene, backend
):
    if backend == "habitat":
        require_habitat()
    out = tmp_path / f"{scene}_{backend}"
    recs = short_fbe_express(compose_cfg, out, backend, f"task.data_dir={outside[scene]}")
    assert len(recs) == EPISODES, recs
    for r in recs:
        assert r["trace"]["steps_taken"] >= 1
