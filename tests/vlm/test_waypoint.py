"""``vlm_waypoint``: the reply parser (a table of reply forms), the prompt and the designed stop,
over the local test server."""

from __future__ import annotations

import asyncio
import json
import math
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from eqa_runner.llm import LLMClient
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.proposer import AgentState, DesignedStop, StepView, Waypoint
from eqa_runner.policies.vlm_waypoint import UNPARSABLE, WaypointVLMProposer, parse_waypoint
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from eqa_runner.sim.base import Observation
from eqa_runner.types import Episode
from tests.conftest import server_overrides

J = '{"position_normal": [1.5, -2.0], "angle": 0.5}'
# (reply, expected (x, y, angle) or None when unparsable)
FORMS: list[tuple[str, tuple[float, float, float] | None]] = [
    (J, (1.5, -2.0, 0.5)),  # the bare contract
    (f"The hallway looks promising.\n{J}", (1.5, -2.0, 0.5)),  # reasoning, then the line
    (f"I will go left.\n\n{J}\n\n", (1.5, -2.0, 0.5)),  # trailing blank lines
    (f"Go there.\n```json\n{J}\n```", (1.5, -2.0, 0.5)),  # fenced code block
    (f"```\n{J}\n```", (1.5, -2.0, 0.5)),  # fence without a language
    ('Next:\n{\n  "position_normal": [1.5, -2.0],\n  "angle": 0.5\n}', (1.5, -2.0, 0.5)),  # pretty
    (f"Waypoint: {J}", (1.5, -2.0, 0.5)),  # text before the object on the last line
    ('{"position_normal": [2, 3], "angle": 1}', (2.0, 3.0, 1.0)),  # integers
    ('{"angle": 0.5, "position_normal": [1.5, -2.0], "why": "door"}', (1.5, -2.0, 0.5)),  # extras
    ("{'position_normal': [1.5, -2.0], 'angle': 0.5}", (1.5, -2.0, 0.5)),  # single quotes
    ('{"position_normal": [0, 0], "angle": 7.0}', (0.0, 0.0, 7.0 - 2 * math.pi)),  # wrapped
    ('{"position_normal": [0, 0], "angle": -3.141592653589793}', (0.0, 0.0, math.pi)),  # -pi->pi
    (f"{J}.", (1.5, -2.0, 0.5)),  # a closing full stop
    ('{"position_normal": [1e0, -2.5e-1], "angle": -0.0}', (1.0, -0.25, 0.0)),  # exponents
    ("", None),  # empty
    ("I would go to the kitchen next.", None),  # prose only
    (f"{J}\nThat is my choice.", None),  # the object is not on the last line
    ('{"position_normal": [1.5, -2.0]}', None),  # no angle
    ('{"position": [1.5, -2.0], "angle": 0.5}', None),  # wrong key
    ('{"position_normal": [1.5], "angle": 0.5}', None),  # one coordinate
    ('{"position_normal": [1, 2, 3], "angle": 0.5}', None),  # three coordinates
    ('{"position_normal": ["1.5", "-2"], "angle": 0.5}', None),  # strings
    ('{"position_normal": [NaN, 1], "angle": 0.5}', None),  # not finite
    ('{"position_normal": [1, 2], "angle": Infinity}', None),  # not finite
    ('{"position_normal": [true, 2], "angle": 0.5}', None),  # a boolean is no number
    ('{"position_normal": [1, 2], "angle": "north"}', None),  # angle as a word
    ('{"position_normal": [1, 2], "angle": 0.5', None),  # truncated
    ("[1.5, -2.0, 0.5]", None),  # a bare list
]


def _check(parsed, want) -> None:
    if want is None:
        assert not parsed.ok and parsed.position_normal is None and parsed.error
    else:
        assert parsed.ok, parsed.error
        assert parsed.position_normal == pytest.approx(want[:2])
        assert parsed.angle == pytest.approx(want[2])
        assert -math.pi < parsed.angle <= math.pi


@pytest.mark.parametrize("reply, want", FORMS, ids=[f"form{i:02d}" for i in range(len(FORMS))])
def test_parse_waypoint_forms(reply, want):
    _check(parse_waypoint(reply), want)


def _view(step: int = 3) -> StepView:
    ep = Episode("e1", "Is the oven door open?", "no", "state", [], "scene", {})
    state = AgentState(step, np.array([1.0, 0.0, -2.0]), np.array([1.0, 0.0, 0.0, 0.0]), 0.0)
    obs = Observation(
        np.full((8, 8, 3), 90, np.uint8), np.ones((8, 8), np.float32), np.eye(4), np.eye(3)
    )
    return StepView(ep, state, obs, b"\x89PNG fake frame", False, 20, {"step": step})


def test_every_reply_form_over_the_test_server(llm_server, tmp_path):
    """Each form comes back from the server as the model's reply; the proposer turns it into a
    waypoint or a designed stop (never an exception); the request carries the question, the
    pose, the step and budget, the contract line and the frame."""
    forms = [(f, w) for f, w in FORMS if f.strip()]  # an empty reply is the client's error
    llm_server.configure(rules=[{"pattern": "position_normal", "reply": [f for f, _ in forms]}])
    llm = LLMClient({"model": "openai/test-model", "api_base": llm_server.url}, role="policy")
    prop = WaypointVLMProposer()
    with ThreadPoolExecutor(1) as pool:
        ctx = EpisodeContext(llm, np.random.default_rng(0), 0, pool, None)
        for reply, want in forms:
            view = _view()
            out = asyncio.run(prop.propose_async(view, ctx))
            if want is None:
                assert isinstance(out, DesignedStop) and out.reason == UNPARSABLE, reply
                assert view.record["vlm"]["parse_error"] == out.detail
            else:
                assert isinstance(out, Waypoint) and out.source == "vlm", reply
                assert out.position_normal == pytest.approx(want[:2])
                assert view.record["vlm"]["waypoint"]["position_normal"] == pytest.approx(want[:2])
    assert prop.finish()["vlm"] == {
        "waypoints_parsed": sum(w is not None for _, w in forms),
        "waypoints_unparsable": sum(w is None for _, w in forms),
    }
    req = llm_server.requests[0]["body"]["messages"]
    text = "\n".join(
        p["text"] for m in req if isinstance(m["content"], list) for p in m["content"]
        if p.get("type") == "text"
    )  # fmt: skip
    assert "Is the oven door open?" in text and "step 4 of at most 20" in text
    assert "position_normal [1.00, 2.00] with angle 0.00" in text  # habitat z -2 -> normal y 2
    assert '{"position_normal": [x, y], "angle": angle_in_radians}' in text
    assert "no more than 3 m" in text
    assert any(p.get("type") == "image_url" for m in req for p in m["content"]
               if isinstance(m["content"], list))  # fmt: skip


def _run(compose_cfg, out, demo, srv, *extra):
    return run(
        compose_cfg(
            [
                "task=express", "policy=vlm_waypoint", f"task.data_dir={demo}",
                "run.episodes=[0,1,2]", "policy.max_steps=4", "sim.width=96", "sim.height=96",
                "run.cache=false", "run.bootstrap_samples=50", *server_overrides(srv), *extra,
            ],
            out=out,
        )
    )  # fmt: skip


@pytest.mark.slow
def test_vlm_waypoint_run_parsed_waypoints_and_designed_stop(
    compose_cfg, llm_server, express_demo, tmp_path
):
    """Episode 2's model replies prose on its second step: the episode ends there as a designed
    stop (status ok, stop_reason unparsable_waypoint, blind answer); the others hop every step."""
    demo_q = json.loads((express_demo / "express-bench.json").read_text())
    q2 = demo_q[2]["question"]
    llm_server.configure(
        rules=[
            {"pattern": "Your mark", "reply": "Your mark: 1, 3"},
            {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: It is open."},
            {
                "pattern": f"{re.escape(q2)}.*position_normal",
                "reply": ['{"position_normal": [1.0, 1.0], "angle": 0}', "I cannot decide."],
            },
            {"pattern": "position_normal", "reply": '{"position_normal": [2.0, -1.0], "angle": 1}'},
            {"pattern": r"QUESTION: ", "reply": "no"},  # the stop check (after: case-blind)
        ]
    )
    out = _run(compose_cfg, tmp_path / "wp", express_demo, llm_server)
    assert out["counts"]["ok"] == 3 and out["counts"]["error"] == 0
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "wp" / "episodes.jsonl")}
    stopped = recs["2"]["trace"]
    assert stopped["stop_reason"] == UNPARSABLE and not stopped["stopped_early"]
    assert stopped["answer_prompt"] == "random_answer" and stopped["steps_taken"] == 2
    last = stopped["steps"][-1]
    assert last["stop_reason"] == UNPARSABLE and last["stop_detail"].startswith("no JSON")
    assert stopped["vlm"] == {"waypoints_parsed": 1, "waypoints_unparsable": 1}
    for eid, r in recs.items():
        t = r["trace"]
        if eid == "2":
            continue
        assert t["stop_reason"] == "budget_exhausted" and t["steps_taken"] == 4
        for s in t["steps"]:
            assert s["source"] == "vlm" and s["waypoint_normal"] == [2.0, -1.0]
            assert s["vlm"]["waypoint"] == {
                "position_normal": [2.0, -1.0], "angle": 1.0,
                "asked_hop_m": s["vlm"]["waypoint"]["asked_hop_m"],
            }  # fmt: skip
            assert s["angle"] == 1.0 and s["snapped"] is True
