"""Report pages built from what each judge declares (issue 37 item 2): a chart only for a metric
with a breakdown, a multiple-choice row with its options, sweep rows named by their swept keys,
the paired table under its heading, and a numeric sweep drawn as a line with its intervals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eqa_runner.report.cli import main as report_main
from eqa_runner.report.html import EpisodeRow, Section, _options, category_charts, score_levels
from eqa_runner.report.runs import Run, declarations
from eqa_runner.report.sweep_figures import SweepPoint, sweep_svg
from tests.speed.test_report_pinned import write_sweep

HMEQA = {"_target_": "eqa_runner.benchmarks.hmeqa.judge.HMEQAJudge", "name": "hmeqa"}


def _iv(mean: float) -> dict:
    return {"mean": mean, "ci95": [mean - 5, mean + 5], "n": 4}


def test_no_chart_for_a_headline_without_a_breakdown():
    # HM-EQA's headline holds three metrics, its by_category accuracy only: one chart (two
    # before, the second one empty)
    summary = {
        "headline": {"accuracy": _iv(50), "success_weighted": _iv(40), "success_max": _iv(45)},
        "by_category": {"color": _iv(50), "count": _iv(25)},
    }
    run = Run(Path("r"), summary, {"judge": HMEQA}, label="r")
    charts = category_charts([run], declarations([run]))
    assert [c["metric"] for c in charts] == ["accuracy"]
    empty = Run(Path("e"), {"headline": {"accuracy": _iv(50)}}, {"judge": HMEQA}, label="e")
    assert category_charts([empty], declarations([empty])) == []


def test_a_multiple_choice_row_shows_its_options():
    assert _options({"choices": ["sofa", "bed", "chair", "table"]}) == (
        "A. sofa · B. bed · C. chair · D. table"
    )
    assert _options({}) == "" and _options({"choices": "ABCD"}) == ""


def _sweep_page(tmp_path: Path) -> str:
    sweep = write_sweep(tmp_path, runs=3, episodes=12)
    long = "run.seed={k},policy.num_frames=8,llm.model=openai-gpt-4o-2024-08-06,run.limit=500"
    for k in range(3):
        (sweep / str(k)).rename(sweep / long.format(k=k))
    out = tmp_path / "r.html"
    assert report_main([str(sweep), "--compare", "--html", "--html-out", str(out)]) == 0
    return out.read_text()


@pytest.mark.slow  # about 15 s: a three-run sweep's page with its figures
def test_sweep_page_names_runs_by_their_swept_keys_and_keeps_the_paired_table_by_its_heading(
    tmp_path: Path,
):
    text = _sweep_page(tmp_path)
    cells = re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", text)
    assert not [c for c in cells if "policy.num_frames=8" in c]  # no Hydra dir name shown
    assert '<th colspan="8" title="run.seed=1,policy' in text  # the dir: a tooltip only
    assert ">run.seed=1</th>" in text  # the section header: the swept key
    heading = text.index("<h2>Paired differences</h2>")
    table = text.index('<table border="1" class="dataframe summary">', heading)
    assert table < text.index('<div class="figures">', heading)  # the table, then the plots
    # a numeric swept key: its points joined by a line over the intervals' band
    assert '<polyline class="line"' in text and '<polygon class="band"' in text


def test_numeric_sweep_is_a_line_and_a_categorical_one_is_not():
    pts = [SweepPoint(str(x), 50 + x, 45 + x, 55 + x, f"k={x}") for x in (1, 2, 4)]
    svg = str(sweep_svg(pts, key="k", metric="C"))
    line = re.search(r'<polyline class="line" points="([^"]+)"', svg)
    assert line is not None and len(line.group(1).split()) == 3
    assert '<polygon class="band"' in svg
    cats = [SweepPoint(x, 50.0, 45.0, 55.0, f"policy={x}") for x in ("fbe", "re")]
    assert "<polyline" not in str(sweep_svg(cats, key="policy", metric="C"))


def test_a_key_swept_with_one_that_follows_it_is_still_one_line():
    # a real Hydra sweep of run.seed also moves sim.seed: labels differ in both keys
    pts = [SweepPoint(str(x), 50.0 + x, 45.0, 55.0 + x, f"run.seed={x}, sim.seed={x}")
           for x in (0, 1, 2)]  # fmt: skip
    svg = str(sweep_svg(pts, key="run.seed", metric="C"))
    assert svg.count('<polyline class="line"') == 1
    # two policies at each seed: a line per policy
    two = [SweepPoint(str(x), 50.0, 45.0, 55.0, f"policy={p}, run.seed={x}")
           for x in (0, 1, 2) for p in ("fbe", "re")]  # fmt: skip
    assert str(sweep_svg(two, key="run.seed", metric="C")).count('<polyline class="line"') == 2


def test_a_key_that_follows_another_gets_no_figures_of_its_own():
    from eqa_runner.report.sweep_figures import sweep_svgs

    runs = [
        Run(Path(str(k)), {"headline": {"C": _iv(50.0 + k)}},
            {"run": {"seed": k}, "sim": {"seed": 10 + k}}, label=str(k))
        for k in range(3)
    ]  # fmt: skip
    svgs = sweep_svgs(runs, ["run.seed", "sim.seed"], ["C"])
    assert [re.search(r"<title>(.*?)</title>", str(s)).group(1) for s in svgs] == ["C vs run.seed"]


def _section(scores: list[float | None]) -> Section:
    rows = [EpisodeRow(str(i), "c", s, "q", "a", "p", "j") for i, s in enumerate(scores)]
    return Section("r", rows)


def test_the_minimum_score_filter_offers_the_scores_the_rows_hold():
    # it offered 1-5 for every benchmark: a 0/1 success or a 0-1 VSI score had no useful choice
    marks = score_levels([_section([3.0, 5.0, 1.0, None, 5.0])])
    assert [label for _, label in marks] == ["1", "3", "5"]
    success = score_levels([_section([0.0, 1.0, 1.0]), _section([0.0])])
    assert [label for _, label in success] == ["0", "1"]
    many = score_levels([_section([i / 9 for i in range(10)])])
    assert [label for _, label in many] == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    # the value is exact: a row holding 2/3 passes the filter "score >= 2/3"
    thirds = score_levels([_section([0.0, 2 / 3, 1.0])])
    assert float(thirds[1][0]) == 2 / 3 and thirds[1][1] == "0.667"
    assert score_levels([_section([None])]) == []
