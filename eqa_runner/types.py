"""The units of work shared by tasks, policies, judges and the run loop (DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict


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


class ErrorInfo(TypedDict):
    """Why an episode failed: exception type, message, stage (policy | judge), file:line."""

    type: str
    message: str
    stage: str
    where: str | None


class UsageInfo(TypedDict):
    """Model use of one episode (or of a whole run): calls, tokens, cost, retries, failures."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when a model has no known price
    cost_unknown_calls: int
    cached_calls: int
    retries: int
    failed_calls: int  # calls that failed for good (their requests = retries + 1)
    invalid_logprobs: int  # token log-probabilities dropped as invalid (not finite, or > 0)


class EpisodeRecord(TypedDict):
    """One line of ``episodes.jsonl`` (docs/records.md).

    Every field is always present in what :func:`eqa_runner.records.read_records` returns
    (fields missing in lines written by older versions are filled with the documented defaults).
    """

    episode_id: str
    status: Literal["ok", "error"]
    question: str
    answer: str
    category: str
    subset: str | None
    extra_answers: list[str]
    scene: str
    prediction: str | None
    judge_raw: str | None
    judge_ok: bool
    metrics: dict[str, float | None]
    trace: dict[str, Any]
    error: ErrorInfo | None
    timings: dict[str, float]
    usage: UsageInfo


class RejudgedRecord(EpisodeRecord, total=False):
    """A line of ``episodes.rejudged-<model>.jsonl``: the record re-scored by another judge."""

    rejudged_from: dict[str, Any]  # the original judge_raw and metrics
