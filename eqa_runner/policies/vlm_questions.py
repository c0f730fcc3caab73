"""The VLM questions of guided exploration: shipped prompt files (``prompts/vlm/``), calls that
ask for token log-probabilities where the client returns them, P(Yes) and letter
distributions from a reply, and the lettered visual prompt."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from eqa_runner.images import encode_png
from eqa_runner.llm import (
    Completion,
    ImagePart,
    LLMClient,
    Message,
    system,
    user,
)
from eqa_runner.llm.choice import choice_from_logprobs, option_letters, parse_choice
from eqa_runner.llm.letters import Scored, score_options
from eqa_runner.llm.replies import tidy_reply
from eqa_runner.prompts import Prompt, load_prompt, split_prompt
from eqa_runner.types import Episode

CONFIDENT, DIRECTION, WORTH = "confident", "direction", "worth"
PROMPTS = "vlm"  # eqa_runner/prompts/vlm/
CONFIDENT_STOP = "confident"  # the trace's stop_reason when the confidence stopped the episode


# ---------------------------------------------------------------------------- model questions
def vlm_prompt(name: str) -> tuple[str, str, Prompt]:
    """A shipped ``prompts/vlm/<name>.txt``: (system part, user template, the prompt)."""
    prompt = load_prompt(PROMPTS, name)
    sys_text, user_text = split_prompt(prompt.text)
    return sys_text, user_text, prompt


_LOGPROB_SUPPORT: dict[type, bool] = {}


def vlm_messages(name: str, images: Sequence[ImagePart], **fields: Any) -> list[Message]:
    """The prompt's system part, then its user part (formatted with ``fields``) and images."""
    sys_text, user_text, _ = vlm_prompt(name)
    out = [system(sys_text)] if sys_text else []
    out.append(user(user_text.format(**fields), *images))
    return out


def accepts_logprobs(llm: Any) -> bool:
    """Whether ``llm.acomplete`` takes ``top_logprobs`` (the client returning token
    log-probabilities as ``Completion.logprobs``)."""
    cls = type(llm)
    if cls not in _LOGPROB_SUPPORT:
        try:
            params = inspect.signature(llm.acomplete).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        _LOGPROB_SUPPORT[cls] = "top_logprobs" in params
    return _LOGPROB_SUPPORT[cls]


async def ask(
    llm: LLMClient, messages: list[Message], offline_reply: str, top_logprobs: int | None
) -> Completion:
    """One question; token log-probabilities asked for where the client can return them."""
    if top_logprobs and accepts_logprobs(llm):
        kw: dict[str, Any] = {"top_logprobs": int(top_logprobs)}
        return await llm.acomplete(messages, offline_reply=offline_reply, **kw)
    return await llm.acomplete(messages, offline_reply=offline_reply)


Positions = Sequence[Sequence[tuple[str, float]]] | None

_YES_NO = re.compile(r"^[\s*_`'\"“‘(\[]*(yes|no)\b", re.I)


def _yes_no_token(tok: str) -> str | None:
    t = tok.strip().strip("*_`'\"()[].,:!").lower()
    return t if t in ("yes", "no") else None


def yes_probability(text: str, positions: Positions) -> tuple[float | None, str]:
    """P(Yes) of a Yes/No reply and its source: the softmax of the yes and no tokens' log-
    probabilities at the first position offering either (``logprobs``; a missing one counts as
    probability 0), else 1.0 / 0.0 for a reply starting with yes / no (``parsed``), else None."""
    for alts in positions or ():
        best: dict[str, float] = {}
        for tok, lp in alts:
            w = _yes_no_token(tok)
            if w is not None and math.isfinite(lp) and lp > best.get(w, -math.inf):
                best[w] = float(lp)
        if best:
            top = max(best.values())
            e = {k: math.exp(v - top) for k, v in best.items()}
            return e.get("yes", 0.0) / sum(e.values()), "logprobs"
    m = _YES_NO.match(tidy_reply(text))
    if m:
        return (1.0 if m.group(1).lower() == "yes" else 0.0), "parsed"
    return None, "unparsable"


def letter_probs(text: str, positions: Positions, n: int) -> tuple[list[float] | None, str]:
    """The distribution over the first ``n`` letters: softmax of their log-probabilities, else
    one-hot on the parsed letter, else None (unparsable)."""
    letters = option_letters(n)
    if positions:
        c = choice_from_logprobs(positions, n, text)
        if c is not None:
            return [c.probs.get(k, 0.0) for k in letters], "logprobs"
    letter = parse_choice(text, n_options=n)
    if letter is None:
        return None, "unparsable"
    return [1.0 if k == letter else 0.0 for k in letters], "parsed"


def _r(v: float | None, nd: int = 4) -> float | None:
    return None if v is None else round(float(v), nd)


# ---------------------------------------------------------------------------- visual prompt
def draw_letters(rgb: np.ndarray, pixels: np.ndarray, radius: int) -> bytes:
    """The frame with a light-grey disc (black outline) and a black letter A, B, ... at each
    pixel (u, v), as PNG bytes (deterministic: the same frame and points give the same bytes)."""
    from PIL import Image, ImageDraw, ImageFont

    im = Image.fromarray(np.ascontiguousarray(rgb[..., :3]).astype(np.uint8))
    draw = ImageDraw.Draw(im)
    font = ImageFont.load_default(size=max(8, int(radius * 1.5)))
    px = np.asarray(pixels).reshape(-1, 2)
    for letter, (u, v) in zip(option_letters(len(px)), px, strict=True):
        box = (int(u) - radius, int(v) - radius, int(u) + radius, int(v) + radius)
        draw.ellipse(box, fill=(200, 200, 200), outline=(0, 0, 0), width=3)
        draw.text((int(u), int(v)), letter, fill=(0, 0, 0), font=font, anchor="mm")
    return encode_png(np.asarray(im))


def confident_messages(ep: Episode, *img: ImagePart) -> list[Message]:
    return vlm_messages(CONFIDENT, img, question=ep.question)


def direction_messages(ep: Episode, n: int, *img: ImagePart) -> list[Message]:
    letters = ", ".join(option_letters(n))
    return vlm_messages(DIRECTION, img, question=ep.question, letters=letters)


def worth_messages(ep: Episode, *img: ImagePart) -> list[Message]:
    return vlm_messages(WORTH, img, question=ep.question)


# ---------------------------------------------------------------------------- scoring modes
def _letter_top(n: int):  # noqa: ANN202
    letters = option_letters(n)

    def top(c: Completion) -> tuple[list[float] | None, tuple[str, ...]]:
        ch = choice_from_logprobs(c.logprobs or [], n, c.text)
        if ch is None:
            return None, ()
        return [ch.probs.get(k, 0.0) for k in letters], ch.missing

    return top


def _yes_top(c: Completion) -> tuple[list[float] | None, tuple[str, ...]]:
    p, src = yes_probability(c.text, c.logprobs)
    if src != "logprobs" or p is None:
        return None, ()
    return [p, 1.0 - p], ()


async def ask_letter(
    llm: LLMClient,
    messages: list[Message],
    offline_reply: str,
    top_logprobs: int | None,
    n: int,
    parse: Any = None,
) -> Scored:
    """A question answered by one of the first ``n`` letters, scored by ``llm.letter_scoring``
    (``parse``: the reply parser, default :func:`parse_choice`)."""
    letters = option_letters(n)

    def parsed(text: str) -> int | None:
        k = parse(text, letters) if parse is not None else parse_choice(text, n_options=n)
        return None if k is None else letters.index(k)

    return await score_options(
        llm,
        messages,
        list(letters),
        parse=parsed,
        top=_letter_top(n),
        offline_reply=offline_reply,
        top_logprobs=top_logprobs,
    )


async def ask_yes(
    llm: LLMClient, messages: list[Message], offline_reply: str, top_logprobs: int | None
) -> tuple[float | None, Scored]:
    """A Yes/No question: (P(Yes) or None, the scoring) by ``llm.letter_scoring``."""

    def parsed(text: str) -> int | None:
        p, _ = yes_probability(text, None)
        return None if p is None else (0 if p == 1.0 else 1)

    s = await score_options(
        llm,
        messages,
        ["Yes", "No"],
        parse=parsed,
        top=_yes_top,
        offline_reply=offline_reply,
        top_logprobs=top_logprobs,
    )
    return (None if s.probs is None else s.probs[0]), s
