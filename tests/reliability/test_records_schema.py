"""Issue 25, item 3 (defect 10): records are validated by a schema on read; a line whose
status needs metrics (a prediction, a trace) and lacks them never replaces another record."""

from __future__ import annotations

import json

import pytest

from eqa_runner.records import EPISODES_FILE, final_records, ok_ids, read_records
from tests.reliability import tally

REAL = {"episode_id": "e1", "status": "ok", "question": "q", "prediction": "a chair",
        "judge_ok": True, "metrics": {"llm_match": 75.0}, "trace": {"frames": [0]}}  # fmt: skip
ERROR = {"episode_id": "e2", "status": "error", "prediction": None, "metrics": {},
         "error": {"type": "LLMError", "message": "x"}}  # fmt: skip


@pytest.mark.parametrize(
    "bad",
    [
        {"status": "ok", "metrics": {}},
        {"status": "ok", "metrics": {"llm_match": "high"}},
        {"status": "ok", "metrics": {"llm_match": 1.0}, "trace": "frames 0-3"},
        {"status": "ok", "metrics": {"llm_match": 1.0}, "prediction": {"answer": "x"}},
    ],
)
def test_an_ok_line_without_what_ok_needs_never_replaces_a_record(tmp_path, caplog, bad):
    tally.add("bad inputs tried")
    path = tmp_path / EPISODES_FILE
    lines = [REAL, ERROR, {"episode_id": "e1", **bad}, {"episode_id": "e2", **bad}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    final = final_records(read_records(path))
    tally.add("runs mislabelled", int(final["e1"]["metrics"] != REAL["metrics"]))
    assert final["e1"]["metrics"] == {"llm_match": 75.0} and final["e1"]["prediction"] == "a chair"
    assert final["e2"]["status"] == "error"
    assert ok_ids(path) == {"e1"}, "the error episode is retried on resume, not skipped"
    assert "skipped" in caplog.text


def test_an_unparsable_judge_reply_is_still_an_ok_record(tmp_path):
    path = tmp_path / EPISODES_FILE
    unparsable = {**REAL, "episode_id": "e3", "judge_ok": False, "metrics": {}}
    path.write_text(json.dumps(unparsable) + "\n")
    assert ok_ids(path) == {"e3"}
