"""The record's fields are declared once (``EpisodeRecord`` in eqa_runner/types.py, each with its
``RecordField``): the defaults that complete older lines, the read-time type checks, a new
record and docs/records.md all follow that declaration, so a field added in one place is a field
added everywhere (or the import stops, naming it)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Annotated, Any, TypedDict

import pytest

from eqa_runner import records
from eqa_runner.records import (
    RECORD_DEFAULTS,
    RECORD_FIELDS,
    RECORD_TYPES,
    REQUIRED_FIELDS,
    complete_record,
    incomplete_reason,
    new_record,
)
from eqa_runner.types import Episode, EpisodeRecord, RecordField, UsageInfo
from tests.conftest import ROOT

EPISODE = Episode("e1", "What?", "a chair", "objects", ["seat"], "scene-1", {"x": 1})


def test_every_view_of_the_record_has_the_declared_fields_in_order() -> None:
    declared = list(EpisodeRecord.__annotations__)
    assert set(declared) == set(EpisodeRecord.__required_keys__)  # every field always there
    assert list(RECORD_FIELDS) == declared
    assert [*REQUIRED_FIELDS, *RECORD_DEFAULTS] == declared
    unchecked = [k for k, f in RECORD_FIELDS.items() if not f.checked]
    assert set(RECORD_TYPES) | set(unchecked) | set(REQUIRED_FIELDS) == set(declared)
    assert list(new_record(EPISODE, None)) == declared
    assert list(complete_record({"episode_id": "e", "status": "error"})) == declared


def test_a_field_declared_without_how_it_is_read_stops_the_import() -> None:
    class Grown(TypedDict):
        episode_id: Annotated[str, RecordField(required=True)]
        added: int  # the new field, its default and check forgotten

    with pytest.raises(TypeError, match=r"Grown\.added: declare it as Annotated"):
        records._fields(Grown)
    assert list(records._fields(EpisodeRecord)) == list(RECORD_FIELDS)


def test_a_new_record_is_the_episode_and_the_defaults_byte_for_byte() -> None:
    """What run/episode.py's hand-written record was (the line a run writes starts as this)."""
    rec = new_record(EPISODE, "hm3d")
    assert json.dumps(rec) == (
        '{"episode_id": "e1", "status": "error", "question": "What?", "answer": "a chair", '
        '"category": "objects", "subset": "hm3d", "extra_answers": ["seat"], "scene": "scene-1", '
        '"prediction": null, "judge_raw": null, "judge_ok": false, "metrics": {}, "trace": {}, '
        '"error": null, "timings": {}, "usage": {"calls": 0, "prompt_tokens": 0, '
        '"completion_tokens": 0, "cost_usd": 0.0, "cost_unknown_calls": 0, "cached_calls": 0, '
        '"retries": 0, "failed_calls": 0, "invalid_logprobs": 0}}'
    )
    assert rec["extra_answers"] is not EPISODE.extra_answers  # the record's own list
    again = new_record(EPISODE, None)
    for key in ("metrics", "trace", "timings", "usage"):
        assert again[key] is not rec[key]  # never a shared default
    episode_fields = {f.name for f in dataclasses.fields(Episode)}
    assert {k for k, f in RECORD_FIELDS.items() if f.from_episode} <= episode_fields


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("question", None, "field question is a NoneType"),
        ("judge_ok", None, "field judge_ok is a NoneType"),
        ("extra_answers", "a", "field extra_answers is a str"),
        ("usage", [], "field usage is a list"),
        ("error", "boom", "field error is a str"),
        ("answer", None, None),  # kept as null (older lines)
        ("metrics", None, None),  # null where an object belongs: its default
        ("scene", 3, None),  # never checked
        ("subset", 3, None),
    ],
)
def test_read_checks_follow_the_declared_types(field: str, value: Any, why: str | None) -> None:
    assert incomplete_reason({"episode_id": "e", "status": "error", field: value}) == why


def test_status_values_come_from_the_declared_literal() -> None:
    assert records.STATUSES == ("ok", "error")
    assert incomplete_reason({"episode_id": "e", "status": "done"}) == (
        "status 'done' is not ok/error"
    )


def _defaults_sentence() -> str:
    """docs/records.md's list of defaults, written from the declaration: fields grouped by
    default (in order of first appearance), then the counters of an object completed key by key."""
    groups: dict[str, list[str]] = {}
    merged = []
    for key, new in RECORD_DEFAULTS.items():
        value = new()
        if isinstance(value, dict) and value:
            merged.append((key, value))
        else:
            groups.setdefault(json.dumps(value), []).append(f"`{key}`")
    parts = [f"{', '.join(keys)} `{value}`" for value, keys in groups.items()]
    for key, value in merged:
        odd = [f"`{k}` {v}" for k, v in value.items() if v != 0 or isinstance(v, float)]
        parts.append(f"every missing `{key}` counter 0 ({', '.join(odd)})")
    return "; ".join(parts) + "."


def test_docs_list_every_field_and_its_default() -> None:
    text = (ROOT / "docs" / "records.md").read_text(encoding="utf-8")
    table = text.split("## One line of `episodes.jsonl`")[1].split("\n\n")[1]
    documented = {
        f for row in table.splitlines()[2:] for f in re.findall(r"`(\w+)`", row.split("|")[1])
    }
    assert documented == set(EpisodeRecord.__annotations__)
    usage_row = next(r for r in table.splitlines() if r.startswith("| `usage` |"))
    counters = re.search(r"\{([^}]*)\}", usage_row)
    assert counters and counters.group(1).split(", ") == list(UsageInfo.__annotations__)
    assert _defaults_sentence() in " ".join(text.split())
