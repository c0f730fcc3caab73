"""Scriptable OpenAI-compatible chat-completions test server (standard library only).

Python::

    with LLMTestServer(rules=[{"pattern": r"stop\\?", "reply": ["no", "yes"]}]) as srv:
        litellm.completion(model="openai/test-model", api_base=srv.url, api_key="x", messages=m)

CLI (foreground, stops on SIGTERM/SIGINT)::

    python -m eqa_runner.testing.llm_server --port 0 --config rules.json --port-file port.txt

Rule: ``{"pattern", "reply": str | [str], "model", "after", "key", "fault": str | [str|None],
"token_probs": {token: probability} | [{…}]}``; all settings are listed on :class:`LLMTestServer`.

Token log-probabilities (``logprobs: true``, ``top_logprobs: k`` in the request, as OpenAI and
vLLM accept them): each reply token comes back with its log-probability and the top ``k``
alternatives. A rule's ``token_probs`` sets the distribution of the FIRST token (the reply's first
token should be one of its keys); every other token has probability 1. With the setting
``logprobs: false`` the server ignores the request's ``logprobs`` (``"logprobs": null``), like a
provider that does not return them.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import collections
import contextlib
import copy
import hashlib
import json
import math
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

FAULT_KINDS = (
    "429", "429_no_retry_after", "500", "503", "reset", "timeout", "malformed", "empty", "length"
)  # fmt: skip
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
_ERRORS = {429: "rate_limit_error", 500: "server_error", 503: "service_unavailable"}
TOKENS_PER_IMAGE = 85


@dataclass
class _Rule:
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


def _compile_rule(raw: dict[str, Any]) -> _Rule:
    if not isinstance(raw, dict) or "pattern" not in raw or set(raw) - _RULE_KEYS:
        raise ValueError(f"bad rule {raw!r}: needs 'pattern', allowed keys {sorted(_RULE_KEYS)}")
    flags = re.S | re.I
    return _Rule(
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


_TOKEN_RE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")


def _logprobs(reply: str, first: dict[str, float] | None, top_k: int) -> dict[str, Any]:
    """OpenAI-style ``choices[0].logprobs`` for ``reply`` (first token drawn from ``first``)."""
    content = []
    for i, tok in enumerate(_TOKEN_RE.findall(reply) or [""]):
        dist = dict(first) if i == 0 and first else {tok: 1.0}
        dist.setdefault(tok, max(1e-6, 1.0 - sum(dist.values())))
        ranked = sorted(dist.items(), key=lambda kv: -kv[1])[: max(0, top_k)]
        content.append(
            {"token": tok, "logprob": math.log(dist[tok]), "bytes": list(tok.encode()),
             "top_logprobs": [{"token": k, "logprob": math.log(v), "bytes": list(k.encode())}
                              for k, v in ranked]}
        )  # fmt: skip
    return {"content": content}


@dataclass
class _Plan:
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


class _State:
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
        self.rules: list[_Rule] = []
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

    def plan(self, body: dict[str, Any]) -> _Plan:
        """Pick reply, fault and delay for one chat request (in arrival order) and count it."""
        model = str(body.get("model", ""))
        text, n_images, logged = _digest_messages(body["messages"])
        with self.lock:
            cfg, index = self.cfg, self.n
            self.n += 1
            draw, pick = self.rng.random(), self.rng.random()
            jitter = self.jitter_rng.uniform(0.0, cfg["jitter_s"]) if cfg["jitter_s"] > 0 else 0.0
            reply, n, rule_id, rule_fault = str(cfg["default_reply"]), index, "default", None
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
            reply = reply.replace("{n}", str(n))
            fault = None
            wait = self._take_token(time.monotonic())
            if wait is not None:
                fault, self.rate_limited_wait = "rate_limit", wait
            elif index < int(cfg["fail_first_n"]):
                fault = cfg["fail_kind"]
            elif rule_fault:
                fault = rule_fault
            elif draw < float(cfg["fault_rate"]) and sum(cfg["faults"].values()) > 0:
                acc, target = 0.0, pick * sum(cfg["faults"].values())
                for kind, weight in cfg["faults"].items():
                    acc += weight
                    if target < acc:
                        fault = kind
                        break
            if fault in ("empty", "length"):
                reply = ""
            status = {"429": "429", "429_no_retry_after": "429", "rate_limit": "429", "500": "500",
                      "503": "503"}  # fmt: skip
            status_key = None if fault == "reset" else status.get(fault or "", "200")
            usage = {"prompt_tokens": _tokens(text) + TOKENS_PER_IMAGE * n_images}
            usage["completion_tokens"] = _tokens(reply)
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
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
            self.log.append(
                {"index": index, "time": time.time(), "model": model, "rule": rule_id,
                 "fault": fault, "status": status_key, "reply": reply,
                 "body": {**body, "messages": logged}}
            )  # fmt: skip
            opts = body.get("stream_options")
            with_usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
            delay = float(cfg["latency_s"]) + jitter
            stream = bool(body.get("stream"))
            lp = None
            if body.get("logprobs") and cfg["logprobs"]:
                lp = _logprobs(reply, first_probs, int(body.get("top_logprobs") or 0))
            retry = self.rate_limited_wait if fault == "rate_limit" else None
            plan = _Plan(index, model, reply, fault, delay, usage, stream, with_usage, lp, retry)
            if fault == "rate_limit":
                plan.delay = 0.0  # refused at once, as a provider's rate limiter does
            return plan

    def done(self) -> None:
        with self.lock:
            self.in_flight -= 1


def _completion(plan: _Plan, finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-test{plan.index:08d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": plan.model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": plan.reply},
             "finish_reason": finish, "logprobs": plan.logprobs}
        ],
        "usage": plan.usage,
    }  # fmt: skip


def _sse(plan: _Plan, finish: str) -> str:
    base = {"id": f"chatcmpl-test{plan.index:08d}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": plan.model}  # fmt: skip
    delta = {"role": "assistant", "content": plan.reply}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    if plan.include_usage:
        chunks.append({**base, "choices": [], "usage": plan.usage})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LLMTestServer/1.0"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def state(self) -> _State:
        # the handler only ever runs in an _HTTPServer (typeshed: a BaseServer)
        return cast(_HTTPServer, self.server).state

    def _send(self, status: int, body: bytes | str, ctype: str = "application/json",
              headers: dict[str, str] | None = None) -> None:  # fmt: skip
        data = body.encode() if isinstance(body, str) else body
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # client went away (e.g. after a client-side timeout)
            self.close_connection = True

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj), headers=headers)

    def _error(self, status: int, msg: str, headers: dict[str, str] | None = None) -> None:
        err = {"message": msg, "type": _ERRORS.get(status, "invalid_request_error"), "code": status}
        self._json(status, {"error": err}, headers)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._json(200, {"status": "ok"})
        elif path in ("/v1/models", "/models"):
            with self.state.lock:
                names = list(self.state.cfg["models"]) + list(self.state.counts["by_model"])
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "llm-test-server"}
                    for m in dict.fromkeys(names)]  # fmt: skip
            self._json(200, {"object": "list", "data": data})
        elif path == "/_stats":
            self._json(200, self.state.stats())
        elif path == "/_log":
            self._json(200, self.state.requests())
        else:
            self._error(404, f"no route {path}")

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._error(400, "request body is not valid JSON")
        if path in ("/v1/chat/completions", "/chat/completions"):
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                return self._error(400, "'messages' (a list) is required")
            return self._chat(body)
        if path == "/_reset":
            self.state.reset()
            return self._json(200, {"ok": True})
        if path == "/_config":
            try:
                self.state.configure(**body)
            except (ValueError, TypeError, re.error) as exc:
                return self._error(400, f"bad config: {exc}")
            return self._json(200, {"ok": True})
        self._error(404, f"no route {path}")

    def _chat(self, body: dict[str, Any]) -> None:
        plan = self.state.plan(body)
        stop = self.state.stop_event
        try:
            if plan.delay > 0 and stop.wait(plan.delay):
                self.close_connection = True
                return
            fault = plan.fault
            if fault == "reset":
                return self._abort()
            if fault == "timeout":
                stop.wait(float(self.state.cfg["timeout_sleep_s"]))
            if fault in ("429", "429_no_retry_after", "rate_limit"):
                headers = {}
                if fault in ("429", "rate_limit"):
                    secs = float(self.state.cfg["retry_after_s"])
                    if fault == "rate_limit":  # when the bucket holds a token again
                        secs = plan.retry_after if plan.retry_after is not None else secs
                    whole = math.ceil(secs) if fault == "rate_limit" else max(0, round(secs))
                    headers = {"Retry-After": str(whole),
                               "retry-after-ms": str(math.ceil(secs * 1000))}  # fmt: skip
                return self._error(429, "Rate limit reached (injected)", headers)
            if fault in ("500", "503"):
                return self._error(int(fault), f"injected {fault} error")
            finish = "length" if fault == "length" else "stop"
            if plan.stream:
                text, ctype = _sse(plan, finish), "text/event-stream"
            else:
                text, ctype = json.dumps(_completion(plan, finish)), "application/json"
            if fault == "malformed":
                text = text[: len(text) // 2]
            self._send(200, text, ctype)
        finally:
            self.state.done()

    def _abort(self) -> None:
        """Close the socket with SO_LINGER 0 so the client sees a TCP RST, no response."""
        try:
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )  # fmt: skip
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True


class _HTTPServer(ThreadingHTTPServer):
    state: _State  # set by LLMTestServer.start() before serving
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # disconnects are expected noise
            super().handle_error(request, client_address)


class LLMTestServer:
    """Scriptable OpenAI-compatible server on 127.0.0.1, run in a background thread.

    Settings (constructor kwargs, :meth:`configure`, ``POST /_config``, CLI ``--config``):
    ``rules`` (list of rule dicts), ``default_reply`` ("ok"), ``latency_s``, ``jitter_s``,
    ``fault_rate`` (0..1), ``faults`` (dict kind->weight or list of kinds), ``seed``,
    ``fail_first_n`` + ``fail_kind``, ``timeout_sleep_s`` (30), ``retry_after_s`` (1),
    ``rate_limit_rps`` (0 = none: a token bucket of this many requests per second, holding
    ``rate_limit_burst`` tokens; a request beyond it gets 429 with ``Retry-After`` and
    ``retry-after-ms`` saying when a token is free again, counted as fault ``rate_limit``),
    ``log_size`` (200), ``models`` (ids listed by ``GET /v1/models``), ``logprobs`` (True:
    answer ``logprobs``/``top_logprobs`` requests; False: return ``"logprobs": null``).
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, **settings: Any) -> None:
        self.host, self._want_port = host, port
        self.state = _State(settings)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> LLMTestServer:
        if self._httpd is None:
            self.state.stop_event.clear()
            self._httpd = _HTTPServer((self.host, self._want_port), _Handler)
            self._httpd.state = self.state
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                name=f"llm-test-server-{self.port}", daemon=True,
            )  # fmt: skip
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self.state.stop_event.set()  # wake handlers sleeping in latency/timeout
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = self._thread = None

    def __enter__(self) -> LLMTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1"

    def litellm_kwargs(self, model: str = "test-model") -> dict[str, str]:
        """Kwargs for ``litellm.completion`` targeting this server."""
        return {"model": f"openai/{model}", "api_base": self.url, "api_key": "sk-test"}

    def stats(self) -> dict[str, Any]:
        return self.state.stats()

    def reset(self) -> None:
        self.state.reset()

    def configure(self, **settings: Any) -> None:
        self.state.configure(**settings)

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.state.requests()


def load_config(path: str | None) -> dict[str, Any]:
    """Load a JSON settings file; a bare list is taken as ``rules``."""
    if not path:
        return {}
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return {"rules": data} if isinstance(data, list) else dict(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--config", help="JSON file: settings dict, or a list of rules")
    ap.add_argument("--port-file", help="write the bound port here (atomically)")
    ap.add_argument("--latency-s", type=float)
    ap.add_argument("--fault-rate", type=float)
    ap.add_argument("--seed", type=int)
    args = ap.parse_args(argv)
    settings = load_config(args.config)
    for name in ("latency_s", "fault_rate", "seed"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    srv = LLMTestServer(host=args.host, port=args.port, **settings).start()
    if args.port_file:
        tmp = f"{args.port_file}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(f"{srv.port}\n")
        os.replace(tmp, args.port_file)
    print(f"listening on {srv.url}", flush=True)
    while not stop.wait(0.2):
        pass
    srv.stop()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
