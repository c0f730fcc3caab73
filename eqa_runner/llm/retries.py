"""One request's attempts: through the endpoint's admission gate, each with a deadline, until one
succeeds or the failure is final.

An attempt's failure is classified once (:func:`~eqa_runner.llm.transport.outcome_of`): a 429
tells the gate (an :class:`~eqa_runner.llm.adaptive.AdaptiveLimit` lowers its limit and honours
``Retry-After``), a retryable error waits ``Retry-After`` (plus up to half the backoff, so
calls refused together do not retry together) or a jittered exponential backoff, any other
error (or the last retry) ends the request as one :class:`LLMError` naming the model, its role
and the retries made. A cancelled request (the episode's timeout) accounts the requests it
made and re-raises.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from eqa_runner.llm.adaptive import ERROR, OK, RATE_LIMITED, AdaptiveLimit
from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.errors import LLMError, is_retryable, retry_after_s, short
from eqa_runner.llm.transport import DirectCallError, FixedGate, error_name, outcome_of
from eqa_runner.llm.usage import account_failure

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryLoop:
    """How one client retries: its config's limits, its name in messages and its jitter."""

    cfg: LLMConfig
    role: str
    endpoint: str
    rng: random.Random

    async def run(
        self, send: Callable[[], Awaitable[Any]], gate: AdaptiveLimit | FixedGate
    ) -> tuple[Any, int, float]:
        """The first successful reply of ``send()``: (reply, retries made, its latency in s)."""
        retries = 0
        while True:
            t0 = time.perf_counter()
            ticket = await gate.acquire()
            try:
                resp = await asyncio.wait_for(send(), timeout=self.cfg.timeout_s + 5)
            except asyncio.CancelledError:  # episode timeout: the attempt in flight is lost
                asyncio.ensure_future(gate.release(ticket, ERROR))
                account_failure(retries)
                raise
            except Exception as exc:  # noqa: BLE001 - classified in _wait_before_retry
                wait = await self._wait_before_retry(exc, retries, gate, ticket)
                retries += 1
                log.info(
                    "%s: %s, retry %d in %.2fs", self.cfg.model, error_name(exc), retries, wait
                )
            else:
                await gate.release(ticket, OK)
                return resp, retries, time.perf_counter() - t0
            try:
                await asyncio.sleep(wait)
            except asyncio.CancelledError:  # cancelled while backing off: `retries` requests made
                account_failure(retries - 1)
                raise

    async def _wait_before_retry(
        self, exc: Exception, retries: int, gate: AdaptiveLimit | FixedGate, ticket: Any
    ) -> float:
        """Release the gate with the attempt's outcome; the seconds to wait before the next
        attempt, or the request's final :class:`LLMError`."""
        wait = retry_after_s(exc)
        outcome = outcome_of(exc)
        await gate.release(ticket, outcome, wait if outcome == RATE_LIMITED else None)
        if outcome == RATE_LIMITED and isinstance(gate, AdaptiveLimit):
            log.info(
                "%s %s: rate limited; calls in flight limited to %.1f (peak %d)",
                self.endpoint,
                self.cfg.model,
                gate.limit,
                gate.peak_in_flight,
            )
        ok = exc.retryable if isinstance(exc, DirectCallError) else is_retryable(exc)
        if not ok or retries >= self.cfg.max_retries:
            account_failure(retries)
            raise LLMError(
                f"{self.cfg.model} ({self.role}) failed after {retries} retries: "
                f"{error_name(exc)}: {short(exc)}"
            ) from exc
        backoff = min(self.cfg.backoff_max_s, self.cfg.backoff_base_s * 2**retries)
        if wait is None:
            wait = backoff * (0.5 + self.rng.random() / 2)
        else:  # at least Retry-After, jittered: the calls refused together do not retry together
            wait += backoff * self.rng.random() / 2
        return min(wait, self.cfg.backoff_max_s)
