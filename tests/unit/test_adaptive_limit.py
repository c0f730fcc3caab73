"""AIMD admission of model calls: grows on success, halves once per congestion event."""

from __future__ import annotations

import asyncio
import time

import pytest

from eqa_runner.llm.adaptive import OK, RATE_LIMITED, TIMEOUT, AdaptiveLimit, limit_for


def run(coro):
    return asyncio.run(coro)


def test_grows_by_about_one_per_round_and_respects_the_ceiling():
    async def main():
        lim = AdaptiveLimit(8, initial=2)
        for _ in range(2):  # one round of 2 successes: 2 -> 2.5 -> 2.9
            await lim.release(await lim.acquire(), OK)
        assert lim.limit == pytest.approx(2.9)
        for _ in range(200):
            await lim.release(await lim.acquire(), OK)
        assert lim.limit == 8.0
        return lim

    run(main())


def test_halves_once_per_congestion_event():
    async def main():
        lim = AdaptiveLimit(32, initial=16)
        tickets = [await lim.acquire() for _ in range(16)]
        for t in tickets:  # 16 calls in flight all rate-limited: one decrease, not 16
            await lim.release(t, RATE_LIMITED)
        assert lim.limit == 8.0 and lim.stats["decreases"] == 1
        t = await lim.acquire()  # a call started after the decrease can decrease again
        await lim.release(t, TIMEOUT)
        assert lim.limit == 4.0
        for _ in range(10):
            await lim.release(await lim.acquire(), RATE_LIMITED)
        assert lim.limit == 1.0  # never below the minimum

    run(main())


def test_in_flight_never_exceeds_the_limit():
    async def main():
        lim = AdaptiveLimit(64, initial=3)
        active = peak = 0

        async def call():
            nonlocal active, peak
            t = await lim.acquire()
            active += 1
            assert active <= int(lim.limit)  # admitted only within the current limit
            peak = max(peak, active)
            await asyncio.sleep(0.002)
            active -= 1
            await lim.release(t, OK)

        await asyncio.gather(*(call() for _ in range(30)))
        assert peak == lim.peak_in_flight and 3 < peak <= int(lim.limit)  # grew from 3
        assert lim.stats[OK] == 30

    run(main())


def test_retry_after_pauses_new_calls():
    async def main():
        lim = AdaptiveLimit(4, initial=4)
        t = await lim.acquire()
        await lim.release(t, RATE_LIMITED, retry_after_s=0.15)
        t0 = time.monotonic()
        t = await lim.acquire()
        waited = time.monotonic() - t0
        await lim.release(t, OK)
        return waited

    assert run(main()) >= 0.14


def test_one_limit_per_endpoint_and_model():
    async def main():
        a = limit_for("http://127.0.0.1:1/v1", "m1", 8)
        assert limit_for("http://127.0.0.1:1/v1", "m1", 8) is a
        assert limit_for("http://127.0.0.1:1/v1", "m2", 8) is not a
        assert limit_for("openai", "m1", 8) is not a

    run(main())


def test_bad_settings_refused():
    with pytest.raises(ValueError, match="ceiling"):
        AdaptiveLimit(0)
    with pytest.raises(ValueError, match="decrease"):
        AdaptiveLimit(4, decrease=1.5)


def test_slow_start_step_sets_the_growth_per_round_until_the_first_decrease():
    async def main():
        lim = AdaptiveLimit(64, initial=8, slow_start=True, slow_start_step=2.0)
        tickets = [await lim.acquire() for _ in range(8)]
        for t in tickets:  # a round of 8 successes, +2 each: x3 per round
            await lim.release(t, OK)
        assert lim.limit == 24.0
        await lim.release(await lim.acquire(), RATE_LIMITED)  # the slow start ends
        after = lim.limit
        await lim.release(await lim.acquire(), OK)
        assert after == pytest.approx(24.0 * 0.5) and lim.limit == pytest.approx(after + 1 / after)

    run(main())
