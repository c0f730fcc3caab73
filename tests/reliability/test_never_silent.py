"""Issue 25, item 5 (counted, never silent): unparsable waypoints are counted per episode and in
the summary and console line (defect 14); duplicates in data files are refused or deduplicated
with a warning and counted (defect 16)."""

from __future__ import annotations

import json

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.reliability import tally


def test_unparsable_waypoints_are_counted_in_records_summary_and_console(
    compose_cfg, llm_server, express_demo, tmp_path, capsys
):
    """Every vlm_waypoint reply is prose: the agent never moves, and that is said — per
    episode (``trace.vlm.waypoints_unparsable``), in summary.json (``policy_replies``) and on
    the console's summary line."""
    tally.add("bad inputs tried")
    llm_server.configure(
        rules=[
            {"pattern": "Your mark", "reply": "Your mark: 1, 3"},
            {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: It is open."},
            {"pattern": "position_normal", "reply": "I would walk to the kitchen."},
            {"pattern": r"QUESTION: ", "reply": "no"},
        ]
    )
    out = tmp_path / "wp"
    cfg = compose_cfg(
        ["task=express", "policy=vlm_waypoint", f"task.data_dir={express_demo}",
         "run.episodes=[0,1,2]", "policy.max_steps=4", "sim.width=64", "sim.height=64",
         "run.cache=false", "run.bootstrap_samples=20", *server_overrides(llm_server)],
        out=out,
    )  # fmt: skip
    res = run(cfg)
    assert res["counts"]["ok"] == 3
    recs = read_records(out / "episodes.jsonl")
    assert [r["trace"]["vlm"]["waypoints_unparsable"] for r in recs] == [1, 1, 1]
    summary = json.loads((out / "summary.json").read_text())
    replies = summary["policy_replies"]
    assert replies["waypoints_unparsable"] == 3 and replies["waypoints_parsed"] == 0
    assert replies["episodes_stopped_unparsable"] == 3
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "3/3 ok" in ln)
    assert "3 of 3 waypoint replies unparsable (3 episodes stopped on one)" in line
