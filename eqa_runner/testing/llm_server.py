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

Prompt log-probabilities (vLLM's ``prompt_logprobs: k`` with ``continue_final_message: true``,
``add_generation_prompt: false`` and a final assistant message, how ``llm.letter_scoring=
option_loss`` scores an option): the response carries vLLM's top-level ``prompt_logprobs``, one
entry per prompt token (words of the messages' text here), None for the first, else ``{token_id:
{logprob, rank, decoded_token}}`` holding the prompt token and the top ``k``. At the last token
(the open assistant message, the option) the matching rule's ``token_probs`` is the
distribution; an option it does not name gets the mass left over (at least 1e-6). Both flags set
true, or ``continue_final_message`` without a final assistant message, is a 400 as in vLLM.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from eqa_runner.testing.llm_rules import (
    DEFAULTS,
    ERRORS,
    FAULT_KINDS,
    ServerState,
    completion_body,
    sse_body,
)
from eqa_runner.testing.vllm_fields import continue_problem

__all__ = ["DEFAULTS", "FAULT_KINDS", "LLMTestServer", "load_config", "main"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LLMTestServer/1.0"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def state(self) -> ServerState:
        # the handler only ever runs in an _HTTPServer (typeshed: a BaseServer)
        return cast(_HTTPServer, self.server).state

    def _send(
        self,
        status: int,
        body: bytes | str,
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
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
        err = {"message": msg, "type": ERRORS.get(status, "invalid_request_error"), "code": status}
        self._json(status, {"error": err}, headers)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._json(200, {"status": "ok"})
        elif path in ("/v1/models", "/models"):
            with self.state.lock:
                names = list(self.state.cfg["models"]) + list(self.state.counts["by_model"])
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "llm-test-server"}
                for m in dict.fromkeys(names)
            ]
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
            problem = continue_problem(body)
            if problem:
                return self._error(400, problem)
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
                    headers = {
                        "Retry-After": str(whole),
                        "retry-after-ms": str(math.ceil(secs * 1000)),
                    }
                return self._error(429, "Rate limit reached (injected)", headers)
            if fault in ("500", "503"):
                return self._error(int(fault), f"injected {fault} error")
            finish = "length" if fault == "length" else "stop"
            if plan.stream:
                text, ctype = sse_body(plan, finish), "text/event-stream"
            else:
                text, ctype = json.dumps(completion_body(plan, finish)), "application/json"
            if fault == "malformed":
                text = text[: len(text) // 2]
            self._send(200, text, ctype)
        finally:
            self.state.done()

    def _abort(self) -> None:
        """Close the socket with SO_LINGER 0 so the client sees a TCP RST, no response."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True


class _HTTPServer(ThreadingHTTPServer):
    state: ServerState  # set by LLMTestServer.start() before serving
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
        self.state = ServerState(settings)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> LLMTestServer:
        if self._httpd is None:
            self.state.stop_event.clear()
            self._httpd = _HTTPServer((self.host, self._want_port), _Handler)
            self._httpd.state = self.state
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"llm-test-server-{self.port}",
                daemon=True,
            )
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
