"""Synthetic question files of the real benchmarks' size and shape, built from the demo.

The demo (``python -m eqa_runner.demo``) has a dozen questions per benchmark over two or three
apartments. This module repeats its questions (with fresh ids) up to the published sizes and
spreads them over as many scenes / episode folders as the real sets have, each a symlink to a
demo scene or walkthrough, so every scene and frame a question names exists:

=========  ========  ======================================
task       episodes  scenes / episode histories
=========  ========  ======================================
express    2,044     174 HM3D scenes (val numbering)
hmeqa      500       267 scene-floors
openeqa    1,636     152 episode histories
aeqa       184       63 HM3D scenes
=========  ========  ======================================

    .venv/bin/python bench/full_size.py OUT_DIR      # writes OUT_DIR/{express,hmeqa,openeqa,aeqa}
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from pathlib import Path
from typing import Any

SIZES = {"express": (2044, 174), "hmeqa": (500, 267), "openeqa": (1636, 152), "aeqa": (184, 63)}


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists():
        os.symlink(src.resolve(), dst)


def _scene_copies(
    src_scenes: list[Path], dst_root: Path, n: int, first: int, tag: str
) -> list[str]:
    """``n`` scene folders ``NNNNN-<tag>NNN/<tag>NNN.{glb,scene.json}`` linked to the demo's."""
    names = []
    for k in range(n):
        src = src_scenes[k % len(src_scenes)]
        name, base = f"{first + k:05d}-{tag}{k:03d}", f"{tag}{k:03d}"
        for f in src.iterdir():
            suffix = f.name[len(src.name.split("-", 1)[1]) :]  # ".glb", ".scene.json"
            _link(f, dst_root / name / (base + suffix))
        names.append(name)
    return names


def write_express(demo: Path, out: Path) -> Path:
    n_eps, n_scenes = SIZES["express"]
    recs = json.loads((demo / "express-bench.json").read_text())
    src = sorted((demo / "scenes" / "val").iterdir())
    scenes = _scene_copies(src, out / "scenes" / "val", n_scenes, 800, "FullApt")
    by_src = {s.name: i for i, s in enumerate(src)}
    rows = []
    for i in range(n_eps):
        rec = dict(recs[i % len(recs)])
        demo_scene = rec["scene_id"].rsplit("/", 1)[1]
        k = (i % (n_scenes // len(src))) * len(src) + by_src[demo_scene]  # same layout as source
        rec["scene_id"] = f"hm3d/val/{scenes[k]}"
        rec["episode_id"] = str(i)
        rec["trajectory_id"] = f"{scenes[k]}-{i // 3:03d}"
        rows.append(rec)
    (out / "express-bench.json").write_text(json.dumps(rows))
    return out


def write_hmeqa(demo: Path, out: Path) -> Path:
    n_q, n_scenes = SIZES["hmeqa"]
    with open(demo / "questions.csv", newline="") as fh:
        qs = list(csv.DictReader(fh))
    with open(demo / "scene_init_poses.csv", newline="") as fh:
        poses = {r["scene_floor"]: r for r in csv.DictReader(fh)}
    src = sorted((demo / "scenes").iterdir())
    scenes = _scene_copies(src, out / "scenes", n_scenes, 1, "FullApt")
    by_src = {s.name: i for i, s in enumerate(src)}
    rows, pose_rows = [], {}
    for i in range(n_q):
        q = dict(qs[i % len(qs)])
        k = (i % (n_scenes // len(src))) * len(src) + by_src[q["scene"]]
        pose = dict(poses[f"{q['scene']}_{q['floor']}"])
        q["scene"] = scenes[k]
        pose["scene_floor"] = f"{scenes[k]}_{q['floor']}"
        q["question"] = f"{q['question']} ({i})"
        rows.append(q)
        pose_rows[pose["scene_floor"]] = pose
    _write_csv(out / "questions.csv", rows)
    _write_csv(out / "scene_init_poses.csv", list(pose_rows.values()))
    return out


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_openeqa(demo: Path, out: Path) -> Path:
    n_q, n_eps = SIZES["openeqa"]
    qs = json.loads((demo / "open-eqa-v0.json").read_text())
    src = sorted((demo / "episodes" / "hm3d-v0").iterdir())
    hists = []
    for k in range(n_eps):
        subset = "hm3d" if k < n_eps * 557 // 1636 else "scannet"
        hist = f"{subset}-v0/{k:03d}-{subset}-FullEp{k:03d}"
        _link(src[k % len(src)], out / "episodes" / hist)
        hists.append(hist)
    rows = []
    for i in range(n_q):
        q = dict(qs[i % len(qs)])
        q["question_id"] = f"full-{i:05d}"
        q["episode_history"] = hists[i % n_eps]
        rows.append(q)
    out.mkdir(parents=True, exist_ok=True)
    (out / "open-eqa-v0.json").write_text(json.dumps(rows))
    return out


def write_aeqa(demo: Path, out: Path) -> Path:
    n_q, n_scenes = SIZES["aeqa"]
    qs = json.loads((demo / "aeqa_questions-184.json").read_text())
    src = sorted((demo / "scenes" / "val").iterdir())
    scenes = _scene_copies(src, out / "scenes" / "val", n_scenes, 800, "FullAEQA")
    by_src = {s.name: i for i, s in enumerate(src)}
    rows, lengths = [], {}
    old_len = json.loads((demo / "gt_path_length.json").read_text())
    for i in range(n_q):
        q = dict(qs[i % len(qs)])
        k = (i % (n_scenes // len(src))) * len(src) + by_src[q["episode_history"]]
        lengths[f"full-aeqa-{i:04d}"] = old_len[q["question_id"]]
        q["question_id"] = f"full-aeqa-{i:04d}"
        q["episode_history"] = scenes[k]
        rows.append(q)
    out.mkdir(parents=True, exist_ok=True)
    (out / "aeqa_questions-184.json").write_text(json.dumps(rows))
    (out / "gt_path_length.json").write_text(json.dumps(lengths))
    return out


def write_full_size(out: Path, demo: Path | None = None) -> dict[str, Path]:
    """The four full-size data dirs under ``out`` (the demo is written to ``out/demo`` first)."""
    if demo is None:
        from eqa_runner.demo.cli import write_demo

        demo = out / "demo"
        if not (demo / "aeqa").exists():
            write_demo(demo)
    return {
        "express": write_express(demo / "express", out / "express"),
        "hmeqa": write_hmeqa(demo / "hmeqa", out / "hmeqa"),
        "openeqa_em": write_openeqa(demo / "openeqa", out / "openeqa"),
        "aeqa": write_aeqa(demo / "aeqa", out / "aeqa"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--demo", type=Path, default=None, help="an existing demo dir to reuse")
    args = ap.parse_args()
    for task, d in write_full_size(args.out, args.demo).items():
        print(f"task={task} task.data_dir={d}")


if __name__ == "__main__":
    main()
