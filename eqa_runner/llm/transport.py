"""How calls reach an endpoint: admission gates, the direct HTTP path, the thread pool.

Used by :class:`~eqa_runner.llm.client.LLMClient`; nothing here knows about configs or roles.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from eqa_runner.llm.adaptive import ERROR, RATE_LIMITED, TIMEOUT, Ticket
from eqa_runner.llm.errors import short
from eqa_runner.llm.loader import load_litellm

# AIMD on 429s / timeouts (bench/rate_limit.py): a gentler decrease than TCP's 0.5, and a
# slow additive increase (+0.25 call per round of `limit` calls) so that probing past a
# provider's limit, which costs a 429 each time, happens rarely
ADAPTIVE_DECREASE = 0.7
ADAPTIVE_INCREASE = 0.25
ADAPTIVE_INITIAL = 8  # then doubling per round (slow start) up to the ceiling until a 429
ADAPTIVE_SLOW_START_STEP = 1.0  # limit + this per success in slow start: x2 per round
#: the adaptive limit's settings as :func:`~eqa_runner.llm.adaptive.limit_for` takes them
ADAPTIVE: dict[str, Any] = {
    "initial": ADAPTIVE_INITIAL,
    "increase": ADAPTIVE_INCREASE,
    "decrease": ADAPTIVE_DECREASE,
    "slow_start": True,
    "slow_start_step": ADAPTIVE_SLOW_START_STEP,
}

# Per-provider request limits checked before sending: (max images, max bytes per image).
PROVIDER_IMAGE_LIMITS: dict[str, tuple[int, int]] = {
    "openai": (500, 20 * 1024 * 1024),
    "azure": (500, 20 * 1024 * 1024),
    "anthropic": (100, 5 * 1024 * 1024),
    "bedrock": (20, 3_750_000),
    "gemini": (3000, 7 * 1024 * 1024),
    "vertex_ai": (3000, 7 * 1024 * 1024),
}

_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
_LIMITERS = weakref.WeakKeyDictionary()


def limiter(n: int) -> asyncio.Semaphore:
    """One semaphore per event loop: the global cap on concurrent model calls (``fixed``)."""
    loop = asyncio.get_running_loop()
    sem = _LIMITERS.get(loop)
    if sem is None:
        sem = _LIMITERS[loop] = asyncio.Semaphore(n)
    return sem


class FixedGate:
    """``llm.concurrency: fixed``: the per-loop semaphore behind the adaptive gate's interface."""

    def __init__(self, sem: asyncio.Semaphore) -> None:
        self.sem = sem

    async def acquire(self) -> Ticket:
        await self.sem.acquire()
        return Ticket(0)

    async def release(
        self, ticket: Ticket, outcome: str, retry_after_s: float | None = None
    ) -> None:
        self.sem.release()


_SESSIONS: dict[asyncio.AbstractEventLoop, Any] = {}


def _http_session() -> Any:
    """One ``aiohttp.ClientSession`` per event loop, closed when ``asyncio.run`` finishes it.

    aiohttp, not httpx: httpcore's pool rescans every connection for every queued request
    (O(connections x requests) per event), ~10 ms of CPU per call at 64 in flight
    (bench/run_loop.py); aiohttp's connector spends ~0.2-0.4 ms."""
    loop = asyncio.get_running_loop()
    session = _SESSIONS.get(loop)
    if session is None:
        import aiohttp

        # trust_env=False: with it aiohttp hands every request to a thread twice (a ~/.netrc
        # read and a proxy look-up); the proxy is looked up once per origin (_proxy_for)
        session = _SESSIONS[loop] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=_ssl_context()), trust_env=False
        )
        holder = _close_with_loop(loop, session)
        loop.create_task(holder.__anext__())  # parked at its yield until loop shutdown
        _HOLDERS[loop] = holder
        _PROXIES[loop] = {}
    return session


_HOLDERS: dict[asyncio.AbstractEventLoop, Any] = {}
_PROXIES: dict[asyncio.AbstractEventLoop, dict[tuple[str, str, int | None], Any]] = {}


def _proxy_for(url: str) -> tuple[Any, Any]:
    """(proxy URL, proxy auth) for ``url`` from HTTP(S)_PROXY / NO_PROXY, as httpx and litellm
    honour them ((None, None): direct); read once per origin and event loop (httpx reads them
    once per client)."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    u = URL(url)
    per_loop = _PROXIES.setdefault(asyncio.get_running_loop(), {})
    key = (u.scheme, u.host or "", u.port)
    if key not in per_loop:
        try:
            per_loop[key] = get_env_proxy_for_url(u)
        except LookupError:  # none set, or NO_PROXY covers the host
            per_loop[key] = (None, None)
    return cast(tuple[Any, Any], per_loop[key])


async def _close_with_loop(loop: asyncio.AbstractEventLoop, session: Any) -> Any:
    """Parked at ``yield``; ``asyncio.run``'s ``shutdown_asyncgens`` closes it, which closes
    the session (the loop is never kept alive by the module's dicts)."""
    try:
        yield None
    finally:
        _SESSIONS.pop(loop, None)
        _HOLDERS.pop(loop, None)
        _PROXIES.pop(loop, None)
        await session.close()


def _ssl_context() -> Any:
    """Verified TLS with the CA bundle httpx and litellm use (``SSL_CERT_FILE``, else certifi);
    one context per bundle for the process (loading a bundle is ~50 ms of CPU, once per run)."""
    cafile = os.environ.get("SSL_CERT_FILE")
    if not cafile:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            cafile = None
    return _ssl_context_for(cafile)


@functools.lru_cache(maxsize=4)
def _ssl_context_for(cafile: str | None) -> Any:
    import ssl

    return ssl.create_default_context(cafile=cafile)


class DirectCallError(Exception):
    """A failed direct HTTP call: the status (None: no response) and whether to retry."""

    def __init__(
        self,
        msg: str,
        *,
        status: int | None = None,
        headers: Any = None,
        retryable: bool = True,
        timeout: bool = False,
    ) -> None:
        super().__init__(msg)
        self.status_code = status
        self.litellm_response_headers = headers  # read by errors.retry_after_s
        self.retryable = retryable
        self.timeout = timeout


def outcome_of(exc: BaseException) -> str:
    """How a failed attempt counts for the adaptive limit: rate limited, timed out or other."""
    if isinstance(exc, DirectCallError):
        if exc.status_code == 429:
            return RATE_LIMITED
        return TIMEOUT if exc.timeout else ERROR
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return TIMEOUT
    if getattr(exc, "status_code", None) == 429:
        return RATE_LIMITED
    name = type(exc).__name__
    if name == "RateLimitError":
        return RATE_LIMITED
    if name in ("Timeout", "APITimeoutError"):
        return TIMEOUT
    return ERROR


def endpoint_stats() -> dict[str, dict[str, float]]:
    """Per ``endpoint model``, the latest adaptive limit's state: limit, peak in flight, 429s."""
    from eqa_runner.llm.adaptive import LAST

    return {f"{endpoint} {model}": lim.snapshot() for (endpoint, model), lim in LAST.items()}


def endpoint_summary() -> list[dict[str, Any]]:
    """:func:`endpoint_stats` for the summary: one entry per endpoint and model called in this
    process (the limit it ended at, peak calls in flight, 429s, timeouts, decreases); endpoint
    URLs without user-info."""
    from eqa_runner.llm.adaptive import LAST
    from eqa_runner.llm.secrets import strip_userinfo

    return [
        {"endpoint": strip_userinfo(endpoint), "model": model, **lim.snapshot()}
        for (endpoint, model), lim in sorted(LAST.items())
    ]


_CALL_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def call_pool(size: int) -> ThreadPoolExecutor:
    """Threads for ``transport: thread`` (process-wide; calls are capped by the limiter)."""
    global _CALL_POOL
    with _POOL_LOCK:
        if _CALL_POOL is None:
            _CALL_POOL = ThreadPoolExecutor(max(1, size), thread_name_prefix="llm-call")
    return _CALL_POOL


def plain_openai_chat(name: str) -> bool:
    """Whether litellm sends this OpenAI model's messages unchanged (its plain GPT config; not
    the o-series / reasoning configs, which rewrite system messages and parameters)."""
    try:
        load_litellm()
        from litellm.llms.openai.chat.gpt_transformation import (
            OpenAIGPTConfig,
            OpenAIUnknownModelConfig,
        )
        from litellm.types.utils import LlmProviders
        from litellm.utils import ProviderConfigManager

        conf = ProviderConfigManager.get_provider_chat_config(name, LlmProviders.OPENAI)
    except Exception:  # noqa: BLE001 - another litellm layout: keep litellm
        return False
    return type(conf) in (OpenAIGPTConfig, OpenAIUnknownModelConfig)


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


async def direct_post(
    url: str, data: bytes, headers: dict[str, str], timeout: float
) -> dict[str, Any]:
    """One direct HTTP attempt: the reply's JSON, or a :class:`DirectCallError`."""
    import aiohttp

    session = _http_session()
    proxy, proxy_auth = _proxy_for(url)
    try:
        async with session.post(
            url,
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
            proxy=proxy,
            proxy_auth=proxy_auth,
        ) as r:
            raw = await r.read()
            st, reply_headers = r.status, r.headers
    except asyncio.TimeoutError as e:
        raise DirectCallError(f"Timeout: {e!r}", timeout=True) from e
    except aiohttp.ClientError as e:  # reset, refused, protocol error, cut-off body
        raise DirectCallError(f"connection error: {e!r}") from e
    if st >= 400:
        text = raw.decode("utf-8", "replace")
        raise DirectCallError(
            f"HTTP {st}: {text}",
            status=st,
            headers=reply_headers,
            retryable=st in (408, 409, 429)
            or (st >= 500 and not ("credential" in text.lower() or "api key" in text.lower())),
        )
    try:
        reply = json.loads(raw)
        reply["choices"][0]["message"]  # noqa: B018 - a reply without a message
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise DirectCallError(f"malformed reply: {short(e)}") from e
    return dict(reply)


def error_name(exc: BaseException) -> str:
    if isinstance(exc, DirectCallError):
        if exc.status_code == 429:
            return "RateLimitError"
        return "Timeout" if exc.timeout else "APIError"
    return type(exc).__name__
