"""The VSI-Bench demo dataset: a rendered walkthrough video of each demo apartment (the mesh
backend renders, PyAV encodes) and VSI-style questions whose answers come from the apartment's
own description: object counts, sizes, distances, room size, relative direction and distance,
first-appearance order. ``test.jsonl`` in the dataset's format; videos at
``<dataset>/<scene_name>.mp4``."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.benchmarks.vsibench.video import write_video
from eqa_runner.demo.apartment import Apartment, SceneObject, generate_apartment
from eqa_runner.demo.datasets import _disp, _scene_sim, _visible_ids, _walkthrough
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SensorSpec

SOURCE = "arkitscenes"  # the demo's videos stand in for one of the dataset's sources
LETTERS = "ABCD"


def _render(apt: Apartment, width: int, height: int, seed: int, k: int, max_frames: int):
    """The walkthrough frames and the frame index where each object is first seen."""
    sim = _scene_sim(
        apt, SensorSpec(width=width, height=height, hfov_deg=90.0, sensor_height_m=1.5)
    )
    poses = _walkthrough(sim, apt, np.random.default_rng([seed, k, 31]))
    if len(poses) > max_frames:
        keep = np.round(np.linspace(0, len(poses) - 1, max_frames)).astype(int)
        poses = [poses[i] for i in keep]
    frames: list[np.ndarray] = []
    first: dict[int, int] = {}
    for i, (p, yaw) in enumerate(poses):
        sim.set_agent_pose(p, geo.yaw_to_quat(yaw))
        obs = sim.observe()
        frames.append(np.ascontiguousarray(obs.rgb[..., :3]))
        for oid, n in _visible_ids(sim, apt, obs).items():
            if n >= 0.004 * width * height:
                first.setdefault(oid, i)
    sim.close()
    return frames, first


def _options(right: str, wrong: list[str], rng) -> tuple[list[str], str]:
    opts = [right, *wrong][:4]
    order = rng.permutation(len(opts))
    shuffled = [opts[i] for i in order]
    letter = LETTERS[shuffled.index(right)]
    return [f"{LETTERS[i]}. {o}" for i, o in enumerate(shuffled)], letter


def _dist(a: SceneObject, b: SceneObject) -> float:
    return float(np.linalg.norm(np.subtract(a.position, b.position)[[0, 2]]))


def _numeric(apt: Apartment, seen: list[SceneObject], unique: list[SceneObject]):
    counts = Counter(o.name for o in seen)
    name = max(sorted(counts), key=lambda n: counts[n])
    yield "object_counting", f"How many {_disp(name)}(s) are there in these rooms?", counts[name]
    o = unique[0]
    yield (
        "object_size_estimation",
        f"What is the longest dimension (length, width or height) of the {_disp(o.name)}, in "
        "centimeters?",
        round(100 * max(o.size)),
    )
    a, b = unique[1], unique[2]
    yield (
        "object_abs_distance",
        f"How far apart are the centres of the {_disp(a.name)} and the {_disp(b.name)}, in meters?",
        round(_dist(a, b), 1),
    )
    area = sum(
        (r.bounds[1][0] - r.bounds[0][0]) * (r.bounds[1][1] - r.bounds[0][1])
        for r in apt.rooms
        if r.accessible
    )
    yield (
        "room_size_estimation",
        "What is the floor area of this space in square meters? If the video shows several "
        "rooms, give the area of all of them together.",
        round(area, 1),
    )


def _bearing(a: SceneObject, b: SceneObject, c: SceneObject) -> float:
    """The angle (degrees, + to the right) of c seen from a while facing b (y up, x right)."""
    fwd = np.subtract(b.position, a.position)[[0, 2]]
    to_c = np.subtract(c.position, a.position)[[0, 2]]
    cross, dot = fwd[0] * to_c[1] - fwd[1] * to_c[0], float(np.dot(fwd, to_c))
    return math.degrees(math.atan2(cross, dot))


def _directions(a: SceneObject, b: SceneObject, c: SceneObject, rng):
    """The three relative-direction questions (two, three and four options)."""
    ang = _bearing(a, b, c)
    side = "right" if ang > 0 else "left"
    where = (
        f"Standing at the {_disp(a.name)} and looking at the {_disp(b.name)}, is the "
        f"{_disp(c.name)}"
    )
    opts, ans = _options(side, ["left" if side == "right" else "right"], rng)
    yield "object_rel_direction_easy", f"{where} on my left or on my right?", opts, ans
    medium = "back" if abs(ang) >= 135 else side
    opts, ans = _options(medium, [x for x in ("left", "right", "back") if x != medium], rng)
    q = f"{where} on my left, on my right or behind me (behind: a turn of 135 degrees or more)?"
    yield "object_rel_direction_medium", q, opts, ans
    hard = ("back-" if abs(ang) > 90 else "front-") + side
    quads = ("front-left", "front-right", "back-left", "back-right")
    opts, ans = _options(hard, [q for q in quads if q != hard], rng)
    q = f"{where} to my front-left, front-right, back-left or back-right?"
    yield "object_rel_direction_hard", q, opts, ans


def _choice(unique: list[SceneObject], order: list[SceneObject], rng):
    x, *rest = unique[:5]
    near = min(rest, key=lambda o: _dist(o, x))
    opts, ans = _options(_disp(near.name), [_disp(o.name) for o in rest if o is not near], rng)
    yield (
        "object_rel_distance",
        f"Which of these objects is the closest to the {_disp(x.name)}?",
        opts,
        ans,
    )
    yield from _directions(unique[0], unique[1], unique[2], rng)
    names = [_disp(o.name) for o in order[:4]]
    wrong = [", ".join(p) for p in itertools.permutations(names) if list(p) != names]
    picks = [wrong[i] for i in rng.choice(len(wrong), 3, replace=False)]
    opts, ans = _options(", ".join(names), picks, rng)
    yield (
        "obj_appearance_order",
        f"In which order do these objects first appear in the video: {', '.join(sorted(names))}?",
        opts,
        ans,
    )


def _questions(apt: Apartment, first: dict[int, int], scene: str, k: int, rng):
    seen = [o for o in apt.objects if o.id in first and o.name != "door"]
    by_name = Counter(o.name for o in seen)
    unique = [o for o in seen if by_name[o.name] == 1]
    unique = [unique[i] for i in rng.permutation(len(unique))]
    order = sorted(unique, key=lambda o: first[o.id])
    recs: list[dict[str, Any]] = []
    base = {"dataset": SOURCE, "scene_name": scene}
    for qtype, q, gt in _numeric(apt, seen, unique):
        recs.append(
            {
                **base,
                "question_type": qtype,
                "question": q,
                "options": None,
                "ground_truth": str(gt),
            }
        )
    for qtype, q, opts, gt in _choice(unique, order, rng):
        recs.append(
            {**base, "question_type": qtype, "question": q, "options": opts, "ground_truth": gt}
        )
    for j, r in enumerate(recs):
        r["id"] = k * 100 + j
    return recs


def write_vsibench_demo(
    out_dir: Path,
    seed: int = 0,
    n_scenes: int = 3,
    width: int = 320,
    height: int = 240,
    max_frames: int = 40,
) -> Path:
    """Write ``<out_dir>/test.jsonl`` and ``<out_dir>/arkitscenes/DemoAptK.mp4`` (k < n_scenes)."""
    out_dir = Path(out_dir)
    records: list[dict[str, Any]] = []
    for k in range(n_scenes):
        apt = generate_apartment(seed * 7919 + 100 + k)
        scene = f"DemoApt{k}"
        frames, first = _render(apt, width, height, seed, k, max_frames)
        write_video(out_dir / SOURCE / f"{scene}.mp4", frames, fps=4)
        rng = np.random.default_rng([seed, k, 37])
        records += _questions(apt, first, scene, k, rng)
    path = out_dir / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert all(math.isfinite(float(r["ground_truth"])) for r in records if not r["options"])
    return path
