"""The report's numbers are pinned: ``report --compare`` and the tables of ``report --html`` over
a small crafted sweep print the same before and after the speed work (golden file recorded with
the code before it; regenerate only on purpose with ``EQA_REGEN_PINNED=1``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.benchmarks.express.eac import EACJudge
from eqa_runner.records import complete_record
from eqa_runner.report.cli import main as report_main

GOLDEN = Path(__file__).with_name("report_pinned.json")
EAC = {"_target_": "eqa_runner.benchmarks.express.eac.EACJudge", "model": "openai/j"}


def _rec(i: int, rng: np.random.Generator) -> dict:
    sigma, delta = float(rng.choice([0.0, 0.5, 1.0])), float(rng.integers(1, 6))
    weight = float(rng.uniform(0.2, 1.0))
    metrics = {"sigma": sigma, "delta": delta, "c": sigma * delta, "c_star": delta,
               "weight": weight, "e_path": sigma * delta / 5 * weight,
               "d_t": float(rng.uniform(0, 9)), "d_t_valid": 1.0, "path_len": 5.0,
               "gt_geodesic": 4.0, "steps_taken": 3.0}  # fmt: skip
    trace = {"path_len": 5.0, "steps": [{"step": s, "stop_reply": "no"} for s in range(3)],
             "stop_reason": "budget"}  # fmt: skip
    return {"episode_id": str(i), "status": "ok", "judge_ok": True,
            "scene": f"hm3d/val/{800 + i % 9:05d}-S{i % 9}", "question": f"q {i}?",
            "answer": "a", "category": ["object", "knowledge"][i % 2], "prediction": "p",
            "judge_raw": f"Your mark: {sigma:g}, {delta:g}", "metrics": metrics,
            "trace": trace}  # fmt: skip


def write_sweep(root: Path, runs: int = 4, episodes: int = 60) -> Path:
    for k in range(runs):
        d = root / "sweep" / str(k)
        d.mkdir(parents=True)
        rng = np.random.default_rng(k)
        recs = [_rec(i, rng) for i in range(episodes)]
        (d / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        config = {"judge": EAC, "policy": {"name": "fbe"}, "run": {"seed": k}}
        agg = EACJudge(model="offline").aggregate(
            [complete_record(r) for r in recs], bootstrap_samples=200
        )
        summary = {"counts": {"selected": episodes, "scored": episodes, "missing": 0},
                   "config": config, "models": {"judge": EAC["model"]},
                   "intervals": {"method": "cluster"}, **agg}  # fmt: skip
        (d / "summary.json").write_text(json.dumps(summary))
    return root / "sweep"


def _tables(html: str) -> list[str]:
    return re.findall(r"<table.*?</table>", html, flags=re.S)


@pytest.mark.slow
def test_report_output_is_pinned(tmp_path, capsys):
    sweep = write_sweep(tmp_path)
    out_html = tmp_path / "r.html"
    assert report_main([str(sweep), "--compare", "--samples", "300"]) == 0
    compare = capsys.readouterr().out.replace(str(tmp_path), "<tmp>")
    assert report_main([str(sweep), "--compare", "--html", "--html-out", str(out_html)]) == 0
    capsys.readouterr()
    got = {"compare": compare.splitlines(), "html_tables": _tables(out_html.read_text())}
    if os.environ.get("EQA_REGEN_PINNED"):
        GOLDEN.write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert got["compare"] == want["compare"]
    assert len(want["html_tables"]) >= 2
    assert got["html_tables"] == want["html_tables"]
