"""Model-call failures, and which provider errors are worth a retry."""

from __future__ import annotations

import asyncio
import json

from eqa_runner.llm.loader import load_litellm


class LLMError(RuntimeError):
    """A model call failed for good (after retries), or was refused before sending."""


class EmptyReplyError(LLMError):
    """The model returned no text even with a larger token budget."""


def retry_after_s(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` in seconds (``retry-after-ms`` first), if the error has one."""
    headers = getattr(exc, "litellm_response_headers", None)
    resp = getattr(exc, "response", None)
    if headers is None and resp is not None:
        headers = getattr(resp, "headers", None)
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000.0
        value = headers.get("retry-after") or headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, timeouts, connection errors and 5xx are retried; bad requests and auth not."""
    litellm = load_litellm()
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, json.JSONDecodeError)):
        return True
    retryable = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
    )
    if "credential" in str(exc).lower() or "api key" in str(exc).lower():
        return False
    if isinstance(exc, retryable):
        return True
    if isinstance(
        exc,
        (
            litellm.AuthenticationError,
            litellm.BadRequestError,
            litellm.NotFoundError,
            litellm.PermissionDeniedError,
        ),
    ):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500
    return isinstance(exc, litellm.APIError)


def short(exc: BaseException, n: int = 300) -> str:
    """The error's message on one line, at most ``n`` characters."""
    s = str(exc).replace("\n", " ")
    return s if len(s) <= n else s[:n] + "…"
