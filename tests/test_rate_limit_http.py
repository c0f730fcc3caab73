"""Adaptive concurrency over real HTTP: a rate-limited server, no failed calls, few 429s."""

from __future__ import annotations

import asyncio

import pytest

from eqa_runner.llm import LLMClient, track_usage, user
from eqa_runner.llm.client import endpoint_stats


def _burst(srv, mode: str, n: int = 60, ceiling: int = 32):
    client = LLMClient(
        {"model": "openai/test-model", "api_base": srv.url, "concurrency": mode,
         "max_retries": 3, "backoff_base_s": 0.05, "backoff_max_s": 0.5},
        role="policy", ceiling=ceiling,
    )  # fmt: skip

    async def main():
        sem = asyncio.Semaphore(ceiling)  # the run's workers

        async def one(i):
            async with sem:
                return await client.acomplete([user(f"q{i}")])

        with track_usage() as usage:
            out = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
        return out, usage

    srv.reset()
    out, usage = asyncio.run(main())
    return client, out, usage, srv.stats()


def test_adaptive_limit_stays_under_a_server_rate_limit(llm_server):
    llm_server.configure(latency_s=0.05, rate_limit_rps=40, rate_limit_burst=4)
    client, out, usage, stats = _burst(llm_server, "adaptive")
    assert not [o for o in out if isinstance(o, BaseException)]
    assert usage.failed_calls == 0 and usage.calls == 60
    rejected = stats["by_fault"].get("rate_limit", 0)
    assert rejected <= 15, f"{rejected} 429s for 60 calls"
    snap = endpoint_stats()[f"{client.endpoint} {client.model}"]
    assert snap["rate_limited"] == rejected and snap["decreases"] >= 1
    assert snap["limit"] < 32  # learned below the ceiling


@pytest.mark.slow
def test_fixed_concurrency_at_the_same_ceiling_hits_the_limit_much_more(llm_server):
    llm_server.configure(latency_s=0.05, rate_limit_rps=40, rate_limit_burst=4)
    _, _, _, adaptive = _burst(llm_server, "adaptive")
    _, _, _, fixed = _burst(llm_server, "fixed")
    a, f = adaptive["by_fault"].get("rate_limit", 0), fixed["by_fault"].get("rate_limit", 0)
    assert f > 3 * max(a, 1)
