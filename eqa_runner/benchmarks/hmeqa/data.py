"""``python -m eqa_runner.data fetch|check hmeqa``: explore-eqa's two CSV files (downloaded),
the HM3D train scenes (licensed: staging steps printed) and their check."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from eqa_runner.data.checks import (
    SIMULATORS,
    CheckReport,
    add_sim_arg,
    check_scene_files,
    fetch_raw_files,
)

HMEQA_BASE_URL = (
    "https://raw.githubusercontent.com/Stanford-ILIAD/explore-eqa/"
    "18381da3370c5f7729594f10ebc49b5644bbb88c/"
)
HMEQA_FILES = ("data/questions.csv", "data/scene_init_poses.csv")
HMEQA_INSTRUCTIONS = """\
HM-EQA's scenes are HM3D v0.2 train scenes, licensed by Matterport: they cannot be downloaded
here. Accept the terms at https://matterport.com/habitat-matterport-3d-research-dataset, then
download the train split (glb + habitat navmeshes, hm3d-train-glb-v0.2.tar and
hm3d-train-habitat-v0.2.tar), e.g. with habitat-sim's downloader:

  python -m habitat_sim.utils.datasets_download --username <id> --password <secret> \\
      --uids hm3d_train_v0.2 --data-path <download dir>

({n_scenes} scenes are referenced by the question file.) Put each scene at

  {scenes}/<NNNNN-id>/<id>.basis.glb
  {scenes}/<NNNNN-id>/<id>.basis.navmesh

e.g. {scenes}/00004-VqCaAuuoeWk/VqCaAuuoeWk.basis.glb (a symlink works: ln -s
<download dir>/hm3d/train {scenes}). Then run
`python -m eqa_runner.data check hmeqa --data-dir {data_dir}`.
"""


def hmeqa_raw_files(data_dir: Path) -> dict[str, Path]:
    return {rel: data_dir / rel.rsplit("/", 1)[-1] for rel in HMEQA_FILES}


def hmeqa_instructions(data_dir: Path) -> str:
    n_scenes = "?"
    try:
        from eqa_runner.benchmarks.hmeqa.task import HMEQATask

        n_scenes = str(len({e.scene for e in HMEQATask(data_dir=str(data_dir)).load_episodes()}))
    except Exception:
        pass
    return HMEQA_INSTRUCTIONS.format(
        scenes=Path(data_dir) / "scenes", data_dir=data_dir, n_scenes=n_scenes
    )


def check_hmeqa(
    data_dir: Path,
    questions_file: Path | None = None,
    scenes_dir: Path | None = None,
    poses_file: Path | None = None,
    sim: str = "mesh",
) -> tuple[CheckReport, list[str]]:
    """Both CSV files load (every question's scene floor has a start pose) and every scene is
    found by the ``sim`` backend (the task's presence check, as a run and a dry run make it) with
    its ``.basis.navmesh`` (or is a demo ``.glb`` with its ``.scene.json``).
    Returns the report and notes (category counts, padding, answers on a padding option)."""
    from eqa_runner.benchmarks.hmeqa.task import HMEQATask

    data_dir = Path(data_dir)
    task = HMEQATask(
        data_dir=str(data_dir),
        questions_file=str(questions_file) if questions_file else None,
        poses_file=str(poses_file) if poses_file else None,
        scenes_dir=str(scenes_dir) if scenes_dir else None,
        simulator=SIMULATORS[sim],
    )
    eps = task.load_episodes()
    rep = check_scene_files(
        task.scenes_dir, eps, "hmeqa", lambda e: "all", presence=task.missing(eps)
    )
    cats = Counter(e.category for e in eps)
    padded = Counter(len(e.meta["padding"]) for e in eps)
    on_pad = [e for e in eps if e.meta.get("answer_is_padding")]
    notes = [
        f"{len({e.meta['scene_floor'] for e in eps})} scene floors; categories: "
        + ", ".join(f"{c} {n}" for c, n in sorted(cats.items())),
        "padding options per question: "
        + ", ".join(f"{k}: {n}" for k, n in sorted(padded.items())),
    ]
    for e in on_pad:  # upstream's one such row is kept (eqa_runner/benchmarks/hmeqa/README.md)
        notes.append(
            f"note: question {e.episode_id} ({e.scene} floor {e.meta['floor']}) has its answer "
            "on a padding option; kept as in upstream"
        )
    return rep, notes


def add_fetch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", default=HMEQA_BASE_URL, help="raw-file base URL of upstream")
    p.add_argument("--force", action="store_true", help="re-download existing raw files")


def fetch(args: argparse.Namespace) -> int:
    """The question and pose files; the scenes are licensed (staging steps printed)."""
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    fetch_raw_files(args.base_url, hmeqa_raw_files(data_dir), force=args.force)
    print(hmeqa_instructions(data_dir))
    return 0


def add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions-file", type=Path, default=None)
    p.add_argument("--scenes-dir", type=Path, default=None, help="default <data-dir>/scenes")
    add_sim_arg(p)


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    rep, notes = check_hmeqa(
        Path(args.data_dir), args.questions_file, args.scenes_dir, sim=args.sim
    )
    print("\n".join([rep.render(), *notes]))
    if not rep.ok and rep.missing:
        print(f"\nTo stage the scenes:\n{hmeqa_instructions(Path(args.data_dir))}")
    return 0 if rep.ok else 1
