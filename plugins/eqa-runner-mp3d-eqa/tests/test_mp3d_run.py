"""The plugin inside eqa_runner: found through its entry point, composed, listed, checked and run
end to end like a built-in benchmark (offline models, the mesh backend)."""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from eqa_runner.errors import ConfigError
from eqa_runner.records import read_records
from eqa_runner.registry import benchmarks, get
from eqa_runner.run.loop import run

PACKAGE = Path(__file__).resolve().parents[1] / "eqa_runner_mp3d_eqa"
# what docs/extending.md calls eqa_runner's public plugin API
PUBLIC_API = {
    "eqa_runner.registry",
    "eqa_runner.capabilities",
    "eqa_runner.types",
    "eqa_runner.errors",
    "eqa_runner.schema",
    "eqa_runner.tasks.base",
    "eqa_runner.tasks.config",
    "eqa_runner.tasks.scenes",
    "eqa_runner.policies.base",
    "eqa_runner.policies.config",
    "eqa_runner.policies.context",
    "eqa_runner.policies.protocol",
    "eqa_runner.policies.exploration",
    "eqa_runner.policies.frame_memory",
    "eqa_runner.scoring.base",
    "eqa_runner.scoring.config",
    "eqa_runner.scoring.aggregate",
    "eqa_runner.scoring.declare",
    "eqa_runner.sim.base",
    "eqa_runner.sim.geometry",
    "eqa_runner.sim.mesh",
    "eqa_runner.llm",
    "eqa_runner.prompts",
    "eqa_runner.data.checks",
    "eqa_runner.demo.apartment",
    "eqa_runner.images",
}


def test_found_through_its_entry_point():
    bench = get("mp3d_eqa")
    assert bench in benchmarks() and bench.conf_dir == "pkg://eqa_runner_mp3d_eqa.conf"
    assert bench.resolve("task").__name__ == "MP3DEQATask"


def test_uses_only_the_public_plugin_api():
    used = set()
    for py in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            mod = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if mod == "eqa_runner" or mod.startswith("eqa_runner."):
                for a in node.names:  # `from eqa_runner.sim import geometry` is that module
                    sub = f"{mod}.{a.name}"
                    used.add(sub if sub in PUBLIC_API or mod == "eqa_runner" else mod)
            elif isinstance(node, ast.Import):
                used |= {a.name for a in node.names if a.name.startswith("eqa_runner.")}
    assert used and used <= PUBLIC_API, sorted(used - PUBLIC_API)


@pytest.mark.slow
def test_help_and_config_show_it(compose):
    out = subprocess.run(
        [sys.executable, "-m", "eqa_runner", "--help"], capture_output=True, text=True, check=True
    ).stdout
    task_line = next(ln for ln in out.splitlines() if ln.startswith("task: "))
    assert "mp3d_eqa" in task_line and "task=mp3d_eqa: MP3D-EQA v1" in out
    assert "mp3d_eqa_fbe" in next(ln for ln in out.splitlines() if ln.startswith("experiment: "))
    cfg = compose(["task=mp3d_eqa", "policy=fbe"])
    assert cfg.task._target_ == "eqa_runner_mp3d_eqa.task.MP3DEQATask"
    assert cfg.judge.name == "mp3d_eqa" and cfg.protocol.max_path_m == 125.0
    sim = cfg.sim
    assert (sim.width, sim.height, sim.hfov_deg, sim.sensor_height_m) == (256, 256, 90.0, 1.25)
    with pytest.raises(Exception, match="spawn_steps"):  # its schema's rules are the core's
        from eqa_runner.schema import check_config

        check_config(compose(["task=mp3d_eqa", "task.spawn_steps=0"]))
    experiment = compose(["experiment=mp3d_eqa_fbe"])
    assert experiment.task.name == "mp3d_eqa" and experiment.policy.name == "fbe"


def test_a_policy_without_a_trajectory_is_refused_naming_it(compose, mp3d_demo, tmp_path):
    cfg = compose(
        ["task=mp3d_eqa", "policy=blind", f"task.data_dir={mp3d_demo}", "llm=offline"],
        out=tmp_path / "refused",
    )
    with pytest.raises(ConfigError, match="judge=mp3d_eqa reads the agent's trajectory"):
        run(cfg)
    assert not (tmp_path / "refused" / "episodes.jsonl").exists()


@pytest.mark.parametrize("policy", ["re", "fbe"])
@pytest.mark.slow
def test_demo_runs_end_to_end_offline(compose, mp3d_demo, tmp_path, policy):
    out = tmp_path / policy
    cfg = compose(
        [
            "task=mp3d_eqa",
            f"policy={policy}",
            f"task.data_dir={mp3d_demo}",
            "llm=offline",
            "judge.model=offline",
            "sim.width=96",
            "sim.height=96",
            "policy.max_steps=4",
            "run.limit=4",
            "run.cache=false",
        ],
        out=out,
    )
    run(cfg)
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for r in recs:
        t, m = r["trace"], r["metrics"]
        d = t["goal_distances"]
        assert len(d) == t["steps_taken"] + 1 and all(v is not None for v in d)
        assert m["nav_valid"] == 1.0 and m["d_T"] == pytest.approx(d[-1])
        assert m["d_min"] == pytest.approx(min(d)) and m["d_D"] == pytest.approx(d[0] - d[-1])
        assert t["answer_frames"] and t["protocol"] == "mp3d_eqa"
        assert m["out_of_vocab"] == 0.0  # the offline reply names the first vocabulary entry
    s = json.loads((out / "summary.json").read_text())
    assert set(s["headline"]) >= {"accuracy", "d_T", "d_D", "d_min"}
    assert math.isfinite(s["headline"]["d_T"]["mean"])


@pytest.mark.slow
def test_data_check_and_demo_commands(mp3d_demo, tmp_path):
    check = [sys.executable, "-m", "eqa_runner.data", "check", "mp3d_eqa", "--data-dir"]
    ok = subprocess.run([*check, str(mp3d_demo)], capture_output=True, text=True)
    assert ok.returncode == 0 and "mp3d_eqa: 8 questions over 2 scenes" in ok.stdout
    missing = tmp_path / "data"
    missing.mkdir()
    bad = subprocess.run([*check, str(missing)], capture_output=True, text=True)
    assert bad.returncode == 1 and "FAILED" in bad.stdout and "--only mp3d_eqa" in bad.stdout
    from eqa_runner.demo.cli import write_demo

    dirs = write_demo(tmp_path / "demo", only=["mp3d_eqa"])
    assert (dirs["mp3d_eqa"] / "val" / "val.json.gz").is_file()


def test_data_check_and_dry_run_use_the_backend_in_use(mp3d_demo, tmp_path, capsys):
    """``data check mp3d_eqa --sim habitat`` makes the habitat backend's scene lookup (the one a
    ``sim=habitat`` run makes): a missing house is named with the backend and both agree."""
    import shutil

    from eqa_runner.data.commands import main as data_main
    from eqa_runner_mp3d_eqa.task import MP3DEQATask

    data = tmp_path / "mp3d"
    shutil.copytree(mp3d_demo, data)
    house = sorted((data / "scenes" / "mp3d").iterdir())[0]
    shutil.rmtree(house)
    for sim in ("habitat", "mesh"):
        capsys.readouterr()
        assert data_main(["check", "mp3d_eqa", "--data-dir", str(data), "--sim", sim]) == 1
        listed = [ln for ln in capsys.readouterr().out.splitlines() if "missing: scene" in ln]
        assert len(listed) == 1 and house.name in listed[0] and f"sim={sim} at" in listed[0]
        task = MP3DEQATask(
            data_dir=str(data), simulator=f"eqa_runner.sim.{sim}.{sim.title()}Simulator"
        )
        (problem,) = task.check(task.load_episodes())
        assert listed[0].split("missing: ", 1)[1].startswith(problem.split("; ", 1)[0])
