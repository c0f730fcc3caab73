"""Offline A-EQA demo data: OpenEQA questions on procedural apartments, with start poses and
reference path lengths, in the published file shapes (eqa_runner/benchmarks/aeqa/README.md).

Per apartment (one "episode" of A-EQA: its questions share the start pose and the reference
length, as in 3D-Mem's files):

* a human-like walkthrough (a look-around in every accessible room, joined by shortest paths) is
  planned on the written scene file; its first pose is the **start pose** of every question and
  its length — the sum of the geodesic distances between consecutive walkthrough poses — is the
  **reference path length** ``l`` (upstream: the human episode history's length);
* the questions (one per OpenEQA category where the apartment allows it) are about objects that
  the walkthrough sees, rendered at a quarter resolution.

Files written under ``<out_dir>`` (the names the task looks for):

* ``aeqa_questions-184.json`` — the pose-file shape (3D-Mem): OpenEQA fields plus
  ``episode_history`` = the scene dir, ``position``, ``rotation`` (w, x, y, z), ``object_id``,
  ``class``;
* ``open-eqa-v0.json`` + ``open-eqa-v0-184-questions.json`` — the ids-only shape (open-eqa);
* ``gt_path_length.json`` — ``{question_id: metres}`` (the house's questions included);
* ``scenes/val/<NNNNN-AEQAAptK>/AEQAAptK.glb`` (+ ``.scene.json``), HM3D layout;
* the two-storey house (:mod:`eqa_runner.demo.house`): ``scenes/val/<NNNNN>-DemoHouse2F/``
  (``.glb`` and ``.ply``) and its questions in their own pose file, ``aeqa_questions-house.json``
  (``task.questions_file=<dir>/aeqa_questions-house.json``): three asked from the upper floor
  about the ground floor, one the other way round. Their reference length is the geodesic from
  the start to the viewpoint of the object asked about (through the stairs).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.benchmarks.aeqa.task import OPENEQA_FILE, PATH_LENGTHS_FILE, POSES_FILE
from eqa_runner.benchmarks.openeqa_em.demo import _openeqa_questions
from eqa_runner.demo.apartment import generate_apartment
from eqa_runner.demo.datasets import _scene_sim, _visible_ids, _walkthrough
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import SceneSpec, SensorSpec
from eqa_runner.sim.mesh import MeshSimulator

IDS_FILE = "open-eqa-v0-184-questions.json"
HOUSE_FILE = "aeqa_questions-house.json"  # the two-storey house's questions (pose-file shape)
FIRST_SCENE = 810  # HM3D val numbering (>= 800), apart from the EXPRESS demo's 00800-...


def _walk_length(sim: MeshSimulator, points: list[np.ndarray]) -> float:
    """Summed geodesic distance between consecutive points (unreachable legs are skipped)."""
    total = 0.0
    for a, b in zip(points, points[1:], strict=False):
        d = sim.geodesic_distance(a, b)
        if math.isfinite(d):
            total += d
    return total


def _walk_and_look(
    apt: Any, sensor: SensorSpec, rng: np.random.Generator
) -> tuple[list[tuple[np.ndarray, float]], set[int]]:
    """A walkthrough of the apartment and the objects seen on it (>= 0.4 % of a frame)."""
    view = _scene_sim(apt, sensor)  # the arrays' face order: object ids of hit triangles
    poses = _walkthrough(view, apt, rng)
    pix: Counter = Counter()
    for p, yaw in poses:
        view.set_agent_pose(p, geo.yaw_to_quat(yaw))
        pix.update(_visible_ids(view, apt, view.observe()))
    view.close()
    return poses, {oid for oid, n in pix.items() if n >= 0.004 * sensor.width * sensor.height}


def write_aeqa_demo(
    out_dir: Path, seed: int = 0, n_scenes: int = 2, render_size: tuple[int, int] = (320, 180)
) -> Path:
    """Write the A-EQA demo files under ``out_dir`` (see the module docstring); returns the
    pose file."""
    out_dir = Path(out_dir)
    pose_recs: list[dict[str, Any]] = []
    openeqa: list[dict[str, Any]] = []
    lengths: dict[str, float] = {}
    w, h = render_size
    sensor = SensorSpec(width=w, height=h, hfov_deg=90.0, sensor_height_m=1.5)
    for k in range(n_scenes):
        apt = generate_apartment(seed * 7919 + 200 + k)
        name, dirname = f"AEQAApt{k}", f"{FIRST_SCENE + k:05d}-AEQAApt{k}"
        glb, _ = apt.write(out_dir / "scenes" / "val" / dirname, name)
        rng = np.random.default_rng([seed, k, 31])
        poses, visible = _walk_and_look(apt, sensor, rng)
        sim = MeshSimulator(cell_size=0.05)  # plan on the written file, as runs will
        sim.load_scene(SceneSpec(f"hm3d/val/{dirname}", glb))
        points = [sim.snap_point(p) for p, _ in poses]
        points = [p for p in points if np.all(np.isfinite(p))]
        start, yaw0 = np.round(points[0], 4), poses[0][1]
        ref = round(_walk_length(sim, points), 4)
        sim.close()
        history = f"hm3d-v0/{k:03d}-hm3d-AEQAApt{k}"
        for j, q in enumerate(_openeqa_questions(apt, visible, rng)):
            qid = f"demo-aeqa-{k:03d}-{j:02d}"
            rec: dict[str, Any] = {
                "question": q["question"],
                "answer": q["answer"],
                "category": q["category"],
                "question_id": qid,
                "episode_history": history,
            }
            if q.get("extra_answers"):
                rec["extra_answers"] = q["extra_answers"]
            openeqa.append(rec)
            pose_recs.append(
                {
                    **rec,
                    "episode_history": dirname,
                    "position": start.tolist(),
                    "rotation": np.round(geo.yaw_to_quat(yaw0), 6).tolist(),
                    "object_id": None,
                    "class": None,
                }
            )
            lengths[qid] = ref
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / POSES_FILE
    path.write_text(json.dumps(pose_recs, indent=1))
    (out_dir / OPENEQA_FILE).write_text(json.dumps(openeqa, indent=1))
    (out_dir / IDS_FILE).write_text(json.dumps([r["question_id"] for r in openeqa], indent=1))
    house = _house_records(out_dir, FIRST_SCENE + n_scenes, lengths)
    (out_dir / HOUSE_FILE).write_text(json.dumps(house, indent=1))
    (out_dir / PATH_LENGTHS_FILE).write_text(json.dumps(lengths, indent=1))
    return path


def _house_records(out_dir: Path, number: int, lengths: dict[str, float]) -> list[dict[str, Any]]:
    """The house's questions in the pose-file shape; their reference lengths go to ``lengths``.
    The questions sharing a start pose are one A-EQA episode (upstairs / downstairs)."""
    from eqa_runner.demo.house import HOUSE_NAME, generate_house, house_episodes

    apt = generate_house()
    dirname = f"{number:05d}-{HOUSE_NAME}"
    glb, _ = apt.write(out_dir / "scenes" / "val" / dirname, HOUSE_NAME, ply=True)
    sim = MeshSimulator(cell_size=0.05)  # plan on the written file, as runs will
    sim.load_scene(SceneSpec(f"hm3d/val/{dirname}", glb))
    eps = house_episodes(sim, apt)
    sim.close()
    out = []
    for j, e in enumerate(eps):
        qid = f"demo-aeqa-house-{j:02d}"
        out.append(
            {
                "question": e["question"],
                "answer": e["answer"],
                "category": "attribute recognition",
                "question_id": qid,
                "episode_history": dirname,
                "position": np.round(e["start"], 4).tolist(),
                "rotation": np.round(geo.yaw_to_quat(-math.pi / 2), 6).tolist(),  # east
                "object_id": e["object"].id,
                "class": e["object"].name,
            }
        )
        lengths[qid] = round(e["geodesic"], 4)
    return out
