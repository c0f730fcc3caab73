"""The one place that talks to models: litellm calls with retries, a disk cache and accounting.

litellm is imported lazily (it takes seconds) and with its local cost map, so nothing here touches
the network until a real call is made. ``model: offline`` never touches it at all.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import functools
import hashlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eqa_runner.errors import ConfigSecretError
from eqa_runner.llm.config import LLMConfig

log = logging.getLogger(__name__)

CACHE_FORMAT_VERSION = 1
OFFLINE_MODEL = "offline"
OFFLINE_TAG = "[offline placeholder]"

# Per-provider request limits checked before sending: (max images, max bytes per image).
PROVIDER_IMAGE_LIMITS: dict[str, tuple[int, int]] = {
    "openai": (500, 20 * 1024 * 1024),
    "azure": (500, 20 * 1024 * 1024),
    "anthropic": (100, 5 * 1024 * 1024),
    "bedrock": (20, 3_750_000),
    "gemini": (3000, 7 * 1024 * 1024),
    "vertex_ai": (3000, 7 * 1024 * 1024),
}


class LLMError(RuntimeError):
    """A model call failed for good (after retries), or was refused before sending."""


class EmptyReplyError(LLMError):
    """The model returned no text even with a larger token budget."""


SECRET_CONFIG_KEY = "api_key"  # config keys with this last component must never hold a value


def secret_overrides(argv: Sequence[str]) -> str | None:
    """Refusal message when a command-line override puts a key in a config value, else None.

    Run before Hydra composes anything: Hydra writes the overrides into ``.hydra/`` before the
    app starts, so a key must be refused before it can reach the run directory.
    """
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("~+")
        if key.split("@")[0].rsplit(".", 1)[-1] != SECRET_CONFIG_KEY:
            continue
        if value.strip().lower() in ("", "null", "none", "~"):
            continue
        where = key.rsplit(".", 1)[0] if "." in key else "llm"
        return (
            f"{key}=…: an API key was given as a config value; it was not used and nothing was "
            f"written. Keys are never put in configs: export the key in an environment variable "
            f"and set {where}.api_key_env=<VARIABLE_NAME>, e.g. {where}.api_key_env=MY_KEY."
        )
    return None


def redact_saved_configs(hydra_dir: Path) -> None:
    """Blank ``api_key`` values in the ``.hydra/*.yaml`` files Hydra already wrote."""
    import re

    pattern = re.compile(rf"^(\s*(?:-\s*)?\S*{SECRET_CONFIG_KEY}\s*[:=]\s*)(?!null\s*$)\S.*$", re.M)
    for f in Path(hydra_dir).glob("*.yaml"):
        text = f.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: m.group(1) + "'<refused>'", text)
        if new != text:
            f.write_text(new, encoding="utf-8")


@dataclass(frozen=True)
class ImagePart:
    """An encoded image (PNG or JPEG bytes) inside a message."""

    data: bytes
    mime: str = "image/png"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


Message = dict[str, Any]  # {"role": ..., "content": str | list[str | ImagePart]}


def system(text: str) -> Message:
    return {"role": "system", "content": text}


def user(*parts: str | ImagePart) -> Message:
    return {"role": "user", "content": list(parts)}


def message_images(messages: Sequence[Message]) -> list[ImagePart]:
    return [
        p
        for m in messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if isinstance(p, ImagePart)
    ]


def message_text(messages: Sequence[Message]) -> str:
    out = []
    for m in messages:
        parts = m["content"] if isinstance(m["content"], list) else [m["content"]]
        out.extend(p for p in parts if isinstance(p, str))
    return "\n".join(out)


def _wire_messages(messages: Sequence[Message], *, keyed: bool) -> list[dict[str, Any]]:
    """OpenAI wire format; with ``keyed`` images are replaced by their content hash."""
    wire = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            wire.append({"role": m["role"], "content": content})
            continue
        parts: list[dict[str, Any]] = []
        for p in content:
            if isinstance(p, ImagePart):
                url = f"sha256:{p.sha256}:{p.mime}" if keyed else p.data_url()
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append({"type": "text", "text": p})
        wire.append({"role": m["role"], "content": parts})
    return wire


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
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, c: Completion) -> None:
        with self._lock:
            self.calls += 1
            self.retries += c.retries
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

    def as_dict(self) -> dict[str, Any]:
        d = {
            k: getattr(self, k)
            for k in (
                "calls",
                "prompt_tokens",
                "completion_tokens",
                "cost_usd",
                "cost_unknown_calls",
                "cached_calls",
                "retries",
                "failed_calls",
            )
        }
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


class DiskCache:
    """Completions on disk, one JSON file per request key (atomic writes; safe across processes)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root) / f"llm-v{CACHE_FORMAT_VERSION}"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(value), encoding="utf-8")
        os.replace(tmp, path)


_litellm_mod: Any = None
_litellm_lock = threading.Lock()


def load_litellm() -> Any:
    """Import litellm once, quietly, with the bundled cost map (no network at import)."""
    global _litellm_mod
    with _litellm_lock:
        if _litellm_mod is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            litellm.turn_off_message_logging = True
            litellm.callbacks = []
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.disable_end_user_cost_tracking = True
            logging.getLogger("LiteLLM").setLevel(logging.ERROR)
            _litellm_mod = litellm
    return _litellm_mod


_LIMITERS: dict[int, asyncio.Semaphore] = {}


def _limiter(n: int) -> asyncio.Semaphore:
    """One semaphore per event loop: the global cap on concurrent model calls."""
    loop_id = id(asyncio.get_running_loop())
    sem = _LIMITERS.get(loop_id)
    if sem is None:
        sem = _LIMITERS[loop_id] = asyncio.Semaphore(n)
    return sem


_CALL_POOL: ThreadPoolExecutor | None = None


def _call_pool(size: int) -> ThreadPoolExecutor:
    """Threads for ``transport: thread`` (process-wide; calls are capped by the limiter)."""
    global _CALL_POOL
    with _litellm_lock:
        if _CALL_POOL is None:
            _CALL_POOL = ThreadPoolExecutor(max(1, size), thread_name_prefix="llm-call")
    return _CALL_POOL


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


def _retry_after_s(exc: BaseException) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    resp = getattr(exc, "response", None)
    if headers is None and resp is not None:
        headers = getattr(resp, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _is_retryable(exc: BaseException) -> bool:
    litellm = load_litellm()
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, json.JSONDecodeError)):
        return True
    retryable = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
    )
    if "credential" in str(exc).lower() or "api key" in str(exc).lower():
        return False
    if isinstance(exc, retryable):
        return True
    if isinstance(
        exc,
        (
            litellm.AuthenticationError,
            litellm.BadRequestError,
            litellm.NotFoundError,
            litellm.PermissionDeniedError,
        ),
    ):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500
    return isinstance(exc, litellm.APIError)


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
        return self.cfg.model == OFFLINE_MODEL

    def unknown_model(self) -> str | None:
        """Why litellm cannot route this model string (None when it can)."""
        if self.offline:
            return None
        try:
            load_litellm().get_llm_provider(self.cfg.model, api_base=self.cfg.api_base)
        except Exception as e:  # noqa: BLE001 - litellm raises BadRequestError here
            return (
                f"litellm cannot route this model ({_short(e, 160)}); use a provider-"
                "prefixed litellm model string, e.g. openai/gpt-4o-2024-08-06"
            )
        return None

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
            "messages": _wire_messages(messages, keyed=True),
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
        self, messages: Sequence[Message], *, offline_reply: str = f"{OFFLINE_TAG} unknown"
    ) -> Completion:
        """One chat completion: cache → (retrying) call → accounting. Raises :class:`LLMError`."""
        params = self.params()
        if self.offline:
            c = Completion(
                text=offline_reply,
                model=OFFLINE_MODEL,
                finish_reason="stop",
                cost_usd=0.0,
                params=params,
            )
            self._account(c)
            return c
        payload = self.check_images(messages)
        sent = self.sent_params(params)
        key = self.cache_key(messages, sent) if self.cache else None
        if key and (hit := self.cache.get(key)) is not None:
            c = Completion(**{**hit, "cached": True, "retries": 0, "latency_s": 0.0})
            self._account(c)
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
                self._add_failure(c.retries + 1, failed=0)  # the empty first call's requests
                raise
            c2.retries += c.retries + 1
            if not c2.text.strip():
                self._add_failure(c2.retries)  # a failed call: its requests are its retries + 1
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
        self._account(c)
        return c

    def _account(self, c: Completion) -> None:
        usage = _USAGE.get()
        if usage is not None:
            usage.add(c)

    def _add_failure(self, retries: int, failed: int = 1) -> None:
        usage = _USAGE.get()
        if usage is not None:
            usage.add_failure(retries, failed)

    async def _call_with_retries(
        self, messages: Sequence[Message], params: dict[str, Any], payload: int
    ) -> Completion:
        litellm = load_litellm()
        kwargs: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": _wire_messages(messages, keyed=False),
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
                self._add_failure(retries)
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                if not _is_retryable(exc) or retries >= self.cfg.max_retries:
                    self._add_failure(retries)
                    raise LLMError(
                        f"{self.cfg.model} ({self.role}) failed after {retries} retries: "
                        f"{type(exc).__name__}: {_short(exc)}"
                    ) from exc
                wait = _retry_after_s(exc)
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
                self._add_failure(retries - 1)
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


def _short(exc: BaseException, n: int = 300) -> str:
    s = str(exc).replace("\n", " ")
    return s if len(s) <= n else s[:n] + "…"


@dataclass
class RequestEstimate:
    """A model request as a dry run sees it: text messages plus image sizes (nothing encoded)."""

    role: str
    messages: list[Message]
    image_sizes: list[tuple[int, int]] = field(default_factory=list)


def image_tokens(width: int, height: int) -> int:
    """OpenAI high-detail image token estimate (fit 2048, shortest side 768, 512 px tiles)."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = -(-int(w) // 512) * -(-int(h) // 512)
    return 85 + 170 * tiles


def estimate_call(
    model: str,
    text_messages: Sequence[Message],
    image_sizes: Sequence[tuple[int, int]],
    max_tokens: int | None,
) -> tuple[int, int, float | None]:
    """(prompt tokens, completion tokens upper bound, cost in USD or None) without calling."""
    completion = max_tokens or 256
    if model == OFFLINE_MODEL:
        return (len(message_text(text_messages)) // 4, completion, 0.0)
    litellm = load_litellm()
    text = [{"role": m["role"], "content": message_text([m])} for m in text_messages]
    try:
        prompt = int(litellm.token_counter(model=model, messages=text))
    except Exception:
        prompt = len(message_text(text_messages)) // 4
    prompt += sum(image_tokens(w, h) for w, h in image_sizes)
    try:
        cin, cout = litellm.cost_per_token(
            model=model, prompt_tokens=prompt, completion_tokens=completion
        )
        cost: float | None = float(cin + cout)
    except Exception:
        cost = None
    return prompt, completion, cost
