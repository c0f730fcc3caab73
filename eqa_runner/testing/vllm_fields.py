"""vLLM's fields the test server answers for letter scoring by option loss: the check of
``continue_final_message`` / ``add_generation_prompt`` and ``prompt_logprobs`` (a list with one
``{token_id: {logprob, rank, decoded_token}}`` per prompt token, None for the first), as
vLLM's OpenAI server (``entrypoints/openai/protocol.py``) defines them."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

TOKEN_RE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")  # the server's tokens (words, marks, spaces)


def continue_problem(body: dict[str, Any]) -> str | None:
    """vLLM's check of ``continue_final_message`` (None: the request is fine)."""
    if not body.get("continue_final_message"):
        return None
    if body.get("add_generation_prompt", True):
        return "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
    last = body["messages"][-1] if body["messages"] else None
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return "continue_final_message needs a final assistant message to continue"
    return None


def _token_id(tok: str) -> str:
    return str(int(hashlib.sha256(tok.encode()).hexdigest()[:6], 16))


def _entry(tok: str, lp: float, rank: int) -> dict[str, Any]:
    return {"logprob": lp, "rank": rank, "decoded_token": tok}


def prompt_logprobs(text: str, dist: dict[str, float] | None, k: int) -> list[Any]:
    """vLLM's ``prompt_logprobs`` for a prompt whose last token is the option being scored."""
    toks = [t.strip() for t in TOKEN_RE.findall(text) if t.strip()] or [""]
    out: list[Any] = [None]
    for tok in toks[1:-1]:
        out.append({_token_id(tok): _entry(tok, 0.0, 1)})
    if len(toks) > 1:
        opt = toks[-1]
        d = dict(dist or {})
        d.setdefault(opt, max(1e-6, 1.0 - sum(d.values())))
        ranked = sorted(d.items(), key=lambda kv: -kv[1])
        last = {
            _token_id(t): _entry(t, math.log(p), i + 1)
            for i, (t, p) in enumerate(ranked[: max(0, k)])
        }
        r = next(i for i, (t, _) in enumerate(ranked) if t == opt)
        last[_token_id(opt)] = _entry(opt, math.log(d[opt]), r + 1)
        out.append(last)
    return out
