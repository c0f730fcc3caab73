"""What every benchmark's demo writer shares: object names and wording, views that see an
object, start poses, walkthroughs, frame files (each benchmark's writer is in its package).

The writers are deterministic per seed and render/plan with the ``mesh`` simulator.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np

from eqa_runner.demo.apartment import Apartment, SceneObject
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SensorSpec
from eqa_runner.sim.mesh import MeshSimulator

COLOR_ITEMS = {
    "sofa",
    "armchair",
    "bed",
    "chair",
    "plant",
    "painting",
    "vase",
    "fridge",
    "wardrobe",
    "bookshelf",
    "cabinet",
    "desk",
    "dining table",
    "table",
    "coffee table",
    "tv stand",
    "nightstand",
    "laptop",
    "door",
    "washing machine",
}
STATE_WORDS = {
    "lamp": "on or off",
    "tv": "on or off",
    "laptop": "open or closed",
    "door": "open or closed",
}
LEGGED = {"table", "coffee table", "desk", "dining table", "chair"}


def _the(name: str) -> str:
    return "the TV" if name == "tv" else f"the {name}"


def _disp(name: str) -> str:
    return "TV" if name == "tv" else name


def _scene_sim(apt: Apartment, sensor: SensorSpec | None = None) -> MeshSimulator:
    sim = MeshSimulator(cell_size=0.05)
    if sensor is not None:
        sim.set_sensor(sensor)
    sim.load_arrays(apt.mesh_data())
    return sim


def _reachable(apt: Apartment, o: SceneObject) -> bool:
    return o.name == "door" or apt.room(o.room).accessible


def _room_of(apt: Apartment, p: np.ndarray) -> str | None:
    for r in apt.rooms:
        (x0, z0), (x1, z1) = r.bounds
        if x0 <= p[0] <= x1 and z0 <= p[2] <= z1:
            return r.name
    return None


def _main_label(sim: MeshSimulator) -> int:
    lab = sim.navgrid.labels
    counts = np.bincount(lab[lab > 0])
    return int(np.argmax(counts))


def _visible(sim: MeshSimulator, apt: Apartment, eye: np.ndarray, targets: list[int]) -> bool:
    """Whether a ray from ``eye`` to the centre of any target hits that target first."""
    for oid in targets:
        c = np.asarray(apt.objects[oid].position, dtype=np.float64)
        d = c - eye
        res = sim.cast(eye[None], d[None] / np.linalg.norm(d))
        if np.isfinite(res["t_hit"][0]) and apt.face_object[res["primitive_ids"][0]] == oid:
            return True
    return False


def _viewpoint(sim, apt, targets: list[int], rng, max_dist: float = 1.5):
    """A navigable pose (main component) within max_dist of the first target, facing it."""
    g = sim.navgrid
    main = _main_label(sim)
    o = apt.objects[targets[0]]
    c = np.asarray(o.position)
    half = np.asarray(o.size)[[0, 2]] / 2
    xz = g._nav_xz
    gap = np.maximum(np.abs(xz - c[[0, 2]]) - half, 0.0)
    dist = np.linalg.norm(gap, axis=1)
    lab = g.labels[g._nav_ij[:, 0], g._nav_ij[:, 1]]
    cand = np.nonzero((dist <= max_dist) & (dist >= 0.25) & (lab == main))[0]
    if len(cand) == 0:
        return None
    order = rng.permutation(cand)[:80]
    for k in order:
        p = np.array([xz[k, 0], g.floor_y, xz[k, 1]])
        if _visible(sim, apt, p + [0.0, sim.sensor.sensor_height_m, 0.0], targets):
            return p, geo.yaw_to_quat(geo.yaw_facing(p, c))
    return None


def _start_pose(sim, apt, goal: np.ndarray, goal_room: str, rng):
    """A start a few metres away, in another room when possible."""
    best, best_score = None, -1.0
    for _ in range(40):
        p = sim.random_navigable_point(rng)
        if not np.all(np.isfinite(p)):
            continue
        d = sim.geodesic_distance(p, goal)
        if not math.isfinite(d):
            continue
        score = min(d, 8.0) + (4.0 if _room_of(apt, p) not in (goal_room, None) else 0.0)
        if 3.0 <= d <= 12.0 and _room_of(apt, p) not in (goal_room, None):
            return p, d
        if score > best_score:
            best, best_score = (p, d), score
    return best


def _walkthrough(sim: MeshSimulator, apt: Apartment, rng) -> list[tuple[np.ndarray, float]]:
    """Poses (position, yaw): a look-around in every accessible room, joined by paths."""
    order = [r for r in apt.rooms if r.accessible]
    order.sort(key=lambda r: (r.name != "living room", r.name))
    adj: dict[str, set[str]] = {r.name: set() for r in apt.rooms}
    for d in apt.doorways:
        a, b = d["rooms"]
        adj[a].add(b)
        adj[b].add(a)
    seen, tour = set(), []

    def dfs(name):
        seen.add(name)
        tour.append(name)
        for nb in sorted(adj[name]):
            if nb not in seen and apt.room(nb).accessible:
                dfs(nb)

    dfs(order[0].name)
    poses: list[tuple[np.ndarray, float]] = []
    prev = None
    for name in tour:
        centre = sim.snap_point(apt.room(name).center)
        if not np.all(np.isfinite(centre)):
            continue
        if prev is not None:
            path = sim.shortest_path(prev, centre) or [prev, centre]
            pts = np.asarray(path)
            seg = np.linalg.norm(np.diff(pts[:, [0, 2]], axis=0), axis=1)
            cum = np.concatenate([[0.0], np.cumsum(seg)])
            for s in np.arange(1.5, cum[-1] - 0.5, 1.5):
                i = int(np.searchsorted(cum, s) - 1)
                t = (s - cum[i]) / max(seg[i], 1e-9)
                p = pts[i] + t * (pts[i + 1] - pts[i])
                poses.append((p, geo.yaw_facing(pts[i], pts[i + 1])))
        yaw0 = float(rng.uniform(-math.pi, math.pi))
        poses += [(centre, geo.wrap_angle(yaw0 + j * math.pi / 2)) for j in range(4)]
        prev = centre
    return poses


def _write_png(path: Path, arr: np.ndarray) -> None:
    from PIL import Image

    Image.fromarray(arr).save(path, compress_level=1)


def _visible_ids(sim: MeshSimulator, apt: Apartment, obs) -> Counter[int]:
    """Pixel counts per object id in a frame (raycast at a quarter of the resolution)."""
    s = sim.sensor
    v, u = np.mgrid[0 : s.height : 4, 0 : s.width : 4]
    k = obs.intrinsics
    d = np.stack(
        [(u - k[0, 2]) / k[0, 0], -(v - k[1, 2]) / k[1, 1], -np.ones_like(u, float)], axis=-1
    ).reshape(-1, 3)
    dirs = d @ obs.cam_to_world[:3, :3].T
    res = sim.cast(np.broadcast_to(obs.cam_to_world[:3, 3], dirs.shape), dirs)
    hit = np.isfinite(res["t_hit"])
    ids = apt.face_object[res["primitive_ids"][hit].astype(np.int64)]
    cnt = Counter(ids[ids >= 0].tolist())
    return Counter({i: 16 * n for i, n in cnt.items()})
