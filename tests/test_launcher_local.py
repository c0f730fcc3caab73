"""The wait-for-all sweep launcher (the Hydra plugin in hydra_plugins/eqa_runner_launcher) on
submitit's local executor (no SLURM needed): a multirun from the command line and one from a
config file both use it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from eqa_runner.records import EPISODES_FILE, read_records
from eqa_runner.run.configstore import register_configs
from tests.helpers.datasets import make_openeqa_dataset

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_local_sweep_with_a_failed_job_reports_it_and_exits_1(tmp_path: Path) -> None:
    good = make_openeqa_dataset(tmp_path / "good", n_questions=4, n_episodes=2, frames=4)
    missing = tmp_path / "missing"
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable, "-m", "eqa_runner", "-m", "hydra/launcher=local",
        f"hydra.sweep.dir={sweep}", "llm=offline", "judge.model=offline", "policy=blind",
        f"task.data_dir={good},{missing}", "run.progress=false",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert "[eqa_runner] 1 of 2 sweep jobs FAILED" in output
    assert "Traceback" not in output and "Error executing job" not in output
    assert f"task.data_dir={missing}" in output and "question file not found" in output

    runs = sorted(d for d in sweep.iterdir() if (d / ".hydra").is_dir())
    done = [d for d in runs if (d / "summary.json").exists()]
    assert len(done) == 1 and len(read_records(done[0] / EPISODES_FILE)) == 4

    reruns = re.findall(r"^  (python -m eqa_runner -m .*)$", output, flags=re.M)
    assert len(reruns) == 1
    rerun = shlex.split(reruns[0])
    assert "hydra/launcher=local" in rerun and "run.resume=true" in rerun


def _assert_one_failed_job_reported(proc: subprocess.CompletedProcess, sweep: Path, missing: Path):
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert "[eqa_runner] 1 of 2 sweep jobs FAILED" in output
    assert "Traceback" not in output and "Error executing job" not in output
    assert f"task.data_dir={missing}" in output and "question file not found" in output
    runs = sorted(d for d in sweep.iterdir() if (d / ".hydra").is_dir())
    done = [d for d in runs if (d / "summary.json").exists()]
    assert len(done) == 1 and len(read_records(done[0] / EPISODES_FILE)) == 4
    return output


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_multirun_from_a_config_file_uses_the_plugin(tmp_path: Path) -> None:
    """``hydra.mode: MULTIRUN`` in a user's preset (``--config-dir``), no ``-m`` on the command
    line: the same launcher runs the sweep, waits for both jobs and reports the failed one."""
    good = make_openeqa_dataset(tmp_path / "good", n_questions=4, n_episodes=2, frames=4)
    missing = tmp_path / "missing"
    sweep = tmp_path / "sweep"
    user = tmp_path / "lab_conf"
    (user / "experiment").mkdir(parents=True)
    (user / "experiment" / "lab_sweep.yaml").write_text(
        "# @package _global_\n"
        "defaults:\n"
        "  - override /hydra/launcher: local\n"
        "  - override /llm: offline\n"
        "  - override /policy: blind\n"
        "judge:\n  model: offline\n"
        "hydra:\n"
        "  mode: MULTIRUN\n"
        f"  sweep:\n    dir: {sweep}\n"
        f"  sweeper:\n    params:\n      task.data_dir: {good},{missing}\n"
    )
    cmd = [sys.executable, "-m", "eqa_runner", "--config-dir", str(user),
           "experiment=lab_sweep", "run.progress=false"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    output = _assert_one_failed_job_reported(proc, sweep, missing)
    assert "Submitit 'local' sweep output dir" in output


def test_launcher_configs_select_the_plugin() -> None:
    """``hydra/launcher=slurm|local`` compose to the plugin's launchers, which Hydra discovers."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.plugins import Plugins
    from hydra.plugins.launcher import Launcher

    register_configs()
    found = {f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(Launcher)}
    conf = REPO / "eqa_runner" / "conf"
    for option, cls in (("slurm", "SlurmSweepLauncher"), ("local", "LocalSweepLauncher")):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
            cfg = compose(
                "config", overrides=[f"hydra/launcher={option}"], return_hydra_config=True
            )
        GlobalHydra.instance().clear()
        target = cfg.hydra.launcher._target_
        assert target == f"hydra_plugins.eqa_runner_launcher.launcher.{cls}"
        assert target in found
    assert cfg.hydra.launcher.timeout_min == 240  # the project's value over the plugin default


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sweep_over_policies_the_default_policy_cannot_run(tmp_path: Path, express_demo) -> None:
    """`-m task=express policy=re,fbe`: the sweep's base config keeps the default (frames-only)
    policy, which cannot run an exploration task; the fit is checked per job, so both jobs run."""
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable, "-m", "eqa_runner", "-m", "hydra/launcher=local",
        f"hydra.sweep.dir={sweep}", "task=express", "policy=re,fbe", "llm=offline",
        "judge.model=offline", f"task.data_dir={express_demo}", "run.limit=1",
        "sim.width=64", "sim.height=64", "run.progress=false",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=360)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "cannot" not in output and "needs a simulator" not in output
    done = [d for d in sweep.iterdir() if (d / "summary.json").exists()]
    assert len(done) == 2
    assert all(len(read_records(d / EPISODES_FILE)) == 1 for d in done)


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_sweep_over_a_mismatched_fixed_policy_is_refused_at_start(tmp_path: Path) -> None:
    """Without a swept component, the base config is the jobs' config: a misfit is refused
    before any job starts, in one line."""
    cmd = [
        sys.executable, "-m", "eqa_runner", "-m", "hydra/launcher=local",
        f"hydra.sweep.dir={tmp_path / 'sweep'}", "task=express", "policy=blind",
        "run.seed=1,2", "llm=offline", "judge.model=offline",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=100)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert not (tmp_path / "sweep").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_sweep_whose_first_job_cannot_start_submits_nothing(tmp_path: Path) -> None:
    """The launcher runs the first job's start checks before it submits (a SLURM sweep with no
    data failed every job after a queue round trip): one line, exit 2, no job, no sweep dir."""
    good = make_openeqa_dataset(tmp_path / "good", n_questions=4, n_episodes=2, frames=4)
    missing = tmp_path / "missing"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cmd = [
        sys.executable, "-m", "eqa_runner", "-m", "hydra/launcher=local", "llm=offline",
        "judge.model=offline", "policy=blind", f"task.data_dir={missing},{good}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=240)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(errors) == 1 and errors[0].startswith("error: sweep job #0 (")
    assert "cannot start, so nothing was submitted" in errors[0]
    assert "question file not found" in errors[0] and "Traceback" not in proc.stderr
    sweeps = cwd / "outputs" / "sweeps"
    assert not sweeps.exists() or not any(sweeps.iterdir())  # no .submitit, no multirun.yaml


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sigterm_to_a_local_sweep_stops_its_jobs_and_prints_the_reruns(tmp_path, llm_server):
    """A scheduler's SIGTERM to the sweep driver reaches its local jobs (each keeps its records
    and writes its summary) and ends with one line plus a rerun command per unfinished job; it
    ended silently and left the jobs running."""
    import signal
    import time

    from tests.conftest import server_overrides

    data = make_openeqa_dataset(tmp_path / "d", n_questions=30, n_episodes=2, frames=2)
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 4"}], latency_s=0.3)
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable, "-m", "eqa_runner", "-m", "hydra/launcher=local",
        f"hydra.sweep.dir={sweep}", "policy=blind,single", f"task.data_dir={data}",
        "run.workers=1", "run.progress=false",
        f"run.cache_dir={tmp_path / 'cache'}", *server_overrides(llm_server),
    ]  # fmt: skip
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        recs = [p for p in sweep.glob("*/episodes.jsonl") if p.read_bytes().count(b"\n") >= 2]
        if len(recs) == 2:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the sweep ended before it was interrupted"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=200)
    assert proc.returncode == 143, (out + err)[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("[eqa_runner] sweep interrupted")]
    assert lines == [lines[0]] and "(SIGTERM): 0 of 2 jobs finished" in lines[0]
    assert len(re.findall(r"^  python -m eqa_runner -m .*run.resume=true", err, re.M)) == 2
    for run_dir in sorted(d for d in sweep.iterdir() if (d / "episodes.jsonl").is_file()):
        kept = read_records(run_dir / EPISODES_FILE)
        assert 2 <= len(kept) < 30 and (run_dir / "summary.json").is_file()
