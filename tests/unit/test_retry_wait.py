"""The wait before a retry: at least the server's Retry-After, and spread, so that the calls one
burst of 429s refused do not all come back at the same instant (and lose to each other again)."""

from __future__ import annotations

import asyncio
import random

from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.retries import RetryLoop
from eqa_runner.llm.transport import DirectCallError, FixedGate


def _waits(retry_after_ms: str | None, retries: int, n: int = 50) -> list[float]:
    cfg = LLMConfig(model="openai/test-model", backoff_base_s=0.05, backoff_max_s=0.5)
    loop = RetryLoop(cfg, role="policy", endpoint="http://127.0.0.1:1", rng=random.Random(0))
    headers = {"retry-after-ms": retry_after_ms} if retry_after_ms else {}

    async def main() -> list[float]:
        gate = FixedGate(asyncio.Semaphore(n))
        out = []
        for _ in range(n):
            ticket = await gate.acquire()
            exc = DirectCallError("HTTP 429", status=429, headers=headers)
            out.append(await loop._wait_before_retry(exc, retries, gate, ticket))
        return out

    return asyncio.run(main())


def test_a_retry_after_wait_is_at_least_retry_after_and_spread() -> None:
    waits = _waits("25", retries=0)
    assert min(waits) >= 0.025
    assert max(waits) - min(waits) > 0.015  # spread over up to half the first backoff (25 ms)
    later = _waits("25", retries=2)  # the spread grows with the backoff
    assert max(later) - min(later) > 2 * (max(waits) - min(waits))


def test_a_retry_after_wait_stays_within_the_backoff_cap() -> None:
    assert max(_waits("400", retries=5)) <= 0.5


def test_without_retry_after_the_wait_is_the_jittered_backoff() -> None:
    waits = _waits(None, retries=1)  # 0.1 s, jittered down to half
    assert min(waits) >= 0.05 and max(waits) <= 0.1 and max(waits) - min(waits) > 0.02
