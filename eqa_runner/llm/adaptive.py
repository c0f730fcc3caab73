"""How many calls may be in flight to one model endpoint: learned, not configured.

Additive increase, multiplicative decrease (the TCP congestion rule): every successful call
raises the limit by ``increase / limit`` (about +1 per round of ``limit`` calls), a rate-limit
reply (429) or a timeout multiplies it by ``decrease``, once per congestion event (calls that
started before the last decrease do not decrease it again). A ``Retry-After`` pauses new calls
to that endpoint until it has passed. ``ceiling`` (``run.workers``-bounded) is never exceeded.
With ``slow_start`` the limit first doubles every round (+``slow_start_step`` = 1 per success,
as TCP's slow start; 2 triples it) until the first decrease, then grows additively.

One :class:`AdaptiveLimit` per endpoint (provider or ``api_base``, and model) per event loop:
:func:`limit_for`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

OK, RATE_LIMITED, TIMEOUT, ERROR = "ok", "rate_limited", "timeout", "error"


@dataclass
class Ticket:
    """One admitted call: when it started and under which decrease epoch."""

    epoch: int
    started: float = field(default_factory=time.monotonic)


class AdaptiveLimit:
    """An asyncio admission gate whose width adapts by AIMD (see module docstring)."""

    def __init__(
        self,
        ceiling: int,
        *,
        initial: float = 4.0,
        increase: float = 1.0,
        decrease: float = 0.5,
        minimum: float = 1.0,
        slow_start: bool = False,
        slow_start_step: float = 1.0,
    ) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be >= 1, got {ceiling}")
        if not 0.0 < decrease < 1.0 or increase <= 0.0:
            raise ValueError("need 0 < decrease < 1 and increase > 0")
        self.ceiling = int(ceiling)
        self.minimum = max(1.0, float(minimum))
        self.limit = min(float(self.ceiling), max(self.minimum, float(initial)))
        self.increase, self.decrease = float(increase), float(decrease)
        self.slow_start = bool(slow_start)
        self.slow_start_step = float(slow_start_step)
        self.in_flight = 0
        self.epoch = 0
        self.paused_until = 0.0
        self.stats = {OK: 0, RATE_LIMITED: 0, TIMEOUT: 0, ERROR: 0, "decreases": 0}
        self.peak_in_flight = 0
        self._cond = asyncio.Condition()

    def _may_start(self) -> bool:
        return self.in_flight < math.floor(self.limit) and time.monotonic() >= self.paused_until

    async def acquire(self) -> Ticket:
        """Wait until a call may start; the caller must :meth:`release` the ticket."""
        async with self._cond:
            while not self._may_start():
                pause = self.paused_until - time.monotonic()
                if pause > 0:
                    # woken early by a release, or when the pause ends
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._cond.wait(), timeout=pause)
                else:
                    await self._cond.wait()
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return Ticket(self.epoch)

    async def release(
        self, ticket: Ticket, outcome: str, retry_after_s: float | None = None
    ) -> None:
        """Record the call's outcome and let waiting calls re-check the (new) limit."""
        async with self._cond:
            self.in_flight -= 1
            self.stats[outcome] = self.stats.get(outcome, 0) + 1
            if outcome == OK:
                slow = self.slow_start and self.epoch == 0
                step = self.slow_start_step if slow else self.increase / self.limit
                self.limit = min(float(self.ceiling), self.limit + step)
            elif outcome in (RATE_LIMITED, TIMEOUT) and ticket.epoch == self.epoch:
                self.limit = max(self.minimum, self.limit * self.decrease)
                self.epoch += 1
                self.stats["decreases"] += 1
            if retry_after_s and retry_after_s > 0:
                self.paused_until = max(self.paused_until, time.monotonic() + retry_after_s)
            self._cond.notify_all()

    def snapshot(self) -> dict[str, float]:
        """Current limit, peak in flight and outcome counts (for logs and benches)."""
        return {"limit": round(self.limit, 2), "peak_in_flight": self.peak_in_flight, **self.stats}


_LIMITS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], AdaptiveLimit]]
_LIMITS = weakref.WeakKeyDictionary()
LAST: dict[tuple[str, str], AdaptiveLimit] = {}  # the latest limit per endpoint (stats, logs)


def limit_for(endpoint: str, model: str, ceiling: int, **kw: Any) -> AdaptiveLimit:
    """The adaptive limit of ``(endpoint, model)`` on the running event loop (created once per
    loop: a new ``asyncio.run`` starts afresh, never with a dead loop's state)."""
    per_loop = _LIMITS.setdefault(asyncio.get_running_loop(), {})
    lim = per_loop.get((endpoint, model))
    if lim is None:
        lim = per_loop[(endpoint, model)] = LAST[(endpoint, model)] = AdaptiveLimit(ceiling, **kw)
    return lim
