"""The export, import and tracker files go through the one atomic writer: never through a link
(its target untouched), whole or not at all; JSON from outside goes through the bounded reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqa_runner.errors import DataError, UnsafeWriteError
from eqa_runner.scoring.safe_pickle import dump_pickle
from eqa_runner.trackers.base import RunInfo
from eqa_runner.trackers.csvlog import CsvTracker


def _link(tmp_path: Path, name: str) -> tuple[Path, Path]:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "out" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link, target


def test_an_upstream_pickle_is_never_written_through_a_link(tmp_path):
    link, target = _link(tmp_path, "results.pkl")
    with pytest.raises(UnsafeWriteError):
        dump_pickle([{"question_ind": 0}], link)
    assert target.read_text() == "keep me"
    out = dump_pickle([{"question_ind": 0}], tmp_path / "out" / "ok.pkl")
    assert out.is_file() and not list(out.parent.glob(".*tmp*"))


@pytest.mark.parametrize("name", ["params.json", "status"])
def test_the_csv_trackers_files_are_never_written_through_a_link(tmp_path, name):
    link, target = _link(tmp_path, name)
    tracker = CsvTracker(save_dir=str(link.parent))
    info = RunInfo(run_dir=tmp_path, name="r", config={}, params={"a": "1"})
    with pytest.raises(UnsafeWriteError):
        tracker.start(info)
        tracker.finish("FINISHED")
    assert target.read_text() == "keep me"


def test_the_csv_trackers_table_is_written_whole(tmp_path):
    tracker = CsvTracker(save_dir=str(tmp_path / "csv"))
    tracker.start(RunInfo(run_dir=tmp_path, name="r", config={}, params={}))
    tracker.log_table("episodes", [{"id": "a", "score": 1}, {"id": "b", "extra": "x"}])
    rows = (tmp_path / "csv" / "episodes.csv").read_text().splitlines()
    assert rows == ["id,score,extra", "a,1,", "b,,x"]


def test_an_imported_openeqa_file_nested_too_deep_is_one_line(tmp_path):
    from eqa_runner.benchmarks.openeqa_em.upstream import read_predictions

    bomb = tmp_path / "predictions.json"
    bomb.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError) as e:
        read_predictions(bomb)
    assert str(bomb) in str(e.value) and "\n" not in str(e.value)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps([{"question_id": "q1", "answer": "a sofa"}]))
    assert read_predictions(ok)[0]["answer"] == "a sofa"
