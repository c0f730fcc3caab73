"""The one place that talks to models: litellm calls with retries, a disk cache and accounting.

litellm is imported lazily (it takes seconds) and with its local cost map, so nothing here touches
the network until a real call is made. ``model: offline`` never touches it at all.

Two call paths with the same request, reply handling, accounting and cache keys:

* direct (``llm.direct_http``, the default for ``openai/...`` models with an ``api_base``): one
  HTTP POST to ``<api_base>/chat/completions`` from a per-event-loop ``aiohttp.ClientSession``; the
  body is what litellm would send (its own parameter mapping, ``get_optional_params``), the
  price comes from litellm's cost map. A fraction of litellm's CPU per call
  (docs/concurrency.md).
* litellm (everything else): ``transport: thread`` runs litellm's sync client in a bounded
  thread pool driven from the event loop, ``async`` awaits ``litellm.acompletion``.

Admission: calls to one endpoint (``api_base`` or provider, and model) pass an
:class:`~eqa_runner.llm.adaptive.AdaptiveLimit` (``llm.concurrency: adaptive``; AIMD on 429s
and timeouts, paused by ``Retry-After``) or a fixed semaphore (``fixed``), both capped by
``llm.max_concurrent_calls`` and by the run's ``run.workers`` (``ceiling``). Each attempt
passes the gate; retries, backoff and the final error are :mod:`eqa_runner.llm.retries`'.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import random
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from eqa_runner.errors import ConfigSecretError
from eqa_runner.llm.adaptive import AdaptiveLimit, limit_for
from eqa_runner.llm.cache import CACHE_FORMAT_VERSION, DiskCache
from eqa_runner.llm.completions import direct_completion, litellm_completion
from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.errors import EmptyReplyError, LLMError, short
from eqa_runner.llm.loader import load_litellm
from eqa_runner.llm.logprobs import logprob_params, prompt_logprob_params
from eqa_runner.llm.messages import Message, message_images, message_text, wire_messages
from eqa_runner.llm.offline import DEFAULT_OFFLINE_REPLY, is_offline, offline_completion
from eqa_runner.llm.retries import RetryLoop
from eqa_runner.llm.transport import (
    ADAPTIVE,
    PROVIDER_IMAGE_LIMITS,
    DirectCallError,
    FixedGate,
    call_pool,
    direct_post,
    endpoint_stats,
    endpoint_summary,
    limiter,
    plain_openai_chat,
    provider_of,
)
from eqa_runner.llm.usage import Completion, account, account_failure
from eqa_runner.redact import register

__all__ = ["DirectCallError", "LLMClient", "endpoint_stats", "endpoint_summary", "provider_of"]

log = logging.getLogger(__name__)

COST_MEMO_SIZE = 4096  # litellm prices per (prompt, completion) token counts, kept per client


class LLMClient:
    """Calls one model for one role (``policy``, ``judge``, ``stop``)."""

    def __init__(
        self,
        cfg: LLMConfig | dict[str, Any] | Any,
        *,
        role: str,
        cache: DiskCache | None = None,
        cache_salt: dict[str, str] | None = None,
        ceiling: int | None = None,
    ) -> None:
        if not isinstance(cfg, LLMConfig):
            known = set(LLMConfig.__dataclass_fields__)
            cfg = LLMConfig(**{k: v for k, v in dict(cfg).items() if k in known})
        if cfg.transport not in ("thread", "async"):
            raise ValueError(f"llm.transport={cfg.transport!r}: expected thread or async")
        if cfg.concurrency not in ("adaptive", "fixed"):
            raise ValueError(f"llm.concurrency={cfg.concurrency!r}: expected adaptive or fixed")
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
        self._wire_memo: dict[str, dict[str, Any]] = {}
        self._dummy_key: bool | None = None
        self._unpriced = False
        self._costs: dict[tuple[int, int], float] = {}  # (prompt, completion tokens) -> USD
        self._direct: bool | None = None
        # the most calls in flight: llm.max_concurrent_calls, and the run's run.workers
        self.ceiling = min(int(cfg.max_concurrent_calls), int(ceiling or cfg.max_concurrent_calls))

    @property
    def endpoint(self) -> str:
        """Where calls go: the ``api_base``, else the provider (one adaptive limit each)."""
        return self.cfg.api_base or provider_of(self.cfg.model)

    @property
    def direct(self) -> bool:
        """Whether calls skip litellm: ``openai/...`` chat models on an ``api_base``
        (OpenAI-compatible) whose request litellm passes through unchanged."""
        if self._direct is None:
            self._direct = bool(
                self.cfg.direct_http
                and self.cfg.api_base
                and self.cfg.model.startswith("openai/")
                and plain_openai_chat(self.cfg.model.split("/", 1)[1])
            )
        return self._direct

    def _gate(self) -> AdaptiveLimit | FixedGate:
        if self.cfg.concurrency == "fixed":
            return FixedGate(limiter(self.ceiling))
        return limit_for(self.endpoint, self.cfg.model, self.ceiling, **ADAPTIVE)

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
        self,
        messages: Sequence[Message],
        *,
        offline_reply: str = DEFAULT_OFFLINE_REPLY,
        top_logprobs: int | None = None,
        prompt_logprobs: int | None = None,
    ) -> Completion:
        """One chat completion: cache → (retrying) call → accounting. Raises :class:`LLMError`.

        ``top_logprobs=k``: the top ``k`` alternatives of every generated token
        (``Completion.logprobs``); ``prompt_logprobs=k``: vLLM's of the prompt's last token."""
        extra = {**logprob_params(top_logprobs), **prompt_logprob_params(prompt_logprobs)}
        params = {**self.params(), **extra}
        if self.offline:
            c = offline_completion(offline_reply, params)
            account(c)
            return c
        payload = self.check_images(messages)
        sent = self.sent_params(params)
        key = self.cache_key(messages, sent) if self.cache else None
        if key and self.cache and (hit := self.cache.get(key)) is not None:
            c = Completion(**{**hit, "cached": True, "retries": 0, "latency_s": 0.0})
            account(c)
            return c
        c = await self._call_with_retries(messages, params, payload)
        if not c.text.strip() and not c.prompt_logprobs:  # option_loss scores the prompt
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
                    messages, {**self.params(max_tokens=bigger), **extra}, payload
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
        if key and self.cache:
            self.cache.put(
                key,
                {k: v for k, v in asdict(c).items() if k not in ("cached", "retries", "latency_s")},
            )
        account(c)
        return c

    def _api_key(self) -> str | None:
        """The key to send: ``api_key_env``'s value, or a dummy for an auth-less ``api_base``."""
        if self.cfg.api_key_env:
            key = os.environ.get(self.cfg.api_key_env)
            if not key:
                raise LLMError(
                    f"{self.role}: environment variable {self.cfg.api_key_env} "
                    "(llm.api_key_env) is not set."
                )
            register(key)  # redacted from every sink (an endpoint may echo it in an error)
            return key
        if self.cfg.api_base and self._needs_dummy_key():
            return "no-key"  # self-hosted OpenAI-compatible server without auth
        return None

    def wire_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The request-body parameters litellm would send for ``params`` (its own mapping)."""
        key = json.dumps(params, sort_keys=True, default=str)
        if key not in self._wire_memo:
            from litellm.utils import get_optional_params

            model, provider, _, _ = load_litellm().get_llm_provider(self.cfg.model)
            opt = dict(
                get_optional_params(
                    model=model,
                    custom_llm_provider=provider,
                    drop_params=self.cfg.drop_params,
                    **params,
                )
            )
            extra = opt.pop("extra_body", None) or {}
            opt.pop("stream", None)
            self._wire_memo[key] = {**opt, **extra}
        return dict(self._wire_memo[key])

    def _litellm_send(self, messages: Sequence[Message], params: dict[str, Any]) -> Any:
        """A function making one litellm attempt (awaitable of its response)."""
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
        key = self._api_key()
        if key is not None:
            kwargs["api_key"] = key

        def send() -> Any:
            if self.cfg.transport == "async":
                return litellm.acompletion(**kwargs)
            # litellm's sync client in a bounded pool (less CPU per call here)
            return asyncio.get_running_loop().run_in_executor(
                call_pool(self.cfg.max_concurrent_calls),
                functools.partial(litellm.completion, **kwargs),
            )

        return send

    def _direct_send(self, messages: Sequence[Message], params: dict[str, Any]) -> Any:
        """A function making one direct HTTP attempt (coroutine of the reply's JSON)."""
        body = {
            "model": self.cfg.model.split("/", 1)[1],
            "messages": wire_messages(messages, keyed=False),
            **self.wire_params(params),
        }
        data = json.dumps(body).encode()
        key = self._api_key() or os.environ.get("OPENAI_API_KEY")
        register(key)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = str(self.cfg.api_base).rstrip("/") + "/chat/completions"
        timeout = self.cfg.timeout_s

        async def send() -> dict[str, Any]:
            return await direct_post(url, data, headers, timeout)

        return send

    async def _call_with_retries(
        self, messages: Sequence[Message], params: dict[str, Any], payload: int
    ) -> Completion:
        direct = self.direct
        if direct:
            try:
                send = self._direct_send(messages, params)
            except LLMError:
                raise
            except Exception as exc:  # litellm refuses these params: let it say so
                log.debug("%s: direct path unavailable (%s)", self.cfg.model, short(exc))
                direct = False
        if not direct:
            send = self._litellm_send(messages, params)
        log.debug("%s call: %d messages, payload ~%d bytes", self.cfg.model, len(messages), payload)
        retry = RetryLoop(self.cfg, self.role, self.endpoint, self._rng)
        resp, retries, latency = await retry.run(send, self._gate())
        if direct:
            return direct_completion(self, resp, params, retries, latency, payload)
        return litellm_completion(self, resp, params, retries, latency, payload)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """The config's explicit price (``llm.input_usd_per_mtok`` …) of a reply, else litellm's
        (None for a model its cost map does not know)."""
        explicit = self.explicit_price()
        if explicit is not None:
            return (explicit[0] * prompt_tokens + explicit[1] * completion_tokens) / 1e6
        if self._unpriced:
            return None
        key = (prompt_tokens, completion_tokens)
        if key in self._costs:  # litellm's lookup is ~1 ms of CPU per reply
            return self._costs[key]
        try:
            p, c = load_litellm().cost_per_token(
                model=self.cfg.model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        except Exception:  # noqa: BLE001 - not in the cost map
            self._unpriced = True
            return None
        if len(self._costs) >= COST_MEMO_SIZE:
            self._costs.clear()
        self._costs[key] = cost = float(p) + float(c)
        return cost
