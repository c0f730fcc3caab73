"""A results.pkl written by EXPRESS-Bench's own main.py (tests/golden/roundtrip/express/
genuine_mainpy/, README beside it: @e8789da in habitat-sim 0.2.2, only the GPT call and the VLM
class scripted), imported by ``report --import`` and re-judged by our EAC judge (the test server
giving the marks main.py's scripted judge gave) to the numbers upstream printed on it."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.records import read_records
from eqa_runner.report.cli import main as report_main
from eqa_runner.scoring.upstream import load_pickle
from tests.conftest import server_overrides

D = Path(__file__).resolve().parents[1] / "golden" / "roundtrip" / "express" / "genuine_mainpy"


def _printed(text: str) -> dict[str, float]:
    """main.py's own closing lines (``C_avg: …``) in upstream.txt."""
    return {k: float(v) for k, v in re.findall(r"^(C_avg|C_star_avg|E_path|d_T_avg): (\S+)$",
                                               text, re.M)}  # fmt: skip


def test_main_py_results_import_to_its_own_scores(tmp_path, llm_server, express_demo) -> None:
    """4 questions of the demo apartment: one answered after running out of steps (main.py's
    random_answer), one with a bare "0, 1" judge reply; float32 positions, a list step_0; the
    final frames main.py saved (``<question_ind>/<cnt_step>.png``) beside the file."""
    demo_rows = json.loads((express_demo / "express-bench.json").read_text())
    assert json.loads((D / "express-bench.json").read_text()) == demo_rows[:4]
    items = load_pickle(D / "results.pkl")
    assert [it["question_ind"] for it in items] == [0, 1, 2, 3]
    assert items[0]["end_pts"].dtype == np.float32
    upstream = _printed((D / "upstream.txt").read_text())
    assert upstream["C_avg"] == 60.0 and upstream["C_star_avg"] == 75.0
    llm_server.configure(**json.loads((D / "llm-server.json").read_text()))
    judge = [o for o in server_overrides(llm_server) if o.startswith("judge.")]
    out = tmp_path / "imported"
    code = report_main(["--import", str(D / "results.pkl"), "--format", "express",
                        "--out", str(out), f"task.data_dir={express_demo}", "run.progress=false",
                        "run.cache=false", *judge])  # fmt: skip
    assert code == 0
    frames = {hashlib.sha256((D / f"{it['question_ind']}/{it['cnt_step']}.png").read_bytes())
              .hexdigest() for it in items}  # fmt: skip
    seen = {part["image_url"]["sha256"] for req in llm_server.requests
            for m in req["body"]["messages"] if isinstance(m["content"], list)
            for part in m["content"] if part.get("type") == "image_url"}  # fmt: skip
    assert seen == frames  # the judge saw main.py's saved final frame of each question
    s = json.loads((out / "summary.json").read_text())["headline"]
    got = {k: s[k]["mean"] for k in ("C", "C_star", "E_path", "d_T")}
    assert got == pytest.approx({"C": upstream["C_avg"], "C_star": upstream["C_star_avg"],
                                 "E_path": upstream["E_path"], "d_T": upstream["d_T_avg"]},
                                abs=1e-9)  # fmt: skip
    recs = {r["episode_id"]: r for r in read_records(out / "episodes.jsonl")}
    for it in items:
        r = recs[demo_rows[it["question_ind"]]["episode_id"]]
        assert r["prediction"] == it["gen_answer"] and r["trace"]["upstream_eac"] == it["EAC"]
        assert r["metrics"]["path_len"] == pytest.approx(it["path_len"])
        assert r["metrics"]["d_t"] == pytest.approx(it["goal_dis"])
        steps = r["trace"]["steps"]
        assert len(steps) == it["cnt_step"] + 1 == len(it["path"])
        start = demo_rows[it["question_ind"]]["start_rotation"]
        assert steps[0]["rotation"] == pytest.approx(start)  # np.quaternion read as (w, x, y, z)
