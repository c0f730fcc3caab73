"""Scoring a letter question (options A/B/C…, Yes/No) by the mode ``llm.letter_scoring`` names.

* ``top_logprobs`` — one generation asking for the top-k alternatives of each generated token;
  the options' log-probabilities at the answer position, softmaxed (an option outside the
  returned top-k is listed in ``missing``, its probability 0); no position offering an option:
  the parsed reply.
* ``option_loss`` — the option token's log-probability given the prompt, as Prismatic's
  ``get_loss`` computes it upstream: one request per option whose last message is the
  assistant's option, left open (vLLM's ``continue_final_message=true``,
  ``add_generation_prompt=false``) with ``prompt_logprobs``; the softmax (T = 1) over the
  options found at the last prompt position. An option the position does not hold is in
  ``missing``; none found (a server without these fields): the parsed reply of one generation.
* ``parsed`` — one generation, the named option one-hot.

``Scored.source`` records what scored each call: ``logprobs``, ``option_loss``, ``parsed`` or
``unparsable``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from eqa_runner.llm.estimate import RequestEstimate
from eqa_runner.llm.logprobs import option_logprob
from eqa_runner.llm.messages import Message, assistant
from eqa_runner.llm.usage import Completion

MODES = ("top_logprobs", "option_loss", "parsed")
TopFn = Callable[[Completion], tuple[list[float] | None, tuple[str, ...]]]
ParseFn = Callable[[str], int | None]


@dataclass(frozen=True)
class Scored:
    """A letter question's distribution over its options (None: unparsable) and provenance."""

    probs: list[float] | None
    source: str
    text: str
    missing: tuple[str, ...] = ()
    calls: int = 1


def mode_of(llm: Any) -> str:
    mode = str(getattr(getattr(llm, "cfg", None), "letter_scoring", "top_logprobs"))
    return mode if mode in MODES else "top_logprobs"


def _accepts(llm: Any, name: str) -> bool:
    try:
        return name in inspect.signature(llm.acomplete).parameters
    except (TypeError, ValueError):
        return False


def one_hot(i: int | None, n: int) -> list[float] | None:
    return None if i is None else [1.0 if k == i else 0.0 for k in range(n)]


async def score_options(
    llm: Any,
    messages: list[Message],
    options: Sequence[str],
    *,
    parse: ParseFn,
    top: TopFn,
    offline_reply: str,
    top_logprobs: int | None,
    mode: str | None = None,
) -> Scored:
    """Score one letter question by ``mode`` (default: ``llm.cfg.letter_scoring``)."""
    mode = mode or mode_of(llm)
    if mode == "option_loss" and _accepts(llm, "prompt_logprobs"):
        scored = await _option_loss(llm, messages, options, offline_reply)
        if scored is not None:
            return scored
        mode = "parsed"
    kw: dict[str, Any] = {}
    if mode == "top_logprobs" and top_logprobs and _accepts(llm, "top_logprobs"):
        kw["top_logprobs"] = int(top_logprobs)
    c = await llm.acomplete(messages, offline_reply=offline_reply, **kw)
    if kw and getattr(c, "logprobs", None):
        probs, missing = top(c)
        if probs is not None:
            return Scored(probs, "logprobs", c.text, missing)
    probs = one_hot(parse(c.text or ""), len(options))
    return Scored(probs, "parsed" if probs is not None else "unparsable", c.text)


async def _option_loss(
    llm: Any, messages: list[Message], options: Sequence[str], offline_reply: str
) -> Scored | None:
    """One request per option; None when no option's log-probability came back."""
    k = max(20, len(options))
    calls = [
        llm.acomplete([*messages, assistant(o)], offline_reply=offline_reply, prompt_logprobs=k)
        for o in options
    ]
    replies: list[Completion] = list(await asyncio.gather(*calls))
    lps = [option_logprob(c.prompt_logprobs, o) for c, o in zip(replies, options, strict=True)]
    found = [lp for lp in lps if lp is not None]
    if not found:
        return None
    top = max(found)
    e = [0.0 if lp is None else math.exp(lp - top) for lp in lps]
    total = sum(e)
    missing = tuple(o for o, lp in zip(options, lps, strict=True) if lp is None)
    return Scored([v / total for v in e], "option_loss", "", missing, calls=len(options))


def expand_estimates(reqs: Sequence[RequestEstimate], mode: str) -> list[RequestEstimate]:
    """The dry run's requests under ``mode``: with ``option_loss`` each letter question becomes
    one request per option (the option appended as the assistant's message, 1 token out)."""
    if mode != "option_loss":
        return list(reqs)
    out: list[RequestEstimate] = []
    memo: dict[int, list[RequestEstimate]] = {}
    for r in reqs:
        if not r.options:
            out.append(r)
            continue
        if id(r) not in memo:  # a step's request repeated: one expansion
            memo[id(r)] = [
                RequestEstimate(r.role, [*r.messages, assistant(o)], r.image_sizes, (), 1)
                for o in r.options
            ]
        out.extend(memo[id(r)])
    return out
