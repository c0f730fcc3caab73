"""``report --compare --html``: the compared metric against each swept key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eqa_runner.report.runs import Run
from eqa_runner.report.sweep_figures import sweep_svgs


def _run(i: int, frames: int, policy: str, mean: float) -> Run:
    head = {"llm_match": {"mean": mean, "ci95": [mean - 5, mean + 5], "n": 20}}
    config = {"policy": {"num_frames": frames}}
    short = f"p={policy} k={frames}"
    return Run(Path(f"/s/{i}"), {"headline": head}, config, choices={"policy": policy},
               label=f"run{i}", short=short)  # fmt: skip


def test_one_figure_per_swept_key_with_points_and_intervals() -> None:
    runs = [_run(0, 1, "single", 30.0), _run(1, 8, "multiframe", 40.0),
            _run(2, 16, "multiframe", 45.0)]  # fmt: skip
    figs = sweep_svgs(runs, ["policy", "policy.num_frames", "run.seed"], ["llm_match"])
    assert len(figs) == 2  # run.seed has one value: no figure
    title = re.compile(r"<title>llm_match vs (\S+)</title>")
    by_key = {title.search(str(f)).group(1): str(f) for f in figs}
    num = by_key["policy.num_frames"]
    assert num.count("<circle") == 3 and num.count('stroke-width="2"') == 3  # 3 intervals
    cx = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', num)]
    assert cx == sorted(cx) and (cx[2] - cx[1]) > (cx[1] - cx[0])  # a numeric axis: 1, 8, 16
    cat = by_key["policy"]
    assert cat.count("<circle") == 3 and ">single<" in cat and ">multiframe<" in cat
    cy = [float(y) for y in re.findall(r'cy="([\d.]+)"', num)]
    assert cy[0] > cy[1] > cy[2]  # higher metric, higher on the page


@pytest.mark.slow
def test_compare_html_shows_sweep_figures_next_to_the_forest(tmp_path, compose_cfg, openeqa_data):
    from eqa_runner.report.html import render
    from eqa_runner.report.runs import load_runs
    from eqa_runner.run.loop import run

    for k in (1, 2, 4):
        run(compose_cfg([f"task.data_dir={openeqa_data}", "judge.model=offline", "run.limit=6",
                         f"policy.num_frames={k}"], out=tmp_path / f"k{k}"))  # fmt: skip
    html = render(load_runs([tmp_path / f"k{k}" for k in (1, 2, 4)]), compare=True)
    assert 'class="forest"' in html and "llm_match vs policy.num_frames" in html
    assert html.index('class="forest"') < html.index('class="sweep"')
