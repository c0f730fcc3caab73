"""The units of work shared by tasks, policies, judges and the run loop (DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Episode:
    """One benchmark question and everything needed to attempt it."""

    episode_id: str
    question: str
    answer: str
    category: str
    extra_answers: list[str] = field(default_factory=list)
    scene: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Prediction:
    """What a policy produced for one episode."""

    answer: str | None
    images_for_judge: list[bytes] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    """A judge's verdict. ``ok=False`` means the reply was unparsable: counted, never averaged."""

    ok: bool
    raw: str
    metrics: dict[str, float] = field(default_factory=dict)
