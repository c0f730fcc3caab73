"""The run loop end to end on OpenEQA-format data against the local model server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from eqa_runner.errors import ConfigError
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import ROOT, server_overrides
from tests.helpers.datasets import make_openeqa_dataset

RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 4"},
    {"pattern": "User Query", "reply": "It is a chair."},
    {"pattern": r"\nQ: ", "reply": "A: a sofa\nExplanation: living rooms have sofas."},
]
STABLE = ("episode_id", "status", "prediction", "judge_raw", "judge_ok", "metrics", "category")


def _stable(records: list[dict]) -> list[dict]:
    return sorted(({k: r[k] for k in STABLE} for r in records), key=lambda r: r["episode_id"])


@pytest.mark.slow
def test_multiframe_run_with_faults_then_cached_rerun(tmp_path, compose_cfg, llm_server):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=40, n_episodes=4, frames=16)
    llm_server.configure(
        rules=RULES, fault_rate=0.05, faults={"500": 1, "429": 1}, seed=3, retry_after_s=0.1
    )
    over = [
        f"task.data_dir={data}",
        "policy=multiframe",
        "run.workers=8",
        *server_overrides(llm_server),
    ]
    out1 = run(compose_cfg(over, out=tmp_path / "r1"))
    assert out1["counts"]["ok"] == 40 and out1["counts"]["error"] == 0
    stats = llm_server.stats()
    assert stats["by_fault"], "faults were injected"
    recs1 = read_records(tmp_path / "r1" / "episodes.jsonl")
    assert len(recs1) == 40
    assert sum(r["usage"]["retries"] for r in recs1) == sum(stats["by_fault"].values())
    assert all(len(r["trace"]["frame_indices"]) == 16 for r in recs1)
    summary = json.loads((tmp_path / "r1" / "summary.json").read_text())
    assert summary["headline"]["llm_match"]["mean"] == pytest.approx(75.0)
    assert summary["models"]["judge"] == "openai/test-judge"
    # adaptive concurrency per endpoint is recorded, with its URL
    eps = {e["model"]: e for e in summary["endpoints"]}
    assert {"openai/test-model", "openai/test-judge"} <= set(eps)
    assert all(e["peak_in_flight"] >= 1 and e["limit"] >= 1 for e in eps.values())
    assert all(e["endpoint"].startswith("http://127.0.0.1") for e in eps.values())

    llm_server.reset()
    llm_server.configure(fault_rate=0.0)
    run(compose_cfg(over, out=tmp_path / "r2"))
    assert llm_server.stats()["requests"] == 0, "an identical re-run must be served by the cache"
    recs2 = read_records(tmp_path / "r2" / "episodes.jsonl")
    assert _stable(recs1) == _stable(recs2)
    assert all(r["usage"]["cached_calls"] == 2 for r in recs2)


def test_failing_episode_is_recorded_and_run_goes_on(
    tmp_path, compose_cfg, llm_server, openeqa_data
):
    shutil_dir = openeqa_data / "episodes" / "scannet-v0" / "001-scannet-Ep1"
    for f in shutil_dir.iterdir():
        f.write_bytes(b"")  # zero-byte frames: every episode of this folder fails
    llm_server.configure(rules=RULES)
    cfg = compose_cfg([f"task.data_dir={openeqa_data}", *server_overrides(llm_server)])
    out = run(cfg)
    assert out["counts"]["ok"] == 10 and out["counts"]["error"] == 10
    errs = [r for r in read_records(tmp_path / "run" / "episodes.jsonl") if r["status"] == "error"]
    assert all(
        r["error"]["type"] == "FrameError" and "empty file" in r["error"]["message"] for r in errs
    )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["headline"]["llm_match"]["n"] == 10
    assert summary["errors_by_type"] == {"FrameError": 10}


@pytest.mark.slow
def test_resume_retries_errors_and_skips_ok(tmp_path, compose_cfg, llm_server, openeqa_data):
    llm_server.configure(
        rules=[
            {"pattern": "Your mark", "reply": "Your mark: 5"},
            {"pattern": "User Query", "reply": "ok", "fault": "500"},
        ]
    )
    over = [
        f"task.data_dir={openeqa_data}",
        "llm.max_retries=0",
        "run.cache=false",
        *server_overrides(llm_server),
    ]
    out = run(compose_cfg(over))
    assert out["counts"]["error"] == 20
    with pytest.raises(Exception, match="run.resume=true"):
        run(compose_cfg(over))
    llm_server.configure(rules=RULES)
    out = run(compose_cfg([*over, "run.resume=true"]))
    assert out["counts"]["ok"] == 20
    recs = read_records(tmp_path / "run" / "episodes.jsonl")
    assert len(recs) == 40  # 20 error lines kept + 20 ok lines appended
    calls_before = llm_server.stats()["requests"]
    run(compose_cfg([*over, "run.resume=true"]))
    assert llm_server.stats()["requests"] == calls_before, "ok episodes are skipped on resume"


def test_unparsable_judge_is_counted_not_averaged(tmp_path, compose_cfg, llm_server, openeqa_data):
    llm_server.configure(
        rules=[
            {"pattern": r"object 1\b|object 3\b", "reply": "I cannot grade this."},
            {"pattern": "Your mark", "reply": "Your mark: 5"},
            {"pattern": "User Query", "reply": "a thing"},
        ]
    )
    out = run(
        compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=6", *server_overrides(llm_server)])
    )
    assert out["counts"]["judge_unparsable"] == 2
    assert out["llm_match"] == pytest.approx(100.0)  # only the 4 parsable 5s are averaged
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "run" / "episodes.jsonl")}
    assert recs["q0001"]["judge_ok"] is False and recs["q0001"]["metrics"] == {}
    assert "---" in recs["q0001"]["judge_raw"], "unparsable replies are re-asked once"


def test_selection_limit_ids_file_and_shards(tmp_path, compose_cfg, openeqa_data):
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps(["q0003", "q0005", "q0007", "q0011"]))
    base = [f"task.data_dir={openeqa_data}", "llm=offline", "judge.model=offline"]
    seen = []
    for i in range(2):
        out = tmp_path / f"s{i}"
        run(compose_cfg([*base, f"run.episodes={ids}", f"run.shard={i}/2"], out=out))
        seen += [r["episode_id"] for r in read_records(out / "episodes.jsonl")]
    assert sorted(seen) == ["q0003", "q0005", "q0007", "q0011"]
    out = run(compose_cfg([*base, "run.limit=3", "task.subset=scannet"], out=tmp_path / "l"))
    assert out["counts"]["selected"] == 3
    recs = read_records(tmp_path / "l" / "episodes.jsonl")
    assert {r["subset"] for r in recs} == {"scannet"}


def test_incompatible_policy_fails_at_start(compose_cfg, openeqa_data):
    cfg = (
        compose_cfg([f"task.data_dir={openeqa_data}", "policy=fbe"])
        if (ROOT / "eqa_runner/conf/policy/fbe.yaml").exists()
        else None
    )
    if cfg is None:
        cfg = compose_cfg([f"task.data_dir={openeqa_data}"])
        cfg.policy.name = "fbe"
    with pytest.raises(ConfigError, match="policy=fbe needs an exploration protocol"):
        run(cfg)


@pytest.mark.slow
def test_dry_run_on_1600_questions_makes_no_call(tmp_path, compose_cfg, llm_server):
    data = make_openeqa_dataset(
        tmp_path / "big", n_questions=1600, n_episodes=40, frames=60, size=(64, 36)
    )
    t0 = time.perf_counter()
    out = run(
        compose_cfg(
            [
                f"task.data_dir={data}",
                "run.dry_run=true",
                "llm=gpt-4o",
                "judge.model=openai/gpt-4o-2024-08-06",
            ]
        )
    )
    elapsed = time.perf_counter() - t0
    assert out["episodes"] == 1600
    est = out["estimate"]
    assert est["policy"]["requests"] == 1600 and est["policy"]["images"] == 1600 * 50
    assert est["policy"]["prompt_tokens"] > 1600 * 50 * 85
    assert est["policy"]["cost_usd"] > 0 and est["judge"]["cost_usd"] > 0
    assert llm_server.stats()["requests"] == 0
    assert not (tmp_path / "run" / "episodes.jsonl").exists()
    print(f"dry run of 1600 questions: {elapsed:.1f}s")


@pytest.mark.slow
def test_kill_halfway_then_resume_gives_one_ok_line_per_episode(tmp_path, llm_server):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=40, n_episodes=4, frames=8)
    llm_server.configure(rules=RULES, latency_s=0.15)
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "eqa_runner",
        f"task.data_dir={data}",
        "run.workers=4",
        f"run.cache_dir={tmp_path / 'cache'}",
        "run.progress=false",
        f"hydra.run.dir={run_dir}",
        *server_overrides(llm_server),
    ]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    jsonl = run_dir / "episodes.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if jsonl.exists() and len(jsonl.read_bytes().splitlines()) >= 20:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(read_records(jsonl))
    assert 0 < n_before < 40
    subprocess.run(
        [*cmd, "run.resume=true"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=300,
    )
    recs = read_records(jsonl)
    ok = [r["episode_id"] for r in recs if r["status"] == "ok"]
    assert sorted(ok) == sorted(set(ok)) and len(ok) == 40
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["ok"] == 40
