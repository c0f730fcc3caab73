"""The one place that talks to models: litellm calls with retries, a disk cache and accounting.

litellm is imported lazily (it takes seconds) and with its local cost map, so nothing here touches
the network until a real call is made. ``model: offline`` never touches it at all. Transport:
``thread`` runs litellm's sync client in a bounded thread pool driven from the event loop,
``async`` awaits ``litellm.acompletion``; both share one per-loop cap on concurrent calls.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from eqa_runner.errors import ConfigSecretError
from eqa_runner.llm.cache import CACHE_FORMAT_VERSION, DiskCache
from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.errors import EmptyReplyError, LLMError, is_retryable, retry_after_s, short
from eqa_runner.llm.loader import load_litellm
from eqa_runner.llm.messages import Message, message_images, message_text, wire_messages
from eqa_runner.llm.offline import DEFAULT_OFFLINE_REPLY, is_offline, offline_completion
from eqa_runner.llm.usage import Completion, account, account_failure

log = logging.getLogger(__name__)

# Per-provider request limits checked before sending: (max images, max bytes per image).
PROVIDER_IMAGE_LIMITS: dict[str, tuple[int, int]] = {
    "openai": (500, 20 * 1024 * 1024),
    "azure": (500, 20 * 1024 * 1024),
    "anthropic": (100, 5 * 1024 * 1024),
    "bedrock": (20, 3_750_000),
    "gemini": (3000, 7 * 1024 * 1024),
    "vertex_ai": (3000, 7 * 1024 * 1024),
}

_LIMITERS: dict[int, asyncio.Semaphore] = {}


def _limiter(n: int) -> asyncio.Semaphore:
    """One semaphore per event loop: the global cap on concurrent model calls."""
    loop_id = id(asyncio.get_running_loop())
    sem = _LIMITERS.get(loop_id)
    if sem is None:
        sem = _LIMITERS[loop_id] = asyncio.Semaphore(n)
    return sem


_CALL_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _call_pool(size: int) -> ThreadPoolExecutor:
    """Threads for ``transport: thread`` (process-wide; calls are capped by the limiter)."""
    global _CALL_POOL
    with _POOL_LOCK:
        if _CALL_POOL is None:
            _CALL_POOL = ThreadPoolExecutor(max(1, size), thread_name_prefix="llm-call")
    return _CALL_POOL


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


class LLMClient:
    """Calls one model for one role (``policy``, ``judge``, ``stop``)."""

    def __init__(
        self,
        cfg: LLMConfig | dict[str, Any] | Any,
        *,
        role: str,
        cache: DiskCache | None = None,
        cache_salt: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(cfg, LLMConfig):
            known = set(LLMConfig.__dataclass_fields__)
            cfg = LLMConfig(**{k: v for k, v in dict(cfg).items() if k in known})
        if cfg.transport not in ("thread", "async"):
            raise ValueError(f"llm.transport={cfg.transport!r}: expected thread or async")
        if cfg.api_key:
            raise ConfigSecretError(
                f"{role}: an API key was given as a config value (api_key). Keys are never "
                "put in configs: set `api_key_env` to the NAME of an environment variable "
                "that holds the key, e.g. llm.api_key_env=MY_PROVIDER_KEY."
            )
        self.cfg = cfg
        self.role = role
        self.cache = cache
        self.cache_salt = dict(cache_salt or {})
        self._rng = random.Random(hash((role, cfg.model)))
        self._sent_memo: dict[str, dict[str, Any]] = {}
        self._dummy_key: bool | None = None

    @property
    def model(self) -> str:
        return self.cfg.model

    @property
    def offline(self) -> bool:
        return is_offline(self.cfg.model)

    def unknown_model(self) -> str | None:
        """Why litellm cannot route this model string (None when it can)."""
        if self.offline:
            return None
        try:
            load_litellm().get_llm_provider(self.cfg.model, api_base=self.cfg.api_base)
        except Exception as e:  # noqa: BLE001 - litellm raises BadRequestError here
            return (
                f"litellm cannot route this model ({short(e, 160)}); use a provider-"
                "prefixed litellm model string, e.g. openai/gpt-4o-2024-08-06"
            )
        return None

    def explicit_price(self) -> tuple[float, float] | None:
        """(input, output) USD per million tokens set in the config, or None."""
        i, o = self.cfg.input_usd_per_mtok, self.cfg.output_usd_per_mtok
        if i is None and o is None:
            return None
        return float(i or 0.0), float(o or 0.0)

    def missing_credentials(self) -> list[str]:
        """Names of environment variables this client needs but that are unset (never values)."""
        if self.offline:
            return []
        if self.cfg.api_key_env:
            return [] if os.environ.get(self.cfg.api_key_env) else [self.cfg.api_key_env]
        if self.cfg.api_base:
            return []  # self-hosted OpenAI-compatible servers usually need no key
        return self.missing_provider_key()

    def _needs_dummy_key(self) -> bool:
        if self._dummy_key is None:
            self._dummy_key = bool(self.missing_provider_key())
        return self._dummy_key

    def missing_provider_key(self) -> list[str]:
        """Provider key variables litellm would look for and that are unset."""
        try:
            env = load_litellm().validate_environment(model=self.cfg.model)
        except Exception:
            return []
        return [] if env.get("keys_in_environment") else list(env.get("missing_keys") or [])

    def params(self, *, max_tokens: int | None = None) -> dict[str, Any]:
        """Sampling parameters requested for a call (before a provider drops any)."""
        p: dict[str, Any] = {}
        if self.cfg.temperature is not None:
            p["temperature"] = self.cfg.temperature
        mt = max_tokens if max_tokens is not None else self.cfg.max_tokens
        if mt is not None:
            p["max_tokens"] = mt
        if self.cfg.seed is not None:
            p["seed"] = self.cfg.seed
        p.update(self.cfg.extra_params or {})
        return p

    def sent_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The subset of ``params`` litellm will actually send to this model (after dropping)."""
        if self.offline or not params:
            return dict(params)
        key = json.dumps(params, sort_keys=True, default=str)
        if key not in self._sent_memo:
            self._sent_memo[key] = self._sent_params(params)
        return dict(self._sent_memo[key])

    def _sent_params(self, params: dict[str, Any]) -> dict[str, Any]:
        litellm = load_litellm()
        try:
            from litellm.utils import get_optional_params

            model, provider, _, _ = litellm.get_llm_provider(self.cfg.model)
            kept = get_optional_params(
                model=model,
                custom_llm_provider=provider,
                drop_params=self.cfg.drop_params,
                **params,
            )
        except Exception:  # unknown mapping: assume everything is sent
            return dict(params)
        return {k: v for k, v in params.items() if k in kept}

    def cache_key(self, messages: Sequence[Message], params: dict[str, Any]) -> str:
        blob = {
            "v": CACHE_FORMAT_VERSION,
            "model": self.cfg.model,
            "api_base": self.cfg.api_base,
            "messages": wire_messages(messages, keyed=True),
            "params": params,
            "salt": self.cache_salt,
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()

    def check_images(self, messages: Sequence[Message]) -> int:
        """Refuse requests over the provider's image limits; return the payload size in bytes."""
        images = message_images(messages)
        limit = PROVIDER_IMAGE_LIMITS.get(provider_of(self.cfg.model))
        if limit:
            max_n, max_bytes = limit
            if len(images) > max_n:
                raise LLMError(
                    f"{self.cfg.model}: {len(images)} images in one request, provider limit is "
                    f"{max_n}; lower policy.num_frames."
                )
            big = max((len(i.data) for i in images), default=0)
            if big > max_bytes:
                raise LLMError(
                    f"{self.cfg.model}: an image of {big} bytes exceeds the provider limit of "
                    f"{max_bytes}; lower policy.image_size or use policy.image_format=jpeg."
                )
        return sum(len(i.data) * 4 // 3 for i in images) + len(message_text(messages))

    async def acomplete(
        self, messages: Sequence[Message], *, offline_reply: str = DEFAULT_OFFLINE_REPLY
    ) -> Completion:
        """One chat completion: cache → (retrying) call → accounting. Raises :class:`LLMError`."""
        params = self.params()
        if self.offline:
            c = offline_completion(offline_reply, params)
            account(c)
            return c
        payload = self.check_images(messages)
        sent = self.sent_params(params)
        key = self.cache_key(messages, sent) if self.cache else None
        if key and (hit := self.cache.get(key)) is not None:
            c = Completion(**{**hit, "cached": True, "retries": 0, "latency_s": 0.0})
            account(c)
            return c
        c = await self._call_with_retries(messages, params, payload)
        if not c.text.strip():
            # empty reply / budget spent on hidden reasoning: one retry with a larger budget
            bigger = (params.get("max_tokens") or 256) * 4
            log.warning(
                "%s: empty reply (finish_reason=%s); retrying once with max_tokens=%d",
                self.cfg.model,
                c.finish_reason,
                bigger,
            )
            try:
                c2 = await self._call_with_retries(
                    messages, self.params(max_tokens=bigger), payload
                )
            except (LLMError, asyncio.CancelledError):
                account_failure(c.retries + 1, failed=0)  # the empty first call's requests
                raise
            c2.retries += c.retries + 1
            if not c2.text.strip():
                account_failure(c2.retries)  # a failed call: its requests are its retries + 1
                raise EmptyReplyError(
                    f"{self.cfg.model} ({self.role}) returned an empty reply twice "
                    f"(finish_reason={c2.finish_reason!r}, max_tokens={params.get('max_tokens')}"
                    f" then {bigger}). Reasoning models spend the budget on hidden tokens: raise "
                    "llm.max_tokens (or llm.extra_params.max_completion_tokens) or pick a "
                    "non-reasoning model."
                )
            c = c2
        if key:
            self.cache.put(
                key,
                {k: v for k, v in asdict(c).items() if k not in ("cached", "retries", "latency_s")},
            )
        account(c)
        return c

    async def _call_with_retries(
        self, messages: Sequence[Message], params: dict[str, Any], payload: int
    ) -> Completion:
        litellm = load_litellm()
        kwargs: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": wire_messages(messages, keyed=False),
            "timeout": self.cfg.timeout_s,
            "num_retries": 0,
            "drop_params": self.cfg.drop_params,
            **params,
        }
        if self.cfg.api_base:
            kwargs["api_base"] = self.cfg.api_base
        if self.cfg.api_key_env:
            key = os.environ.get(self.cfg.api_key_env)
            if not key:
                raise LLMError(
                    f"{self.role}: environment variable {self.cfg.api_key_env} "
                    "(llm.api_key_env) is not set."
                )
            kwargs["api_key"] = key
        elif self.cfg.api_base and self._needs_dummy_key():
            kwargs["api_key"] = "no-key"  # self-hosted OpenAI-compatible server without auth
        log.debug("%s call: %d messages, payload ~%d bytes", self.cfg.model, len(messages), payload)
        retries = 0
        while True:
            t0 = time.perf_counter()
            try:
                async with _limiter(self.cfg.max_concurrent_calls):
                    if self.cfg.transport == "async":
                        call = litellm.acompletion(**kwargs)
                    else:  # litellm's sync client in a bounded pool (less CPU per call here)
                        call = asyncio.get_running_loop().run_in_executor(
                            _call_pool(self.cfg.max_concurrent_calls),
                            functools.partial(litellm.completion, **kwargs),
                        )
                    resp = await asyncio.wait_for(call, timeout=self.cfg.timeout_s + 5)
                return self._completion(resp, params, retries, time.perf_counter() - t0, payload)
            except asyncio.CancelledError:  # episode timeout: the attempt in flight is lost
                account_failure(retries)
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                if not is_retryable(exc) or retries >= self.cfg.max_retries:
                    account_failure(retries)
                    raise LLMError(
                        f"{self.cfg.model} ({self.role}) failed after {retries} retries: "
                        f"{type(exc).__name__}: {short(exc)}"
                    ) from exc
                wait = retry_after_s(exc)
                if wait is None:
                    wait = min(self.cfg.backoff_max_s, self.cfg.backoff_base_s * 2**retries)
                    wait *= 0.5 + self._rng.random() / 2
                wait = min(wait, self.cfg.backoff_max_s)
                retries += 1
                log.info(
                    "%s: %s, retry %d in %.2fs", self.cfg.model, type(exc).__name__, retries, wait
                )
            try:
                await asyncio.sleep(wait)
            except asyncio.CancelledError:  # cancelled while backing off: `retries` requests made
                account_failure(retries - 1)
                raise

    def _completion(
        self, resp: Any, params: dict[str, Any], retries: int, latency: float, payload: int
    ) -> Completion:
        choice = resp.choices[0]
        text = (choice.message.content or "") if choice.message else ""
        usage = getattr(resp, "usage", None)
        # litellm prices every response already (None for models without a known price)
        hidden = getattr(resp, "_hidden_params", None) or {}
        raw_cost = hidden.get("response_cost")
        cost = float(raw_cost) if raw_cost is not None else None
        explicit = self.explicit_price()
        if explicit is not None:  # the config's price wins (llm.input_usd_per_mtok ...)
            cost = (
                explicit[0] * int(getattr(usage, "prompt_tokens", 0) or 0)
                + explicit[1] * int(getattr(usage, "completion_tokens", 0) or 0)
            ) / 1e6
        return Completion(
            text=text,
            model=self.cfg.model,
            finish_reason=getattr(choice, "finish_reason", None),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=cost,
            retries=retries,
            latency_s=latency,
            payload_bytes=payload,
            params=self.sent_params(params),
        )
