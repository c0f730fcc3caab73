"""Offline MP3D-EQA demo data in habitat-lab's ``MP3DEQA-v1`` file format, on the core's
procedural apartments (:func:`eqa_runner.demo.apartment.generate_apartment`).

Layout (a valid ``task.data_dir`` for ``task=mp3d_eqa``)::

    <out>/val/val.json.gz                    the episodes and both vocabularies
    <out>/scenes/mp3d/<house>/<house>.glb    (+ .scene.json); scene_id mp3d/<house>/<house>.glb

Questions follow EQA v1's three templates (location, color, color_room) over the apartment's
objects; each has one object goal (the object's centre), view points from which the object is
seen, a start a few metres away (another room where possible) and a shortest path in v1's
discrete actions (0.1 m forward, 9 degree turns, 3 = stop). Deterministic per seed.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.demo.apartment import Apartment, SceneObject, generate_apartment
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SceneSpec
from eqa_runner.sim.mesh import MeshSimulator
from eqa_runner_mp3d_eqa.episodes import ACTIONS, UNK, Vocab, episodes_file, tokenize, write

FORWARD_M, TURN_DEG = 0.1, 9.0  # the step sizes the v1 shortest paths were made with
SPLIT = "val"
TEMPLATES = {
    "location": "what room is the {obj} located in?",
    "color": "what color is the {obj}?",
    "color_room": "what color is the {obj} in the {room}?",
}


def _xyzw(yaw: float) -> list[float]:
    """A yaw about +y as habitat-lab's dataset quaternion (x, y, z, w)."""
    w, x, y, z = geo.yaw_to_quat(yaw)
    return [round(float(v), 6) for v in (x, y, z, w)]


def _r(p: Any) -> list[float]:
    return [round(float(v), 5) for v in np.asarray(p, dtype=float).reshape(-1)]


def questions_for(apt: Apartment) -> list[tuple[str, SceneObject, str]]:
    """(type, object, answer) for every object a v1 template can ask about unambiguously."""
    names = Counter(o.name for o in apt.objects)
    in_room = Counter((o.name, o.room) for o in apt.objects)
    out = []
    for o in apt.objects:
        if o.name == "door" or not apt.room(o.room).accessible:
            continue
        if names[o.name] == 1:
            out.append(("location", o, o.room))
            if o.color:
                out.append(("color", o, o.color))
        elif in_room[(o.name, o.room)] == 1 and o.color:
            out.append(("color_room", o, o.color))
    return out


def _visible(sim: MeshSimulator, apt: Apartment, eye: np.ndarray, o: SceneObject) -> bool:
    d = np.asarray(o.position, dtype=float) - eye
    hit = sim.cast(eye[None], (d / np.linalg.norm(d))[None])
    return bool(np.isfinite(hit["t_hit"][0]) and apt.face_object[hit["primitive_ids"][0]] == o.id)


def view_points(
    sim: MeshSimulator, apt: Apartment, o: SceneObject, rng: np.random.Generator, n: int = 3
) -> list[np.ndarray]:
    """Up to ``n`` navigable points 0.3-1.5 m from the object's box from which it is seen."""
    c = np.asarray(o.position, dtype=float)
    half = np.asarray(o.size, dtype=float)[[0, 2]] / 2
    base = c[1] - float(o.size[1]) / 2  # the object's bottom: the floor or its support
    out: list[np.ndarray] = []
    for a in rng.permutation(24) * (2 * math.pi / 24):
        for r in (0.6, 1.0, 1.4):
            off = np.array([math.cos(a), math.sin(a)]) * (half + r)
            p = np.asarray(sim.snap_point([c[0] + off[0], base, c[2] + off[1]]), dtype=float)
            if not np.all(np.isfinite(p)):
                continue
            gap = np.linalg.norm(np.maximum(np.abs(p[[0, 2]] - c[[0, 2]]) - half, 0.0))
            eye = p + [0.0, sim.sensor.sensor_height_m, 0.0]
            if 0.3 <= gap <= 1.5 and _visible(sim, apt, eye, o):
                out.append(p)
                break
        if len(out) >= n:
            break
    return out


def _room_of(apt: Apartment, p: np.ndarray) -> str | None:
    for r in apt.rooms:
        (x0, z0), (x1, z1) = r.bounds
        if x0 <= p[0] <= x1 and z0 <= p[2] <= z1:
            return r.name
    return None


def start_for(
    sim: MeshSimulator, apt: Apartment, goal: np.ndarray, room: str, rng: np.random.Generator
) -> np.ndarray | None:
    """A start 3-12 m (geodesic) from ``goal``, in another room when one is found."""
    best, best_score = None, -1.0
    for _ in range(60):
        p = np.asarray(sim.random_navigable_point(rng), dtype=float)
        d = sim.geodesic_distance(p, goal) if np.all(np.isfinite(p)) else math.inf
        if not math.isfinite(d):
            continue
        other = _room_of(apt, p) not in (room, None)
        if 3.0 <= d <= 12.0 and other:
            return p
        score = min(d, 8.0) + 4.0 * other
        if score > best_score:
            best, best_score = p, score
    return best


def action_path(points: list[np.ndarray], yaw: float) -> list[dict[str, Any]]:
    """The v1 shortest path along ``points`` in discrete actions: turn (9 degrees) towards the
    next point, step 0.1 m along the heading; each entry is the agent's state and the action
    taken there (so the actions replay the positions), the last one ``stop``."""
    out: list[dict[str, Any]] = []
    pos, step = np.asarray(points[0], dtype=float), math.radians(TURN_DEG)

    def add(action: str) -> None:
        out.append({"position": _r(pos), "rotation": _xyzw(yaw), "action": ACTIONS[action]})

    for nxt in points[1:]:
        nxt = np.asarray(nxt, dtype=float)
        while np.linalg.norm((nxt - pos)[[0, 2]]) >= FORWARD_M / 2:
            diff = geo.wrap_angle(geo.yaw_facing(pos, nxt) - yaw)
            if abs(diff) > step / 2:
                add("left" if diff > 0 else "right")
                yaw = geo.wrap_angle(yaw + math.copysign(step, diff))
                continue
            add("forward")  # a step along the (quantised) heading, as the simulator moves
            pos = pos + FORWARD_M * np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])
    add("stop")
    return out


def _episode(
    sim: MeshSimulator, apt: Apartment, house: str, q: tuple[str, SceneObject, str], rng: Any
) -> dict[str, Any] | None:
    kind, o, answer = q
    views = view_points(sim, apt, o, rng)
    goal = np.asarray(o.position, dtype=float)
    start = start_for(sim, apt, views[0], o.room, rng) if views else None
    if start is None:
        return None
    path = sim.shortest_path(start, views[0])
    if not path or not math.isfinite(sim.geodesic_distance(start, goal)):
        return None  # the run measures d_T to the goal itself: it must be reachable
    yaw = float(rng.uniform(-math.pi, math.pi))
    text = TEMPLATES[kind].format(obj=o.name, room=o.room)
    return {
        "episode_id": "",  # numbered by the caller
        "scene_id": f"mp3d/{house}/{house}.glb",
        "start_position": _r(start),
        "start_rotation": _xyzw(yaw),
        "info": None,
        "goals": [
            {
                "position": _r(goal),
                "radius": None,
                "object_id": str(o.id),
                "object_name": o.name,
                "object_category": o.name,
                "room_id": o.room,
                "room_name": o.room,
                "view_points": [
                    {"position": _r(v), "rotation": _xyzw(geo.yaw_facing(v, goal))} for v in views
                ],
            }
        ],
        "start_room": _room_of(apt, start),
        "shortest_paths": [action_path([start, *path[1:]], yaw)],
        "question": {"question_text": text, "answer_text": answer, "question_type": kind},
    }


def write_mp3d_eqa_demo(
    out_dir: Path, seed: int = 0, n_scenes: int = 2, questions_per_scene: int = 4
) -> Path:
    """Write the demo under ``out_dir``; returns the episodes file."""
    out_dir = Path(out_dir)
    episodes: list[dict[str, Any]] = []
    for k in range(n_scenes):
        apt = generate_apartment(seed * 7919 + 101 + k)
        house = f"mp3dDemo{k:03d}"
        glb, _ = apt.write(out_dir / "scenes" / "mp3d" / house, house)
        sim = MeshSimulator(cell_size=0.05)
        sim.load_scene(SceneSpec(house, glb))
        rng = np.random.default_rng([seed, k, 31])
        pool = questions_for(apt)
        made = 0
        for i in rng.permutation(len(pool)):
            if made >= questions_per_scene:
                break
            ep = _episode(sim, apt, house, pool[int(i)], rng)
            if ep is not None:
                episodes.append(ep)
                made += 1
        sim.close()
    for i, ep in enumerate(episodes):
        ep["episode_id"] = str(i)
    answers = Vocab([UNK, *sorted({e["question"]["answer_text"] for e in episodes})])
    words = sorted({w for e in episodes for w in tokenize(e["question"]["question_text"])})
    questions = Vocab([UNK, *words])
    for e in episodes:
        q = e["question"]
        q["question_tokens"] = [questions.token(w) for w in tokenize(q["question_text"])]
        q["answer_token"] = answers.token(q["answer_text"])
    return write(episodes_file(out_dir, SPLIT), episodes, questions, answers)
