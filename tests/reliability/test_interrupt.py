"""SIGINT / SIGTERM at a random point: the run stops new work, keeps every record, writes a
partial summary and prints the exact resume command on one line; resuming with that command
gives the summary of an uninterrupted run. Also the cost cap (same stop mechanism)."""

from __future__ import annotations

import json
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.reliability import tally
from tests.reliability.conftest import cli_env, popen_cli
from tests.reliability.test_crash import COMPARED, N, crash_setup  # noqa: F401 - fixture

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


def _resume_line(text: str) -> list[str]:
    lines = [
        ln for ln in text.splitlines() if ln.startswith("[eqa_runner]") and "resume with: " in ln
    ]
    assert len(lines) == 1, text[-3000:]
    line = lines[0]
    args = shlex.split(line.split("resume with: ", 1)[1])
    assert args[:3] == ["python", "-m", "eqa_runner"]
    return args[3:]


def _interrupt_and_resume(tmp_path: Path, setup, trial: int, sig: int, rng: random.Random):
    args, reference, _ = setup
    run_dir, cache = tmp_path / f"{sig.name}{trial}", tmp_path / f"cache-{sig.name}{trial}"
    jsonl = run_dir / "episodes.jsonl"
    log = tmp_path / f"{sig.name}{trial}.log"
    target = rng.randrange(1, N - 4)
    proc = popen_cli(args(run_dir, cache), log)
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:
        if jsonl.exists() and jsonl.read_bytes().count(b"\n") >= target:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "still running when signalled"
    proc.send_signal(sig)
    code = proc.wait(timeout=120)
    out = log.read_text()
    assert code == CODES[sig], out[-3000:]
    assert "Traceback" not in out
    partial = json.loads((run_dir / "summary.json").read_text())
    recorded = partial["counts"]["recorded"]
    assert recorded < N and partial["counts"]["missing"] == N - recorded
    resume = _resume_line(out)
    done = subprocess.run([sys.executable, "-m", "eqa_runner", *resume], cwd=ROOT, env=cli_env(),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in COMPARED:
        assert summary[key] == reference[key], key
    tally.add("crashes survived")
    return sig.name, target, recorded


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_five_interrupt_resume_trials(tmp_path, crash_setup, sig):  # noqa: F811
    rng = random.Random(14 + int(sig))
    results = [_interrupt_and_resume(tmp_path, crash_setup, t, sig, rng) for t in range(5)]
    print(f"{sig.name} trials (signal, records on disk when sent, recorded in partial summary):",
          results)  # fmt: skip


@pytest.mark.slow
def test_capped_run_stops_at_its_cap_then_resumes_with_the_cap_raised(tmp_path, llm_server):
    from tests.conftest import server_overrides
    from tests.helpers.datasets import make_openeqa_dataset

    data = make_openeqa_dataset(tmp_path / "d", n_questions=12, n_episodes=2, frames=2)
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 4"},
                                {"pattern": ".", "reply": "A chair."}])  # fmt: skip
    run_dir = tmp_path / "run"
    base = [f"task.data_dir={data}", "policy=blind", "run.progress=false", "run.workers=2",
            f"run.cache_dir={tmp_path / 'c'}", f"hydra.run.dir={run_dir}",
            *server_overrides(llm_server), "llm.input_usd_per_mtok=1000",
            "llm.output_usd_per_mtok=1000", "judge.input_usd_per_mtok=1000",
            "judge.output_usd_per_mtok=1000"]  # fmt: skip

    def cli(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "eqa_runner", *extra],
            cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    unpriced = cli(*[a for a in base if "usd_per_mtok" not in a], "run.max_cost_usd=1")
    assert unpriced.returncode == 2 and "no known price" in unpriced.stderr
    dry = cli(*base, "run.max_cost_usd=3", "run.dry_run=true")
    assert "against run.max_cost_usd=$3.00" in dry.stdout, dry.stdout
    first = cli(*base, "run.max_cost_usd=3")
    print(first.stdout[-600:], first.stderr[-600:])
    assert first.returncode == 3, first.stderr[-2000:]
    s = json.loads((run_dir / "summary.json").read_text())
    assert 0 < s["counts"]["recorded"] < 12 and s["usage"]["cost_usd"] <= 3
    resume = _resume_line(first.stderr)
    assert "run.resume=true" in resume and any(a.startswith("run.max_cost_usd=") for a in resume)
    second = cli(*resume)
    print(second.stdout[-600:])
    assert second.returncode == 0, second.stderr[-2000:]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["counts"]["ok"] == 12 and s["counts"]["missing"] == 0
