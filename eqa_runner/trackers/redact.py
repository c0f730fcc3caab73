"""Nothing secret reaches a tracker: config values and texts pass the project's secret screen."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from eqa_runner.llm.secrets import credential_problem, strip_urls

REDACTED = "<redacted>"
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.I)


def _env_secrets() -> list[str]:
    """Values of the environment's credential variables (``*_API_KEY``, ``*_TOKEN`` …)."""
    return sorted(
        {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8}, key=len,
        reverse=True,
    )  # fmt: skip


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every known secret value replaced and URL user-info stripped."""
    out = str(strip_urls(text))
    for s in _env_secrets() if secrets is None else secrets:
        out = out.replace(s, REDACTED)
    return out


def redact(obj: Any, key: str = "", secrets: list[str] | None = None) -> Any:
    """A copy of nested config data where a value the secret screen refuses (by its field
    name or its shape) or that holds a credential from the environment is ``<redacted>``."""
    secrets = _env_secrets() if secrets is None else secrets
    if isinstance(obj, Mapping):
        return {k: redact(v, f"{key}.{k}" if key else str(k), secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v, key, secrets) for v in obj]
    if isinstance(obj, str):
        if credential_problem(key or "value", obj):
            return REDACTED
        return redact_text(obj, secrets)
    return obj
