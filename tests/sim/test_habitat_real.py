"""The habitat backend on the real habitat-sim (marker ``habitat``; CI runs these in the
habitat-cpu chroot): scene conventions, lighting, navmesh baking, thread safety, version gate."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SceneSpec
from tests.sim.conftest import require_habitat

pytestmark = pytest.mark.habitat


@pytest.fixture(scope="module")
def hab():
    require_habitat()
    from eqa_runner.sim.habitat import HabitatSimulator

    s = HabitatSimulator(width=96, height=96, agent_radius=0.18)
    yield s
    s.close()


@pytest.fixture(scope="module")
def apartment_glb(tmp_path_factory):
    from eqa_runner.demo.apartment import generate_apartment

    apt = generate_apartment(0)
    glb, _ = apt.write(tmp_path_factory.mktemp("apt"), "DemoApt0", ply=True)
    return apt, glb


def test_demo_glb_is_upright_and_lit(hab, apartment_glb):
    """The demo's z-up .glb lands y up in habitat's frame; its first frame is not black."""
    apt, glb = apartment_glb
    room = apt.rooms[0].center
    hab.load_scene(SceneSpec("DemoApt0", glb), start_position=room)
    lo, hi = hab.bounds()
    v = apt.vertices
    assert lo[0] >= v[:, 0].min() - 1e-3 and hi[0] <= v[:, 0].max() + 1e-3
    assert lo[2] >= v[:, 2].min() - 1e-3 and hi[2] <= v[:, 2].max() + 1e-3
    assert abs(hab.snap_point(room + [0, 0.4, 0])[1]) < 0.06  # the floor is at y = 0
    rgb = hab.observe().rgb
    assert (rgb.sum(axis=-1) == 0).mean() < 0.01
    assert rgb.mean() > 80
    # the navmesh was baked for this body, not habitat's own default
    assert hab._sim.pathfinder.nav_mesh_settings.agent_radius == pytest.approx(0.18)


def test_ply_gets_default_lighting(hab, apartment_glb):
    """A vertex-coloured .ply is lit (scene_lighting auto); unlit it would be nearly black."""
    apt, glb = apartment_glb
    ply = glb.with_suffix(".ply")
    assert hab.lighting_for(ply) == "default" and hab.lighting_for(glb) == "none"
    hab.load_scene(SceneSpec("DemoApt0-ply", ply), start_position=apt.rooms[0].center)
    assert hab.observe().rgb.mean() > 60


def test_queries_from_many_threads_match_sequential(hab, scenes_dir):
    spec = hab.resolve_scene(scenes_dir, "val/00800-TestRooms")
    hab.load_scene(spec, start_position=[3.0, 0.0, 3.0])
    pts = [np.array([1.0 + 0.4 * k, 0.0, 1.0 + 0.3 * k]) for k in range(8)]
    seq = [hab.geodesic_distance(pts[0], p) for p in pts]

    def work(k):
        hab.set_agent_pose(pts[k], geo.yaw_to_quat(0.3 * k))
        return hab.geodesic_distance(pts[0], pts[k]), hab.observe().depth.shape

    with ThreadPoolExecutor(4) as ex:
        out = list(ex.map(work, range(8)))
    assert [d for d, _ in out] == pytest.approx(seq)
    assert {shape for _, shape in out} == {(96, 96)}
    assert math.isinf(hab.geodesic_distance(pts[0], [8.5, 0.0, 3.0]))  # the closed room


def test_navmesh_settings_gate_and_version(hab, scenes_dir):
    import habitat_sim

    from eqa_runner.sim.habitat import habitat_info

    ns = hab.navmesh_settings()
    assert (ns.agent_radius, ns.agent_height) == pytest.approx((0.18, 1.5))
    assert not hasattr(ns, "include_static_objects") or ns.include_static_objects is False
    info = habitat_info(hab.resolve_scene(scenes_dir, "val/00800-TestRooms").mesh_path)
    assert info["version"] == habitat_sim.__version__
    assert info["render_ok"] is True and info["render_ms"] > 0
