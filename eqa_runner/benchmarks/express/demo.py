"""The EXPRESS-Bench demo dataset: questions about a procedural apartment, in the upstream
file format, with the apartment meshes (HM3D scene convention)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.demo.apartment import Apartment, generate_apartment
from eqa_runner.demo.datasets import (
    COLOR_ITEMS,
    STATE_WORDS,
    _disp,
    _reachable,
    _start_pose,
    _the,
    _viewpoint,
)
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SceneSpec
from eqa_runner.sim.mesh import MeshSimulator

EXPRESS_FILE = "express-bench.json"
EXPRESS_HOUSE_FILE = "express-bench-house.json"  # the two-storey house's episodes
EXPRESS_TYPES = ["object", "existence", "attribute", "location", "state", "knowledge", "counting"]
KNOWLEDGE = {  # EXPRESS "knowledge": everyday knowledge that points to an object
    "fridge": "Where can I keep my drinks cold?",
    "bed": "Where could I take a nap?",
    "stove": "Where can I cook dinner?",
    "bookshelf": "Where could I find a book to read?",
    "washing machine": "Where can I wash my clothes?",
    "bathtub": "Where could I take a bath?",
    "sofa": "Where can I sit down to watch TV?",
}


def _express_candidates(apt: Apartment) -> dict[str, list[dict[str, Any]]]:
    """Candidate questions per EXPRESS type: {q, a, t (target object ids)}."""
    by_room: Counter[tuple[str, str | None]] = Counter((o.room, o.name) for o in apt.objects)
    by_name = Counter(o.name for o in apt.objects)
    c: dict[str, list[dict[str, Any]]] = {t: [] for t in EXPRESS_TYPES}
    for o in apt.objects:
        if _reachable(apt, o):
            _object_candidates(c, o, by_room, by_name)
    for r in apt.rooms:
        if r.accessible:
            _room_candidates(c, apt, r)
    return c


def _object_candidates(
    c: dict[str, list[dict[str, Any]]],
    o: Any,
    by_room: Counter[tuple[str, str | None]],
    by_name: Counter[str],
) -> None:
    """The questions about one reachable object (attribute, state, location, knowledge,
    object, existence)."""
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


def _room_candidates(c: dict[str, list[dict[str, Any]]], apt: Apartment, r: Any) -> None:
    """The questions about one accessible room: what is not there, and counts."""
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


def write_express_demo(
    out_dir: Path, seed: int = 0, n_scenes: int = 2, questions_per_scene: int = 6
) -> Path:
    """Write ``<out_dir>/express-bench.json`` (EXPRESS-Bench schema) and the scene meshes under
    ``<out_dir>/scenes/val/00800-DemoApt0/DemoApt0.glb`` (HM3D convention, see
    :mod:`eqa_runner.demo.mesh_files`; + ``.scene.json``)."""
    out_dir = Path(out_dir)
    records: list[dict[str, Any]] = []
    for k in range(n_scenes):
        _scene_questions(out_dir, seed, k, questions_per_scene, records)
    path = out_dir / EXPRESS_FILE
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1))
    # the two-storey house: its own questions file (task.questions_file=express-bench-house.json)
    house = _house_records(out_dir, 0, n_scenes)
    (out_dir / EXPRESS_HOUSE_FILE).write_text(json.dumps(house, indent=1))
    return path


def _scene_questions(
    out_dir: Path, seed: int, k: int, questions_per_scene: int, records: list[dict[str, Any]]
) -> None:
    """Apartment ``k``: its mesh, and up to ``questions_per_scene`` records appended."""
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


def _house_records(out_dir: Path, first: int, k: int) -> list[dict[str, Any]]:
    """The two-storey house's episodes: three start upstairs with the goal downstairs, one the
    other way round (goal viewpoints facing the object asked about)."""
    from eqa_runner.demo.house import HOUSE_NAME, generate_house, house_episodes

    apt = generate_house()
    dirname = f"{800 + k:05d}-{HOUSE_NAME}"
    glb, _ = apt.write(out_dir / "scenes" / "val" / dirname, HOUSE_NAME, ply=True)
    sim = MeshSimulator(cell_size=0.05)
    sim.load_scene(SceneSpec(f"hm3d/val/{dirname}", glb))
    out = []
    for j, e in enumerate(house_episodes(sim, apt)):
        idx = first + j
        out.append(
            {
                "episode_id": f"house-{idx}",
                "trajectory_id": f"{dirname}-{j:02d}",
                "scene_id": f"hm3d/val/{dirname}",
                "episode_path": f"episode/{idx:04d}-{dirname}",
                "type": "attribute",
                "question": e["question"],
                "answer": e["answer"],
                "start_position": np.round(e["start"], 4).tolist(),
                "start_rotation": np.round(geo.yaw_to_quat(-math.pi / 2), 6).tolist(),  # east
                "goal_position": np.round(e["goal"], 4).tolist(),
                "goal_rotation": np.round(geo.yaw_to_quat(e["goal_yaw"]), 6).tolist(),
                "geodesic_distance": round(e["geodesic"], 4),
                "step_length": 0.25,
                "actions": [],
            }
        )
    sim.close()
    return out


# ----------------------------------------------------------------------------- OpenEQA
