"""``llm.letter_scoring``: top_logprobs, option_loss (vLLM's prompt_logprobs with an open final
assistant message) and parsed, over the test server's vLLM-shaped replies."""

from __future__ import annotations

import asyncio
import json
import math
import urllib.error
import urllib.request
from dataclasses import asdict

import pytest

from eqa_runner.llm import LLMClient, user
from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.logprobs import last_prompt_logprobs, option_logprob
from eqa_runner.llm.usage import Completion
from eqa_runner.policies.vlm_questions import ask_letter, ask_yes
from eqa_runner.testing.llm_server import LLMTestServer

RULES = [
    {"pattern": "letter", "reply": "B", "token_probs": {"B": 0.7, "A": 0.2}},
    {"pattern": "worth", "reply": "Yes", "token_probs": {"Yes": 0.8, "No": 0.2}},
]
LETTER = [user("Which letter? A, B or C. Answer with one letter.")]
WORTH = [user("Is it worth exploring?")]


def _client(srv, mode: str) -> LLMClient:
    cfg = LLMConfig(model="openai/test-model", api_base=srv.url, letter_scoring=mode,
                    temperature=None, backoff_base_s=0.05)  # fmt: skip
    return LLMClient(cfg, role="policy")


def _run(coro):
    return asyncio.run(coro)


def test_three_modes_score_the_same_question() -> None:
    with LLMTestServer(rules=RULES) as srv:
        top = _run(ask_letter(_client(srv, "top_logprobs"), LETTER, "A", 5, 3))
        loss = _run(ask_letter(_client(srv, "option_loss"), LETTER, "A", 5, 3))
        parsed = _run(ask_letter(_client(srv, "parsed"), LETTER, "A", 5, 3))
        p_loss, s_loss = _run(ask_yes(_client(srv, "option_loss"), WORTH, "Yes", 5))
        bodies = [q["body"] for q in srv.requests]
    assert top.source == "logprobs" and top.probs == pytest.approx([2 / 9, 7 / 9, 0.0])
    assert top.missing == ("C",)  # outside the returned top-k: counted, not silently 0
    assert loss.source == "option_loss" and loss.calls == 3
    assert loss.probs == pytest.approx([0.2, 0.7, 0.1]) and loss.missing == ()
    assert parsed.source == "parsed" and parsed.probs == [0.0, 1.0, 0.0]
    assert s_loss.source == "option_loss" and p_loss == pytest.approx(0.8)
    opt = [b for b in bodies if b.get("prompt_logprobs")]
    assert len(opt) == 5  # one request per option: A, B, C, Yes, No
    assert sorted(b["messages"][-1]["content"] for b in opt) == ["A", "B", "C", "No", "Yes"]
    for b in opt:
        assert b["continue_final_message"] is True and b["add_generation_prompt"] is False
        assert b["messages"][-1]["role"] == "assistant"
        assert b["max_tokens"] == 1 and "logprobs" not in b


def test_option_loss_without_prompt_logprobs_falls_back_to_parsing() -> None:
    class Plain:  # a client that cannot send vLLM's fields
        async def acomplete(self, messages, *, offline_reply: str = "", top_logprobs=None):
            return Completion(text="C", model="m")

    s = _run(ask_letter(Plain(), LETTER, "A", 5, 3))
    assert s.source == "parsed" and s.probs == [0.0, 0.0, 1.0]


def test_server_answers_prompt_logprobs_as_vllm_and_refuses_both_flags() -> None:
    with LLMTestServer(rules=RULES) as srv:
        body = {"model": "m", "messages": [{"role": "user", "content": "a letter"},
                {"role": "assistant", "content": "A"}], "prompt_logprobs": 1,
                "continue_final_message": True, "add_generation_prompt": False}  # fmt: skip
        req = urllib.request.Request(f"{srv.url}/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(req) as r:
            reply = json.loads(r.read())
        bad = dict(body, add_generation_prompt=True)
        req = urllib.request.Request(f"{srv.url}/chat/completions", json.dumps(bad).encode(),
                                     {"Content-Type": "application/json"})  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        assert e.value.code == 400
    plp = reply["prompt_logprobs"]
    assert plp[0] is None and all(isinstance(p, dict) for p in plp[1:])
    last = plp[-1]
    assert all(set(v) == {"logprob", "rank", "decoded_token"} for v in last.values())
    # top-1 is B; the prompt token A is always included, with its rank
    entries, bad_n = last_prompt_logprobs(plp)
    assert bad_n == 0 and option_logprob(entries, "A") == pytest.approx(math.log(0.2))
    assert sorted((v["decoded_token"], v["rank"]) for v in last.values()) == [("A", 2), ("B", 1)]


def test_prompt_logprobs_survive_the_cache_round_trip() -> None:
    c = Completion(text="", model="m", prompt_logprobs=[("A", -0.5)])
    back = Completion(**json.loads(json.dumps(asdict(c))))
    assert back.prompt_logprobs == [("A", -0.5)]
