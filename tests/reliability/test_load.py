"""Load: 2,000 episodes at 32 workers against the test server (5% faults, 50 ms latency)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from eqa_runner.records import read_records
from tests.conftest import ROOT, server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import cli_env

N, EARLY = 2000, 200


@pytest.mark.slow
def test_two_thousand_episodes_none_lost_no_leak(tmp_path, llm_server):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=N, n_episodes=2, frames=1)
    llm_server.configure(
        rules=[
            {"pattern": "Your mark", "reply": "Your mark: 4"},
            {"pattern": r"\nQ: ", "reply": "A: a sofa\nExplanation: common sense."},
        ],
        latency_s=0.05,
        fault_rate=0.05,
        faults={"429": 1, "500": 1, "503": 1, "reset": 1, "malformed": 1},
        retry_after_s=0.1,
        seed=5,
    )
    out_dir, result = tmp_path / "run", tmp_path / "load.json"
    overrides = [
        f"task.data_dir={data}",
        "policy=blind",
        "run.workers=32",
        f"run.output_dir={out_dir}",
        f"run.cache_dir={tmp_path / 'cache'}",
        "run.progress=false",
        *server_overrides(llm_server),
        "llm.max_retries=8",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "tests.reliability.load_helper", str(result), f"{EARLY},{N}"]
        + overrides,
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(result.read_text())
    recs = read_records(out_dir / "episodes.jsonl")
    ids = [r["episode_id"] for r in recs]
    lost = N - len(set(ids))
    tally.add("episodes lost", lost)
    tally.add("faults injected", sum(llm_server.stats()["by_fault"].values()))
    assert lost == 0 and len(ids) == N, "every episode has exactly one record"
    assert res["counts"]["ok"] + res["counts"]["error"] == N
    assert res["counts"]["ok"] >= N - 2
    early, late = res["rss_mb_at"][str(EARLY)], res["rss_mb_at"][str(N)]
    span = res["t_at"][str(N)] - res["t_at"][str(EARLY)]
    rate = (N - EARLY) / span
    print(
        f"\nload: {N} episodes, 32 workers, {res['elapsed_s']:.1f}s total, "
        f"{rate:.1f} episodes/s steady; RSS {early:.0f} MB at {EARLY} -> {late:.0f} MB at {N}; "
        f"faults injected {sum(llm_server.stats()['by_fault'].values())}"
    )
    assert late - early < 50, f"RSS grew {late - early:.0f} MB from {EARLY} to {N} episodes"
