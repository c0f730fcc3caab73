"""Issue 33, item 4: every JSON file from outside is read with limits (``safe_io.read_json`` /
``loads_json``: size, nesting depth) and its fields type-checked. JSON nested 100,000 deep was a
``RecursionError`` traceback wherever JSON is read; now it is one line naming the file (and a
bad record line on resume or rejudge is skipped and quarantined, as promised)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from eqa_runner import safe_io
from eqa_runner.benchmarks.aeqa.task import _read_json as aeqa_read_json
from eqa_runner.benchmarks.express.task import load_questions as express_questions
from eqa_runner.benchmarks.openeqa_em.task import load_questions as openeqa_questions
from eqa_runner.errors import DataError, RunDirError, UserError
from eqa_runner.policies.imported import read_predictions
from eqa_runner.records import quarantine_bad_lines, read_records
from eqa_runner.report.runs import read_summary
from eqa_runner.run.provenance import read_provenance
from eqa_runner.run.selection import _read_ids
from tests.reliability import tally

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OPEN = '{"a": ' * 50_000  # never closed


def _one_line(e: BaseException, path: Path) -> None:
    tally.add("bad inputs tried")
    msg = str(e)
    assert isinstance(e, UserError) and "\n" not in msg and str(path) in msg, msg


@pytest.mark.parametrize("text", [DEEP, DEEP_OPEN])
@pytest.mark.parametrize(
    "reader",
    [openeqa_questions, express_questions, lambda p: aeqa_read_json(p, "questions"),
     lambda p: _read_ids(str(p))],
    ids=["openeqa", "express", "aeqa", "run.episodes"],
)  # fmt: skip
def test_deep_json_from_outside_is_one_line_naming_the_file(tmp_path, reader, text):
    path = tmp_path / "questions.json"
    path.write_text(text)
    with pytest.raises(DataError) as e:
        reader(path)
    _one_line(e.value, path)


def test_the_size_limit_is_checked_before_reading(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(["x" * 100]))
    with pytest.raises(DataError, match="over the 50-byte limit"):
        safe_io.read_json(path, max_bytes=50)


def test_depth_is_counted_outside_strings_only():
    assert safe_io.loads_json('{"q": "[[[[[[[[[[" }', "f", max_depth=2) == {"q": "[[[[[[[[[["}
    assert not safe_io.nesting_depth_over('[[1], [2], {"a": [3]}]', 3)  # depth 3
    assert safe_io.nesting_depth_over('[[1], [2], {"a": [3]}]', 2)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("5", "the file must be a list, not an integer"),
        ('"q1"', "the file must be a list, not a string"),
        ('["q1", ["q2"]]', "item 1 must be a string or an integer, not a list"),
        ('[{"question_id": {"x": 1}}]', "item 0: question_id/id must be a string or an integer"),
    ],
)
def test_a_run_episodes_file_of_the_wrong_shape_names_file_item_and_field(
    tmp_path, content, needle
):
    path = tmp_path / "ids.json"
    path.write_text(content)
    with pytest.raises(DataError) as e:
        _read_ids(str(path))
    _one_line(e.value, path)
    assert needle in str(e.value) and "JSON list of ids" in str(e.value)


@pytest.mark.parametrize(
    ("line", "needle"),
    [(DEEP, "nested more than"), ("[1, 2]", "the line must be an object"),
     ('{"episode_id": [1]}', "episode_id must be a string or an integer")],
)  # fmt: skip
def test_an_imported_predictions_line_is_bounded_and_typed(tmp_path, line, needle):
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"episode_id": "q1", "answer": "a"}\n' + line + "\n")
    with pytest.raises(DataError) as e:
        read_predictions(path)
    _one_line(e.value, path)
    assert f"{path}:2" in str(e.value) and needle in str(e.value)


def test_a_deep_record_line_is_skipped_and_quarantined_on_resume(tmp_path, caplog):
    path = tmp_path / "episodes.jsonl"
    good = {"episode_id": "q1", "status": "ok", "prediction": "a", "metrics": {"m": 1.0},
            "trace": {}}  # fmt: skip
    path.write_text(
        json.dumps(good) + "\n" + DEEP + "\n" + json.dumps({**good, "episode_id": "q2"}) + "\n"
    )
    tally.add("bad inputs tried")
    with caplog.at_level(logging.WARNING):
        ids = [r["episode_id"] for r in read_records(path)]
    assert ids == ["q1", "q2"]
    assert quarantine_bad_lines(path) == 1
    assert (tmp_path / "episodes.jsonl.quarantine").read_text().startswith("[[[[")
    assert [r["episode_id"] for r in read_records(path)] == ["q1", "q2"]


def test_a_deep_summary_is_recomputed_and_a_deep_provenance_is_one_line(tmp_path):
    (tmp_path / "summary.json").write_text(DEEP)
    summary, why = read_summary(tmp_path / "summary.json")
    assert summary is None and "nested more than" in str(why)
    (tmp_path / "provenance.json").write_text(DEEP)
    with pytest.raises(RunDirError) as e:
        read_provenance(tmp_path)
    _one_line(e.value, tmp_path / "provenance.json")
