"""EXPRESS end to end on the procedural demo scenes against the local model server."""

from __future__ import annotations

import json

import pytest

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides

# First matching rule wins; the stop check is keyed by its question so every episode has its
# own counter: "color"/"door" questions say no twice then yes, all others always say no.
RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 1, 4"},
    {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: It is in the kitchen."},
    {
        "pattern": r"QUESTION: .*(color|door)",
        "key": r"QUESTION: (.*)",
        "reply": ["no", "no", "yes"],
    },
    {"pattern": r"QUESTION: ", "reply": "no"},
]
STABLE = ("episode_id", "status", "prediction", "judge_raw", "metrics")


def _overrides(demo, srv):
    return [
        "task=express",
        "policy=re",
        f"task.data_dir={demo}",
        "policy.max_steps=6",
        "sim.width=96",
        "sim.height=96",
        "run.workers=4",
        "run.cache=false",
        "run.bootstrap_samples=100",
        *server_overrides(srv),
    ]


def _paths(recs):
    return {
        r["episode_id"]: [(s["position"], s.get("next_position")) for s in r["trace"]["steps"]]
        for r in recs
    }


@pytest.mark.slow
def test_express_re_end_to_end_and_deterministic(tmp_path, compose_cfg, llm_server, express_demo):
    llm_server.configure(rules=RULES)
    out = run(compose_cfg(_overrides(express_demo, llm_server), out=tmp_path / "r1"))
    assert out["counts"]["ok"] == 12 and out["counts"]["error"] == 0
    recs = read_records(tmp_path / "r1" / "episodes.jsonl")
    early = [r for r in recs if r["trace"]["stopped_early"]]
    budget = [r for r in recs if not r["trace"]["stopped_early"]]
    assert len(early) == 3 and len(budget) == 9  # the colour / door questions stop early
    assert all(r["trace"]["steps_taken"] == 3 for r in early)
    assert all(r["trace"]["steps_taken"] == 6 == r["trace"]["num_steps"] for r in budget)
    assert {r["trace"]["answer_prompt"] for r in early} == {"answer"}
    assert {r["trace"]["answer_prompt"] for r in budget} == {"random_answer"}
    assert all(r["trace"]["path_len"] > 0 for r in recs)
    assert all(r["prediction"] == "It is in the kitchen." for r in recs)
    assert all(r["metrics"]["c"] == 4.0 and r["metrics"]["d_t_valid"] == 1.0 for r in recs)
    for r in recs:
        (img,) = r["trace"]["judge_images"]
        assert (tmp_path / "r1" / img).read_bytes().startswith(b"\x89PNG")
    # the stop check, the judge and the answer after an early stop carry the frame
    log = llm_server.requests

    def has_image(q):
        parts = [p for m in q["body"]["messages"] if isinstance(m["content"], list)
                 for p in m["content"]]  # fmt: skip
        return any(p.get("type") == "image_url" for p in parts)

    assert all(has_image(q) for q in log if q["rule"] in ("0", "2", "3"))
    answers = [q for q in log if q["rule"] == "1"]
    assert len(answers) == 12 and sum(map(has_image, answers)) == 3
    summary = json.loads((tmp_path / "r1" / "summary.json").read_text())
    head = summary["headline"]
    assert head["C"]["mean"] == pytest.approx(80.0) and head["C_star"]["mean"] == pytest.approx(
        80.0
    )
    assert 0 < head["E_path"]["mean"] <= 80.0
    assert head["d_T"]["mean"] is not None and head["d_T"]["n"] == 12
    assert summary["models"]["judge"] == "openai/test-judge"
    assert set(summary["by_subset"]) == {"val"}
    assert "evaluation" in summary["prompts"] and "explore" in summary["prompts"]

    llm_server.reset()
    run(compose_cfg(_overrides(express_demo, llm_server), out=tmp_path / "r2"))
    recs2 = read_records(tmp_path / "r2" / "episodes.jsonl")
    by_id = {r["episode_id"]: r for r in recs2}
    assert _paths(recs) == _paths(recs2), "same seed -> the same trajectories"
    for r in recs:
        assert {k: r[k] for k in STABLE} == {k: by_id[r["episode_id"]][k] for k in STABLE}


@pytest.mark.slow
def test_stop_model_and_artifacts(tmp_path, compose_cfg, llm_server, express_demo):
    llm_server.configure(rules=RULES)
    over = [
        *_overrides(express_demo, llm_server),
        "run.limit=2",
        "policy.max_steps=2",
        "policy.stop_model=openai/test-stop",
        f"policy.stop_llm.api_base={llm_server.url}",  # its own endpoint (none inherited)
        "run.save_artifacts=true",
    ]
    out = run(compose_cfg(over, out=tmp_path / "r"))
    assert out["counts"]["ok"] == 2
    stats = llm_server.stats()["by_model"]
    assert stats["test-stop"] == 4 and stats["test-judge"] == 2 and stats["test-model"] == 2
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["models"]["stop"] == "openai/test-stop"
    recs = read_records(tmp_path / "r" / "episodes.jsonl")
    assert all(r["trace"]["stop_model"] == "openai/test-stop" for r in recs)
    steps = sorted((tmp_path / "r" / "artifacts").rglob("step_*.png"))
    assert len(steps) == 4
