"""``policy=fine_eqa``: the region question's role, the letter scores and GOE/FBE moves over the
test server, the 20-way region letters, the turn-around and the dry run."""

from __future__ import annotations

import math

import pytest

from eqa_runner.llm.choice import leading_letter, option_letters
from eqa_runner.mapping.regions import REGION_NAMES, RegionMap
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides

RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 1, 4"},
    {"pattern": "Reply with the names alone", "reply": "kitchen,dining room"},
    {"pattern": "What kind of room", "reply": "E", "token_probs": {"E": 0.6, "C": 0.3}},
    {"pattern": "Which marked place is in the", "reply": "A", "token_probs": {"A": 0.7}},
    {"pattern": "marked with black letters", "reply": "B", "token_probs": {"B": 0.7}},
    {"pattern": "worth exploring", "reply": "Yes", "token_probs": {"Yes": 0.8, "No": 0.2}},
    {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: In the fridge."},
    {"pattern": r"QUESTION: ", "reply": "no"},
]


def test_region_letters_go_to_t_and_parse_from_the_start_of_the_reply() -> None:
    assert option_letters(20)[-1] == "T" and len(REGION_NAMES) == 20
    assert leading_letter("K.", option_letters(20)) == "K"
    assert leading_letter("(E) kitchen", option_letters(20)) == "E"
    assert leading_letter("I think it is E", option_letters(20)) is None


def test_goe_round_is_a_hop_then_three_turns() -> None:
    rm = RegionMap((60, 60), 0.1, [4])
    rm.integrate((30, 30), 4)
    moves = [rm.move(rm.grid * 0.0)[0] for _ in range(13)]
    assert moves == ["goe", "goe_turn", "goe_turn", "goe_turn"] * 3 + ["fbe"]


@pytest.mark.slow
def test_fine_eqa_over_the_test_server(compose_cfg, llm_server, express_demo, tmp_path):
    llm_server.configure(rules=RULES, log_size=2000)
    over = [
        "task=express", "policy=fine_eqa", f"task.data_dir={express_demo}", "run.episodes=[0]",
        "policy.max_steps=8", "sim.width=256", "sim.height=256", "run.bootstrap_samples=50",
        *server_overrides(llm_server),
    ]  # fmt: skip
    out = run(compose_cfg(over, out=tmp_path / "r"))
    assert out["counts"]["ok"] == 1
    (rec,) = read_records(tmp_path / "r" / "episodes.jsonl")
    fe = rec["trace"]["fine_eqa"]
    assert fe["relevant"] == ["kitchen", "dining room"]
    steps = rec["trace"]["steps"]
    asked = [s for s in steps if "region" in s.get("fine_eqa", {})]
    assert asked and all(s["fine_eqa"]["region"] == "kitchen" for s in asked)
    assert fe["region_cells"].get("kitchen", 0) > 0
    assert sum(fe["moves"].values()) == len(steps)
    first = next(i for i, s in enumerate(steps) if s["source"] == "goe")
    assert [s["source"] for s in steps[first : first + 4]][: len(steps) - first] == [
        "goe", "goe_turn", "goe_turn", "goe_turn"
    ][: len(steps) - first]  # fmt: skip
    turn = steps[first + 1] if first + 1 < len(steps) else None
    if turn is not None:
        d = (turn["angle"] - steps[first]["angle"] + math.pi) % (2 * math.pi) - math.pi
        assert d == pytest.approx(math.radians(30), abs=1e-4)
    region_reqs = [q for q in llm_server.requests if "What kind of room" in str(q["body"])]
    assert region_reqs and all(q["body"]["top_logprobs"] == 20 for q in region_reqs)


def test_dry_run_prices_the_region_call_and_each_letter_mode(compose_cfg, express_demo):
    from eqa_runner.llm.letters import expand_estimates
    from eqa_runner.policies.base import Policy
    from eqa_runner.run.build import build
    from eqa_runner.types import Episode

    ep = Episode("e", "Where is the TV?", "", "", [], "s", {})
    over = ["task=express", f"task.data_dir={express_demo}", "policy=fine_eqa",
            "policy.max_steps=7"]  # fmt: skip
    pol = build(compose_cfg(over).policy, Policy, "policy")
    reqs = pol.estimate_requests(ep, None, None)
    # the region call, then per step: direction, worth, region, region point + the stop check
    assert len(reqs) == 1 + 7 * 4 + 7 + 1
    assert "names alone" in str(reqs[0].messages) and not reqs[0].image_sizes
    assert len(expand_estimates(reqs, "parsed")) == len(reqs)
    per_step = 3 + 2 + 20 + 3  # one request per option: A-C, Yes/No, A-T, A-C
    loss = expand_estimates(reqs, "option_loss")
    assert len(loss) == 1 + 7 * per_step + 7 + 1
    assert all(r.max_tokens == 1 for r in loss if r.messages[-1]["role"] == "assistant")
    assert set(pol.prompts(None)) >= {"vlm/regions", "vlm/region", "vlm/region_point"}


def test_trajectory_map_draws_region_discs_and_goal_hops() -> None:
    import numpy as np

    from eqa_runner.mapping.trajectory import COLORS, REGION_COLORS, draw_trajectory, trace_points
    from eqa_runner.sim.base import NavigableMap

    nav = NavigableMap(np.ones((60, 60), dtype=bool), (-1.0, -1.0), 0.1, 0.0)
    steps = [
        {"position": [0.0, 0.0, 0.0], "source": "frontier"},
        {"position": [1.0, 0.0, 1.0], "source": "goe"},
        {"position": [3.0, 0.0, 3.0], "source": "goe_turn"},
        {"position": [3.0, 0.0, 3.0], "source": "frontier"},
    ]
    trace = {"steps": steps, "final_position": [0.5, 0.0, 4.0],
             "region_points": [{"region": "kitchen", "position": [4.0, 0.0, 1.0]}],
             "region_radius_m": 0.8}  # fmt: skip
    tp = trace_points(trace)
    assert tp is not None and tp.sources == ["frontier", "goe", "goe_turn", "frontier"]
    assert [n for n, _ in tp.regions] == ["kitchen"]
    img = np.asarray(draw_trajectory(nav, trace))
    colours = {tuple(int(v) for v in c) for c in img.reshape(-1, 3)}
    assert REGION_COLORS[0] in colours and COLORS["goal_hop"] in colours
    plain = np.asarray(draw_trajectory(nav, {"steps": steps[:1], "final_position": [0, 0, 0]}))
    assert REGION_COLORS[0] not in {tuple(int(v) for v in c) for c in plain.reshape(-1, 3)}
