"""The test server's rules and state: which reply, fault and delay each request gets.

:class:`ServerState` holds the settings (``DEFAULTS``), the compiled rules, counters and the
request log behind one lock; :meth:`ServerState.plan` decides one request. The HTTP side is
:mod:`eqa_runner.testing.llm_server`.
"""

from __future__ import annotations

import base64
import binascii
import collections
import contextlib
import copy
import hashlib
import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from eqa_runner.testing.vllm_fields import TOKEN_RE, prompt_logprobs

FAULT_KINDS = (
    "429",
    "429_no_retry_after",
    "500",
    "503",
    "reset",
    "timeout",
    "malformed",
    "empty",
    "length",
)
DEFAULTS: dict[str, Any] = {
    "rules": [],
    "default_reply": "ok",
    "latency_s": 0.0,
    "jitter_s": 0.0,
    "fault_rate": 0.0,
    "faults": {"429": 1.0, "500": 1.0, "503": 1.0},
    "seed": 0,
    "fail_first_n": 0,
    "fail_kind": "500",
    "timeout_sleep_s": 30.0,
    "retry_after_s": 1.0,
    "log_size": 200,
    "models": ["test-model"],
    "logprobs": True,
    "rate_limit_rps": 0.0,
    "rate_limit_burst": 1.0,
}
_RULE_KEYS = {"pattern", "reply", "model", "after", "key", "fault", "token_probs"}
ERRORS = {429: "rate_limit_error", 500: "server_error", 503: "service_unavailable"}
TOKENS_PER_IMAGE = 85


@dataclass
class Rule:
    pattern: re.Pattern[str]
    replies: list[str]
    model: re.Pattern[str] | None
    after: int
    key: re.Pattern[str] | None
    faults: list[str | None]
    token_probs: list[dict[str, float]]


def _check_probs(raw: Any) -> dict[str, float]:
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"token_probs must be a non-empty {{token: probability}} map, got {raw!r}")
    probs = {str(k): float(v) for k, v in raw.items()}
    if any(not 0.0 < v <= 1.0 for v in probs.values()) or sum(probs.values()) > 1.0 + 1e-9:
        raise ValueError(f"token_probs {probs}: each in (0, 1], summing to at most 1")
    return probs


def _check_fault(kind: Any) -> str:
    if str(kind) not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
    return str(kind)


def _as_list(value: Any) -> list[Any]:
    return [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]


def _compile_rule(raw: dict[str, Any]) -> Rule:
    if not isinstance(raw, dict) or "pattern" not in raw or set(raw) - _RULE_KEYS:
        raise ValueError(f"bad rule {raw!r}: needs 'pattern', allowed keys {sorted(_RULE_KEYS)}")
    flags = re.S | re.I
    return Rule(
        pattern=re.compile(raw["pattern"], flags),
        replies=[str(r) for r in _as_list(raw.get("reply"))],
        model=re.compile(raw["model"], re.I) if raw.get("model") else None,
        after=int(raw.get("after") or 0),
        key=re.compile(raw["key"], flags) if raw.get("key") else None,
        faults=[None if f is None else _check_fault(f) for f in _as_list(raw.get("fault"))],
        token_probs=[_check_probs(d) for d in _as_list(raw.get("token_probs"))],
    )


def _image_digest(url: str) -> dict[str, Any]:
    data = url.encode()
    if url.startswith("data:") and "," in url:
        with contextlib.suppress(binascii.Error, ValueError):
            data = base64.b64decode(url.split(",", 1)[1], validate=False)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _digest_messages(messages: list[Any]) -> tuple[str, int, list[Any]]:
    """Return (concatenated text, image count, messages with images replaced by digests)."""
    texts, n_images, logged = [], 0, []
    for msg in messages:
        msg = dict(msg) if isinstance(msg, dict) else {"content": str(msg)}
        content = msg.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                ptype = part.get("type") if isinstance(part, dict) else None
                if ptype == "text":
                    texts.append(str(part.get("text", "")))
                elif ptype in ("image_url", "image"):
                    n_images += 1
                    img = part.get("image_url") or part.get("image") or ""
                    url = img.get("url", "") if isinstance(img, dict) else str(img)
                    part = {"type": ptype, ptype: _image_digest(url)}
                parts.append(part)
            msg["content"] = parts
        elif content is not None:
            texts.append(str(content))
        logged.append(msg)
    return "\n".join(texts), n_images, logged


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _logprobs(reply: str, first: dict[str, float] | None, top_k: int) -> dict[str, Any]:
    """OpenAI-style ``choices[0].logprobs`` for ``reply`` (first token drawn from ``first``)."""
    content = []
    for i, tok in enumerate(TOKEN_RE.findall(reply) or [""]):
        dist = dict(first) if i == 0 and first else {tok: 1.0}
        dist.setdefault(tok, max(1e-6, 1.0 - sum(dist.values())))
        ranked = sorted(dist.items(), key=lambda kv: -kv[1])[: max(0, top_k)]
        content.append(
            {
                "token": tok,
                "logprob": math.log(dist[tok]),
                "bytes": list(tok.encode()),
                "top_logprobs": [
                    {"token": k, "logprob": math.log(v), "bytes": list(k.encode())}
                    for k, v in ranked
                ],
            }
        )
    return {"content": content}


@dataclass
class Plan:
    index: int
    model: str
    reply: str
    fault: str | None
    delay: float
    usage: dict[str, int]
    stream: bool
    include_usage: bool
    logprobs: dict[str, Any] | None = None
    retry_after: float | None = None
    prompt_logprobs: list[Any] | None = None


class ServerState:
    """Configuration, counters, rule counters and request log; all guarded by one lock."""

    # set by reset()
    rule_counts: collections.Counter[tuple[int, str]]
    counts: dict[str, collections.Counter[str]]
    totals: dict[str, int]
    bucket: float
    bucket_t: float

    def __init__(self, settings: dict[str, Any]) -> None:
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.cfg: dict[str, Any] = copy.deepcopy(DEFAULTS)
        self.rules: list[Rule] = []
        self.log: collections.deque[dict[str, Any]] = collections.deque(maxlen=200)
        self.configure(**settings)
        self.reset()

    def configure(self, **kw: Any) -> None:
        unknown = set(kw) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(DEFAULTS)}")
        new = {**self.cfg, **copy.deepcopy(kw)}
        rules = [_compile_rule(r) for r in new["rules"]]
        faults = new["faults"]
        pairs = faults.items() if isinstance(faults, dict) else ((k, 1) for k in _as_list(faults))
        new["faults"] = {_check_fault(k): float(v) for k, v in pairs}
        _check_fault(new["fail_kind"])
        if not 0.0 <= float(new["fault_rate"]) <= 1.0:
            raise ValueError("fault_rate must be in [0, 1]")
        with self.lock:
            self.cfg = new
            if "rules" in kw:
                self.rules, self.rule_counts = rules, collections.Counter()
            if "seed" in kw:
                self._reseed()
            if self.log.maxlen != int(new["log_size"]):
                self.log = collections.deque(self.log, maxlen=int(new["log_size"]))

    def _take_token(self, now: float) -> float | None:
        """Token bucket of ``rate_limit_rps``: None if a request may pass, else seconds to wait."""
        rps = float(self.cfg["rate_limit_rps"])
        if rps <= 0:
            return None
        burst = max(1.0, float(self.cfg["rate_limit_burst"]))
        self.bucket = min(burst, self.bucket + (now - self.bucket_t) * rps)
        self.bucket_t = now
        if self.bucket >= 1.0:
            self.bucket -= 1.0
            return None
        return (1.0 - self.bucket) / rps

    def _reseed(self) -> None:
        self.rng = random.Random(self.cfg["seed"])
        self.jitter_rng = random.Random(f"jitter-{self.cfg['seed']}")

    def reset(self) -> None:
        """Zero all counters, rule counters, the request log and re-seed the RNGs."""
        with self.lock:
            self.n = 0
            self.in_flight = self.max_in_flight = 0
            self.rule_counts = collections.Counter()
            self.counts = {
                k: collections.Counter() for k in ("by_status", "by_fault", "by_model", "by_rule")
            }
            self.totals = {"images": 0, "prompt_tokens": 0, "completion_tokens": 0}
            self.bucket, self.bucket_t = (
                max(1.0, float(self.cfg["rate_limit_burst"])),
                time.monotonic(),
            )
            self.rate_limited_wait: float | None = None
            self.log.clear()
            self._reseed()

    def stats(self) -> dict[str, Any]:
        with self.lock:
            out: dict[str, Any] = {"requests": self.n, **self.totals}
            out.update({k: dict(v) for k, v in self.counts.items()})
            out.update(in_flight=self.in_flight, max_in_flight=self.max_in_flight)
            return out

    def requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return copy.deepcopy(list(self.log))

    def _match(
        self, model: str, text: str, index: int
    ) -> tuple[str, int, str, str | None, dict[str, float] | None]:
        """(reply, n, rule id, rule fault, first-token probabilities) of the first rule that
        matches (counted per key); the default reply when none does. Under the lock."""
        reply, n, rule_id, rule_fault = str(self.cfg["default_reply"]), index, "default", None
        first_probs: dict[str, float] | None = None
        for i, rule in enumerate(self.rules):
            if rule.model and not rule.model.search(model) or not rule.pattern.search(text):
                continue
            m = rule.key.search(text) if rule.key else None
            key = "" if m is None else (m.group(1) if m.re.groups else m.group(0)) or ""
            count = self.rule_counts[(i, key)]
            self.rule_counts[(i, key)] = count + 1
            if count < rule.after:
                continue
            n, rule_id = count - rule.after, str(i)
            if rule.replies:
                reply = rule.replies[min(n, len(rule.replies) - 1)]
            if rule.faults:
                rule_fault = rule.faults[min(n, len(rule.faults) - 1)]
            if rule.token_probs:
                first_probs = rule.token_probs[min(n, len(rule.token_probs) - 1)]
            break
        return reply.replace("{n}", str(n)), n, rule_id, rule_fault, first_probs

    def _fault(self, index: int, rule_fault: str | None, draw: float, pick: float) -> str | None:
        """The injected fault of request ``index``: rate limit, first-n, rule, random. Locked."""
        cfg = self.cfg
        wait = self._take_token(time.monotonic())
        if wait is not None:
            self.rate_limited_wait = wait
            return "rate_limit"
        if index < int(cfg["fail_first_n"]):
            return str(cfg["fail_kind"])
        if rule_fault:
            return rule_fault
        if draw < float(cfg["fault_rate"]) and sum(cfg["faults"].values()) > 0:
            acc, target = 0.0, pick * sum(cfg["faults"].values())
            for kind, weight in cfg["faults"].items():
                acc += weight
                if target < acc:
                    return str(kind)
        return None

    def _count(
        self, model: str, rule_id: str, fault: str | None, n_images: int, usage: dict[str, int]
    ) -> str | None:
        """Count one request in the stats; returns its status key (None: connection reset)."""
        status = {
            "429": "429",
            "429_no_retry_after": "429",
            "rate_limit": "429",
            "500": "500",
            "503": "503",
        }
        status_key = None if fault == "reset" else status.get(fault or "", "200")
        self.counts["by_model"][model] += 1
        self.counts["by_rule"][rule_id] += 1
        if status_key:
            self.counts["by_status"][status_key] += 1
        if fault:
            self.counts["by_fault"][fault] += 1
        self.totals["images"] += n_images
        if status_key == "200":
            self.totals["prompt_tokens"] += usage["prompt_tokens"]
            self.totals["completion_tokens"] += usage["completion_tokens"]
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return status_key

    def plan(self, body: dict[str, Any]) -> Plan:
        """Pick reply, fault and delay for one chat request (in arrival order) and count it."""
        model = str(body.get("model", ""))
        text, n_images, logged = _digest_messages(body["messages"])
        with self.lock:
            cfg, index = self.cfg, self.n
            self.n += 1
            draw, pick = self.rng.random(), self.rng.random()
            jitter = self.jitter_rng.uniform(0.0, cfg["jitter_s"]) if cfg["jitter_s"] > 0 else 0.0
            reply, _, rule_id, rule_fault, first_probs = self._match(model, text, index)
            fault = self._fault(index, rule_fault, draw, pick)
            if fault in ("empty", "length"):
                reply = ""
            usage = {"prompt_tokens": _tokens(text) + TOKENS_PER_IMAGE * n_images}
            usage["completion_tokens"] = _tokens(reply)
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            status_key = self._count(model, rule_id, fault, n_images, usage)
            self.log.append(
                {
                    "index": index,
                    "time": time.time(),
                    "model": model,
                    "rule": rule_id,
                    "fault": fault,
                    "status": status_key,
                    "reply": reply,
                    "body": {**body, "messages": logged},
                }
            )
            opts = body.get("stream_options")
            with_usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
            lp = None
            if body.get("logprobs") and cfg["logprobs"]:
                lp = _logprobs(reply, first_probs, int(body.get("top_logprobs") or 0))
            plp = None
            if body.get("prompt_logprobs") is not None and body.get("continue_final_message"):
                plp = prompt_logprobs(text, first_probs, int(body["prompt_logprobs"]))
            retry = self.rate_limited_wait if fault == "rate_limit" else None
            delay = 0.0 if fault == "rate_limit" else float(cfg["latency_s"]) + jitter
            stream = bool(body.get("stream"))  # a refused request (rate limit) is answered at once
            return Plan(
                index, model, reply, fault, delay, usage, stream, with_usage, lp, retry, plp
            )

    def done(self) -> None:
        with self.lock:
            self.in_flight -= 1


def completion_body(plan: Plan, finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-test{plan.index:08d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": plan.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": plan.reply},
                "finish_reason": finish,
                "logprobs": plan.logprobs,
            }
        ],
        "usage": plan.usage,
        **({"prompt_logprobs": plan.prompt_logprobs} if plan.prompt_logprobs is not None else {}),
    }


def sse_body(plan: Plan, finish: str) -> str:
    base = {
        "id": f"chatcmpl-test{plan.index:08d}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": plan.model,
    }
    delta = {"role": "assistant", "content": plan.reply}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    if plan.include_usage:
        chunks.append({**base, "choices": [], "usage": plan.usage})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
