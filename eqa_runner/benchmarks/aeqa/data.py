"""``python -m eqa_runner.data check aeqa``: every question has a start pose, a reference path
length and its HM3D scene (A-EQA publishes no download of its own:
eqa_runner/benchmarks/aeqa/README.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from eqa_runner.data.checks import (
    HM3D_INSTRUCTIONS,
    SIMULATORS,
    CheckReport,
    add_sim_arg,
    check_scene_files,
)


def check_aeqa(
    data_dir: Path,
    questions_file: Path | None = None,
    scenes_dir: Path | None = None,
    sim: str = "mesh",
) -> CheckReport:
    """Every A-EQA question has a start pose, a reference path length and its scene, found by
    the ``sim`` backend (the task's presence check, as a run and a dry run make it) with its
    ``.navmesh`` (or a demo ``.glb`` with its ``.scene.json``): each problem listed."""
    from eqa_runner.benchmarks.aeqa.task import AEQATask, load_aeqa, load_path_lengths

    task = AEQATask(
        data_dir=str(data_dir),
        questions_file=str(questions_file) if questions_file else None,
        scenes_dir=str(scenes_dir) if scenes_dir else None,
        simulator=SIMULATORS[sim],
    )
    lengths: dict[str, float] = {}
    rep = CheckReport("aeqa")
    if task.path_lengths_file.is_file():
        lengths = load_path_lengths(task.path_lengths_file)
    else:
        rep.missing.append(f"{task.path_lengths_file} (reference path lengths; every question)")
    no_pose: list[str] = []
    eps = load_aeqa(task.questions_file, task.openeqa_file, task.poses_file, lengths, no_pose)
    rep.questions = len(eps) + len(no_pose)
    rep.missing += [f"question {q}: no start pose in {task.poses_file}" for q in no_pose]
    if lengths:
        rep.missing += [
            f"question {e.episode_id}: no reference path length in {task.path_lengths_file}"
            for e in eps
            if e.meta["reference_path_length"] is None
        ]
    express = check_scene_files(task.scenes_dir, eps, "aeqa", presence=task.missing(eps))
    rep.items, rep.stats = express.items, express.stats
    rep.missing += express.missing
    rep.broken += express.broken
    return rep


def aeqa_instructions(args: argparse.Namespace, n_scenes: int) -> str:
    """The HM3D staging steps with A-EQA's scenes dir (every A-EQA scene is a val scene)."""
    scenes = Path(args.scenes_dir) if args.scenes_dir else Path(args.data_dir) / "scenes"
    return HM3D_INSTRUCTIONS.format(
        scenes=scenes,
        data_dir=args.data_dir,
        benchmark="aeqa",
        uids="hm3d_val_v0.2",
        archives="val split only (hm3d-val-glb-v0.2.tar and the navmeshes, "
        "hm3d-val-habitat-v0.2.tar; A-EQA needs no train scene)",
        counts=f"{n_scenes} val scenes are",
    )


# ----------------------------------------------------------------------------- fetch


def add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions-file", type=Path, default=None)
    p.add_argument("--scenes-dir", type=Path, default=None, help="default <data-dir>/scenes")
    add_sim_arg(p)


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    rep = check_aeqa(Path(args.data_dir), args.questions_file, args.scenes_dir, sim=args.sim)
    print(rep.render())
    if not rep.ok and any(m.startswith("scene ") for m in rep.missing):
        steps = aeqa_instructions(args, rep.items)
        docs = "eqa_runner/benchmarks/aeqa/README.md"
        print(f"\nTo stage the scenes (HM3D v0.2 val; see {docs}):\n{steps}")
    return 0 if rep.ok else 1
