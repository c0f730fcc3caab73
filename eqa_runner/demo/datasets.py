"""Offline demo datasets from procedural apartments (EXPRESS-Bench and OpenEQA formats).

Both writers are deterministic per seed and render/plan with the ``mesh`` simulator.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.demo.apartment import Apartment, SceneObject, generate_apartment
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SceneSpec, SensorSpec
from eqa_runner.sim.mesh import MeshSimulator
from eqa_runner.tasks.openeqa_em import CATEGORIES

EXPRESS_FILE = "express-bench.json"
OPENEQA_FILE = "open-eqa-v0.json"
EXPRESS_TYPES = ["object", "existence", "attribute", "location", "state", "knowledge", "counting"]
OPENEQA_CATEGORIES = list(CATEGORIES)
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
KNOWLEDGE = {  # EXPRESS "knowledge": everyday knowledge that points to an object
    "fridge": "Where can I keep my drinks cold?",
    "bed": "Where could I take a nap?",
    "stove": "Where can I cook dinner?",
    "bookshelf": "Where could I find a book to read?",
    "washing machine": "Where can I wash my clothes?",
    "bathtub": "Where could I take a bath?",
    "sofa": "Where can I sit down to watch TV?",
}
FUNCTION = {  # OpenEQA "functional reasoning"
    "fridge": ("Where should I put the leftovers from dinner?", "in the fridge"),
    "stove": ("What can I use to heat up some soup?", "the stove"),
    "bed": ("Where can I lie down to sleep?", "on the bed"),
    "washing machine": ("What can I use to clean my dirty clothes?", "the washing machine"),
    "sofa": ("Where can several people sit together to watch TV?", "on the sofa"),
    "desk": ("Where can I sit and work on a laptop?", "at the desk"),
    "bathtub": ("Where can I take a bath?", "in the bathtub"),
    "bookshelf": ("Where would I look for a novel?", "on the bookshelf"),
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


def _express_candidates(apt: Apartment) -> dict[str, list[dict[str, Any]]]:
    objs = [o for o in apt.objects if _reachable(apt, o)]
    by_room: Counter[tuple[str, str | None]] = Counter((o.room, o.name) for o in apt.objects)
    by_name = Counter(o.name for o in apt.objects)
    c: dict[str, list[dict[str, Any]]] = {t: [] for t in EXPRESS_TYPES}
    for o in objs:
        unique_in_room = by_room[(o.room, o.name)] == 1
        where = f"in the {o.room}"
        if o.supported_by is not None:
            where = f"on the {o.supported_by_name} in the {o.room}"
        if o.name in COLOR_ITEMS and unique_in_room:
            c["attribute"].append(
                {
                    "q": f"What color is the {_disp(o.name)} in the {o.room}?",
                    "a": o.color,
                    "t": [o.id],
                }
            )
        if o.name in STATE_WORDS and unique_in_room:
            q = (
                f"Is the door of the {o.room} {STATE_WORDS[o.name]}?"
                if o.name == "door"
                else f"Is {_the(o.name)} in the {o.room} {STATE_WORDS[o.name]}?"
            )
            c["state"].append({"q": q, "a": o.state, "t": [o.id]})
        if by_name[o.name] == 1 and o.name != "door":
            c["location"].append(
                {"q": f"Where is {_the(o.name)}?", "a": f"It is {where}.", "t": [o.id]}
            )
            if o.name in KNOWLEDGE:
                c["knowledge"].append(
                    {
                        "q": KNOWLEDGE[o.name],
                        "a": f"{_the(o.name).capitalize()} {where}.",
                        "t": [o.id],
                    }
                )
        if o.supported_by is not None and by_room[(o.room, o.supported_by_name)] == 1:
            c["object"].append(
                {
                    "q": f"What is on the {o.supported_by_name} in the {o.room}?",
                    "a": f"A {_disp(o.name)}.",
                    "t": [o.id],
                }
            )
        if unique_in_room and o.name != "door":
            c["existence"].append(
                {"q": f"Is there a {_disp(o.name)} in the {o.room}?", "a": "Yes.", "t": [o.id]}
            )
    for r in apt.rooms:
        if not r.accessible:
            continue
        present = {o.name for o in apt.objects if o.room == r.name}
        for name in sorted({o.name for o in apt.objects} - present - {"door", "painting"}):
            anchors = [
                o.id
                for o in apt.objects
                if o.room == r.name and o.name != "door" and o.supported_by is None
            ]
            if anchors:
                c["existence"].append(
                    {"q": f"Is there a {_disp(name)} in the {r.name}?", "a": "No.", "t": anchors}
                )
        counts = Counter(o.name for o in apt.objects if o.room == r.name)
        for name, n in counts.items():
            if n >= 2:
                ids = [o.id for o in apt.objects if o.room == r.name and o.name == name]
                c["counting"].append(
                    {"q": f"How many {name}s are there in the {r.name}?", "a": str(n), "t": ids}
                )
    return c


def write_express_demo(
    out_dir: Path, seed: int = 0, n_scenes: int = 2, questions_per_scene: int = 6
) -> Path:
    """Write ``<out_dir>/express-bench.json`` (EXPRESS-Bench schema) and the scene meshes under
    ``<out_dir>/scenes/val/00800-DemoApt0/DemoApt0.glb`` (HM3D convention, see
    :mod:`eqa_runner.demo.mesh_files`; + ``.scene.json``)."""
    out_dir = Path(out_dir)
    records: list[dict[str, Any]] = []
    for k in range(n_scenes):
        apt = generate_apartment(seed * 7919 + k)
        name, dirname = f"DemoApt{k}", f"{800 + k:05d}-DemoApt{k}"
        glb, _ = apt.write(out_dir / "scenes" / "val" / dirname, name)
        sim = MeshSimulator(cell_size=0.05)  # plan on the written file, as runs will
        sim.load_scene(SceneSpec(f"hm3d/val/{dirname}", glb))
        rng = np.random.default_rng([seed, k, 17])
        cands = _express_candidates(apt)
        types = [t for t in EXPRESS_TYPES if cands[t]]
        types = [types[i] for i in rng.permutation(len(types))]
        made, used, rounds = 0, set(), 0
        while made < questions_per_scene and types and rounds < 10 * questions_per_scene:
            qtype = types[rounds % len(types)]
            rounds += 1
            pool = [c for c in cands[qtype] if c["q"] not in used]
            if not pool:
                continue
            cand = pool[int(rng.integers(len(pool)))]
            used.add(cand["q"])
            view = _viewpoint(sim, apt, cand["t"], rng)
            if view is None:
                continue
            goal, goal_rot = view
            start = _start_pose(sim, apt, goal, apt.objects[cand["t"][0]].room, rng)
            if start is None:
                continue
            sp, goal = np.round(start[0], 4), np.round(goal, 4)
            dist = sim.geodesic_distance(sp, goal)
            yaw0 = float(rng.uniform(-math.pi, math.pi))
            idx = len(records)
            records.append(
                {
                    "episode_id": str(idx),
                    "trajectory_id": f"{dirname}-{made:02d}",
                    "scene_id": f"hm3d/val/{dirname}",
                    "episode_path": f"episode/{idx:04d}-{dirname}",
                    "type": qtype,
                    "question": cand["q"],
                    "answer": cand["a"],
                    "start_position": sp.tolist(),
                    "start_rotation": np.round(geo.yaw_to_quat(yaw0), 6).tolist(),
                    "goal_position": goal.tolist(),
                    "goal_rotation": np.round(goal_rot, 6).tolist(),
                    "geodesic_distance": round(float(dist), 4),
                    "step_length": 0.25,
                    "actions": [],
                }
            )
            made += 1
        sim.close()
    path = out_dir / EXPRESS_FILE
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1))
    return path


# ----------------------------------------------------------------------------- OpenEQA


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


def _openeqa_questions(apt: Apartment, visible: set[int], rng) -> list[dict[str, Any]]:
    objs = [o for o in apt.objects if o.id in visible]
    by_room = Counter((o.room, o.name) for o in apt.objects)
    by_name = Counter(o.name for o in apt.objects)
    col_room = Counter((o.room, o.color) for o in apt.objects)
    c: dict[str, list[dict[str, Any]]] = {k: [] for k in OPENEQA_CATEGORIES}
    for o in objs:
        uroom = by_room[(o.room, o.name)] == 1
        if col_room[(o.room, o.color)] == 1 and o.name not in ("door", "painting", "lamp", "tv"):
            c["object recognition"].append(
                {
                    "question": f"What is the {o.color} object in the {o.room}?",
                    "answer": f"a {_disp(o.name)}",
                }
            )
        if by_name[o.name] == 1 and o.name != "door":
            c["object localization"].append(
                {
                    "question": f"Where is {_the(o.name)}?",
                    "answer": f"in the {o.room}",
                    "extra_answers": [f"the {o.room}", o.room],
                }
            )
        if o.name in COLOR_ITEMS and uroom:
            c["attribute recognition"].append(
                {
                    "question": f"What color is the {_disp(o.name)} in the {o.room}?",
                    "answer": o.color,
                }
            )
        if o.supported_by is not None and by_name[o.name] == 1:
            c["spatial understanding"].append(
                {
                    "question": f"What is {_the(o.name)} standing on?",
                    "answer": f"the {o.supported_by_name}",
                }
            )
        if o.name in STATE_WORDS and uroom:
            q = (
                f"Is the door of the {o.room} {STATE_WORDS[o.name]}?"
                if o.name == "door"
                else f"Is {_the(o.name)} in the {o.room} {STATE_WORDS[o.name]}?"
            )
            item: dict[str, Any] = {"question": q, "answer": o.state}
            if o.state in ("on", "open"):
                item["extra_answers"] = [f"it is {o.state}"]
            c["object state recognition"].append(item)
        if o.name in FUNCTION and by_name[o.name] == 1:
            q, a = FUNCTION[o.name]
            c["functional reasoning"].append({"question": q, "answer": f"{a} in the {o.room}"})
        if o.name in LEGGED and uroom:
            c["world knowledge"].append(
                {
                    "question": f"How many legs does the {o.name} in the {o.room} have?",
                    "answer": "4",
                    "extra_answers": ["four"],
                }
            )
    out = []
    for cat in OPENEQA_CATEGORIES:
        if c[cat]:
            item = dict(c[cat][int(rng.integers(len(c[cat])))])
            item["category"] = cat
            out.append(item)
    return out


def _write_png(path: Path, arr: np.ndarray) -> None:
    from PIL import Image

    Image.fromarray(arr).save(path, compress_level=1)


def write_openeqa_demo(
    out_dir: Path,
    seed: int = 0,
    n_episodes: int = 3,
    questions: int = 21,
    width: int = 640,
    height: int = 360,
    max_frames: int = 36,
) -> Path:
    """Write ``<out_dir>/open-eqa-v0.json`` and rendered walkthrough frames under
    ``<out_dir>/episodes/hm3d-v0/<NNN>-hm3d-DemoAptK/`` (``00000-rgb.png``, ``00000-depth.png``
    uint16 mm, ``00000.txt`` 4x4 camera-to-world in the habitat frame, OpenGL camera)."""
    out_dir = Path(out_dir)
    sensor = SensorSpec(width=width, height=height, hfov_deg=90.0, sensor_height_m=1.5)
    k_mat = geo.intrinsics_from_hfov(sensor.hfov_deg, width, height)
    per_episode = max(1, math.ceil(questions / max(n_episodes, 1)))
    records: list[dict[str, Any]] = []
    for k in range(n_episodes):
        apt = generate_apartment(seed * 7919 + 100 + k)
        history = f"hm3d-v0/{k:03d}-hm3d-DemoApt{k}"
        ep_dir = out_dir / "episodes" / history
        ep_dir.mkdir(parents=True, exist_ok=True)
        apt.write(ep_dir, f"DemoApt{k}")
        sim = _scene_sim(apt, sensor)
        rng = np.random.default_rng([seed, k, 23])
        poses = _walkthrough(sim, apt, rng)
        if len(poses) > max_frames:
            keep = np.round(np.linspace(0, len(poses) - 1, max_frames)).astype(int)
            poses = [poses[i] for i in keep]
        pix: Counter[int] = Counter()
        intr4 = np.eye(4)
        intr4[:3, :3] = k_mat
        np.savetxt(ep_dir / "intrinsic_color.txt", intr4, fmt="%.6f")
        np.savetxt(ep_dir / "intrinsic_depth.txt", intr4, fmt="%.6f")
        for i, (p, yaw) in enumerate(poses):
            sim.set_agent_pose(p, geo.yaw_to_quat(yaw))
            obs = sim.observe()
            _write_png(ep_dir / f"{i:05d}-rgb.png", obs.rgb)
            depth_mm = np.clip(np.round(obs.depth * 1000.0), 0, 65535).astype(np.uint16)
            _write_png(ep_dir / f"{i:05d}-depth.png", depth_mm)
            np.savetxt(ep_dir / f"{i:05d}.txt", obs.cam_to_world, fmt="%.6f")
            pix.update(_visible_ids(sim, apt, obs))
        visible = {oid for oid, n in pix.items() if n >= 0.004 * width * height}
        qs = _openeqa_questions(apt, visible, rng)[:per_episode]
        for j, q in enumerate(qs):
            rec = {
                "question_id": f"demo-{k:03d}-{j:02d}",
                "question": q["question"],
                "answer": q["answer"],
                "category": q["category"],
                "episode_history": history,
            }
            if q.get("extra_answers"):
                rec["extra_answers"] = q["extra_answers"]
            records.append(rec)
        sim.close()
    path = out_dir / OPENEQA_FILE
    path.write_text(json.dumps(records[:questions] if questions else records, indent=1))
    return path


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
