"""The model client asks for and returns token log-probabilities (over real HTTP)."""

from __future__ import annotations

import asyncio
import math

from eqa_runner.llm import DiskCache, LLMClient, user
from eqa_runner.llm.logprobs import extract_top_logprobs
from eqa_runner.llm.usage import Completion

PROBS = {"B": 0.6, "A": 0.2, "C": 0.15, "D": 0.05}


def _client(srv, tmp_path=None) -> LLMClient:
    cfg = {"model": "openai/test-model", "api_base": srv.url, "timeout_s": 10}
    cache = DiskCache(tmp_path / "cache") if tmp_path is not None else None
    return LLMClient(cfg, role="policy", cache=cache)


def _ask(client: LLMClient, text: str = "pick one", **kw) -> Completion:
    return asyncio.run(client.acomplete([user(text)], **kw))


def _first(c: Completion) -> dict[str, float]:
    assert c.logprobs is not None
    return {t: round(math.exp(lp), 6) for t, lp in c.logprobs[0]}


def test_top_logprobs_requested_and_returned(llm_server, tmp_path):
    llm_server.configure(rules=[{"pattern": "pick", "reply": "B", "token_probs": PROBS}])
    c = _ask(_client(llm_server, tmp_path), top_logprobs=5)
    body = llm_server.requests[-1]["body"]
    assert (body["logprobs"], body["top_logprobs"]) == (True, 5)
    assert c.params["logprobs"] is True and c.params["top_logprobs"] == 5
    assert _first(c) == PROBS
    # the disk cache keeps them: an identical request is served from it with the same values
    n = len(llm_server.requests)
    again = _ask(_client(llm_server, tmp_path), top_logprobs=5)
    assert again.cached and len(llm_server.requests) == n
    assert again.logprobs == c.logprobs and isinstance(again.logprobs[0][0], tuple)


def test_not_asked_or_not_returned_is_none(llm_server):
    llm_server.configure(rules=[{"pattern": "pick", "reply": "B", "token_probs": PROBS}])
    c = _ask(_client(llm_server))
    assert c.logprobs is None and "logprobs" not in llm_server.requests[-1]["body"]
    llm_server.configure(logprobs=False)  # a provider without log-probabilities
    c = _ask(_client(llm_server), top_logprobs=5)
    assert c.logprobs is None and c.text == "B"


def test_old_cache_entries_stay_readable(llm_server, tmp_path):
    """A cache entry written before completions carried logprobs reads back as None."""
    client = _client(llm_server, tmp_path)
    messages = [user("pick one")]
    key = client.cache_key(messages, client.sent_params(client.params()))
    old = {"text": "C", "model": "openai/test-model", "finish_reason": "stop"}
    client.cache.put(key, {**old, "prompt_tokens": 3, "completion_tokens": 1, "cost_usd": None,
                           "payload_bytes": 8, "params": {}})  # fmt: skip
    c = asyncio.run(client.acomplete(messages))
    assert c.cached and c.text == "C" and c.logprobs is None
    assert llm_server.requests == []


def test_extract_handles_dicts_objects_and_missing():
    class Obj:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    alt = [{"token": "A", "logprob": -0.1}, {"token": "B", "logprob": -2.5}]
    as_dict = {"logprobs": {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": alt}]}}
    as_obj = Obj(
        logprobs=Obj(
            content=[Obj(token=" Yes", logprob=-0.2, top_logprobs=[Obj(token="No", logprob=-1.8)])]
        )
    )
    assert extract_top_logprobs(as_dict) == [[("A", -0.1), ("B", -2.5)]]
    # the sampled token is kept even when the top list omits it
    assert extract_top_logprobs(as_obj) == [[(" Yes", -0.2), ("No", -1.8)]]
    assert extract_top_logprobs({"logprobs": None}) is None
    assert extract_top_logprobs(Obj(logprobs=Obj(content=[]))) is None
