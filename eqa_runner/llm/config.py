"""Typed schema of the ``llm:`` group (model presets extend it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LLMConfig:
    """How to call one model through litellm. ``model: offline`` answers without any network."""

    model: str = "offline"
    api_base: str | None = None
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    api_key: str | None = None  # always refused: keys never go in configs (use api_key_env)
    temperature: float | None = 0.2
    max_tokens: int | None = 128
    seed: int | None = 1234
    timeout_s: float = 120.0
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    drop_params: bool = True  # let litellm drop params a model rejects (recorded as sent)
    max_concurrent_calls: int = 64
    # "thread": litellm's sync client in a thread pool driven from the event loop (measured
    # cheaper per call, bench/run_loop.py); "async": litellm.acompletion on the event loop
    transport: str = "thread"
    image_format: str = "png"  # png (paper) | jpeg
    extra_params: dict[str, Any] = field(default_factory=dict)
