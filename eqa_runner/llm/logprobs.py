"""Token log-probabilities of a reply, provider-agnostic.

A caller asks for them with ``LLMClient.acomplete(..., top_logprobs=k)``: the request then
carries ``logprobs: true, top_logprobs: k`` (OpenAI's and vLLM's names, which litellm passes on,
or drops for a provider that has no such parameter). What comes back, litellm's
``choices[0].logprobs.content[i].top_logprobs``, is kept on the :class:`Completion` as
``logprobs``: one list per generated token of ``(token, logprob)`` alternatives, the sampled
token included. None when the endpoint returns none.
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


def _field(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _pair(entry: Any) -> tuple[str, float] | None:
    token, lp = _field(entry, "token"), _field(entry, "logprob")
    if not isinstance(token, str) or not isinstance(lp, (int, float)) or math.isnan(lp):
        return None
    return token, float(lp)


def extract_top_logprobs(choice: Any) -> TopLogprobs | None:
    """Per generated token, its ``(token, logprob)`` alternatives, from a response choice
    (a litellm object or a plain dict); None when the response carries no log-probabilities."""
    content = _field(_field(choice, "logprobs"), "content")
    if not content:
        return None
    out: TopLogprobs = []
    for pos in content:
        alts = [p for e in (_field(pos, "top_logprobs") or []) if (p := _pair(e)) is not None]
        chosen = _pair(pos)
        if chosen is not None and chosen[0] not in {t for t, _ in alts}:
            alts.insert(0, chosen)
        out.append(alts)
    return out or None


def as_top_logprobs(value: Sequence[Sequence[Sequence[Any]]] | None) -> TopLogprobs | None:
    """``logprobs`` as read back from JSON (lists for tuples) in the canonical form."""
    if value is None:
        return None
    return [[(str(t), float(lp)) for t, lp in pos] for pos in value]
