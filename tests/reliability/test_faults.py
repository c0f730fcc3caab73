"""Faults from the model API, injected by the local test server (DESIGN.md section 4)."""

from __future__ import annotations

import json
import time

import pytest

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally

RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 4"},
    {"pattern": "User Query", "reply": "It is a chair."},
    {"pattern": r"\nQ: ", "reply": "A: a sofa\nExplanation: living rooms have sofas."},
]
MIX = {
    "429": 1,
    "429_no_retry_after": 1,
    "500": 1,
    "503": 1,
    "reset": 1,
    "timeout": 1,
    "malformed": 1,
    "empty": 1,
}
TIMEOUT_S = 2.0


def _requests_explained(records: list[dict]) -> int:
    """Server requests the records account for: fresh calls + retries + calls failed for good."""
    return sum(
        u["calls"] - u["cached_calls"] + u["retries"] + u.get("failed_calls", 0)
        for u in (r["usage"] for r in records)
    )


@pytest.mark.slow
def test_twenty_percent_fault_mix_every_episode_ends_with_retries_recorded(
    tmp_path, compose_cfg, llm_server
):
    data = make_openeqa_dataset(
        tmp_path / "d", n_questions=60, n_episodes=4, frames=6, size=(32, 24)
    )
    llm_server.configure(
        rules=RULES,
        fault_rate=0.2,
        faults=MIX,
        seed=11,
        retry_after_s=1.0,
        timeout_sleep_s=4 * TIMEOUT_S,
    )
    cfg = compose_cfg(
        [
            f"task.data_dir={data}",
            "policy=multiframe",
            "policy.num_frames=4",
            "run.workers=16",
            "run.episode_timeout_s=60",
            *server_overrides(llm_server),
            f"llm.timeout_s={TIMEOUT_S}",
            "llm.max_retries=8",
        ]
    )
    t0 = time.perf_counter()
    out = run(cfg)
    elapsed = time.perf_counter() - t0
    stats = llm_server.stats()
    faults = stats["by_fault"]
    tally.add("faults injected", sum(faults.values()))
    assert set(faults) == set(MIX), f"every fault kind was injected: {faults}"
    recs = read_records(tmp_path / "run" / "episodes.jsonl")
    assert sorted(r["episode_id"] for r in recs) == [f"q{i:04d}" for i in range(60)]
    for r in recs:
        assert r["status"] in ("ok", "error")
        if r["status"] == "error":
            assert r["error"]["type"] and r["error"]["message"]
        assert r["timings"]["total_s"] < 60
    assert out["counts"]["ok"] + out["counts"]["error"] == 60
    assert out["counts"]["ok"] >= 58, "8 retries make a lost episode very unlikely"
    # every request the server saw is explained by the records: no hidden SDK/litellm retries
    assert _requests_explained(recs) == stats["requests"]
    assert sum(r["usage"]["retries"] for r in recs) >= sum(faults.values()) - sum(
        r["usage"].get("failed_calls", 0) for r in recs
    )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["usage"]["retries"] == sum(r["usage"]["retries"] for r in recs)
    # bounded: a timeout costs at most llm.timeout_s, so 60 episodes finish well under a minute
    assert elapsed < 45, f"run took {elapsed:.1f}s"


@pytest.mark.parametrize("kind", list(MIX))
def test_each_fault_kind_is_retried_once_then_succeeds(tmp_path, compose_cfg, llm_server, kind):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=1, n_episodes=1, frames=2)
    llm_server.configure(
        rules=RULES, fail_first_n=1, fail_kind=kind, retry_after_s=0.2, timeout_sleep_s=5
    )
    cfg = compose_cfg(
        [
            f"task.data_dir={data}",
            "policy=blind",
            *server_overrides(llm_server),
            "llm.timeout_s=1",
            "run.cache=false",
        ]
    )
    t0 = time.perf_counter()
    out = run(cfg)
    elapsed = time.perf_counter() - t0
    tally.add("faults injected", 1)
    (rec,) = read_records(tmp_path / "run" / "episodes.jsonl")
    assert out["counts"]["ok"] == 1, rec["error"]
    assert rec["usage"]["retries"] == 1, f"{kind} must be retried exactly once"
    assert llm_server.stats()["requests"] == 3, "policy call + its retry + judge call, no more"
    assert elapsed < 4.0


@pytest.mark.slow
def test_call_timeout_is_bounded_and_exhausted_retries_become_an_error_record(
    tmp_path, compose_cfg, llm_server
):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=2, n_episodes=1, frames=2)
    llm_server.configure(rules=RULES, fault_rate=1.0, faults=["timeout"], timeout_sleep_s=30)
    cfg = compose_cfg(
        [
            f"task.data_dir={data}",
            "policy=blind",
            *server_overrides(llm_server),
            "llm.timeout_s=1",
            "llm.max_retries=2",
            "run.cache=false",
        ]
    )
    t0 = time.perf_counter()
    out = run(cfg)
    elapsed = time.perf_counter() - t0
    tally.add("faults injected", llm_server.stats()["requests"])
    assert out["counts"]["error"] == 2
    recs = read_records(tmp_path / "run" / "episodes.jsonl")
    for r in recs:
        assert r["error"]["stage"] == "policy" and "Timeout" in r["error"]["message"]
        assert "failed after 2 retries" in r["error"]["message"]
        assert r["usage"]["retries"] == 2 and r["usage"]["failed_calls"] == 1
        # 3 attempts of 1 s each plus backoff (<= 0.5 s each): never the server's 30 s sleep
        assert r["timings"]["total_s"] < 3 * 1.0 + 2 * 0.5 + 1.5
    assert llm_server.stats()["requests"] == 6
    assert elapsed < 10


@pytest.mark.slow
def test_episode_timeout_cuts_a_slow_episode_and_the_run_goes_on(tmp_path, compose_cfg, llm_server):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=4, n_episodes=1, frames=2)
    llm_server.configure(
        rules=[
            {"pattern": "object 2\\b", "reply": "slow", "fault": "timeout"},
            *RULES,
        ],
        timeout_sleep_s=30,
    )
    cfg = compose_cfg(
        [
            f"task.data_dir={data}",
            "policy=blind",
            *server_overrides(llm_server),
            "llm.timeout_s=20",
            "run.episode_timeout_s=1.5",
            "run.cache=false",
        ]
    )
    t0 = time.perf_counter()
    out = run(cfg)
    assert time.perf_counter() - t0 < 8
    tally.add("faults injected", 1)
    assert out["counts"]["ok"] == 3 and out["counts"]["error"] == 1
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "run" / "episodes.jsonl")}
    err = recs["q0002"]
    assert err["error"]["type"] == "TimeoutError"
    assert err["error"]["message"] == "episode exceeded run.episode_timeout_s"
    assert err["timings"]["total_s"] < 1.5 + 1.0
    assert err["usage"]["failed_calls"] == 1, "the cancelled call is accounted"


def test_empty_reply_twice_is_an_error_naming_the_cause(tmp_path, compose_cfg, llm_server):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=1, n_episodes=1, frames=2)
    llm_server.configure(rules=[{"pattern": r"\nQ: ", "reply": "", "fault": "length"}, *RULES])
    cfg = compose_cfg(
        [f"task.data_dir={data}", "policy=blind", *server_overrides(llm_server), "run.cache=false"]
    )
    out = run(cfg)
    tally.add("faults injected", llm_server.stats()["requests"])
    assert out["counts"]["error"] == 1
    (rec,) = read_records(tmp_path / "run" / "episodes.jsonl")
    assert rec["error"]["type"] == "EmptyReplyError"
    assert "finish_reason='length'" in rec["error"]["message"]
    assert "llm.max_tokens" in rec["error"]["message"]
    assert rec["usage"]["retries"] == 1 and llm_server.stats()["requests"] == 2
