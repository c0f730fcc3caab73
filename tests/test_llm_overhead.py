"""Per-call overhead of the direct path at many calls in flight (bench/run_loop.py): the price
looked up once per token counts, no thread hand-off per request, the proxy settings still
honoured, litellm's import graph out of the garbage collector's sight; package versions read
once per process (each run's summary)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from eqa_runner.llm import LLMClient, load_litellm, user
from tests.conftest import ROOT

PRICED = "openai/gpt-4o-2024-08-06"


def test_the_price_of_a_token_count_is_looked_up_once(monkeypatch):
    litellm = load_litellm()
    calls = []
    real = litellm.cost_per_token

    def counting(**kw):
        calls.append((kw["prompt_tokens"], kw["completion_tokens"]))
        return real(**kw)

    monkeypatch.setattr(litellm, "cost_per_token", counting)
    client = LLMClient({"model": PRICED}, role="judge")
    first = client.cost(120, 7)
    assert client.cost(120, 7) == first and calls == [(120, 7)]
    other = client.cost(121, 7)
    assert calls == [(120, 7), (121, 7)]
    p, c = real(model=PRICED, prompt_tokens=121, completion_tokens=7)
    assert other == pytest.approx(float(p) + float(c)) and other > first > 0


class _CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(2)
        self.submitted = 0

    def submit(self, *a, **kw):  # type: ignore[override]
        self.submitted += 1
        return super().submit(*a, **kw)


def test_direct_calls_hand_nothing_to_threads(llm_server):
    client = LLMClient({"model": PRICED, "api_base": llm_server.url}, role="policy")
    assert client.direct
    pool = _CountingPool()

    async def calls() -> list[str]:
        asyncio.get_running_loop().set_default_executor(pool)
        await client.acomplete([user("warm up")])  # the first call may load what it needs
        before = pool.submitted
        replies = await asyncio.gather(*(client.acomplete([user(f"q {i}")]) for i in range(8)))
        assert pool.submitted == before, "a thread hand-off per request"
        return [r.text for r in replies]

    assert len(asyncio.run(calls())) == 8


class _Proxy(BaseHTTPRequestHandler):
    """Records the absolute URL each proxied request names, answers as the model would."""

    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(self.path)
        reply = {
            "choices": [{"message": {"content": "via proxy"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.mark.parametrize("bypassed", [False, True])
def test_the_direct_path_honours_http_proxy_and_no_proxy(llm_server, monkeypatch, bypassed):
    proxy = HTTPServer(("127.0.0.1", 0), _Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    _Proxy.seen = []
    try:
        for var in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_port}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1" if bypassed else "example.invalid")
        client = LLMClient({"model": PRICED, "api_base": llm_server.url}, role="policy")
        c = asyncio.run(client.acomplete([user("hello")]))
    finally:
        proxy.shutdown()
        proxy.server_close()
    if bypassed:
        assert c.text != "via proxy" and not _Proxy.seen
    else:
        assert c.text == "via proxy"
        assert _Proxy.seen == [f"{llm_server.url}/chat/completions"]


@pytest.mark.slow
def test_litellm_import_graph_is_frozen_out_of_garbage_collection():
    code = (
        "import gc; from eqa_runner.llm import load_litellm; n = gc.get_freeze_count(); "
        "load_litellm(); print(n, gc.get_freeze_count())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, after = map(int, proc.stdout.split())
    assert before == 0 and after > 100_000, (before, after)


def test_package_versions_are_read_once_per_process(monkeypatch):
    from importlib import metadata

    from eqa_runner.run import stamp

    stamp._versions.cache_clear()
    reads = []
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda pkg: reads.append(pkg) or real(pkg))
    first = stamp.versions()
    first["litellm"] = "edited by a caller"
    again = stamp.versions()
    assert len(reads) == len(stamp.PACKAGES), "read again for the second summary"
    assert again["litellm"] != "edited by a caller" and again["python"]
