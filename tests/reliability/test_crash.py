"""Crash consistency: SIGKILL a run at random moments, resume, compare with an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import popen_cli, run_cli

N = 48
# judge marks 1..5 depend on the question number, so headline and categories are not all equal
RULES = [
    {"pattern": r"object \d*[05]\?.*Your mark", "reply": "Your mark: 1"},
    {"pattern": r"object \d*[16]\?.*Your mark", "reply": "Your mark: 2"},
    {"pattern": r"object \d*[27]\?.*Your mark", "reply": "Your mark: 3"},
    {"pattern": "Your mark", "reply": "Your mark: 5"},
    {"pattern": "User Query", "reply": "It is a chair."},
]
COMPARED = ("headline", "counts", "by_category", "by_subset", "score_histogram")


@pytest.fixture
def crash_setup(tmp_path, llm_server, compose_cfg):
    """CLI argument builder + the summary of an uninterrupted run (in-process, same config)."""
    data = make_openeqa_dataset(
        tmp_path / "d", n_questions=N, n_episodes=4, frames=6, size=(32, 24)
    )
    llm_server.configure(rules=RULES, latency_s=0.02)
    common = [
        f"task.data_dir={data}",
        "policy=multiframe",
        "policy.num_frames=4",
        "run.workers=8",
        *server_overrides(llm_server),
    ]

    def args(run_dir: Path, cache: Path, *extra: str) -> list[str]:
        return [
            *common,
            f"run.cache_dir={cache}",
            "run.progress=false",
            f"hydra.run.dir={run_dir}",
            *extra,
        ]

    ref = tmp_path / "reference"
    run(compose_cfg(common, out=ref))
    summary = json.loads((ref / "summary.json").read_text())
    assert summary["counts"]["ok"] == N
    assert len(set(summary["score_histogram"].values())) > 1, "marks vary across episodes"

    def resume_in_process(run_dir: Path, cache: Path) -> None:
        run(compose_cfg([*common, f"run.cache_dir={cache}", "run.resume=true"], out=run_dir))

    return args, summary, resume_in_process


def _kill_and_resume(
    tmp_path: Path, setup, trial: int, rng: random.Random, *, cli_resume: bool, caplog
) -> tuple[bool, int, int]:
    """SIGKILL ``python -m eqa_runner`` at a random moment, resume it, check the run dir."""
    args, reference, resume_in_process = setup
    run_dir, cache = tmp_path / f"trial{trial}", tmp_path / f"cache{trial}"
    jsonl = run_dir / "episodes.jsonl"
    target = rng.randrange(0, N)  # kill once this many records are on disk (0: during start-up)
    extra_delay = rng.uniform(0, 0.05)
    proc = popen_cli(args(run_dir, cache), tmp_path / f"trial{trial}-a.log")
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        n = jsonl.read_bytes().count(b"\n") if jsonl.exists() else 0
        if n >= target:
            break
        time.sleep(0.002)
    time.sleep(extra_delay)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(read_records(jsonl))
    torn = False
    if trial % 2 == 1 and jsonl.exists():
        # a kill in the middle of write(): half a record, no newline
        line = json.dumps({"episode_id": "q0000", "status": "ok", "metrics": {"llm_match": 1}})
        with jsonl.open("ab") as fh:
            fh.write(line.encode()[: len(line) // 2])
        torn = True
    if cli_resume:
        done = run_cli(args(run_dir, cache, "run.resume=true"))
        assert done.returncode == 0, done.stderr[-2000:]
        log = (run_dir / "run.log").read_text() + done.stdout + done.stderr
    else:
        caplog.clear()
        resume_in_process(run_dir, cache)
        log = caplog.text
    raw_lines = jsonl.read_bytes().split(b"\n")
    assert raw_lines[-1] == b"", "the file ends with a newline"
    recs = [json.loads(x) for x in raw_lines[:-1]]  # every line parses
    ok = [r["episode_id"] for r in recs if r["status"] == "ok"]
    assert sorted(ok) == [f"q{i:04d}" for i in range(N)], "exactly one ok line per episode"
    if torn:
        assert "dropped a torn final line" in log
        assert (run_dir / "episodes.jsonl.torn").exists()
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in COMPARED:
        assert summary[key] == reference[key], key
    tally.add("crashes survived", int(killed))
    tally.add("episodes lost", N - len(set(ok)))
    return killed, target, before


def _trials(tmp_path, setup, n: int, seed: int, *, cli_resume: bool, caplog) -> None:
    rng = random.Random(seed)
    results = [
        _kill_and_resume(tmp_path, setup, t, rng, cli_resume=cli_resume, caplog=caplog)
        for t in range(n)
    ]
    print("trials (killed, target lines, records before resume):", results)
    assert sum(k for k, _, _ in results) >= n - 1, "almost every trial killed a running process"


@pytest.mark.slow
def test_two_kill_resume_trials(tmp_path, crash_setup, caplog):
    """Quick version: the killed run is the CLI; the resume runs in-process (same code path)."""
    _trials(tmp_path, crash_setup, 2, seed=7, cli_resume=False, caplog=caplog)


@pytest.mark.slow
def test_ten_kill_resume_trials(tmp_path, crash_setup, caplog):
    """Ten seeded random kills of ``python -m eqa_runner``, each resumed by the CLI."""
    _trials(tmp_path, crash_setup, 10, seed=2024, cli_resume=True, caplog=caplog)


@pytest.mark.slow
def test_second_process_on_the_same_run_dir_is_refused(tmp_path, llm_server):
    data = make_openeqa_dataset(
        tmp_path / "d", n_questions=8, n_episodes=2, frames=2, size=(32, 24)
    )
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 5"}], latency_s=0.3)
    run_dir = tmp_path / "run"
    args = [
        f"task.data_dir={data}",
        "policy=blind",
        "run.workers=2",
        f"run.cache_dir={tmp_path / 'cache'}",
        "run.progress=false",
        f"hydra.run.dir={run_dir}",
        *server_overrides(llm_server),
    ]
    first = popen_cli(args, tmp_path / "first.log")
    jsonl = run_dir / "episodes.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and not (jsonl.exists() and jsonl.stat().st_size):
        time.sleep(0.02)
    assert first.poll() is None, "the first run is still writing"
    second = run_cli([*args, "run.resume=true"])
    assert second.returncode == 2
    assert "another eqa_runner process is writing to this run directory" in second.stderr
    assert str(run_dir) in second.stderr
    assert first.wait(timeout=120) == 0
    recs = read_records(jsonl)
    assert sorted(r["episode_id"] for r in recs) == [f"q{i:04d}" for i in range(8)]
    assert all(r["status"] == "ok" for r in recs), "records are not interleaved or duplicated"
