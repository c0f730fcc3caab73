"""Staging on the real layouts (issue 24): the dry run checks the data with the same presence
check as ``data check`` and estimates only what can run; messages name the backend in use, the
benchmark's own layout and the real source; HM-EQA's check follows ``sim=``."""

from __future__ import annotations

import shutil
from pathlib import Path

from eqa_runner.benchmarks.hmeqa.task import HMEQATask
from eqa_runner.data.commands import build_parser
from eqa_runner.data.commands import main as data_main
from eqa_runner.run.loop import run


def _hmeqa_without_one_scene(tmp_path: Path, demo: Path) -> Path:
    data = tmp_path / "hmeqa"
    shutil.copytree(demo, data)
    shutil.rmtree(data / "scenes" / "00002-DemoApt1")
    return data


def test_hmeqa_dry_run_and_data_check_agree(tmp_path, hmeqa_demo, compose_cfg, capsys):
    data = _hmeqa_without_one_scene(tmp_path, hmeqa_demo)
    eps = HMEQATask(data_dir=str(data)).load_episodes()
    gone = sorted(e.episode_id for e in eps if e.scene == "00002-DemoApt1")
    out = run(compose_cfg(["task=hmeqa", "policy=re", f"task.data_dir={data}",
                           "run.dry_run=true", "llm=offline"]))  # fmt: skip
    text = capsys.readouterr().out
    assert (out["episodes"], out["missing_data"], out["runnable"]) == (
        10,
        len(gone),
        10 - len(gone),
    )
    assert f"data: {len(gone)} of 10 episodes lack their scene or frames (1 scenes" in text
    # the estimate covers only the episodes that can run (2 requests a step, re: estimate_steps)
    full = run(compose_cfg(["task=hmeqa", "policy=re", f"task.data_dir={hmeqa_demo}",
                            "run.dry_run=true", "llm=offline"]))  # fmt: skip
    per_episode = full["estimate"]["policy"]["requests"] // 10
    assert out["estimate"]["policy"]["requests"] == per_episode * (10 - len(gone))
    capsys.readouterr()
    assert data_main(["check", "hmeqa", "--data-dir", str(data)]) == 1
    missing = [ln for ln in capsys.readouterr().out.splitlines() if "missing: scene" in ln]
    assert len(missing) == 1 and "00002-DemoApt1" in missing[0]


def test_hmeqa_scene_check_follows_the_simulator(tmp_path, hmeqa_demo, compose_cfg):
    cfg = compose_cfg(["task=hmeqa", "sim=habitat", f"task.data_dir={hmeqa_demo}"])
    assert cfg.task.simulator == "eqa_runner.sim.habitat.HabitatSimulator"
    data = _hmeqa_without_one_scene(tmp_path, hmeqa_demo)
    for sim in ("mesh", "habitat"):
        task = HMEQATask(
            data_dir=str(data), simulator=f"eqa_runner.sim.{sim}.{sim.title()}Simulator"
        )
        (problem,) = task.check(task.load_episodes())
        # the train layout upstream reads, first; the backend in use; how HM3D access is had
        assert (
            f"sim={sim} at {data / 'scenes' / '00002-DemoApt1' / 'DemoApt1.basis.glb'}" in problem
        )
        assert "licensed by Matterport" in problem and "data check hmeqa" in problem
        assert "scenes/val" not in problem and "data fetch" not in problem
    args = build_parser().parse_args(["check", "hmeqa", "--sim", "habitat"])
    assert args.sim == "habitat"


def test_dry_run_and_data_check_look_scenes_up_through_the_backend_in_use(
    tmp_path, hmeqa_demo, compose_cfg, capsys
):
    """``sim=habitat`` runs (and dry runs) and ``data check --sim habitat`` make the same scene
    lookup, the habitat backend's (.basis.glb, .glb, then .ply), and say so; the dry run's hint
    names the ``--sim`` that lists what this backend misses."""
    data = _hmeqa_without_one_scene(tmp_path, hmeqa_demo)
    for sim in ("habitat", "mesh"):
        out = run(compose_cfg(["task=hmeqa", "policy=re", f"task.data_dir={data}", f"sim={sim}",
                               "run.dry_run=true", "llm=offline"]))  # fmt: skip
        text = capsys.readouterr().out
        assert out["missing_data"] == 5, text
        assert f"no scene file for sim={sim} at" in text
        hint = "`python -m eqa_runner.data check hmeqa --sim habitat`"
        assert (hint in text) is (sim == "habitat"), text
        assert data_main(["check", "hmeqa", "--data-dir", str(data), "--sim", sim]) == 1
        listed = [ln for ln in capsys.readouterr().out.splitlines() if "missing: scene" in ln]
        assert len(listed) == 1 and f"sim={sim} at" in listed[0], listed
