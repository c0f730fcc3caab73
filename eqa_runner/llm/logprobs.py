"""Token log-probabilities of a reply, provider-agnostic.

A caller asks for them with ``LLMClient.acomplete(..., top_logprobs=k)``: the request then
carries ``logprobs: true, top_logprobs: k`` (OpenAI's and vLLM's names, which litellm passes on,
or drops for a provider that has no such parameter). What comes back, litellm's
``choices[0].logprobs.content[i].top_logprobs``, is kept on the :class:`Completion` as
``logprobs``: one list per generated token of ``(token, logprob)`` alternatives, the sampled
token included. None when the endpoint returns none.

Every log-probability is validated (:func:`valid_logprob`): finite and at most 0 (a tiny
positive rounding error is read as 0). Anything else (``+inf``, ``nan``, ``3.2``, a string) is
dropped and counted (``Completion.invalid_logprobs``, summed as ``usage.invalid_logprobs`` in
the records and the summary), never used in a probability.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

TopLogprobs = list[list[tuple[str, float]]]


def logprob_params(top_logprobs: int | None) -> dict[str, Any]:
    """The request parameters that ask for the top ``k`` alternatives per token ({} for none)."""
    if not top_logprobs:
        return {}
    return {"logprobs": True, "top_logprobs": int(top_logprobs)}


def prompt_logprob_params(k: int | None) -> dict[str, Any]:
    """vLLM's request fields that score the prompt's last tokens (``option_loss``): the final
    assistant message left open (``continue_final_message``, no generation prompt) and the top
    ``k`` log-probabilities of every prompt token (the token itself always included); {} for
    none."""
    if not k:
        return {}
    body = {
        "prompt_logprobs": int(k),
        "continue_final_message": True,
        "add_generation_prompt": False,
    }
    return {"max_tokens": 1, "extra_body": body}


def last_prompt_logprobs(prompt_logprobs: Any) -> tuple[list[tuple[str, float]] | None, int]:
    """The last prompt position's valid ``(decoded_token, logprob)`` entries of a response's
    ``prompt_logprobs`` (vLLM: a list per prompt token of None or ``{token_id: {logprob, rank,
    decoded_token}}``), and how many entries were dropped as invalid; None when absent."""
    if not isinstance(prompt_logprobs, list) or not prompt_logprobs:
        return None, 0
    last = prompt_logprobs[-1]
    if not isinstance(last, dict):
        return None, 0
    out, bad = [], 0
    for entry in last.values():
        tok, lp = _field(entry, "decoded_token"), valid_logprob(_field(entry, "logprob"))
        if isinstance(tok, str) and lp is not None:
            out.append((tok, lp))
        else:
            bad += 1
    return out, bad


def option_logprob(entries: Sequence[tuple[str, float]] | None, option: str) -> float | None:
    """The option's log-probability at the last prompt position (its decoded token, spaces
    ignored), or None when the position does not hold it."""
    want = option.strip()
    best = [lp for tok, lp in entries or () if tok.strip() == want]
    return max(best) if best else None


def _field(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


ROUNDING = 1e-6  # a log-probability up to this much above 0 is a rounding error: read as 0


def valid_logprob(lp: Any) -> float | None:
    """``lp`` as a log-probability (finite, ≤ 0), or None."""
    if isinstance(lp, bool) or not isinstance(lp, (int, float)):
        return None
    f = float(lp)
    if not math.isfinite(f) or f > ROUNDING:
        return None
    return min(f, 0.0)


def _pair(entry: Any) -> tuple[str, float] | None:
    token, lp = _field(entry, "token"), _field(entry, "logprob")
    v = valid_logprob(lp)
    if not isinstance(token, str) or v is None:
        return None
    return token, v


def validated_logprobs(choice: Any) -> tuple[TopLogprobs | None, int]:
    """Per generated token, its valid ``(token, logprob)`` alternatives, from a response choice
    (a litellm object or a plain dict), and how many entries were dropped as invalid; None
    when the response carries no log-probabilities."""
    content = _field(_field(choice, "logprobs"), "content")
    if not content:
        return None, 0
    out: TopLogprobs = []
    bad = 0
    for pos in content:
        entries = list(_field(pos, "top_logprobs") or [])
        alts = [p for e in entries if (p := _pair(e)) is not None]
        bad += len(entries) - len(alts)
        chosen = _pair(pos)
        if chosen is None and _field(pos, "token") is not None:
            bad += 1
        if chosen is not None:  # the sampled token first
            alts = [chosen, *(a for a in alts if a[0] != chosen[0])]
        out.append(alts)
    return (out or None), bad


def extract_top_logprobs(choice: Any) -> TopLogprobs | None:
    """:func:`validated_logprobs` without the count."""
    return validated_logprobs(choice)[0]


def as_top_logprobs(value: Sequence[Sequence[Sequence[Any]]] | None) -> TopLogprobs | None:
    """``logprobs`` as read back from JSON (lists for tuples) in the canonical form."""
    if value is None:
        return None
    return [[(str(t), v) for t, lp in pos if (v := valid_logprob(lp)) is not None] for pos in value]
