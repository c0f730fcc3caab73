"""The exploration loop's defaults are upstream EXPRESS-Bench's (``main.py`` at ``e8789da``):
the stop check stops on "yes" anywhere in the reply, and ``policy=fbe`` fuses one view per step.
The project's rules stay named options (``policy.stop_match=prefix``,
``policy.proposer.look_around_deg=[120,240]``)."""

from __future__ import annotations

import pytest

from eqa_runner.policies.protocol import is_yes

# a stop reply that does not start with "yes": upstream's ``"yes" in reply.lower()`` stops on it
STOP_REPLY = "I think we should stop here: Yes."
RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 1, 4"},
    {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: In the kitchen."},
    {"pattern": r"QUESTION: ", "reply": STOP_REPLY},
]


def test_composed_defaults_are_upstreams(compose_cfg):
    for policy in ("fbe", "re"):
        cfg = compose_cfg(["task=express", f"policy={policy}"])
        assert cfg.policy.stop_match == "contains"
    cfg = compose_cfg(["task=express", "policy=fbe"])
    assert list(cfg.policy.proposer.look_around_deg) == []
    # the preset adds the paper's model, nothing of the loop
    paper = compose_cfg(["experiment=express_fbe"])
    assert list(paper.policy.proposer.look_around_deg) == []
    assert paper.policy.stop_match == "contains"


@pytest.mark.parametrize(
    ("reply", "contains", "prefix"),
    [
        (STOP_REPLY, True, False),
        ("Yes, the sofa is visible.", True, True),
        ("**yes**", True, True),
        ("No.", False, False),
        ("Not yet: no.", False, False),
        ("The answer is not yes.", True, False),  # upstream's test stops here too
    ],
)
def test_stop_rules(reply, contains, prefix):
    assert is_yes(reply, "contains") is contains and is_yes(reply, "prefix") is prefix


def _run(tmp_path, compose_cfg, llm_server, *extra: str):
    from eqa_runner.benchmarks.express.demo import write_express_demo
    from eqa_runner.records import read_records
    from eqa_runner.run.loop import run
    from tests.conftest import server_overrides

    demo = tmp_path / "express"
    if not demo.exists():
        write_express_demo(demo, seed=0)
    llm_server.configure(rules=RULES)
    out_dir = tmp_path / f"r{len(list(tmp_path.glob('r*')))}"
    over = [
        "task=express", "policy=fbe", f"task.data_dir={demo}", "policy.max_steps=3",
        "sim.width=64", "sim.height=64", "run.limit=1", "run.cache=false",
        "run.bootstrap_samples=10", *server_overrides(llm_server), *extra,
    ]  # fmt: skip
    out = run(compose_cfg(over, out=out_dir))
    assert out["counts"]["ok"] == 1, out["counts"]
    (rec,) = read_records(out_dir / "episodes.jsonl")
    return rec["trace"]


@pytest.mark.slow
def test_default_run_stops_on_yes_anywhere_and_fuses_one_view(tmp_path, compose_cfg, llm_server):
    tr = _run(tmp_path, compose_cfg, llm_server)
    assert tr["stopped_early"] and tr["steps_taken"] == 1  # the first reply stops
    assert tr["steps"][0]["stop_reply"] == STOP_REPLY and tr["answer_prompt"] == "answer"
    # the project's rule: the same reply does not stop and the budget runs out; each of those
    # steps fused one view (the look-around is off by default)
    tr = _run(tmp_path, compose_cfg, llm_server, "policy.stop_match=prefix")
    assert not tr["stopped_early"] and tr["steps_taken"] == 3
    assert tr["answer_prompt"] == "random_answer"
    assert tr["views_per_step"] == 1 and tr["look_around_render_ms_median"] is None
    assert [s["info"]["views_fused"] for s in tr["steps"]] == [1, 1, 1]
