"""The MT-HM3D demo: multi-target questions (two objects each: yes/no, counts, rooms) on the
procedural apartments and the two-storey house, in MemoryEQA's files: the question CSV and
``scene_init_poses_all.csv`` (floor 0 of every scene), scenes as the HM-EQA demo writes them."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.benchmarks.hmeqa.demo import LETTERS, _others, _pad, _start
from eqa_runner.benchmarks.mt_hm3d.task import POSES_FILE, QUESTIONS_FILE
from eqa_runner.demo.apartment import Apartment, generate_apartment
from eqa_runner.demo.datasets import _disp
from eqa_runner.sim.base import SceneSpec
from eqa_runner.sim.mesh import MeshSimulator


def _questions(apt: Apartment, rng: np.random.Generator) -> list[tuple[str, list[str], str, str]]:
    """(question, options, right option, label) about two objects each."""
    objs = [o for o in apt.objects if apt.room(o.room).accessible and o.name != "door"]
    by_name = Counter(o.name for o in objs)
    unique = [o for o in objs if by_name[o.name] == 1]
    unique = [unique[i] for i in rng.permutation(len(unique))]
    a, b, c = unique[:3]
    rooms = sorted({r.name for r in apt.rooms if r.accessible})
    out = []
    q = f"Are the {_disp(a.name)} and the {_disp(b.name)} in the same room?"
    out.append((q, ["Yes", "No"], "Yes" if a.room == b.room else "No", "yes/no"))
    q = f"Is there a {_disp(c.name)} in the {a.room} and a {_disp(b.name)} in the {b.room}?"
    out.append((q, ["Yes", "No"], "Yes" if c.room == a.room else "No", "yes/no"))
    names = sorted(by_name, key=lambda n: (-by_name[n], n))[:2]
    total = sum(by_name[n] for n in names)
    opts = sorted({str(total), *(str(max(1, total + d)) for d in (-2, -1, 1, 2))})[:4]
    if str(total) not in opts:
        opts[-1] = str(total)
    q = f"How many {_disp(names[0])}s and {_disp(names[1])}s are there altogether?"
    out.append((q, opts, str(total), "count"))
    right = f"{a.room} and {c.room}"
    wrong = [
        f"{x} and {y}"
        for x, y in zip(
            _others(rooms, a.room, 3, rng), _others(rooms, c.room, 3, rng), strict=False
        )
    ]
    q = f"Where are the {_disp(a.name)} and the {_disp(c.name)}?"
    out.append((q, [right, *[w for w in wrong if w != right][:3]], right, "location"))
    return out


def _rows(scene: str, apt: Apartment, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for q, real, true, label in _questions(apt, rng):
        opts = _pad(real, rng)
        rows.append(
            {
                "scene": scene,
                "floor": "0",
                "question": q,
                "choices": repr(opts),
                "answer": LETTERS[opts.index(true)],
                "label": label,
            }
        )
    return rows


def write_mt_hm3d_demo(out_dir: Path, seed: int = 0, n_scenes: int = 2) -> Path:
    """Write the demo under ``out_dir``; returns the question file."""
    from eqa_runner.demo.house import HOUSE_NAME, generate_house

    out_dir = Path(out_dir)
    rows: list[dict[str, Any]] = []
    poses: list[list[Any]] = []
    apts = [(f"DemoApt{k}", generate_apartment(seed * 7919 + k)) for k in range(n_scenes)]
    apts.append((HOUSE_NAME, generate_house()))
    for k, (name, apt) in enumerate(apts):
        scene = f"{k + 1:05d}-{name}"
        glb, _ = apt.write(out_dir / "scenes" / scene, name, ply=name == HOUSE_NAME)
        sim = MeshSimulator(cell_size=0.05)
        sim.load_scene(SceneSpec(scene, glb))
        rng = np.random.default_rng([seed, k, 41])
        pos, yaw = _start(sim, rng)
        sim.close()
        poses.append([f"{scene}_0", *pos, yaw])
        rows += _rows(scene, apt, rng)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / QUESTIONS_FILE
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with (out_dir / POSES_FILE).open("w", newline="", encoding="utf-8") as fh:
        w2 = csv.writer(fh)
        w2.writerow(["scene_floor", "init_x", "init_y", "init_z", "init_angle"])
        w2.writerows(poses)
    return path
