"""``python -m eqa_runner.data fetch|check express``: EXPRESS-Bench's question and prompt files
(downloaded), its HM3D scenes (licensed: staging steps printed) and their check."""

from __future__ import annotations

import argparse
from pathlib import Path

from eqa_runner.data.checks import (
    HM3D_INSTRUCTIONS,
    SIMULATORS,
    CheckReport,
    add_sim_arg,
    check_scene_files,
    fetch_raw_files,
)

EXPRESS_BASE_URL = "https://raw.githubusercontent.com/HCPLab-SYSU/EXPRESS-Bench/main/"
EXPRESS_QUESTIONS = "data/express-bench.json"
EXPRESS_PROMPTS = ("answer", "evaluation", "explore", "random_answer")
EXPRESS_PROMPTS_PATH = "prompt/{name}.txt"


def check_express(
    data_dir: Path,
    questions_file: Path | None = None,
    scenes_dir: Path | None = None,
    poses: bool = False,
    sim: str = "mesh",
) -> CheckReport:
    """Every question's scene is found by the ``sim`` backend (the task's presence check, the
    one a run and a dry run make) and has a ``.navmesh`` (or is a demo ``.glb``/``.ply`` with its
    ``.scene.json``: the navmesh is baked at load), non-empty."""
    from eqa_runner.benchmarks.express.task import QUESTIONS_FILE, ExpressTask, load_questions

    data_dir = Path(data_dir)
    qfile = Path(questions_file) if questions_file else data_dir / QUESTIONS_FILE
    scenes_dir = Path(scenes_dir) if scenes_dir else data_dir / "scenes"
    eps = load_questions(qfile)
    task = ExpressTask(
        data_dir=str(data_dir),
        questions_file=str(qfile),
        scenes_dir=str(scenes_dir),
        simulator=SIMULATORS[sim],
    )
    rep = check_scene_files(
        scenes_dir, eps, "express", lambda e: e.meta.get("split", "all"), presence=task.missing(eps)
    )
    if poses and not rep.missing and not rep.broken:
        rep.broken += off_floor_poses(scenes_dir, eps)
    return rep


def off_floor_poses(scenes_dir: Path, eps: list) -> list[str]:
    """Starts on no island (``check_start``, as a run checks them) and goals farther than
    ``OFF_FLOOR_M`` from the navigable floor, with the distance (each scene loaded once in the
    mesh backend, as a run would place the agent)."""
    from eqa_runner.errors import SceneError
    from eqa_runner.policies.explore import floor_distance
    from eqa_runner.sim.base import OFF_FLOOR_M
    from eqa_runner.sim.mesh import MeshSimulator

    sim = MeshSimulator(width=8, height=8)
    out: list[str] = []
    for scene in sorted({e.scene for e in eps}):
        sim.load_scene(sim.resolve_scene(scenes_dir, scene))
        for e in (e for e in eps if e.scene == scene):
            if (p := e.meta.get("start_position")) is not None:
                sim.set_agent_pose(p, [1.0, 0.0, 0.0, 0.0])
                try:
                    sim.check_start(p)
                except SceneError as err:
                    out.append(f"episode {e.episode_id}: {err}")
            if (p := e.meta.get("goal_position")) is not None:
                d, exact = floor_distance(sim, p)
                if d > OFF_FLOOR_M or not exact:
                    far = f"{d:.2f} m" if exact else f"at least {d:.2f} m"
                    out.append(f"episode {e.episode_id}: goal_position {p} is {far} off the floor")
    sim.close()
    return out


# ----------------------------------------------------------------------------- HM-EQA


# explore-eqa pinned at the commit that fixed its question loading
# (eqa_runner/benchmarks/hmeqa/README.md)
def express_raw_files(data_dir: Path) -> dict[str, Path]:
    files = {EXPRESS_QUESTIONS: data_dir / "express-bench.json"}
    for name in EXPRESS_PROMPTS:
        files[EXPRESS_PROMPTS_PATH.format(name=name)] = data_dir / "prompts" / f"{name}.txt"
    return files


def express_instructions(data_dir: Path) -> str:
    qfile = Path(data_dir) / "express-bench.json"
    n_val = n_train = "?"
    try:
        from eqa_runner.benchmarks.express.task import load_questions

        eps = load_questions(qfile)
        scenes = {(e.scene, e.meta["split"]) for e in eps}
        n_val = str(sum(1 for _, s in scenes if s == "val"))
        n_train = str(sum(1 for _, s in scenes if s == "train"))
    except Exception:
        pass
    return HM3D_INSTRUCTIONS.format(
        scenes=Path(data_dir) / "scenes",
        data_dir=data_dir,
        benchmark="express",
        uids="hm3d_val_v0.2 hm3d_train_v0.2",
        archives='"<split>-glb" (hm3d-<split>-glb-v0.2.tar) and "<split>-habitat" (navmeshes, '
        "hm3d-<split>-habitat-v0.2.tar) archives of the val and train splits",
        counts=f"{n_val} val and {n_train} train scenes are",
    )


# ----------------------------------------------------------------------------- CLI


def add_fetch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", default=EXPRESS_BASE_URL, help="raw-file base URL of upstream")
    p.add_argument("--force", action="store_true", help="re-download existing raw files")


def fetch(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    fetch_raw_files(args.base_url, express_raw_files(data_dir), force=args.force)
    print(f"prompt files: use prompts.dir={data_dir / 'prompts'}")
    print(express_instructions(data_dir))
    return 0


def add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions-file", type=Path, default=None)
    p.add_argument("--scenes-dir", type=Path, default=None, help="default <data-dir>/scenes")
    p.add_argument(
        "--poses",
        action="store_true",
        help="also load every scene and list starts/goals off the navigable floor",
    )
    add_sim_arg(p)


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    rep = check_express(
        Path(args.data_dir), args.questions_file, args.scenes_dir, poses=args.poses, sim=args.sim
    )
    print(rep.render())
    if not rep.ok and rep.missing:
        print(f"\nTo stage the scenes:\n{express_instructions(Path(args.data_dir))}")
    return 0 if rep.ok else 1
