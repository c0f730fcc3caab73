"""``python -m eqa_runner.data fetch|check mp3d_eqa``: the episode files (habitat-lab's
``eqa_mp3d_v1.zip``, staging steps printed) and the Matterport3D scenes (licensed), and their
check: every split file loads (all fields the run reads are checked) and every referenced house
has its ``.glb`` (and, for the real scenes, its ``.navmesh``)."""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path

from eqa_runner.data.checks import SIMULATORS, CheckReport, add_sim_arg

EPISODES_URL = "https://dl.fbaipublicfiles.com/habitat/data/datasets/eqa/mp3d/v1/eqa_mp3d_v1.zip"
INSTRUCTIONS = """\
MP3D-EQA v1's episodes are habitat-lab's eqa_mp3d_v1.zip (44 MB):

  {url}

Unzip it so that {data_dir}/<split>/<split>.json.gz exists (habitat-lab keeps it in
data/datasets/eqa/mp3d/v1/). The scenes are Matterport3D's, licensed: accept the terms at
https://niessner.github.io/Matterport/ and download the habitat scenes
(python download_mp.py --task habitat), then put each house at

  {scenes}/mp3d/<house>/<house>.glb      (+ <house>.navmesh beside it)

(a symlink works: ln -s <download dir>/v1/tasks/mp3d_habitat/mp3d {scenes}/mp3d). Then run
`python -m eqa_runner.data check mp3d_eqa --data-dir {data_dir}`.
"""


def instructions(data_dir: Path) -> str:
    return INSTRUCTIONS.format(url=EPISODES_URL, data_dir=data_dir, scenes=data_dir / "scenes")


def check_mp3d_eqa(
    data_dir: Path, split: str = "val", scenes_dir: Path | None = None, sim: str = "mesh"
) -> tuple[CheckReport, list[str]]:
    """The split file loads and every house is found by the ``sim`` backend (the task's presence
    check, as a run and a dry run make it) with its navmesh (unless a demo scene)."""
    from eqa_runner_mp3d_eqa.task import MP3DEQATask

    scenes = str(scenes_dir) if scenes_dir else None
    task = MP3DEQATask(
        data_dir=str(data_dir), split=split, scenes_dir=scenes, simulator=SIMULATORS[sim]
    )
    eps = task.load_episodes()
    gone = task.missing(eps)  # episode id -> problem, one line per house
    absent = {e.scene: gone[e.episode_id] for e in eps if e.episode_id in gone}
    rep = CheckReport("mp3d_eqa", questions=len(eps))
    by_scene: dict[str, int] = defaultdict(int)
    for e in eps:
        by_scene[e.scene] += 1
    rep.items = len(by_scene)
    st = rep.stats.setdefault(split, {"expected": len(by_scene), "present": 0})
    st["questions"] = len(eps)
    for scene, n in sorted(by_scene.items()):
        if scene in absent:
            rep.missing.append(f"{absent[scene]} ({n} episodes)")
            continue
        path = task.scenes_dir / scene  # mp3d/<house>/<house>.glb, as habitat-lab joins it
        glb = path if path.is_file() else None
        nav = path.with_suffix(".navmesh").is_file()
        demo = path.with_suffix(".scene.json").is_file()  # a demo scene: the navmesh is baked
        if glb is None or not (nav or demo):
            what = "mesh (.glb)" if glb is None else "navmesh (.navmesh)"
            rep.missing.append(f"scene {scene}: no {what} under {task.scenes_dir} ({n} episodes)")
        elif glb.stat().st_size == 0:
            rep.broken.append(f"{glb}: empty file")
        else:
            st["present"] += 1
    types = Counter(e.category for e in eps)
    unreachable = sum(1 for e in eps if not e.meta["goal_view_points"])
    notes = ["question types: " + ", ".join(f"{t} {n}" for t, n in sorted(types.items()))]
    if unreachable:
        notes.append(f"note: {unreachable} episodes have no goal view points")
    return rep, notes


def add_fetch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", default="val", choices=["val", "train"])


def fetch(args: argparse.Namespace) -> int:
    """Print where the episodes and the (licensed) scenes come from and where they go."""
    print(instructions(Path(args.data_dir)))
    return 0


def add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", default="val", choices=["val", "train"])
    p.add_argument("--scenes-dir", type=Path, default=None, help="default <data-dir>/scenes")
    add_sim_arg(p)


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    rep, notes = check_mp3d_eqa(Path(args.data_dir), args.split, args.scenes_dir, args.sim)
    print("\n".join([rep.render(), *notes]))
    if rep.missing:
        print(f"\nTo stage the data:\n{instructions(Path(args.data_dir))}")
    return 0 if rep.ok else 1
