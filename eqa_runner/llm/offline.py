"""The offline stand-in: ``model: offline`` answers without any network.

Its replies are fixed, clearly labelled placeholders (each caller passes the reply that its
parser expects, tagged with :data:`OFFLINE_TAG`); scores of an offline run mean nothing and
the summary says so.
"""

from __future__ import annotations

from typing import Any

from eqa_runner.llm.usage import Completion

OFFLINE_MODEL = "offline"
OFFLINE_TAG = "[offline placeholder]"
DEFAULT_OFFLINE_REPLY = f"{OFFLINE_TAG} unknown"


def is_offline(model: str) -> bool:
    return model == OFFLINE_MODEL


def offline_completion(reply: str, params: dict[str, Any]) -> Completion:
    """The stand-in's reply: free, never cached, no tokens."""
    return Completion(
        text=reply, model=OFFLINE_MODEL, finish_reason="stop", cost_usd=0.0, params=params
    )
