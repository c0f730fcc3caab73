"""The model layer over real HTTP (the local OpenAI-compatible server), on both call paths:
``direct`` (plain HTTP, the default for ``openai/...`` on an ``api_base``) and ``litellm``."""

from __future__ import annotations

import asyncio
import time

import pytest

from eqa_runner.llm import (
    DiskCache,
    EmptyReplyError,
    ImagePart,
    LLMClient,
    LLMError,
    track_usage,
    user,
)


@pytest.fixture(autouse=True, params=["direct", "litellm"])
def call_path(request, monkeypatch):
    """Every test here runs on both call paths."""
    if request.param == "litellm":
        monkeypatch.setattr(LLMClient, "direct", property(lambda self: False))
    return request.param


def _client(srv, tmp_path=None, **kw) -> LLMClient:
    cfg = {
        "model": "openai/test-model",
        "api_base": srv.url,
        "backoff_base_s": 0.05,
        "backoff_max_s": 5.0,
        "timeout_s": 10,
        **kw,
    }
    cache = DiskCache(tmp_path / "cache") if tmp_path is not None else None
    return LLMClient(cfg, role="policy", cache=cache)


def _ask(client: LLMClient, text: str = "hello", **kw):
    return asyncio.run(client.acomplete([user(text)], **kw))


def test_params_pass_through_and_are_recorded(llm_server):
    llm_server.configure(rules=[{"pattern": "hello", "reply": "hi there"}])
    c = _ask(_client(llm_server, temperature=0.2, max_tokens=64, seed=7))
    assert c.text == "hi there"
    body = llm_server.requests[-1]["body"]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.2, 64, 7)
    assert c.params == {"temperature": 0.2, "max_tokens": 64, "seed": 7}
    assert c.prompt_tokens > 0 and c.completion_tokens > 0
    assert c.cost_usd is None, "a model without a known price costs null, not 0"


def test_known_model_has_a_cost(llm_server):
    client = LLMClient(
        {"model": "openai/gpt-4o-2024-08-06", "api_base": llm_server.url}, role="judge"
    )
    c = _ask(client)
    assert c.cost_usd is not None and c.cost_usd > 0


def test_retry_after_is_honoured(llm_server):
    llm_server.configure(fail_first_n=1, fail_kind="429", retry_after_s=1.0)
    t0 = time.perf_counter()
    c = _ask(_client(llm_server))
    assert c.retries == 1 and time.perf_counter() - t0 >= 0.9
    assert llm_server.stats()["requests"] == 2, "no hidden retries besides ours"


@pytest.mark.parametrize("kind", ["500", "503", "reset", "malformed", "429_no_retry_after"])
def test_transient_faults_are_retried(llm_server, kind):
    llm_server.configure(fail_first_n=2, fail_kind=kind)
    with track_usage() as usage:
        c = _ask(_client(llm_server))
    assert c.text == "ok" and c.retries == 2 and usage.retries == 2


def test_timeout_is_bounded_and_retried(llm_server):
    llm_server.configure(fail_first_n=1, fail_kind="timeout", timeout_sleep_s=5)
    t0 = time.perf_counter()
    c = _ask(_client(llm_server, timeout_s=1.0))
    assert c.retries == 1 and time.perf_counter() - t0 < 4.5


def test_retries_are_bounded(llm_server):
    llm_server.configure(fail_first_n=100, fail_kind="500")
    with pytest.raises(LLMError, match="failed after 2 retries"):
        _ask(_client(llm_server, max_retries=2))
    assert llm_server.stats()["requests"] == 3


@pytest.mark.parametrize("kind", ["empty", "length"])
def test_empty_reply_gets_one_bigger_retry_then_a_clear_error(llm_server, tmp_path, kind):
    llm_server.configure(rules=[{"pattern": ".", "reply": "", "fault": kind}])
    client = _client(llm_server, tmp_path, max_tokens=32)
    with pytest.raises(EmptyReplyError, match="Reasoning models spend the budget"):
        _ask(client)
    sizes = [r["body"]["max_tokens"] for r in llm_server.requests]
    assert sizes == [32, 128]
    llm_server.configure(rules=[{"pattern": ".", "reply": "now it works"}])
    assert _ask(client).text == "now it works", "empty replies are never cached"


def test_cache_makes_zero_calls_and_keys_on_prompts_and_images(llm_server, tmp_path):
    llm_server.configure(rules=[{"pattern": ".", "reply": "r{n}"}])
    a = _client(llm_server, tmp_path)
    img1, img2 = ImagePart(b"\x89PNG-one"), ImagePart(b"\x89PNG-two")
    first = asyncio.run(a.acomplete([user("q", img1)]))
    again = asyncio.run(a.acomplete([user("q", img1)]))
    assert again.cached and again.text == first.text
    assert llm_server.stats()["requests"] == 1
    asyncio.run(a.acomplete([user("q", img2)]))  # other image content → miss
    b = LLMClient(
        {**a.cfg.__dict__}, role="policy", cache=a.cache, cache_salt={"prompt": "other-sha"}
    )
    asyncio.run(b.acomplete([user("q", img1)]))  # other prompt-file hash → miss
    assert llm_server.stats()["requests"] == 3


def test_image_limits_checked_before_sending(llm_server):
    client = LLMClient(
        {"model": "anthropic/claude-3-7-sonnet-20250219", "api_base": llm_server.url}, role="policy"
    )
    images = [ImagePart(b"x" * 10) for _ in range(101)]
    with pytest.raises(LLMError, match="provider limit is 100"):
        asyncio.run(client.acomplete([user("q", *images)]))
    assert llm_server.stats()["requests"] == 0


def test_global_concurrency_limit(llm_server):
    llm_server.configure(latency_s=0.1)
    client = _client(llm_server, max_concurrent_calls=2)

    async def many():
        await asyncio.gather(*(client.acomplete([user(f"q{i}")]) for i in range(8)))

    asyncio.run(many())
    assert llm_server.stats()["max_in_flight"] <= 2


def test_reasoning_model_params_are_dropped_and_recorded(llm_server):
    client = LLMClient(
        {
            "model": "openai/o3-mini-2025-01-31",
            "api_base": llm_server.url,
            "temperature": 0.2,
            "max_tokens": None,
            "extra_params": {"max_completion_tokens": 512},
        },
        role="policy",
    )
    c = _ask(client)
    body = llm_server.requests[-1]["body"]
    assert "temperature" not in body and body["max_completion_tokens"] == 512
    assert "temperature" not in c.params and c.params["max_completion_tokens"] == 512


def test_offline_model_makes_no_call(llm_server):
    c = _ask(LLMClient({"model": "offline"}, role="policy"), offline_reply="[offline] x")
    assert c.text == "[offline] x" and llm_server.stats()["requests"] == 0
