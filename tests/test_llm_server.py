"""Tests for the scriptable OpenAI-compatible test server (real HTTP clients only)."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from eqa_runner.testing.llm_server import FAULT_KINDS, LLMTestServer

REPO = Path(__file__).resolve().parents[1]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def chat_body(text: str, model: str = "test-model", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], **extra}


def request(
    srv: LLMTestServer, path: str, body: Any = None, timeout: float = 5.0
) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh http.client connection; returns (status, headers, raw body)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    try:
        if body is None:
            conn.request("GET", path)
        else:
            data = json.dumps(body).encode()
            conn.request("POST", path, data, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def ask(srv: LLMTestServer, text: str, **extra: Any) -> dict[str, Any]:
    status, _, raw = request(srv, "/v1/chat/completions", chat_body(text, **extra))
    assert status == 200, raw
    return json.loads(raw)


def reply(srv: LLMTestServer, text: str, **extra: Any) -> str:
    return ask(srv, text, **extra)["choices"][0]["message"]["content"]


def test_completion_shape_and_endpoints() -> None:
    with LLMTestServer(default_reply="hello there") as srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}/v1"
        assert request(srv, "/health")[0] == 200
        status, _, raw = request(srv, "/v1/models")
        assert status == 200 and json.loads(raw)["data"][0]["id"] == "test-model"
        out = ask(srv, "x" * 40, model="my-model")
        assert out["object"] == "chat.completion" and out["model"] == "my-model"
        assert out["id"].startswith("chatcmpl-") and isinstance(out["created"], int)
        choice = out["choices"][0]
        assert choice["message"] == {"role": "assistant", "content": "hello there"}
        assert choice["finish_reason"] == "stop"
        assert out["usage"] == {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        assert request(srv, "/v1/chat/completions", {"model": "m"})[0] == 400
        assert request(srv, "/nope")[0] == 404


def test_rules_sequencing_model_and_counter() -> None:
    rules = [
        {"pattern": r"stop\?", "reply": ["no", "no", "yes"]},
        {"pattern": "describe", "model": "^vision-", "reply": "a chair #{n}"},
        {"pattern": "describe", "reply": "blind"},
    ]
    with LLMTestServer(rules=rules, default_reply="fallback") as srv:
        assert [reply(srv, "Should we STOP?") for _ in range(5)] == [
            "no",
            "no",
            "yes",
            "yes",
            "yes",
        ]
        assert reply(srv, "describe", model="vision-1") == "a chair #0"
        assert reply(srv, "describe", model="vision-1") == "a chair #1"
        assert reply(srv, "describe", model="text-1") == "blind"
        assert reply(srv, "unrelated") == "fallback"
        # system + user text is concatenated; multi-line prompts match with re.S
        body = {"model": "m", "messages": [{"role": "system", "content": "should we"},
                                            {"role": "user", "content": "stop?"}]}  # fmt: skip
        assert request(srv, "/v1/chat/completions", body)[0] == 200
        assert srv.stats()["by_rule"] == {"0": 6, "1": 2, "2": 1, "default": 1}


def test_per_key_sequencing_and_after() -> None:
    rules = [
        {"pattern": "stop now", "key": r"episode=(\w+)", "reply": ["no", "no", "yes"]},
        {"pattern": "answer", "after": 2, "reply": "final"},
        {"pattern": "answer", "reply": "not yet"},
    ]
    with LLMTestServer(rules=rules) as srv:
        seq = ["a", "a", "b", "a", "b", "b", "a"]
        got = [reply(srv, f"episode={ep} stop now?") for ep in seq]
        assert got == ["no", "no", "no", "yes", "no", "yes", "yes"]
        assert [reply(srv, "answer") for _ in range(4)] == ["not yet", "not yet", "final", "final"]
        srv.reset()  # rule counters restart
        assert reply(srv, "episode=a stop now") == "no"


def test_images_accepted_and_logged_as_digest() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    content = [
        {"type": "text", "text": "what is in this image?"},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
    ]
    body = {"model": "test-model", "messages": [{"role": "user", "content": content}]}
    with LLMTestServer(rules=[{"pattern": "image", "reply": "a cat"}]) as srv:
        status, _, raw = request(srv, "/v1/chat/completions", body)
        out = json.loads(raw)
        assert status == 200 and out["choices"][0]["message"]["content"] == "a cat"
        assert out["usage"]["prompt_tokens"] == (22 + 3) // 4 + 2 * 85
        assert srv.stats()["images"] == 2
        logged = srv.requests[-1]["body"]["messages"][0]["content"][1]["image_url"]
        assert logged == {"sha256": hashlib.sha256(PNG).hexdigest(), "bytes": len(PNG)}
        assert "base64" not in json.dumps(srv.requests)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_then_recovery(kind: str) -> None:
    opts = {"fail_first_n": 1, "fail_kind": kind, "timeout_sleep_s": 3.0, "retry_after_s": 2}
    with LLMTestServer(default_reply="fine", **opts) as srv:
        path, body = "/v1/chat/completions", chat_body("hi")
        if kind == "reset":
            with pytest.raises((ConnectionError, http.client.HTTPException)):
                request(srv, path, body)
        elif kind == "timeout":
            with pytest.raises(TimeoutError):
                request(srv, path, body, timeout=0.3)
        else:
            status, headers, raw = request(srv, path, body)
            if kind.startswith("429"):
                assert status == 429 and "rate" in json.loads(raw)["error"]["message"].lower()
                assert headers.get("retry-after") == ("2" if kind == "429" else None)
            elif kind in ("500", "503"):
                assert status == int(kind) and "error" in json.loads(raw)
            elif kind == "malformed":
                assert status == 200
                with pytest.raises(json.JSONDecodeError):
                    json.loads(raw)
            else:
                choice = json.loads(raw)["choices"][0]
                assert status == 200 and choice["message"]["content"] == ""
                assert choice["finish_reason"] == ("length" if kind == "length" else "stop")
        assert reply(srv, "hi") == "fine"
        stats = srv.stats()
        assert stats["requests"] == 2 and stats["by_fault"] == {kind: 1}


def test_rule_fault_and_seeded_random_faults() -> None:
    rules = [{"pattern": "flaky", "fault": ["503", None], "reply": "recovered"}]
    with LLMTestServer(rules=rules) as srv:
        assert request(srv, "/v1/chat/completions", chat_body("flaky"))[0] == 503
        assert reply(srv, "flaky") == "recovered"

    def statuses(srv: LLMTestServer) -> list[int]:
        return [request(srv, "/v1/chat/completions", chat_body("q"))[0] for _ in range(60)]

    cfg = {"fault_rate": 0.5, "faults": {"500": 1, "429_no_retry_after": 3}, "seed": 7}
    with LLMTestServer(**cfg) as a, LLMTestServer(**cfg) as b:
        first = statuses(a)
        assert first == statuses(b)  # deterministic given seed and request order
        a.reset()
        assert statuses(a) == first  # reset re-seeds
        n_fault = sum(s != 200 for s in first)
        assert 15 <= n_fault <= 45 and {500, 429} <= set(first)
        assert sum(a.stats()["by_fault"].values()) == n_fault


def test_admin_endpoints_and_keepalive() -> None:
    with LLMTestServer() as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        for i in range(5):  # one keep-alive connection, several requests
            conn.request("POST", "/v1/chat/completions", json.dumps(chat_body(f"q{i}")))
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read())["choices"]
        conn.close()
        cfg = {"rules": [{"pattern": "q", "reply": "configured"}], "latency_s": 0.01}
        assert request(srv, "/_config", cfg)[0] == 200
        assert reply(srv, "q") == "configured"
        assert request(srv, "/_config", {"bogus": 1})[0] == 400
        assert request(srv, "/_config", {"faults": {"explode": 1}})[0] == 400
        assert request(srv, "/_config", {"rules": [{"pattern": "("}]})[0] == 400
        stats = json.loads(request(srv, "/_stats")[2])
        assert stats["requests"] == 6 and stats["by_status"] == {"200": 6}
        assert stats["by_model"] == {"test-model": 6} and stats["in_flight"] == 0
        log = json.loads(request(srv, "/_log")[2])
        assert [e["reply"] for e in log][-1] == "configured" and len(log) == 6
        assert request(srv, "/_reset", {})[0] == 200
        assert json.loads(request(srv, "/_stats")[2])["requests"] == 0
        assert srv.requests == []
        srv.configure(log_size=2)
        for _ in range(4):
            reply(srv, "q")
        assert [e["index"] for e in srv.requests] == [2, 3]


@pytest.mark.slow
def test_cli_subprocess(tmp_path: Path) -> None:
    cfg, port_file = tmp_path / "rules.json", tmp_path / "port"
    cfg.write_text(json.dumps([{"pattern": "ping", "reply": "pong"}]))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "eqa_runner.testing.llm_server", "--port", "0",
           "--config", str(cfg), "--port-file", str(port_file)]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        port = int(port_file.read_text())
        assert line.strip() == f"listening on http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(
            urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                json.dumps(chat_body("ping")).encode(),
                {"Content-Type": "application/json"},
            ),
            timeout=5,
        ) as resp:
            assert json.loads(resp.read())["choices"][0]["message"]["content"] == "pong"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_litellm_roundtrip() -> None:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    litellm = pytest.importorskip("litellm")
    rules = [{"pattern": "capital of france", "reply": "Paris"}]
    with LLMTestServer(rules=rules) as srv:
        resp = litellm.completion(
            model="openai/test-model",
            api_base=srv.url,
            api_key="sk-test",
            messages=[{"role": "user", "content": "What is the capital of France?"}],
        )
        assert resp.choices[0].message.content == "Paris"
        assert resp.choices[0].finish_reason == "stop"
        assert resp.usage.prompt_tokens == (30 + 3) // 4
        assert resp.usage.completion_tokens == 2 and resp.usage.total_tokens == 10
        assert srv.stats()["by_model"] == {"test-model": 1}


def test_concurrency_32_clients() -> None:
    n_threads, n_req, latency = 32, 20, 0.05
    errors: list[BaseException] = []

    def client(tid: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        try:
            for i in range(n_req):
                conn.request("POST", "/v1/chat/completions", json.dumps(chat_body(f"{tid}-{i}")))
                resp = conn.getresponse()
                assert resp.status == 200
                resp.read()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            conn.close()

    with LLMTestServer(latency_s=latency) as srv:
        threads = [threading.Thread(target=client, args=(t,)) for t in range(n_threads)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        stats = srv.stats()
    print(
        f"\n{n_threads}x{n_req} requests @ {latency}s: {wall:.2f}s (ideal {n_req * latency:.2f}s)"
    )
    assert not errors, errors[:3]
    assert stats["requests"] == n_threads * n_req and stats["by_status"] == {"200": 640}
    assert stats["max_in_flight"] >= 16
    assert wall < 10 * n_req * latency


# ----------------------------------------------------------------------------- logprobs


def test_logprobs_first_token_distribution_over_http():
    """A rule's token_probs come back as the first token's top_logprobs; the rest have p=1."""
    import math

    rules = [{"pattern": "pick", "reply": "B. The sofa",
              "token_probs": {"A": 0.1, "B": 0.6, "C": 0.2, "D": 0.1}}]  # fmt: skip
    with LLMTestServer(rules=rules) as srv:
        status, _, raw = request(
            srv, "/v1/chat/completions", chat_body("pick one", logprobs=True, top_logprobs=3)
        )
        assert status == 200
        lp = json.loads(raw)["choices"][0]["logprobs"]["content"]
        assert lp[0]["token"] == "B" and math.isclose(math.exp(lp[0]["logprob"]), 0.6)
        top = [(t["token"], round(math.exp(t["logprob"]), 6)) for t in lp[0]["top_logprobs"]]
        assert top == [("B", 0.6), ("C", 0.2), ("A", 0.1)]  # top 3, most likely first
        assert "".join(t["token"] for t in lp) == "B. The sofa"
        assert all(t["logprob"] == 0.0 for t in lp[1:])
        # not asked for -> none; provider without logprobs -> null even when asked
        _, _, raw = request(srv, "/v1/chat/completions", chat_body("pick one"))
        assert json.loads(raw)["choices"][0]["logprobs"] is None
        srv.configure(logprobs=False)
        _, _, raw = request(srv, "/v1/chat/completions", chat_body("pick", logprobs=True))
        assert json.loads(raw)["choices"][0]["logprobs"] is None


def test_logprobs_rule_validation():
    with pytest.raises(ValueError, match="token_probs"):
        LLMTestServer(rules=[{"pattern": "x", "token_probs": {"A": 0.9, "B": 0.5}}])
    with pytest.raises(ValueError, match="token_probs"):
        LLMTestServer(rules=[{"pattern": "x", "token_probs": {}}])


# ----------------------------------------------------------------------------- rate limit


def test_rate_limit_token_bucket_over_http():
    """Beyond rate_limit_rps the server answers 429 with Retry-After / retry-after-ms."""
    rps = 20.0
    with LLMTestServer(rate_limit_rps=rps, rate_limit_burst=2) as srv:
        t0 = time.monotonic()
        ok, limited, waits = 0, 0, []
        while time.monotonic() - t0 < 1.0:
            status, headers, _ = request(srv, "/v1/chat/completions", chat_body("hi"))
            if status == 200:
                ok += 1
            else:
                assert status == 429
                limited += 1
                waits.append(int(headers["retry-after-ms"]))
                assert int(headers["retry-after"]) >= 1
        elapsed = time.monotonic() - t0
        assert limited > ok  # a tight loop far exceeds 20 req/s
        assert ok <= 2 + rps * elapsed + 1  # burst + rate, never more
        assert ok >= 0.6 * rps * elapsed
        assert all(0 < w <= 1000 / rps + 1 for w in waits)
        assert srv.stats()["by_fault"]["rate_limit"] == limited
        # waiting as told lets the next request through
        status, headers, _ = request(srv, "/v1/chat/completions", chat_body("hi"))
        if status == 429:
            time.sleep(int(headers["retry-after-ms"]) / 1000)
            assert request(srv, "/v1/chat/completions", chat_body("hi"))[0] == 200
