"""``python -m eqa_runner.data check mt_hm3d``: the question and pose files load and every
question's HM3D scene is found by the selected backend (the licensed scenes' staging steps are
printed when some are missing)."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from eqa_runner.data.checks import SIMULATORS, add_sim_arg, check_scene_files

INSTRUCTIONS = """\
MT-HM3D's questions are the Hugging Face dataset zmling/MT-HM3D (MemoryEQA; the repository
declares no licence: ask its authors before redistributing). Put its question CSV at
{data_dir}/MT-HM3D-filtered-new.csv and MemoryEQA's scene_init_poses_all.csv beside it (or set
task.questions_file / task.poses_file).

Its scenes are HM3D v0.2 scenes, licensed by Matterport: accept the terms at
https://matterport.com/habitat-matterport-3d-research-dataset, download the train and val
splits (glb + habitat navmeshes), and put each scene at
  {scenes}/<NNNNN-id>/<id>.basis.glb   (+ <id>.basis.navmesh)
({n_scenes} scenes are referenced). Then run
`python -m eqa_runner.data check mt_hm3d --data-dir {data_dir}`.
"""


def instructions(data_dir: Path, n_scenes: int | str = "?") -> str:
    return INSTRUCTIONS.format(
        data_dir=data_dir, scenes=Path(data_dir) / "scenes", n_scenes=n_scenes
    )


def add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions-file", type=Path, default=None)
    p.add_argument("--scenes-dir", type=Path, default=None, help="default <data-dir>/scenes")
    add_sim_arg(p)


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    from eqa_runner.benchmarks.mt_hm3d.task import MTHM3DTask

    data_dir = Path(args.data_dir)
    task = MTHM3DTask(
        data_dir=str(data_dir),
        simulator=SIMULATORS[args.sim],
        questions_file=str(args.questions_file) if args.questions_file else None,
        scenes_dir=str(args.scenes_dir) if args.scenes_dir else None,
    )
    eps = task.load_episodes()
    rep = check_scene_files(
        task.scenes_dir, eps, "mt_hm3d", lambda e: "all", presence=task.missing(eps)
    )
    cats = Counter(e.category for e in eps)
    yes_no = sum(1 for e in eps if e.meta.get("yes_no"))
    print(rep.render())
    print("categories: " + ", ".join(f"{c} {n}" for c, n in sorted(cats.items())))
    print(f"yes/no questions: {yes_no} of {len(eps)}")
    if not rep.ok and rep.missing:
        print("\nTo stage the data:\n" + instructions(data_dir, len({e.scene for e in eps})))
    return 0 if rep.ok else 1
