"""The units of work shared by tasks, policies, judges and the run loop (DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict, cast


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


@dataclass(frozen=True)
class RecordField:
    """How a line of ``episodes.jsonl`` holds one :class:`EpisodeRecord` field, beside its type.

    ``default``: what a line written by an older version that lacks the field gets (a list or
    object is copied), and what a new record starts with. ``required``: a line without it is
    not a record (its own check in :func:`eqa_runner.records.incomplete_reason`). ``null``:
    what a JSON ``null`` there is when the type has no ``None`` — ``"refuse"`` (not a record),
    ``"keep"`` (kept as null) or ``"default"`` (a list or object: its default). ``checked``:
    whether the JSON type is checked on read. ``from_episode``: a new record copies the
    :class:`Episode`'s attribute of that name.
    """

    default: Any = None
    required: bool = False
    null: Literal["refuse", "keep", "default"] = "refuse"
    checked: bool = True
    from_episode: bool = False


# what an episode without model calls used (also the default of an older line's usage)
USAGE_ZERO = cast(UsageInfo, {k: 0.0 if k == "cost_usd" else 0 for k in UsageInfo.__annotations__})
_NONE = RecordField(None)
_OBJECT = RecordField({}, null="default")


class EpisodeRecord(TypedDict):
    """One line of ``episodes.jsonl`` (docs/records.md), declared once.

    Each field's static type and, in ``Annotated``, its :class:`RecordField`: from these
    :mod:`eqa_runner.records` derives the defaults that complete older lines, the read-time
    check of each field's JSON type and a new record (:func:`eqa_runner.records.new_record`),
    and tests/unit/test_record_fields.py checks docs/records.md against them. ``Annotated``
    keeps one declaration that mypy still reads as a plain TypedDict (a dataclass or field
    table would need a second, hand-written type for mypy, or lose the static keys).

    Every field is always present in what :func:`eqa_runner.records.read_records` returns
    (fields missing in lines written by older versions are filled with their defaults).
    """

    episode_id: Annotated[str, RecordField(required=True, from_episode=True)]
    status: Annotated[Literal["ok", "error"], RecordField("error", required=True)]
    question: Annotated[str, RecordField("", from_episode=True)]
    # a null answer or category has been read (and kept) since records were first checked
    answer: Annotated[str, RecordField("", null="keep", from_episode=True)]
    category: Annotated[str, RecordField("", null="keep", from_episode=True)]
    # subset and scene were never checked on read: a resume must not quarantine older lines
    subset: Annotated[str | None, RecordField(None, checked=False)]
    extra_answers: Annotated[list[str], RecordField([], null="default", from_episode=True)]
    scene: Annotated[str, RecordField("", checked=False, from_episode=True)]
    prediction: Annotated[str | None, _NONE]
    judge_raw: Annotated[str | None, _NONE]
    judge_ok: Annotated[bool, RecordField(False)]
    metrics: Annotated[dict[str, float | None], _OBJECT]
    trace: Annotated[dict[str, Any], _OBJECT]
    error: Annotated[ErrorInfo | None, _NONE]
    timings: Annotated[dict[str, float], _OBJECT]
    # an older line's usage is completed counter by counter (its default's keys)
    usage: Annotated[UsageInfo, RecordField(USAGE_ZERO, null="default")]


class RejudgedRecord(EpisodeRecord, total=False):
    """A line of ``episodes.rejudged-<model>.jsonl``: the record re-scored by another judge."""

    rejudged_from: dict[str, Any]  # the original judge_raw and metrics
