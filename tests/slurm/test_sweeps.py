"""``python -m eqa_runner -m hydra/launcher=slurm …`` end to end on the single-node test cluster.

Sharded sweep → merged report, a requeued (preempted, then killed) job that finishes with exactly
one ok record per episode, and a sweep with a failing job that reports it with a rerun command.
The model server runs in its own process (its CLI); the jobs reach it on 127.0.0.1.

Run:  tests/slurm/start_cluster.sh && source /tmp/eqa_slurm/env.sh && pytest tests/slurm -m slurm -s
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eqa_runner.records import EPISODES_FILE, read_records
from tests.helpers.datasets import make_openeqa_dataset

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 4"},
    {"pattern": "User Query", "reply": "It is a chair."},
    {"pattern": r"\nQ: ", "reply": "A: a sofa"},
]


def _cluster_problem() -> str | None:
    """Why the cluster tests cannot run here, or None."""
    if not os.environ.get("SLURM_CONF"):
        return "SLURM_CONF not set (start the test cluster: tests/slurm/start_cluster.sh)"
    if shutil.which("sinfo") is None:
        return "sinfo not on PATH (SLURM client not installed)"
    try:
        proc = subprocess.run(["sinfo", "-h"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return "sinfo timed out (slurmctld down?)"
    return None if proc.returncode == 0 else f"sinfo failed: {proc.stderr.strip()[:200]}"


_PROBLEM = _cluster_problem()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM)),
]


@pytest.fixture(autouse=True)
def _sacct_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sacct stand-in first on PATH, for submitit in the launching process (env.sh does too)."""
    monkeypatch.setenv("PATH", f"{HERE}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start ``python -m eqa_runner.testing.llm_server`` (own process); returns its /v1 URL."""
    procs: list[subprocess.Popen] = []

    def start(**settings: object) -> str:
        n = len(procs)
        cfg, port_file = tmp_path / f"server{n}.json", tmp_path / f"server{n}.port"
        cfg.write_text(json.dumps({"rules": RULES, **settings}))
        log = (tmp_path / f"server{n}.log").open("w")
        cmd = [sys.executable, "-m", "eqa_runner.testing.llm_server", "--port", "0"]
        cmd += ["--config", str(cfg), "--port-file", str(port_file)]
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO))
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert procs[-1].poll() is None, "model server exited; see " + log.name
            assert time.monotonic() < deadline, "model server did not write its port"
            time.sleep(0.1)
        return f"http://127.0.0.1:{port_file.read_text().strip()}/v1"

    yield start
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


@pytest.fixture(autouse=True)
def _cancel_leftover_jobs(tmp_path: Path) -> Iterator[None]:
    """A failed test must not leave its jobs holding the one-node cluster: cancel them."""
    yield
    for submitit_dir in tmp_path.glob("**/.submitit"):
        jobs = _job_ids(submitit_dir.parent)
        if jobs:
            subprocess.run(["scancel", *jobs], capture_output=True, timeout=30)


def _sweep_cmd(sweep: Path, url: str, tmp_path: Path, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "eqa_runner",
        "-m",
        "hydra/launcher=slurm",
        f"hydra.sweep.dir={sweep}",
        "hydra.launcher.gpus_per_node=0",
        "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=1",
        "hydra.launcher.timeout_min=15",  # > 10: a USR2 then counts as preemption
        "llm.model=openai/test-model",
        f"llm.api_base={url}",
        "judge.model=openai/test-judge",
        f"judge.api_base={url}",
        "llm.timeout_s=20",
        f"run.cache_dir={tmp_path / 'cache'}",
        "run.progress=false",
        *overrides,
    ]


def _run(cmd: list[str], timeout: float = 150) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    return proc


def _run_dirs(sweep: Path) -> list[Path]:
    """The sweep's job dirs (``<num>_<overrides>``); a job refused at start has no ``.hydra/``
    (issue 14: a refused start writes nothing), so the name, not the contents, says what it is."""
    return sorted(
        (d for d in sweep.iterdir() if d.is_dir() and d.name.split("_", 1)[0].isdigit()),
        key=lambda d: int(d.name.split("_", 1)[0]),
    )


def _job_ids(sweep: Path) -> list[str]:
    """SLURM job ids of a sweep's jobs: ``.submitit/<array id>_<task>/``, or ``<id>/`` for a
    one-job sweep (submitit submits a single job without an array)."""
    names = sorted(d.name for d in (sweep / ".submitit").iterdir())
    tasks = [n for n in names if re.fullmatch(r"\d+_\d+", n)]
    return tasks or [n for n in names if n.isdigit()]


def _array_id(sweep: Path) -> str:
    ids = {j.split("_")[0] for j in _job_ids(sweep)}
    assert len(ids) == 1, ids
    return ids.pop()


def _show(*cmd: str) -> str:
    """Run a SLURM client command, print it with its output (to quote), return the output."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    print(f"$ {' '.join(cmd)}\n{out.rstrip()}")
    return out


ACTIVE = {"PENDING", "RUNNING", "REQUEUED", "COMPLETING", "CONFIGURING", "SUSPENDED"}


def _sacct_states(job_id: str, timeout_s: float = 30) -> dict[str, str]:
    """JobID -> State once no task is active any more (a result pickle precedes the job's end)."""
    cmd = ["sacct", "-j", job_id, "-o", "JobID,JobName,State,ExitCode,Restarts,Elapsed", "-P"]
    deadline = time.monotonic() + timeout_s
    while True:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
        states = {r.split("|")[0]: r.split("|")[2] for r in out.strip().splitlines()[1:]}
        if not ACTIVE & set(states.values()) or time.monotonic() > deadline:
            print(f"$ {' '.join(cmd)}\n{out.rstrip()}")
            return states
        time.sleep(0.5)


@pytest.mark.timeout(240)
def test_sharded_sweep_merges_into_one_row_per_config(
    tmp_path: Path, model_server: Callable[..., str]
) -> None:
    """2 policies x 2 shards = 4 array tasks; the report merges them into 2 rows of n=12."""
    data = make_openeqa_dataset(tmp_path / "data", n_questions=12, n_episodes=2, frames=6)
    url = model_server()
    sweep = tmp_path / "sweep"
    cmd = _sweep_cmd(sweep, url, tmp_path, f"task.data_dir={data}", "policy=blind,single")
    t0 = time.monotonic()
    proc = _run([*cmd, "run.num_shards=2"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(f"4-job sweep took {time.monotonic() - t0:.1f}s")
    states = _sacct_states(_array_id(sweep))
    _show("sinfo")
    assert sorted(states.values()) == ["COMPLETED"] * 4, states

    runs = _run_dirs(sweep)
    assert len(runs) == 4, runs
    ids: dict[str, list[str]] = {"blind": [], "single": []}
    for d in runs:  # every shard wrote its own JSONL in its own sweep subdir
        recs = read_records(d / EPISODES_FILE)
        assert len(recs) == 6 and all(r["status"] == "ok" for r in recs), d
        ids["blind" if "policy=blind" in d.name else "single"] += [r["episode_id"] for r in recs]
    expected = [f"q{i:04d}" for i in range(12)]
    assert {k: sorted(v) for k, v in ids.items()} == {"blind": expected, "single": expected}

    report = _run([sys.executable, "-m", "eqa_runner.report", str(sweep)], timeout=60)
    assert report.returncode == 0, report.stderr
    print(f"$ python -m eqa_runner.report <sweep_dir>\n{report.stdout}")
    table_csv = tmp_path / "report.csv"
    _run([sys.executable, "-m", "eqa_runner.report", str(sweep), "--csv", str(table_csv)])
    table = table_csv.read_text()
    rows = list(csv.DictReader(io.StringIO(table)))
    assert [(r["policy"], r["n"], r["missing"]) for r in rows] == [
        ("blind", "12", "0"),
        ("single", "12", "0"),
    ], table
    assert all("2 shards merged" in r["notes"] for r in rows), table

    # one shard's JSONL gone: the merged row says which shard is missing
    shutil.rmtree(runs[1])
    partial = _run([sys.executable, "-m", "eqa_runner.report", str(sweep)], timeout=60).stdout
    print(partial)
    assert "missing shard 1" in partial


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def _wait(cond: Callable[[], bool], what: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, f"sweep exited while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.timeout(240)
def test_requeued_job_resumes_with_one_ok_record_per_episode(
    tmp_path: Path, model_server: Callable[..., str]
) -> None:
    """Preempted (USR2: submitit checkpoints + requeues) and then requeued by ``scontrol requeue``
    mid-run: the job resumes by itself (no run.resume=true given) and ends with exactly one ok
    record per episode."""
    n = 40
    data = make_openeqa_dataset(tmp_path / "data", n_questions=n, n_episodes=2, frames=6)
    url = model_server(latency_s=0.25)  # ~0.25 s/episode with 2 workers: interruptible
    sweep = tmp_path / "sweep"
    cmd = _sweep_cmd(sweep, url, tmp_path, f"task.data_dir={data}", "policy=blind", "run.workers=2")
    out = (tmp_path / "sweep.out").open("w+")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        _wait(lambda: sweep.is_dir() and len(_run_dirs(sweep)) == 1, "the run dir", proc, 60)
        jsonl = _run_dirs(sweep)[0] / EPISODES_FILE
        _wait(lambda: _lines(jsonl) >= 5, "5 records", proc, 60)
        (job,) = _job_ids(sweep)
        log = jsonl.parent / "run.log"

        def resumed(k: int) -> bool:
            return log.exists() and log.read_text().count("auto-resuming") >= k

        subprocess.run(["scancel", "--signal=USR2", job], check=True, timeout=30)  # preemption
        _wait(lambda: resumed(1), "the job to restart after USR2", proc, 90)
        first = _lines(jsonl)
        _wait(lambda: _lines(jsonl) >= first + 3, "3 more records after the restart", proc, 60)
        subprocess.run(["scontrol", "requeue", job], check=True, timeout=30)  # kill + requeue
        second = _lines(jsonl)
        print(f"interrupted at {first} and ~{second} lines of {n} episodes")
        assert second < n, "the job finished before the second interruption; slow the server"
        proc.wait(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
        out.seek(0)
        output = out.read()
    assert proc.returncode == 0, output[-4000:]

    assert _sacct_states(job) == {job: "COMPLETED"}  # Restarts=2 in its output
    show = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True)
    assert "Restarts=2" in show.stdout and "JobState=COMPLETED" in show.stdout, show.stdout
    recs = read_records(jsonl)
    ok = Counter(r["episode_id"] for r in recs if r["status"] == "ok")
    expected = {f"q{i:04d}": 1 for i in range(n)}
    errors = [r["episode_id"] for r in recs if r["status"] != "ok"]
    print(
        f"expected: {n} episodes x 1 ok record; found: {len(ok)} episodes, "
        f"{sum(ok.values())} ok records, max per episode {max(ok.values())}, "
        f"{len(errors)} error records, {len(recs)} lines"
    )
    assert dict(ok) == expected
    assert len(recs) == n + len(errors)
    assert log.read_text().count("auto-resuming") == 2, log.read_text()[-3000:]
    summary = json.loads((jsonl.parent / "summary.json").read_text())
    assert summary["counts"]["ok"] == n


@pytest.mark.timeout(240)
def test_failed_job_is_reported_with_a_rerun_command(
    tmp_path: Path, model_server: Callable[..., str]
) -> None:
    """Job 1's data dir is missing: job 0's results stay, the launcher names job 1 and prints a
    command that reruns only it, into its own run dir; that command then completes it."""
    good = make_openeqa_dataset(tmp_path / "good", n_questions=8, n_episodes=2, frames=6)
    missing = tmp_path / "missing"
    url = model_server()
    sweep = tmp_path / "sweep"
    cmd = _sweep_cmd(
        sweep, url, tmp_path, f"task.data_dir={good},{missing}", "policy=blind", "run.limit=8"
    )
    proc = _run(cmd)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1
    start = output.index("[eqa_runner] 1 of 2 sweep jobs FAILED")
    print(output[start:])
    assert "Traceback" not in output and "Error executing job" not in output
    array_id = _array_id(sweep)
    assert _sacct_states(array_id) == {f"{array_id}_0": "COMPLETED", f"{array_id}_1": "FAILED"}

    runs = _run_dirs(sweep)
    assert len(read_records(runs[0] / EPISODES_FILE)) == 8  # the other job's results exist
    assert (runs[0] / "summary.json").exists()
    assert f"job #1 (slurm job {array_id}_1, state FAILED)" in output
    assert f"task.data_dir={missing}" in output and "question file not found" in output
    assert f"run dir: {runs[1]}" in output
    reruns = re.findall(r"^  (python -m eqa_runner -m .*)$", output, flags=re.M)
    assert len(reruns) == 1, output[start:]
    rerun = shlex.split(reruns[0])
    assert "run.resume=true" in rerun and f"task.data_dir={missing}" in rerun

    make_openeqa_dataset(missing, n_questions=8, n_episodes=2, frames=6)  # fix the cause
    again = _run([sys.executable, *rerun[1:]])
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert _run_dirs(sweep) == runs, "the rerun wrote into the failed job's own run dir"
    recs = read_records(runs[1] / EPISODES_FILE)
    assert sorted(r["episode_id"] for r in recs if r["status"] == "ok") == [
        f"q{i:04d}" for i in range(8)
    ]
