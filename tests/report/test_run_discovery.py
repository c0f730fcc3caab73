"""Which directories ``python -m eqa_runner.report`` reads: a run dir, or the run dirs below a
sweep dir, whatever else a user keeps beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqa_runner.report.runs import ReportError, find_run_dirs


def _run(d: Path, marker: str = "summary.json") -> Path:
    d.mkdir(parents=True)
    (d / marker).write_text("{}")
    return d


def test_a_sweep_with_a_plots_dir_beside_its_jobs_is_read(tmp_path):
    sweep = tmp_path / "sweep"
    jobs = [_run(sweep / "0"), _run(sweep / "1", "episodes.jsonl"), _run(sweep / "10")]
    (sweep / "plots").mkdir()
    (sweep / "plots" / "fig.png").write_bytes(b"")
    (sweep / "notes" / "drafts").mkdir(parents=True)
    _run(sweep / ".submitit" / "1")  # hidden dirs are never runs
    assert find_run_dirs([sweep]) == jobs


def test_nested_sweeps_are_found_in_numeric_order(tmp_path):
    a, b = _run(tmp_path / "s" / "a" / "2"), _run(tmp_path / "s" / "a" / "11")
    c = _run(tmp_path / "s" / "b" / "0", "provenance.json")
    assert find_run_dirs([tmp_path / "s"]) == [a, b, c]


def test_a_dir_with_no_run_names_the_dir_given(tmp_path):
    (tmp_path / "d" / "episodes" / "scene0").mkdir(parents=True)
    with pytest.raises(ReportError) as e:
        find_run_dirs([tmp_path / "d"])
    assert str(e.value).startswith(f"{tmp_path / 'd'}: no run directory in it")
    with pytest.raises(ReportError, match="not a directory"):
        find_run_dirs([tmp_path / "missing"])
