"""The mesh backend's renderer: wall colours and shading, misses, and agreement with the
previous (slower) implementation kept in ``bench/sim_render.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("open3d")

from bench.sim_render import BaselineRenderer  # noqa: E402
from eqa_runner.demo.mesh_builder import MeshBuilder  # noqa: E402
from eqa_runner.sim import geometry as geo  # noqa: E402
from eqa_runner.sim.mesh import _LIGHT, MeshSimulator, TriangleMeshData  # noqa: E402
from tests.sim.conftest import build_rooms_mesh  # noqa: E402

RED = np.array([0.8, 0.2, 0.2])


@pytest.fixture(scope="module")
def rooms() -> MeshSimulator:
    v, f, c, _ = build_rooms_mesh().arrays()
    sim = MeshSimulator(width=96, height=64)
    sim.load_arrays(TriangleMeshData(v, f, c))
    return sim


def test_red_wall_colour_and_shading(rooms):
    rooms.set_agent_pose([3.0, 0.0, 3.0], geo.yaw_to_quat(0.0))  # faces the red z = 0 wall
    rgb, depth = rooms.render(rooms.camera_pose())
    h, w = depth.shape
    # head-on: headlight cos = 1, sun cos = |n . L| with n = +z
    shade = 0.35 + 0.45 + 0.2 * abs(float(_LIGHT[2]))
    np.testing.assert_allclose(rgb[h // 2, w // 2], RED * shade * 255, atol=1.0)
    # off-centre wall pixels: the same hue, darker by the headlight angle, never below ambient
    wall = rgb[h // 2 - 5 : h // 2 + 5].reshape(-1, 3).astype(float)
    assert np.all(wall[:, 0] >= 0.35 * 0.8 * 255 - 1) and np.all(wall[:, 0] <= 0.8 * 255 + 1)
    np.testing.assert_allclose(wall[:, 1] / wall[:, 0], 0.25, atol=0.02)
    np.testing.assert_allclose(wall[:, 2], wall[:, 1], atol=1.0)


def test_misses_are_black_with_zero_depth(rooms):
    cam = np.eye(4)
    cam[:3, :3] = geo.rot_x(math.pi / 2)  # looks straight up: the rooms have no ceiling
    cam[:3, 3] = [3.0, 1.5, 3.0]
    rgb, depth = rooms.render(cam)
    assert depth.dtype == np.float32 and np.all(depth == 0.0) and np.all(rgb == 0)


def _gradient_quad_sim() -> MeshSimulator:
    """A wall whose vertex colours vary, so colours are interpolated, plus a floor."""
    mb = MeshBuilder()
    mb.quad_y(-5.0, -5.0, 5.0, 5.0, 0.0, (0.5, 0.5, 0.5))
    v, f, c, _ = mb.arrays()
    wall_v = np.array([[-3, 0, -2], [3, 0, -2], [3, 3, -2], [-3, 3, -2]], dtype=float)
    wall_c = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]], dtype=float)
    wall_f = np.array([[0, 1, 2], [0, 2, 3]]) + len(v)
    sim = MeshSimulator(width=80, height=60, tilt_deg=-10.0)
    sim.load_arrays(
        TriangleMeshData(np.vstack([v, wall_v]), np.vstack([f, wall_f]), np.vstack([c, wall_c]))
    )
    return sim


@pytest.mark.parametrize("scene", ["rooms", "gradient"])
def test_matches_previous_renderer(rooms, scene):
    sim = rooms if scene == "rooms" else _gradient_quad_sim()
    assert (scene == "gradient") == (not sim._flat_colors)
    base = BaselineRenderer(sim)
    for pos, yaw in (([3.0, 0.0, 3.0], 0.0), ([2.0, 0.0, 4.0], 2.1), ([8.0, 0.0, 3.0], -0.7)):
        sim.set_agent_pose(pos, geo.yaw_to_quat(yaw))
        cam = sim.camera_pose()
        (rgb, depth), (rgb0, depth0) = sim.render(cam), base.render(cam)
        np.testing.assert_allclose(depth, depth0, atol=1e-4)
        # rays that graze an edge exactly (here: a whole row on the top of a wall) may pick
        # the other face from float rounding of the ray directions; elsewhere +-1 rounding
        off = np.abs(rgb.astype(int) - rgb0).max(axis=2) > 1
        assert off.mean() <= 0.03


@pytest.mark.parametrize("scene", ["rooms", "gradient", "apartment"])
@pytest.mark.slow
def test_compiled_shading_is_identical_to_numpy_path(rooms, scene):
    if scene == "rooms":
        sim = rooms
    elif scene == "gradient":
        sim = _gradient_quad_sim()
    else:
        from eqa_runner.demo.apartment import generate_apartment

        apt = generate_apartment(3, n_rooms=3)
        sim = MeshSimulator(width=64, height=48)
        sim.load_arrays(TriangleMeshData(apt.vertices, apt.triangles, apt.vertex_colors))
    rng = np.random.default_rng(0)
    lo, hi = sim.bounds()
    for _ in range(4):  # includes views out of the scene (misses: black, depth 0)
        pos = [rng.uniform(lo[0] - 1, hi[0] + 1), lo[1], rng.uniform(lo[2] - 1, hi[2] + 1)]
        sim.set_agent_pose(pos, geo.yaw_to_quat(rng.uniform(-math.pi, math.pi)))
        cam = sim.camera_pose()
        rgb0, depth0 = sim.render(cam, reference=True)  # the numpy oracle
        rgb, depth = sim.render(cam)
        assert rgb.dtype == np.uint8 and depth.dtype == np.float32
        assert np.array_equal(rgb, rgb0) and np.array_equal(depth, depth0)


def test_shading_kernel_is_not_an_option(compose_cfg):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="shading_kernel"):
        compose_cfg(["sim.shading_kernel=numpy"])


def test_sensor_forward_offset_moves_the_camera_and_its_depth(rooms):
    """``sensor_forward_m``: the camera sits that far ahead along the heading; looking at a
    wall straight ahead, the depth shrinks by the offset."""
    v, f, c, _ = build_rooms_mesh().arrays()
    ahead = MeshSimulator(width=96, height=64, sensor_forward_m=0.75)
    ahead.load_arrays(TriangleMeshData(v, f, c))
    p = np.asarray(rooms.random_navigable_point(np.random.default_rng(3)), float)
    q = geo.yaw_to_quat(0.3)
    for sim in (rooms, ahead):
        sim.set_agent_pose(p, q)
    base, moved = rooms.observe(), ahead.observe()
    heading = base.cam_to_world[:3, :3] @ np.array([0.0, 0.0, -1.0])
    assert np.allclose(moved.cam_to_world[:3, 3], base.cam_to_world[:3, 3] + 0.75 * heading)
    # the centre ray passes between the four central pixels (rays go through pixel centres)
    d0, d1 = base.depth[31:33, 47:49].mean(), moved.depth[31:33, 47:49].mean()
    assert d0 > 1.0  # the centre ray hits the same wall from 0.75 m closer
    assert d1 == pytest.approx(d0 - 0.75, abs=0.02)


@pytest.mark.parametrize("cull", [False, True])
@pytest.mark.slow
def test_rasteriser_gives_the_ray_cast_hits(cull):
    """The z-buffer rasteriser against open3d's ray cast through the same pixel centres, on
    a procedural apartment from random poses: same z-depth, triangle and barycentrics. With
    culling the cast's front-facing hits are a subset (a ray hitting a back face first is
    where the rasteriser shows what lies behind it)."""
    from eqa_runner.demo.apartment import generate_apartment
    from eqa_runner.sim.mesh import _o3d
    from eqa_runner.sim.raster import INVALID, rasterize

    apt = generate_apartment(3, n_rooms=3)
    sim = MeshSimulator(width=64, height=48, cull_back_faces=cull)
    sim.load_arrays(TriangleMeshData(apt.vertices, apt.triangles, apt.vertex_colors))
    o3d = _o3d()
    k = sim._pixel_terms()[0]
    rng = np.random.default_rng(1)
    for _ in range(6):
        sim.set_agent_pose(sim.random_navigable_point(rng), geo.yaw_to_quat(rng.uniform(-3, 3)))
        cam = sim.camera_pose()
        t, pid, uv = rasterize(sim._v64, sim._tri32, cam, k, 64, 48, cull)
        ext = geo.invert_pose(cam @ np.diag([1.0, -1.0, -1.0, 1.0]))
        rays = o3d.t.geometry.RaycastingScene.create_rays_pinhole(
            o3d.core.Tensor(k), o3d.core.Tensor(ext), 64, 48
        )
        ref = sim._rc.cast_rays(rays)
        t0 = ref["t_hit"].numpy().reshape(-1)
        p0 = ref["primitive_ids"].numpy().reshape(-1)
        uv0 = ref["primitive_uvs"].numpy().reshape(-1, 2)
        hit, hit0 = pid != INVALID, np.isfinite(t0)
        if not cull:
            assert (hit != hit0).mean() <= 0.002
        same = hit & hit0 & (pid == p0)
        assert same.sum() >= 0.95 * hit0.sum() if not cull else same.sum() > 0
        np.testing.assert_allclose(t[same], t0[same], atol=1e-4)
        np.testing.assert_allclose(uv[same], uv0[same], atol=1e-3)
        both = hit & hit0
        if not cull:  # another triangle only where two meet at the same depth (edges)
            np.testing.assert_allclose(t[both], t0[both], atol=1e-3)


def test_back_faces_are_culled_and_the_near_plane_clips():
    """A wall seen from behind is invisible with culling and drawn without; one triangle of
    floor with two corners behind the camera is clipped at the near plane, and every pixel
    below the horizon gets its exact depth."""
    wall_v = np.array([[-3, 0, -2], [3, 0, -2], [3, 3, -2], [-3, 3, -2]], dtype=float)
    front = np.array([[0, 1, 2], [0, 2, 3]])  # counter-clockwise seen from the camera
    grey = np.full((4, 3), 0.5)
    cam = geo.camera_to_world(np.zeros(3), geo.yaw_to_quat(0.0), 1.5, 0.0)  # looks down -z
    for faces, cull, seen in ((front, True, True), (front[:, ::-1], True, False),
                              (front[:, ::-1], False, True)):  # fmt: skip
        sim = MeshSimulator(width=32, height=32, cull_back_faces=cull)
        sim.load_arrays(TriangleMeshData(wall_v, faces, grey))
        depth = sim.render(cam)[1]
        assert (depth > 0).any() == seen
        if seen:
            assert depth[16, 16] == pytest.approx(2.0, abs=1e-5)
    floor_v = np.array([[-100.0, 0.0, 50.0], [100.0, 0.0, 50.0], [0.0, 0.0, -100.0]])
    sim = MeshSimulator(width=32, height=32)
    sim.load_arrays(TriangleMeshData(floor_v, np.array([[0, 1, 2]]), grey[:3]))
    depth = sim.render(cam)[1]
    k = sim._pixel_terms()[0]
    v = np.arange(17, 32)
    np.testing.assert_allclose(depth[v, 16], 1.5 * k[1, 1] / (v + 0.5 - k[1, 2]), rtol=1e-5)
    assert np.all(depth[:16] == 0.0) and np.all(depth[17:] > 0)


_FORKED: list[MeshSimulator] = []  # the simulator a forked child inherits (not picklable)


def _render_sum() -> float:
    sim = _FORKED[0]
    return float(sim.render(sim.camera_pose())[1].sum())


@pytest.mark.slow
def test_a_forked_child_renders_after_its_parent(rooms):
    """The rasteriser's band threads live in a pool: a child forked after the parent rendered
    starts its own pool instead of waiting on threads that do not exist there."""
    import multiprocessing

    rooms.set_agent_pose([3.0, 0.0, 3.0], geo.yaw_to_quat(0.0))
    _FORKED[:] = [rooms]
    want = _render_sum()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_render_sum).get(timeout=60) == want
