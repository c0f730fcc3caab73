"""The direct HTTP path and the litellm path give the same requests, records and cache keys."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from eqa_runner.llm import DiskCache, ImagePart, LLMClient, system, user


def _pair(srv, tmp_path, model: str, **kw) -> tuple[LLMClient, LLMClient]:
    cfg = {"model": model, "api_base": srv.url, "temperature": 0.3, "max_tokens": 77, **kw}
    cache = DiskCache(tmp_path / "cache")
    direct = LLMClient(cfg, role="policy", cache=cache)
    via_litellm = LLMClient({**cfg, "direct_http": False}, role="policy", cache=cache)
    assert not via_litellm.direct
    return direct, via_litellm


@pytest.mark.parametrize(
    ("model", "kw"),
    [
        ("openai/gpt-4o-2024-08-06", {}),  # priced
        ("openai/test-model", {"extra_params": {"top_p": 0.5, "custom_flag": 1}}),  # unpriced
        ("openai/o3-mini-2025-01-31", {"max_tokens": None,
                                       "extra_params": {"max_completion_tokens": 64}}),
    ],
)  # fmt: skip
def test_both_paths_send_the_same_body_and_record_the_same_completion(
    llm_server, tmp_path, model, kw
):
    llm_server.configure(rules=[{"pattern": ".", "reply": "a chair"}])
    direct, via_litellm = _pair(llm_server, tmp_path, model, **kw)
    # o-series: litellm rewrites system messages, so those stay on litellm
    assert direct.direct == ("o3" not in model)
    msgs = [system("be brief"), user("what is this?", ImagePart(b"\x89PNG-frame"))]
    a = asyncio.run(direct.acomplete(msgs))
    body_a = llm_server.requests[-1]["body"]
    b = asyncio.run(LLMClient(via_litellm.cfg, role="policy").acomplete(msgs))  # no cache
    body_b = llm_server.requests[-1]["body"]
    assert body_a == body_b
    strip = lambda c: {k: v for k, v in dataclasses.asdict(c).items() if k != "latency_s"}  # noqa: E731
    assert strip(a) == strip(b)
    if model.endswith("2024-08-06"):
        assert a.cost_usd and a.cost_usd > 0
    assert direct.cache_key(msgs, a.params) == via_litellm.cache_key(msgs, b.params)


def test_a_reply_cached_by_one_path_is_a_hit_on_the_other(llm_server, tmp_path):
    llm_server.configure(rules=[{"pattern": ".", "reply": "r{n}"}])
    direct, via_litellm = _pair(llm_server, tmp_path, "openai/gpt-4o-2024-08-06")
    assert direct.direct
    first = asyncio.run(direct.acomplete([user("q")]))
    again = asyncio.run(via_litellm.acomplete([user("q")]))
    assert again.cached and again.text == first.text and again.cost_usd == first.cost_usd
    assert llm_server.stats()["requests"] == 1


def test_only_openai_models_on_an_api_base_go_direct(llm_server):
    mk = lambda **c: LLMClient(c, role="policy")  # noqa: E731
    assert mk(model="openai/x", api_base=llm_server.url).direct
    assert not mk(model="openai/gpt-4o").direct  # the real provider: litellm
    assert not mk(model="anthropic/claude-3-7-sonnet-20250219", api_base=llm_server.url).direct
    assert not mk(model="openai/x", api_base=llm_server.url, direct_http=False).direct
    assert not mk(model="openai/o3-mini-2025-01-31", api_base=llm_server.url).direct


def test_both_paths_return_the_same_token_logprobs(llm_server, tmp_path):
    """``top_logprobs=k``: the same request body and the same per-token alternatives."""
    llm_server.configure(
        rules=[{"pattern": ".", "reply": "B", "token_probs": {"A": 0.2, "B": 0.7, "C": 0.1}}]
    )
    direct, via_litellm = _pair(llm_server, tmp_path, "openai/test-model")
    assert direct.direct
    a = asyncio.run(direct.acomplete([user("pick")], top_logprobs=3))
    body_a = llm_server.requests[-1]["body"]
    b = asyncio.run(
        LLMClient(via_litellm.cfg, role="policy").acomplete([user("pick")], top_logprobs=3)
    )
    assert llm_server.requests[-1]["body"] == body_a and body_a["top_logprobs"] == 3
    assert a.logprobs is not None and a.logprobs == b.logprobs
    assert [t for t, _ in a.logprobs[0]] == ["B", "A", "C"]
