"""Chat messages: text and encoded images, and their OpenAI wire format."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ImagePart:
    """An encoded image (PNG or JPEG bytes) inside a message."""

    data: bytes
    mime: str = "image/png"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


Message = dict[str, Any]  # {"role": ..., "content": str | list[str | ImagePart]}


def system(text: str) -> Message:
    return {"role": "system", "content": text}


def user(*parts: str | ImagePart) -> Message:
    return {"role": "user", "content": list(parts)}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


def message_images(messages: Sequence[Message]) -> list[ImagePart]:
    return [
        p
        for m in messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if isinstance(p, ImagePart)
    ]


def message_text(messages: Sequence[Message]) -> str:
    out: list[str] = []
    for m in messages:
        parts = m["content"] if isinstance(m["content"], list) else [m["content"]]
        out.extend(p for p in parts if isinstance(p, str))
    return "\n".join(out)


def wire_messages(messages: Sequence[Message], *, keyed: bool) -> list[dict[str, Any]]:
    """OpenAI wire format; with ``keyed`` images are replaced by their content hash."""
    wire = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            wire.append({"role": m["role"], "content": content})
            continue
        parts: list[dict[str, Any]] = []
        for p in content:
            if isinstance(p, ImagePart):
                url = f"sha256:{p.sha256}:{p.mime}" if keyed else p.data_url()
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append({"type": "text", "text": p})
        wire.append({"role": m["role"], "content": parts})
    return wire
