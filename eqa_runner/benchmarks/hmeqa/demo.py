"""The HM-EQA demo: HM-EQA-format ``questions.csv`` + ``scene_init_poses.csv`` on procedural
apartments, every question answerable from the apartment's known objects.

Layout (a valid ``task.data_dir`` for ``task=hmeqa``)::

    <out>/questions.csv           scene, floor, question, choices (a Python list literal of 4),
                                  question_formatted, answer (A-D), label
    <out>/scene_init_poses.csv    scene_floor, init_x, init_y, init_z, init_angle
    <out>/scenes/00001-DemoApt0/DemoApt0.glb (+ .scene.json)

One question per category (location, existence, state, identification, count) per apartment
where the apartment allows it; options are padded to four with "(Do not choose this option)" at
random positions, as upstream's file is. Deterministic per seed.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.demo.apartment import Apartment, generate_apartment
from eqa_runner.demo.datasets import COLOR_ITEMS, STATE_WORDS, _disp, _main_label, _the
from eqa_runner.demo.furniture import COLORS, ON_TOP
from eqa_runner.sim.base import SceneSpec
from eqa_runner.sim.mesh import MeshSimulator

QUESTIONS_FILE, POSES_FILE = "questions.csv", "scene_init_poses.csv"
HOUSE_QUESTIONS_FILE = "questions-house.csv"  # the two-storey house's questions
PADDING = "(Do not choose this option)"
LABELS = ("location", "existence", "state", "identification", "count")
LETTERS = "ABCD"


def _pad(real: list[str], rng: np.random.Generator) -> list[str]:
    """Shuffled real options with paddings inserted at random positions (4 in all)."""
    opts = [real[i] for i in rng.permutation(len(real))]
    for _ in range(4 - len(opts)):
        opts.insert(int(rng.integers(len(opts) + 1)), PADDING)
    return opts


def _others(pool: list[str], true: str, k: int, rng: np.random.Generator) -> list[str]:
    rest = sorted(set(pool) - {true})
    return [rest[i] for i in rng.permutation(len(rest))[:k]]


def _candidates(
    apt: Apartment, rng: np.random.Generator
) -> dict[str, list[tuple[str, list[str], str]]]:
    """Per label: (question, real options, correct option) from the apartment's objects."""
    objs = [o for o in apt.objects if apt.room(o.room).accessible or o.name == "door"]
    by_room = Counter((o.room, o.name) for o in apt.objects)
    by_name = Counter(o.name for o in apt.objects)
    rooms = sorted({r.name for r in apt.rooms})
    out: dict[str, list[tuple[str, list[str], str]]] = {k: [] for k in LABELS}
    for o in objs:
        unique_in_room = by_room[(o.room, o.name)] == 1
        if by_name[o.name] == 1 and o.name != "door" and len(rooms) >= 2:
            true = f"In the {o.room}"
            wrong = [f"In the {r}" for r in _others(rooms, o.room, 3, rng)]
            out["location"].append((f"Where is {_the(o.name)}?", [true, *wrong], true))
        if o.name in STATE_WORDS and unique_in_room and o.state:
            a, b = STATE_WORDS[o.name].split(" or ")
            what = (
                f"the door of the {o.room}"
                if o.name == "door"
                else f"{_the(o.name)} in the {o.room}"
            )
            q = f"Is {what} {a} or {b}?"
            out["state"].append((q, [a.capitalize(), b.capitalize()], o.state.capitalize()))
        if o.name in COLOR_ITEMS and unique_in_room and o.name != "door":
            wrong = _others(list(COLORS), o.color, 3, rng)
            q = f"What color is the {_disp(o.name)} in the {o.room}?"
            out["identification"].append(
                (q, [o.color.capitalize(), *[w.capitalize() for w in wrong]], o.color.capitalize())
            )
        support = o.supported_by_name
        if support is not None and by_room[(o.room, support)] == 1:
            items = sorted({i for v in ON_TOP.values() for i, _ in v} | {"book", "cup"})
            wrong = [_disp(w).capitalize() for w in _others(items, o.name, 2, rng)]
            q = f"What is on the {support} in the {o.room}?"
            true = f"A {_disp(o.name)}"
            out["identification"].append((q, [true, *[f"A {w.lower()}" for w in wrong]], true))
        if unique_in_room and o.name not in ("door", "painting") and apt.room(o.room).accessible:
            out["existence"].append(
                (f"Is there a {_disp(o.name)} in the {o.room}?", ["Yes", "No"], "Yes")
            )
    names = sorted({o.name for o in apt.objects} - {"door", "painting"})
    for r in apt.rooms:
        if not r.accessible:
            continue
        present = {o.name for o in apt.objects if o.room == r.name}
        for name in sorted(set(names) - present):
            out["existence"].append(
                (f"Is there a {_disp(name)} in the {r.name}?", ["Yes", "No"], "No")
            )
        for name, n in Counter(o.name for o in apt.objects if o.room == r.name).items():
            if name == "door":
                continue
            nums = [str(v) for v in range(max(0, n - 2), n + 3) if v != n]
            wrong = [nums[i] for i in rng.permutation(len(nums))[:3]]
            q = f"How many {name}s are there in the {r.name}?"
            if n >= 2 or len(out["count"]) < 2:
                out["count"].append((q, [str(n), *wrong], str(n)))
    return out


def _start(sim: MeshSimulator, rng: np.random.Generator) -> tuple[list[float], float]:
    """A navigable start on the main component of the floor, and a yaw in [0, 2 pi)."""
    g = sim.navgrid
    lab = g.labels[g._nav_ij[:, 0], g._nav_ij[:, 1]]
    cand = np.nonzero(lab == _main_label(sim))[0]
    k = int(cand[int(rng.integers(len(cand)))])
    x, z = (float(v) for v in g._nav_xz[k])
    return [round(x, 6), round(float(g.floor_y), 6), round(z, 6)], round(
        float(rng.uniform(0.0, 2 * math.pi)), 6
    )


def _house(out_dir: Path, k: int, rng: np.random.Generator):
    """The two-storey house on its upper floor ("floor" 1): questions about the ground floor
    (the agent starts upstairs); (rows, start pose row)."""
    from eqa_runner.demo.house import HOUSE_NAME, generate_house, house_episodes

    apt = generate_house()
    scene = f"{k + 1:05d}-{HOUSE_NAME}"
    glb, _ = apt.write(out_dir / "scenes" / scene, HOUSE_NAME, ply=True)
    sim = MeshSimulator(cell_size=0.05)
    sim.load_scene(SceneSpec(scene, glb))
    eps = [e for e in house_episodes(sim, apt) if e["upstairs_start"]]
    sim.close()
    rows = []
    for i, e in enumerate(eps):  # the right letter goes A, B, C, ...: no constant answer wins
        opts = _others(list(COLORS), e["answer"], 3, rng)
        opts.insert(i % len(LETTERS), e["answer"])
        formatted = " ".join(f"{L}) {o}" for L, o in zip(LETTERS, opts, strict=True))
        rows.append(
            {
                "scene": scene,
                "floor": "1",
                "question": e["question"],
                "choices": repr(opts),
                "question_formatted": f"{e['question']} {formatted}. Answer:",
                "answer": LETTERS[opts.index(e["answer"])],
                "label": "identification",
            }
        )
    p = [round(float(v), 6) for v in eps[0]["start"]]
    return rows, [f"{scene}_1", *p, round(math.pi / 2, 6)]


def write_hmeqa_demo(
    out_dir: Path, seed: int = 0, n_scenes: int = 2, questions_per_scene: int = 5
) -> Path:
    """Write the demo under ``out_dir``; returns the questions file."""
    out_dir = Path(out_dir)
    rows: list[dict[str, Any]] = []
    poses: list[list[Any]] = []
    for k in range(n_scenes):
        apt = generate_apartment(seed * 7919 + k)
        name, scene = f"DemoApt{k}", f"{k + 1:05d}-DemoApt{k}"
        glb, _ = apt.write(out_dir / "scenes" / scene, name)
        sim = MeshSimulator(cell_size=0.05)
        sim.load_scene(SceneSpec(scene, glb))
        rng = np.random.default_rng([seed, k, 23])
        pos, yaw = _start(sim, rng)
        sim.close()
        poses.append([f"{scene}_0", *pos, yaw])
        cands = _candidates(apt, rng)
        made = 0
        for label in [LABELS[i] for i in rng.permutation(len(LABELS))] * 3:
            if made >= questions_per_scene:
                break
            pool = cands[label]
            if not pool:
                continue
            q, real, true = pool.pop(int(rng.integers(len(pool))))
            opts = _pad(real, rng)
            formatted = " ".join(f"{L}) {o}" for L, o in zip(LETTERS, opts, strict=True))
            rows.append(
                {
                    "scene": scene,
                    "floor": "0",
                    "question": q,
                    "choices": repr(opts),
                    "question_formatted": f"{q} {formatted}. Answer:",
                    "answer": LETTERS[opts.index(true)],
                    "label": label,
                }
            )
            made += 1
    house_rows, house_pose = _house(out_dir, n_scenes, rng)
    poses.append(house_pose)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / QUESTIONS_FILE
    # the two-storey house: its own questions file (task.questions_file=questions-house.csv)
    for p, part in ((path, rows), (out_dir / HOUSE_QUESTIONS_FILE, house_rows)):
        with p.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(part)
    with (out_dir / POSES_FILE).open("w", newline="", encoding="utf-8") as fh:
        w2 = csv.writer(fh)
        w2.writerow(["scene_floor", "init_x", "init_y", "init_z", "init_angle"])
        w2.writerows(poses)
    return path
