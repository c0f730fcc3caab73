"""Token counts and prices of gpt-4o-family requests without importing litellm.

litellm takes seconds to import; a dry run of a whole benchmark should take about as long as
reading its question file. For the models whose accounting is simple and known, this module
gives exactly the numbers :func:`litellm.token_counter` and :func:`litellm.cost_per_token`
give (``tests/speed/test_fast_tokens.py`` compares them on many texts):

* tokenizer: tiktoken's ``o200k_base`` (litellm's rule for every name containing ``gpt-4o``),
  loaded from the encoding file litellm ships, text encoded in 1,024-character chunks;
* per message 3 tokens + the role's and the content's tokens, + 3 for the reply primer;
* price: the cost map's flat ``input_cost_per_token`` / ``output_cost_per_token``.

Any other model, a litellm tuning variable in the environment, or a cost-map entry with
tiered prices: :func:`fast_estimate` returns None and the caller asks litellm.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHUNK_CHARS = 1024  # litellm's TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS default
PER_MESSAGE, REPLY_PRIMER = 3, 3
_LITELLM_TUNING = (
    "TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS",
    "TOKEN_COUNTER_MAX_EXACT_CHARS",
    "CUSTOM_TIKTOKEN_CACHE_DIR",
    "LITELLM_MODEL_COST_MAP_URL",
)
_FLAT_KEYS = {"input_cost_per_token", "output_cost_per_token"}


@functools.lru_cache(maxsize=1)
def _litellm_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # locates the package, does not import it
    locs = list(spec.submodule_search_locations or []) if spec else []
    return Path(locs[0]) if locs else None


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    bundled = _litellm_dir()
    if bundled is not None:  # the same directory litellm points tiktoken at
        os.environ.setdefault(
            "TIKTOKEN_CACHE_DIR", str(bundled / "litellm_core_utils" / "tokenizers")
        )
    return tiktoken.get_encoding("o200k_base")


@functools.lru_cache(maxsize=1)
def _cost_map() -> dict[str, Any]:
    root = _litellm_dir()
    path = root / "model_prices_and_context_window_backup.json" if root else None
    return json.loads(path.read_text()) if path and path.is_file() else {}


def _bare_name(model: str) -> str | None:
    """``gpt-4o…`` for ``openai/gpt-4o…`` or ``gpt-4o…``; None for any other model."""
    name = model.removeprefix("openai/")
    return name if name.startswith("gpt-4o") and "/" not in name and ":" not in name else None


def count_text(text: str) -> int:
    """o200k_base tokens of ``text``, encoded in litellm's 1,024-character chunks."""
    enc = _encoding()
    chunks = (text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS))
    return sum(len(enc.encode_ordinary(c)) for c in chunks)


def flat_price(model: str) -> tuple[float, float] | None:
    """(input, output) USD per token from the bundled cost map, when the entry is flat."""
    name = _bare_name(model)
    entry = _cost_map().get(name or "")
    if not isinstance(entry, dict) or not entry.keys() >= _FLAT_KEYS:
        return None
    if any("above" in k or "tier" in k for k in entry):  # long-context or tiered pricing
        return None
    return float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"])


def fast_estimate(
    model: str,
    texts: Sequence[tuple[str, str]],
    image_tokens: int,
    completion: int,
    price: tuple[float, float] | None,
) -> tuple[int, int, float | None] | None:
    """(prompt, completion, USD) of ``(role, text)`` messages, or None (ask litellm)."""
    if _bare_name(model) is None or any(os.environ.get(k) for k in _LITELLM_TUNING):
        return None
    per_token = None if price is not None else flat_price(model)
    if price is None and per_token is None:
        return None
    if _litellm_dir() is None:
        return None
    prompt = REPLY_PRIMER + sum(PER_MESSAGE + count_text(r) + count_text(t) for r, t in texts)
    prompt += image_tokens
    if price is not None:
        return prompt, completion, (price[0] * prompt + price[1] * completion) / 1e6
    assert per_token is not None
    return prompt, completion, prompt * per_token[0] + completion * per_token[1]
