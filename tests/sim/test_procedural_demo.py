"""Procedural apartments and the demo dataset writers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from eqa_runner.benchmarks.express.demo import EXPRESS_TYPES, write_express_demo
from eqa_runner.benchmarks.openeqa_em.demo import OPENEQA_CATEGORIES, write_openeqa_demo
from eqa_runner.demo.apartment import generate_apartment
from eqa_runner.sim.mesh import MeshSimulator

NAME_WORDS = ["sofa", "table", "bed", "chair", "lamp", "plant", "tv", "fridge", "bookshelf"]


def test_generator_deterministic_and_sane():
    a, b = generate_apartment(3), generate_apartment(3)
    np.testing.assert_array_equal(a.vertices, b.vertices)
    np.testing.assert_array_equal(a.triangles, b.triangles)
    assert a.description() == b.description()
    assert not np.array_equal(generate_apartment(4).vertices.shape, (0, 3))
    for seed in range(8):
        apt = generate_apartment(seed)
        assert 4 <= len(apt.rooms) <= 8
        assert 10 <= len(apt.objects) <= 30
        assert len(apt.face_object) == len(apt.triangles)
        assert len({r.name for r in apt.rooms}) == len(apt.rooms)
        assert any(o.supported_by is not None for o in apt.objects)
        assert any(o.state is not None for o in apt.objects)


def test_generator_min_triangles():
    apt = generate_apartment(0, min_triangles=20_000)
    assert len(apt.triangles) >= 20_000
    assert apt.face_object.shape == (len(apt.triangles),)


@pytest.mark.slow
def test_rooms_connected(tmp_path):
    apt = generate_apartment(1)
    ply, js = apt.write(tmp_path, "Apt")
    assert json.loads(js.read_text())["rooms"]
    sim = MeshSimulator(width=64, height=64)
    from eqa_runner.sim.base import SceneSpec

    sim.load_scene(SceneSpec("x", ply), start_position=apt.rooms[0].center)
    centres = [sim.snap_point(r.center) for r in apt.rooms if r.accessible]
    for c in centres[1:]:
        assert math.isfinite(sim.geodesic_distance(centres[0], c))


@pytest.fixture(scope="module")
def express(tmp_path_factory) -> Path:
    return write_express_demo(tmp_path_factory.mktemp("express"), seed=0)


@pytest.mark.slow
def test_express_demo_schema(express):
    recs = json.loads(express.read_text())
    assert len(recs) == 12
    house = json.loads((express.parent / "express-bench-house.json").read_text())
    assert len(house) == 4 and all("DemoHouse2F" in r["scene_id"] for r in house)
    for r in house[:3]:  # start upstairs, goal on the ground floor
        assert r["start_position"][1] > 2.9 and r["goal_position"][1] < 0.1
    recs = recs + house
    keys = {
        "episode_id",
        "trajectory_id",
        "scene_id",
        "episode_path",
        "type",
        "question",
        "answer",
        "start_position",
        "start_rotation",
        "goal_position",
        "goal_rotation",
        "geodesic_distance",
        "step_length",
        "actions",
    }
    for r in recs:
        assert keys <= set(r)
        assert isinstance(r["episode_id"], str)
        assert r["type"] in EXPRESS_TYPES
        assert r["scene_id"].startswith("hm3d/val/008")
        assert len(r["start_position"]) == 3 and len(r["start_rotation"]) == 4
        assert r["geodesic_distance"] > 0
    assert len({r["type"] for r in recs}) >= 4


@pytest.mark.slow
def test_express_demo_poses_and_answers(express):
    recs = json.loads(express.read_text())
    root = express.parent / "scenes"
    sim = MeshSimulator(width=64, height=64)
    for r in recs:
        spec = sim.resolve_scene(root, r["scene_id"])
        sim.load_scene(spec, start_position=r["start_position"])
        assert sim.is_navigable(r["start_position"]) and sim.is_navigable(r["goal_position"])
        d = sim.geodesic_distance(r["start_position"], r["goal_position"])
        assert d == pytest.approx(r["geodesic_distance"], rel=1e-3)
        desc = json.loads(spec.mesh_path.with_suffix(".scene.json").read_text())
        _check_express_answer(r, desc)


def _check_express_answer(r, desc):
    objs = desc["objects"]
    q, a = r["question"], r["answer"]
    if r["type"] == "attribute":
        assert any(a == o["color"] and o["room"] in q for o in objs)
    elif r["type"] == "counting":
        name = q.split("How many ")[1].split("s are")[0]
        room = q.split("in the ")[1].rstrip("?")
        assert int(a) == sum(o["name"] == name and o["room"] == room for o in objs)
    elif r["type"] == "existence":
        room = q.split(" in the ")[1].rstrip("?")
        name = q.split("Is there a ")[1].split(" in the ")[0].lower()
        name = "tv" if name == "tv" else name
        present = any(o["name"] == name and o["room"] == room for o in objs)
        assert a == ("Yes." if present else "No.")
    elif r["type"] == "state":
        assert a in ("on", "off", "open", "closed")
        assert any(o["state"] == a and o["room"] in q for o in objs)


@pytest.mark.slow
def test_openeqa_demo(tmp_path):
    path = write_openeqa_demo(tmp_path, seed=0, n_episodes=2, questions=14, max_frames=12)
    recs = json.loads(path.read_text())
    assert 10 <= len(recs) <= 14
    assert {r["category"] for r in recs} == set(OPENEQA_CATEGORIES)
    assert any(r.get("extra_answers") for r in recs)
    for r in recs:
        assert {"question_id", "question", "answer", "category", "episode_history"} <= set(r)
        ep = tmp_path / "episodes" / r["episode_history"]
        frames = sorted(ep.glob("*-rgb.png"))
        assert len(frames) >= 8
    ep = tmp_path / "episodes" / recs[0]["episode_history"]
    rgb = np.asarray(Image.open(ep / "00000-rgb.png"))
    depth = np.asarray(Image.open(ep / "00000-depth.png"))
    assert rgb.shape == (360, 640, 3) and depth.dtype == np.uint16 and depth.max() > 500
    pose = np.loadtxt(ep / "00000.txt")
    # 1.5 m above the navigable surface, which lies one 5 cm voxel above the floor (Recast)
    assert pose.shape == (4, 4) and abs(pose[1, 3] - 1.55) < 1e-3
    # answers agree with the scene description
    desc = json.loads(next(ep.glob("*.scene.json")).read_text())
    for r in recs:
        if r["episode_history"] != recs[0]["episode_history"]:
            continue
        if r["category"] == "attribute recognition":
            assert any(
                o["color"] == r["answer"] and o["room"] in r["question"] for o in desc["objects"]
            )
        if r["category"] == "object localization":
            assert r["answer"].startswith("in the ")


@pytest.mark.slow
def test_writers_deterministic(tmp_path):
    a = write_express_demo(tmp_path / "a", seed=5, n_scenes=1, questions_per_scene=3)
    b = write_express_demo(tmp_path / "b", seed=5, n_scenes=1, questions_per_scene=3)
    assert a.read_text() == b.read_text()
