"""Token and cost estimates of requests, for ``run.dry_run`` (no model is called)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from eqa_runner.llm.fast_tokens import fast_estimate
from eqa_runner.llm.loader import load_litellm
from eqa_runner.llm.messages import Message, message_text
from eqa_runner.llm.offline import OFFLINE_MODEL


@dataclass
class RequestEstimate:
    """A model request as a dry run sees it: text messages plus image sizes (nothing encoded)."""

    role: str
    messages: list[Message]
    image_sizes: list[tuple[int, int]] = field(default_factory=list)
    # a letter question's options (llm.letter_scoring=option_loss asks once per option)
    options: tuple[str, ...] = ()
    max_tokens: int | None = None  # this request's completion cap (None: the role's)


def image_tokens(width: int, height: int) -> int:
    """OpenAI high-detail image token estimate (fit 2048, shortest side 768, 512 px tiles)."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = -(-int(w) // 512) * -(-int(h) // 512)
    return 85 + 170 * tiles


def estimate_call(
    model: str,
    text_messages: Sequence[Message],
    image_sizes: Sequence[tuple[int, int]],
    max_tokens: int | None,
    price: tuple[float, float] | None = None,
) -> tuple[int, int, float | None]:
    """(prompt tokens, completion tokens upper bound, cost in USD or None) without calling."""
    completion = max_tokens or 256
    if model == OFFLINE_MODEL:
        return (len(message_text(text_messages)) // 4, completion, 0.0)
    text = [{"role": m["role"], "content": message_text([m])} for m in text_messages]
    images = sum(image_tokens(w, h) for w, h in image_sizes)
    pairs = [(t["role"], t["content"]) for t in text]
    fast = fast_estimate(model, pairs, images, completion, price)
    if fast is not None:  # gpt-4o family: the same numbers without importing litellm
        return fast
    litellm = load_litellm()
    try:
        prompt = int(litellm.token_counter(model=model, messages=text))
    except Exception:
        prompt = len(message_text(text_messages)) // 4
    prompt += images
    if price is not None:  # an explicit price from the config (USD per million tokens)
        return prompt, completion, (price[0] * prompt + price[1] * completion) / 1e6
    try:
        cin, cout = litellm.cost_per_token(
            model=model, prompt_tokens=prompt, completion_tokens=completion
        )
        cost: float | None = float(cin + cout)
    except Exception:
        cost = None
    return prompt, completion, cost
