"""``report.compare_table`` on runs whose configs do not differ."""

from __future__ import annotations

from pathlib import Path

from eqa_runner.report.compare import compare_table
from eqa_runner.report.runs import Run


def _run(name: str, mean: float) -> Run:
    head = {"llm_match": {"mean": mean, "ci95": [mean - 1, mean + 1], "n": 10}}
    cfg = {"policy": {"name": "blind"}, "run": {"seed": 0}}
    return Run(Path(name), {"headline": head}, cfg, label=name)


def test_identical_configs_are_told_apart_by_run_dir() -> None:
    df = compare_table([_run("a", 40.0), _run("b", 42.5)], baseline=0)
    assert list(df.columns) == ["run", "n", "llm_match", "Δ llm_match"]
    assert list(df["run"]) == ["a", "b"]
    assert list(df["Δ llm_match"]) == ["(baseline)", "+2.5"]


def test_html_compare_of_identical_configs(tmp_path: Path) -> None:
    from eqa_runner.report.html import render

    runs = [_run(str(tmp_path / "a"), 40.0), _run(str(tmp_path / "b"), 42.5)]
    for r in runs:
        r.path.mkdir()
        (r.path / "episodes.jsonl").write_text("")
    page = render(runs, compare=True)
    assert page.count("<th>run</th>") == 1 and "+2.5" in page
    assert "By category" not in page  # no run has a breakdown: no chart (issue 37)
