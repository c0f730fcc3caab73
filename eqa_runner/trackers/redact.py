"""Nothing secret reaches a tracker: the project's one redaction filter (:mod:`eqa_runner.redact`)
on every text, plus the config screen's field rule on config values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eqa_runner import redact as redaction
from eqa_runner.llm.secrets import credential_problem, strip_urls

REDACTED = redaction.REDACTED


def redact_text(text: str) -> str:
    """``text`` through the redaction filter (the environment's credentials registered first,
    so a variable set after start-up is covered too), URL user-info stripped."""
    redaction.register_environment()
    return redaction.redact(str(strip_urls(text)))


def redact(obj: Any, key: str = "") -> Any:
    """A copy of nested config data: a value the secret screen refuses (by its field name or
    its shape) is ``<redacted>``, every other string passes the redaction filter."""
    if isinstance(obj, Mapping):
        return {k: redact(v, f"{key}.{k}" if key else str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v, key) for v in obj]
    if isinstance(obj, str):
        if credential_problem(key or "value", obj):
            return REDACTED
        return redact_text(obj)
    return obj
