"""Smoke tests against the single-node test SLURM cluster (tests/slurm/start_cluster.sh).

Run:  tests/slurm/start_cluster.sh && source /tmp/eqa_slurm/env.sh && pytest tests/slurm -m slurm
Skipped unless ``SLURM_CONF`` is set and ``sinfo`` answers. Jobs ask for no GPU (the node has none).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LAUNCHER_CONF = REPO / "eqa_runner" / "conf" / "hydra" / "launcher"


def _cluster_problem() -> str | None:
    """Why the cluster tests cannot run here, or None."""
    if not os.environ.get("SLURM_CONF"):
        return "SLURM_CONF not set (start the test cluster: tests/slurm/start_cluster.sh)"
    if shutil.which("sinfo") is None:
        return "sinfo not on PATH (SLURM client not installed)"
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=15
        )
    except subprocess.TimeoutExpired:
        return "sinfo timed out (slurmctld down?)"
    if proc.returncode != 0:
        return f"sinfo failed: {proc.stderr.strip()[:200]}"
    return None


_PROBLEM = _cluster_problem()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM)),
]


@pytest.fixture(autouse=True)
def _sacct_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put tests/slurm (the sacct stand-in) first on PATH, for us and for submitit."""
    monkeypatch.setenv("PATH", f"{HERE}{os.pathsep}{os.environ.get('PATH', '')}")


def _sacct(*job_ids: str) -> dict[str, str]:
    """JobID -> State, as submitit asks for it."""
    cmd = ["sacct", "-o", "JobID,State,NodeList", "--parsable2"]
    for jid in job_ids:
        cmd += ["-j", jid]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    lines = out.splitlines()
    assert lines and lines[0] == "JobID|State|NodeList", out
    return {line.split("|")[0]: line.split("|")[1] for line in lines[1:]}


def _wait_state(job_id: str, states: set[str], timeout_s: float = 60) -> str:
    state = ""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = _sacct(job_id).get(job_id, "")
        if state in states:
            return state
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} still {state!r} after {timeout_s}s, wanted {states}")


def test_sinfo_shows_node_idle() -> None:
    out = subprocess.run(
        ["sinfo", "-h", "-N", "-n", "localhost", "-o", "%N %t %P"],
        capture_output=True,
        text=True,
        timeout=15,
        check=True,
    ).stdout.split()
    assert out[0] == "localhost"
    assert out[1] in {"idle", "mix", "alloc"}  # idle unless another test's job is still running
    assert out[2] == "debug*"


TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}


def _sbatch(tmp_path: Path, *args: str) -> str:
    cmd = ["sbatch", "--parsable", "-o", str(tmp_path / "%j.out"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True)
    return proc.stdout.strip().split(";")[0]


def _wait_all_done(job_id: str, n_tasks: int = 1, timeout_s: float = 60) -> dict[str, str]:
    """Poll the stand-in until the job (or all n_tasks array tasks) reached a final state."""
    from submitit.slurm.slurm import SlurmInfoWatcher

    deadline = time.monotonic() + timeout_s
    while True:
        out = subprocess.run(
            ["sacct", "-o", "JobID,State,NodeList", "--parsable2", "-j", job_id],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        info = SlurmInfoWatcher().read_info(out)  # parsed exactly as submitit parses real sacct
        states = {k: v["State"] for k, v in info.items()}
        if len(states) == n_tasks and set(states.values()) <= TERMINAL:
            return states
        assert time.monotonic() < deadline, f"job {job_id} not done after {timeout_s}s: {states}"
        time.sleep(0.3)


@pytest.mark.timeout(120)
def test_sbatch_wrap_completes_and_sacct_says_completed(tmp_path: Path) -> None:
    job_id = _sbatch(tmp_path, "--wrap", "echo hello")
    assert _wait_all_done(job_id) == {job_id: "COMPLETED"}
    assert (tmp_path / f"{job_id}.out").read_text().strip() == "hello"


@pytest.mark.timeout(120)
def test_sacct_standin_failed_and_array_states(tmp_path: Path) -> None:
    failed = _sbatch(tmp_path, "--wrap", "exit 3")
    array = _sbatch(tmp_path, "--array=0-2", "--wrap", "test $SLURM_ARRAY_TASK_ID != 1")
    assert _wait_all_done(failed) == {failed: "FAILED"}
    assert _wait_all_done(array, n_tasks=3) == {
        f"{array}_0": "COMPLETED",
        f"{array}_1": "FAILED",
        f"{array}_2": "COMPLETED",
    }


@pytest.mark.timeout(180)
def test_submitit_autoexecutor_returns_result(tmp_path: Path) -> None:
    import submitit

    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
    executor.update_parameters(
        gpus_per_node=0, cpus_per_task=1, mem_gb=1, timeout_min=5, name="eqa-smoke"
    )
    job = executor.submit(pow, 2, 10)
    assert job.result() == 1024
    assert _wait_state(job.job_id, {"COMPLETED"}, timeout_s=30) == "COMPLETED"


@pytest.mark.timeout(180)
def test_scancel_is_cancelled_and_submitit_raises(tmp_path: Path) -> None:
    import submitit
    from submitit.core.utils import UncompletedJobError

    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
    executor.update_parameters(gpus_per_node=0, cpus_per_task=1, mem_gb=1, timeout_min=5)
    job = executor.submit(time.sleep, 600)
    _wait_state(job.job_id, {"RUNNING"})
    subprocess.run(["scancel", job.job_id], check=True, timeout=30)
    assert _wait_state(job.job_id, {"CANCELLED"}) == "CANCELLED"
    started = time.monotonic()
    with pytest.raises(UncompletedJobError, match="has not produced any output"):
        job.result()
    assert time.monotonic() - started < 120
    assert job.state.upper().startswith("CANCELLED")


@pytest.mark.timeout(240)
def test_preempted_job_is_requeued_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """USR2 (what SLURM sends before a timeout or on preemption) -> checkpoint -> requeue."""
    import submitit

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    from slurm_jobs import SleepUnlessResumed

    marker = tmp_path / "marker"
    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
    executor.update_parameters(gpus_per_node=0, cpus_per_task=1, mem_gb=1, timeout_min=10)
    job = executor.submit(SleepUnlessResumed(), str(marker))
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.5)
    time.sleep(1)  # let submitit install its signal handlers
    subprocess.run(["scancel", "--signal=USR2", job.job_id], check=True, timeout=30)
    assert job.result() == "resumed"
    show = subprocess.run(
        ["scontrol", "-o", "show", "job", job.job_id], capture_output=True, text=True, check=True
    ).stdout
    assert "Restarts=1" in show
    # the result file is written just before the job step exits: wait for SLURM to agree
    assert _wait_state(job.job_id, {"COMPLETED"}, timeout_s=30) == "COMPLETED"


APP = """
from __future__ import annotations

import os
from pathlib import Path

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> int:
    out = Path(hydra.core.hydra_config.HydraConfig.get().runtime.output_dir)
    (out / "result.txt").write_text(f"{cfg.x} {os.environ.get('SLURM_ARRAY_TASK_ID')} "
                                     f"{os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP')}")
    return cfg.x * 10


if __name__ == "__main__":
    main()
"""


@pytest.mark.timeout(240)
def test_hydra_sweep_through_slurm_launcher(tmp_path: Path) -> None:
    """A 3-job sweep with the repo's conf/hydra/launcher/slurm.yaml becomes one job array."""
    conf = tmp_path / "conf"
    shutil.copytree(LAUNCHER_CONF, conf / "hydra" / "launcher")
    (conf / "config.yaml").write_text("x: 0\nhydra:\n  job:\n    name: smoke\n")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "app.py",
        "-m",
        "hydra/launcher=slurm",
        "x=1,2,3",
        f"hydra.sweep.dir={sweep}",
        "hydra.launcher.gpus_per_node=0",
        "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=1",
        "hydra.launcher.timeout_min=10",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = sorted((sweep / str(i) / "result.txt").read_text().split() for i in range(3))
    assert results == [["1", "0", "True"], ["2", "1", "True"], ["3", "2", "True"]]
    logs = list((sweep / ".submitit").glob("*/*_log.out"))
    assert len(logs) == 3, logs
    print(f"3-job sweep took {time.monotonic() - t0:.1f}s")
