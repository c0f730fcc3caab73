"""The mesh backend's navigable area with Recast's semantics (issue 23): erosion from every
walkable boundary, islands, snapping on the agent's island, stairs between storeys, pixel-centre
rays. Each test fails on the floor-grid backend it replaced."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("open3d")

from eqa_runner.demo.mesh_builder import MeshBuilder  # noqa: E402
from eqa_runner.sim import geometry as geo  # noqa: E402
from eqa_runner.sim.mesh import MeshSimulator, TriangleMeshData  # noqa: E402

GREY = (0.6, 0.6, 0.6)


def _sim(mb: MeshBuilder, **kw) -> MeshSimulator:
    v, f, c, _ = mb.arrays()
    sim = MeshSimulator(width=64, height=64, **kw)
    sim.load_arrays(TriangleMeshData(v, f, c))
    return sim


def _platform(mb: MeshBuilder, x0, z0, x1, z1, y=0.0) -> None:
    mb.box((x0, y - 0.1, z0), (x1, y, z1), GREY)


def test_floor_edges_are_eroded_by_the_agent_radius():
    """A 4 m x 4 m platform in the open: its edges are drop-offs, eroded like walls."""
    mb = MeshBuilder()
    _platform(mb, 0.0, 0.0, 4.0, 4.0, y=0.5)
    sim = _sim(mb)
    area = sim.navigable_area(0.5)
    # Recast: the ledge cell plus ceil(r / cell) = 2 cells on each side (0.15 m)
    assert area == pytest.approx((4.0 - 2 * 0.15) ** 2, rel=0.03)
    assert not sim.is_navigable([0.05, 0.5, 2.0]) and not sim.is_navigable([3.9, 0.5, 2.0])
    assert sim.is_navigable([0.2, 0.5, 2.0]) and sim.is_navigable([2.0, 0.5, 2.0])


def test_small_regions_are_dropped_and_islands_counted():
    mb = MeshBuilder()
    _platform(mb, 0.0, 0.0, 4.0, 4.0)
    _platform(mb, 6.0, 0.0, 9.0, 3.0)  # a second island
    _platform(mb, 0.0, 6.0, 1.2, 7.2)  # 0.9 x 0.9 m after erosion: < 1 m^2, dropped
    sim = _sim(mb)
    nav = sim.layered
    assert len(np.unique(nav.island)) == 2
    assert not sim.is_navigable([0.6, 0.0, 6.6])
    assert math.isinf(sim.geodesic_distance([1.0, 0.0, 1.0], [7.0, 0.0, 1.0]))


def test_snap_stays_on_the_agents_island():
    """A point nearer another fragment snaps onto the agent's island, not onto the fragment."""
    mb = MeshBuilder()
    _platform(mb, 0.0, 0.0, 4.0, 4.0)
    _platform(mb, 4.6, 0.0, 8.0, 4.0)  # 0.6 m gap: not connected
    sim = _sim(mb)
    sim.set_agent_pose([1.0, 0.0, 2.0], [1.0, 0.0, 0.0, 0.0])
    p = sim.snap_point([4.5, 0.0, 2.0])  # 0.35 m from the other fragment's edge
    assert p[0] < 4.0 and math.isfinite(sim.geodesic_distance([1.0, 0.0, 2.0], p))
    sim.set_agent_pose([7.0, 0.0, 2.0], [1.0, 0.0, 0.0, 0.0])
    assert sim.snap_point([4.5, 0.0, 2.0])[0] > 4.6


@pytest.mark.slow
def test_stairs_connect_the_storeys():
    from eqa_runner.demo.house import STOREY_H, generate_house

    sim = MeshSimulator(width=64, height=64)
    sim.load_arrays(generate_house().mesh_data())
    up, down = np.array([6.5, STOREY_H, 2.0]), np.array([2.5, 0.0, 2.0])
    sim.set_agent_pose(up, [1.0, 0.0, 0.0, 0.0])
    assert sim.floor_height == pytest.approx(STOREY_H, abs=0.06)  # one voxel up
    assert [round(y) for y in sim.layered.storeys()] == [0, STOREY_H]
    d = sim.geodesic_distance(up, down)
    path = np.asarray(sim.shortest_path(up, down))
    assert math.isfinite(d) and d > 10.0  # down the stairs along the back wall, not straight
    assert path[:, 2].max() > 4.8  # through the staircase
    assert np.all(np.diff(path[:, 1]) <= 1e-6)  # only downhill
    # each storey's navigable area on its own, and the grid view follows the agent
    assert sim.navigable_area(STOREY_H) > 20 and sim.navigable_area(0.0) > 25
    assert sim.navgrid.floor_y == pytest.approx(STOREY_H, abs=0.06)
    sim.set_agent_pose(down, [1.0, 0.0, 0.0, 0.0])
    assert sim.navgrid.floor_y == pytest.approx(0.0, abs=0.06)


def test_rays_pass_through_pixel_centres():
    """Depth of an infinite-looking floor seen level from 1.5 m: z = h * fy / (v + 0.5 - cy)."""
    mb = MeshBuilder()
    mb.quad_y(-200.0, -200.0, 200.0, 200.0, 0.0, GREY)
    sim = _sim(mb, sensor_height_m=1.5)
    s = sim.sensor
    cam = geo.camera_to_world(np.zeros(3), [1.0, 0.0, 0.0, 0.0], 1.5, 0.0)
    _, depth = sim.render(cam)
    k = geo.intrinsics_from_hfov(s.hfov_deg, s.width, s.height)
    v = np.arange(s.height // 2 + 4, s.height)
    want = 1.5 * k[1, 1] / (v + 0.5 - k[1, 2])
    np.testing.assert_allclose(depth[v, s.width // 2], want, rtol=1e-4)


def test_bad_scenes_raise_one_scene_error_naming_the_cause():
    from eqa_runner.errors import SceneError

    walls = MeshBuilder()
    wall = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [4.0, 2.5, 0.0], [0.0, 2.5, 0.0]])
    walls.add(wall, np.array([[0, 1, 2], [0, 2, 3]]), GREY, -1)  # a wall, no floor
    with pytest.raises(SceneError, match="has no floor"):
        _sim(walls).snap_point([1.0, 0.0, 1.0])
    flipped = MeshBuilder()
    flipped.quad_y(0.0, 0.0, 4.0, 4.0, 0.0, GREY, facing_up=False)  # a floor facing down
    with pytest.raises(SceneError, match="flipped normals"):
        _sim(flipped).navigable_area()
    ok = MeshBuilder()
    _platform(ok, 0.0, 0.0, 4.0, 4.0)
    sim = _sim(ok)
    sim.check_start([2.0, 0.0, 2.0])
    with pytest.raises(SceneError, match=r"start \[5.00, 0.00, 2.00\] is on no island.*1.1\d m"):
        sim.check_start([5.0, 0.0, 2.0])


@pytest.mark.slow
def test_batched_string_pull_equals_the_one_segment_at_a_time_greedy():
    """``lines_of_sight`` / ``_string_pull`` (batched, issue 27) give the very points of the
    greedy that tests one segment per call, on stairs, corners and out-of-grid segments."""
    from eqa_runner.demo.house import generate_house

    sim = MeshSimulator(width=64, height=64)
    sim.load_arrays(generate_house().mesh_data())
    nav = sim.layered

    def greedy(pts: np.ndarray) -> np.ndarray:
        out, i = [pts[0]], 0
        while i < len(pts) - 1:
            k = i + 1
            while k + 1 < len(pts) and nav.line_of_sight(pts[i], pts[k + 1]):
                k += 1
            out.append(pts[k])
            i = k
        return np.asarray(out)

    rng = np.random.default_rng(3)
    nodes = rng.integers(nav.n_nodes, size=(40, 2))
    pulled = 0
    for a, b in nodes:
        dist, pred = nav._source(int(a))
        if not np.isfinite(dist[b]) or a == b:
            continue
        chain = [int(b)]
        while chain[-1] != a:
            chain.append(int(pred[chain[-1]]))
        pts = np.array([nav.point(n) for n in reversed(chain)])
        assert np.array_equal(nav._string_pull(pts), greedy(pts))
        assert np.array_equal(nav._string_pull(pts, chunk=3), greedy(pts))
        far = np.vstack([pts[1:], [[-50.0, 0.0, 2.0]]])  # the last one leaves the grid
        expect = [nav.line_of_sight(pts[0], q) for q in far]
        assert nav.lines_of_sight(pts[0], far).tolist() == expect and not expect[-1]
        pulled += len(pts) > 2
    assert pulled >= 10  # most pairs are paths with corners to pull


def _snap_every_node(nav, p, island=None):
    """The snap over every node (before issue 27): the reference for the windowed one."""
    from eqa_runner.sim.layered import NAN3, SNAP_HALF_EXTENT

    hx, hy = SNAP_HALF_EXTENT
    lo = nav.xz - nav.c / 2
    q = np.clip(np.array([p[0], p[2]]), lo + 1e-4, lo + nav.c - 1e-4)
    dxz = np.linalg.norm(q - np.array([p[0], p[2]]), axis=1)
    dy = np.abs(nav.y - p[1])
    ok = (np.abs(nav.xz - [p[0], p[2]]) <= hx + nav.c / 2).all(axis=1) & (dy <= hy)
    if island is not None:
        ok &= nav.island == island
    if not ok.any():
        return -1, NAN3.copy()
    i, j = np.floor((np.array([p[0], p[2]]) - [nav.x0, nav.z0]) / nav.c).astype(int)
    over = (nav.ij[:, 0] == i) & (nav.ij[:, 1] == j)
    cost = np.where(over, np.maximum(dy - nav.climb, 0.0) ** 2, dxz**2 + dy**2) + 1e-9 * dy
    k = int(np.argmin(np.where(ok, cost, np.inf)))
    return k, np.array([q[k, 0], nav.y[k], q[k, 1]])


@pytest.mark.slow
def test_windowed_snap_equals_the_snap_over_every_node():
    """The snap reads only the grid columns its box can reach (issue 27): the same node and
    point as over every node, inside and outside the grid, on and off the agent's island."""
    from eqa_runner.demo.house import generate_house

    sim = MeshSimulator(width=64, height=64)
    sim.load_arrays(generate_house().mesh_data())
    nav = sim.layered
    lo, hi = sim.bounds()
    rng = np.random.default_rng(5)
    islands = np.unique(nav.island)
    found = 0
    for t in range(300):
        p = lo - 3.0 + rng.random(3) * (hi - lo + 6.0)
        if t % 3 == 0:
            p = nav.point(int(rng.integers(nav.n_nodes))) + rng.normal(size=3) * [0.5, 0.3, 0.5]
        isl = None if t % 2 else int(rng.choice(islands))
        k, q = nav.snap_node(p, isl)
        k0, q0 = _snap_every_node(nav, p, isl)
        assert k == k0 and np.array_equal(q, q0, equal_nan=True)
        found += k >= 0
    assert 50 < found < 300  # both snapped and out-of-box points were tried
