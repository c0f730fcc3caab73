"""What calls cost: one :class:`Completion` per reply, :class:`Usage` totals per scope."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from eqa_runner.types import UsageInfo


@dataclass
class Completion:
    """One model reply plus what it cost."""

    text: str
    model: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cached: bool = False
    retries: int = 0
    latency_s: float = 0.0
    payload_bytes: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    # per generated token, its (token, logprob) alternatives, when asked for (top_logprobs=k)
    # and returned; None otherwise (llm/logprobs.py). Old cache entries lack it: None.
    logprobs: list[list[tuple[str, float]]] | None = None
    invalid_logprobs: int = 0  # entries dropped as not a log-probability (llm/logprobs.py)
    # the last prompt position's (decoded token, logprob) entries, when asked for with
    # prompt_logprobs=k (vLLM's field; llm/logprobs.py option_logprob)
    prompt_logprobs: list[tuple[str, float]] | None = None

    def __post_init__(self) -> None:
        if self.logprobs is not None:  # read back from the JSON cache: lists for tuples
            from eqa_runner.llm.logprobs import as_top_logprobs

            self.logprobs = as_top_logprobs(self.logprobs)
        if self.prompt_logprobs is not None:
            self.prompt_logprobs = [(str(t), float(v)) for t, v in self.prompt_logprobs]


USAGE_KEYS: tuple[str, ...] = tuple(UsageInfo.__annotations__)


@dataclass
class Usage:
    """Token / cost / retry totals of the calls made inside one :func:`track_usage` scope."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    cost_unknown_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    failed_calls: int = 0  # calls that failed for good; their retries are counted in ``retries``
    invalid_logprobs: int = 0  # token log-probabilities dropped as invalid (not finite, > 0)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, c: Completion) -> None:
        with self._lock:
            self.calls += 1
            self.retries += c.retries
            self.invalid_logprobs += c.invalid_logprobs
            if c.cached:
                self.cached_calls += 1
                return
            self.prompt_tokens += c.prompt_tokens
            self.completion_tokens += c.completion_tokens
            if c.cost_usd is None:
                self.cost_unknown_calls += 1
            elif self.cost_usd is not None:
                self.cost_usd += c.cost_usd

    def add_failure(self, retries: int, failed: int = 1) -> None:
        """Count a call that failed for good (or was cancelled) after ``retries`` retries."""
        with self._lock:
            self.failed_calls += failed
            self.retries += retries

    def as_dict(self) -> UsageInfo:
        d = cast(UsageInfo, {k: getattr(self, k) for k in USAGE_KEYS})
        if self.cost_unknown_calls and self.cost_usd == 0.0:
            d["cost_usd"] = None  # unknown, not free
        return d


_USAGE: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("eqa_usage", default=None)


@contextmanager
def track_usage() -> Iterator[Usage]:
    """Collect the usage of every call made in this context (an asyncio task or a thread)."""
    usage = Usage()
    token = _USAGE.set(usage)
    try:
        yield usage
    finally:
        _USAGE.reset(token)


def account(c: Completion) -> None:
    """Add a completed call to the current :func:`track_usage` scope (if any)."""
    usage = _USAGE.get()
    if usage is not None:
        usage.add(c)


def account_failure(retries: int, failed: int = 1) -> None:
    """Add a call that failed for good to the current :func:`track_usage` scope (if any)."""
    usage = _USAGE.get()
    if usage is not None:
        usage.add_failure(retries, failed)
