"""Typed schema of the ``llm:`` group (model presets extend it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eqa_runner.schema import bounded, named, one_of

# "thread": litellm's sync client in a thread pool driven from the event loop (measured
# cheaper per call, bench/run_loop.py); "async": litellm.acompletion on the event loop
TRANSPORTS = ("thread", "async")
IMAGE_FORMATS = ("png", "jpeg")
# "adaptive": calls in flight per endpoint learned by AIMD on 429s / timeouts (docs/concurrency.md);
# "fixed": always up to the ceiling (min of max_concurrent_calls and run.workers)
CONCURRENCY = ("adaptive", "fixed")
# how a letter question (A/B/C..., Yes/No) is scored: the generated answer's top-k token
# log-probabilities | the option token's log-probability given the prompt (vLLM: one request per
# option with prompt_logprobs and continue_final_message) | the parsed reply (one-hot)
LETTER_SCORING = ("top_logprobs", "option_loss", "parsed")


# what a ``model`` key must name (a blank one is refused when the config is composed)
A_MODEL = "a model: offline, or a litellm model string such as openai/gpt-4o-2024-08-06"


@dataclass
class LLMConfig:
    """How to call one model through litellm. ``model: offline`` answers without any network."""

    model: str = named("offline", A_MODEL)
    api_base: str | None = None
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    api_key: str | None = None  # always refused: keys never go in configs (use api_key_env)
    temperature: float | None = bounded(0.2, ge=0)
    max_tokens: int | None = bounded(128, ge=1)
    seed: int | None = 1234
    timeout_s: float = bounded(120.0, gt=0)
    max_retries: int = bounded(6, ge=0)
    backoff_base_s: float = bounded(1.0, gt=0)
    backoff_max_s: float = bounded(60.0, gt=0)
    drop_params: bool = True  # let litellm drop params a model rejects (recorded as sent)
    max_concurrent_calls: int = bounded(64, ge=1)  # ceiling, with run.workers
    concurrency: str = one_of("adaptive", CONCURRENCY)
    # openai/... models on an api_base: plain HTTP instead of litellm (same body, records, cost)
    direct_http: bool = True
    transport: str = one_of("thread", TRANSPORTS)  # litellm path only
    image_format: str = one_of("png", IMAGE_FORMATS)  # png (paper) | jpeg
    # every letter question of every policy (llm/letters.py): top_logprobs | option_loss | parsed
    letter_scoring: str = one_of("top_logprobs", LETTER_SCORING)
    extra_params: dict[str, Any] = field(default_factory=dict)
    # an explicit price (USD per million tokens), for models litellm has no price for (a
    # self-hosted model, a new snapshot); used for cost accounting and run.max_cost_usd
    input_usd_per_mtok: float | None = bounded(None, ge=0)
    output_usd_per_mtok: float | None = bounded(None, ge=0)
