"""The OpenEQA demo dataset: questions about a procedural apartment in the open-eqa file
format, with the walkthrough frames of its episode history."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.benchmarks.openeqa_em.task import CATEGORIES
from eqa_runner.demo.apartment import Apartment, generate_apartment
from eqa_runner.demo.datasets import (
    COLOR_ITEMS,
    LEGGED,
    STATE_WORDS,
    _disp,
    _scene_sim,
    _the,
    _visible_ids,
    _walkthrough,
    _write_png,
)
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SensorSpec

OPENEQA_FILE = "open-eqa-v0.json"
OPENEQA_CATEGORIES = list(CATEGORIES)
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


def _object_questions(
    c: dict[str, list[dict[str, Any]]],
    o: Any,
    by_room: Counter,
    by_name: Counter,
    col_room: Counter,
) -> None:
    """The candidate questions about one visible object, by category."""
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


def _openeqa_questions(apt: Apartment, visible: set[int], rng) -> list[dict[str, Any]]:
    """One question per OpenEQA category (where the apartment allows it) about visible objects."""
    counts = (
        Counter((o.room, o.name) for o in apt.objects),
        Counter(o.name for o in apt.objects),
        Counter((o.room, o.color) for o in apt.objects),
    )
    c: dict[str, list[dict[str, Any]]] = {k: [] for k in OPENEQA_CATEGORIES}
    for o in apt.objects:
        if o.id in visible:
            _object_questions(c, o, *counts)
    out = []
    for cat in OPENEQA_CATEGORIES:
        if c[cat]:
            item = dict(c[cat][int(rng.integers(len(c[cat])))])
            item["category"] = cat
            out.append(item)
    return out


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
