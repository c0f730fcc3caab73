"""``vlm_explore``: reading the model's answers, the semantic weighting of the planner, the
visual prompt points, the stop rule, the dry-run estimate and a run over the test server."""

from __future__ import annotations

import asyncio
import hashlib
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from eqa_runner.llm import Completion
from eqa_runner.mapping.config import FrontierPlannerConfig, VisualPromptConfig
from eqa_runner.mapping.frontier import FrontierPlanner
from eqa_runner.policies import config as pc
from eqa_runner.policies.base import Policy
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import Exploration
from eqa_runner.policies.frontier import bounds_normal
from eqa_runner.policies.proposer import GuidedProposer, StepView, Waypoint
from eqa_runner.policies.vlm_explore import (
    GuidedExplorePolicy,
    VLMExploreProposer,
    draw_letters,
    letter_probs,
    yes_probability,
)
from eqa_runner.records import read_records
from eqa_runner.run.build import build
from eqa_runner.run.loop import run
from eqa_runner.sim import geometry as geo
from eqa_runner.types import Episode
from tests.conftest import server_overrides
from tests.fbe.test_fbe import _observe, _start, room_sim

LN = math.log


# ---------------------------------------------------------------- reading the answers
@pytest.mark.parametrize(
    "text, positions, want, source",
    [
        ("Yes", None, 1.0, "parsed"),
        ("no.", None, 0.0, "parsed"),
        ("**Yes**, the fridge is visible", None, 1.0, "parsed"),
        ("I think so", None, None, "unparsable"),
        ("Yes", [[("Yes", LN(0.8)), ("No", LN(0.2))]], 0.8, "logprobs"),
        ("No", [[("No", LN(0.7)), (" yes", LN(0.1))]], 0.125, "logprobs"),
        ("No", [[("No", 0.0)]], 0.0, "logprobs"),  # yes outside the top-k: probability 0
        (
            "Sure. Yes",
            [[("Sure", 0.0)], [(".", 0.0)], [(" Yes", LN(0.6)), (" No", LN(0.3))]],
            2 / 3,
            "logprobs",
        ),  # fmt: skip
    ],
)
def test_yes_probability(text, positions, want, source):
    p, src = yes_probability(text, positions)
    assert src == source
    assert p == (None if want is None else pytest.approx(want))


def test_letter_probs_logprobs_parsed_unparsable():
    pos = [[("B", LN(0.6)), ("A", LN(0.3)), ("C", LN(0.1))]]
    probs, src = letter_probs("B", pos, 3)
    assert src == "logprobs" and probs == pytest.approx([0.3, 0.6, 0.1])
    assert letter_probs("I pick (C).", None, 3) == ([0.0, 0.0, 1.0], "parsed")
    assert letter_probs("A or B", None, 3) == (None, "unparsable")
    assert letter_probs("D", None, 3) == (None, "unparsable")  # only the drawn letters


class LogprobClient:
    """A model client that returns token log-probabilities (the interface the merged client
    offers: ``acomplete(..., top_logprobs=k)`` and ``Completion.logprobs``)."""

    model = "fake"

    def __init__(self, positions: list[list[tuple[str, float]]]) -> None:
        self.positions, self.asked = positions, []

    async def acomplete(self, messages, *, offline_reply: str = "", top_logprobs=None):
        self.asked.append(top_logprobs)
        c = Completion(text=self.positions[0][0][0], model="fake")
        c.logprobs = self.positions  # type: ignore[attr-defined]
        return c


def test_local_value_from_logprobs_when_the_client_returns_them():
    """LSV = softmax over the drawn letters x n/3, GSV = exp(P(Yes)/0.5)/3."""
    prop = VLMExploreProposer()
    ep = Episode("e", "Where is the TV?", "", "", [], "s", {})
    with ThreadPoolExecutor(1) as pool:
        llm = LogprobClient([[("A", LN(0.5)), ("B", LN(0.25))]])
        ctx = EpisodeContext(llm, np.random.default_rng(0), 0, pool, None)  # type: ignore[arg-type]
        vlm: dict[str, Any] = {}
        lsv = asyncio.run(prop._lsv(ep, b"png", 2, ctx, vlm))
        assert lsv == pytest.approx([2 / 3 * 2 / 3, 2 / 3 * 1 / 3])
        assert vlm["direction_source"] == "logprobs" and llm.asked == [5]
        llm2 = LogprobClient([[("Yes", LN(0.3)), ("No", LN(0.7))]])
        ctx2 = EpisodeContext(llm2, np.random.default_rng(0), 0, pool, None)  # type: ignore[arg-type]
        gsv = asyncio.run(prop._gsv(ep, b"png", ctx2, vlm))
        assert gsv == pytest.approx(math.exp(0.3 / 0.5) / 3) and vlm["worth"] == 0.3


# ---------------------------------------------------------------- the planner
def _planners(seed: int = 3):
    sim = room_sim(10.0, 6.0)
    p, state = _start(sim, [1.0, 0.0, 3.0], -math.pi / 2)  # looks along +x (into the room)
    out = []
    for semantic in (False, True):
        pl = FrontierPlanner(FrontierPlannerConfig(semantic=semantic))
        pl.reset(bounds_normal(sim), float(geo.habitat_to_normal(p)[2]), rng=seed,
                 start_position_normal=geo.habitat_to_normal(p))  # fmt: skip
        obs = _observe(sim, state)
        pl.update(obs.depth, obs.intrinsics, geo.cam_pose_tsdf(obs.cam_to_world),
                  state.position_normal)  # fmt: skip
        out.append(pl)
    return sim, state, out


@pytest.mark.slow
def test_semantic_map_is_a_running_mean_within_the_radius():
    _, _, (_, pl) = _planners()
    a = np.array([[3.0, -3.0]])
    pl.integrate_semantic(a, [2.0])
    pl.integrate_semantic(a + [0.5, 0.0], [1.0])
    cell_a = tuple(pl._vol.world_to_grid(a[0]))
    mid = tuple(pl._vol.world_to_grid(a[0] + [0.25, 0.0]))
    far = tuple(pl._vol.world_to_grid(a[0] + [3.0, 0.0]))
    assert pl.sem_value[cell_a] == pytest.approx(1.5) and pl.sem_count[cell_a] == 2
    assert pl.sem_value[mid] == pytest.approx(1.5)
    assert pl.sem_count[far] == 0 and pl.sem_value[far] == 0
    edge = tuple(pl._vol.world_to_grid(a[0] - [0.95, 0.0]))  # only the first point reaches
    assert pl.sem_value[edge] == pytest.approx(2.0) and pl.sem_count[edge] == 1


@pytest.mark.slow
def test_semantic_weighting_multiplies_frontier_weights_and_is_off_for_fbe():
    """Same map, same values: with semantic=false (fbe) the plan is unchanged; with it on,
    frontiers near the valued point gain exp(val/0.5) * exp(val_dir/0.5), far ones nothing,
    and nothing before min_random_init_steps."""
    _, state, (off, on) = _planners()
    _, _, (ref, _) = _planners()
    wp_ref = ref.next_pose(state.position_normal, agent_yaw=state.yaw, step=5)
    valued = np.array([[6.0, -1.0]])
    for pl in (off, on):
        pl.integrate_semantic(valued, [2.0])
    wp_off = off.next_pose(state.position_normal, agent_yaw=state.yaw, step=5)
    assert wp_off == wp_ref and off.maps.semantic is None
    _, _, (_, early) = _planners()
    early.integrate_semantic(valued, [2.0])
    early.next_pose(state.position_normal, agent_yaw=state.yaw, step=1)
    assert early.maps.semantic is None
    on.next_pose(state.position_normal, agent_yaw=state.yaw, step=5)
    assert on.maps.semantic is not None
    np.testing.assert_array_equal(on.maps.frontiers, off.maps.frontiers)
    gain = np.log(on.maps.frontier_weights / off.maps.frontier_weights)  # log of the factor
    xy = on._vol.grid_to_world(on.maps.frontiers.astype(float))
    d = np.linalg.norm(xy - valued[0], axis=1)
    assert len(d) >= 2 and gain[d < 1.0].size and (gain[d < 1.0] > 2.0).all()
    assert np.allclose(gain[d > 6.0], 0.0)
    val = on.semantic_map()
    for k, f in enumerate(on.maps.frontiers):
        assert gain[k] >= val[f[0], f[1]] / 0.5 - 1e-9


@pytest.mark.slow
def test_prompt_points_are_reachable_floor_in_view():
    sim, state, (_, pl) = _planners()
    obs = _observe(sim, state)
    vp = VisualPromptConfig(margin_top_px=40, margin_side_px=8, circle_radius=6)
    pts = pl.prompt_points(state.position_normal, geo.cam_pose_tsdf(obs.cam_to_world),
                           obs.intrinsics, obs.rgb.shape[:2], vp)  # fmt: skip
    assert 2 <= len(pts) <= 3 and pts.candidates >= len(pts)
    d = np.linalg.norm(pts.xy - state.position_normal[:2], axis=1)
    assert ((d >= 2.0) & (d <= 10.0)).all()
    for i in range(len(pts)):
        for j in range(i):
            assert np.linalg.norm(pts.xy[i] - pts.xy[j]) >= 1.0
    u, v = pts.pixels[:, 0], pts.pixels[:, 1]
    assert ((u >= 8) & (u < 120) & (v >= 40) & (v < 128)).all()
    assert (pts.xy[:, 0] > state.position_normal[0] + 1.5).all()  # ahead (+x), not behind
    png = draw_letters(obs.rgb, pts.pixels, vp.circle_radius)
    assert png == draw_letters(obs.rgb, pts.pixels, vp.circle_radius)  # same bytes: cacheable
    assert png != draw_letters(obs.rgb, pts.pixels[:2], vp.circle_radius)


# ---------------------------------------------------------------- the stop rule
class ConfProposer(GuidedProposer):
    def __init__(self, conf):
        self.conf, self.asked = conf, 0

    async def assess(self, view, ctx):
        self.asked += 1
        return self.conf

    def propose(self, agent_state):
        return Waypoint((math.nan, math.nan), math.nan, "x")


class VerdictProtocol:
    name = "stub"

    def __init__(self, verdict):
        self.verdict, self.calls = verdict, 0

    async def check_step(self, x, rec, ctx):
        self.calls += 1
        return self.verdict


@pytest.mark.parametrize(
    "rule, check, conf, proto, stop, reason, proto_calls",
    [
        ("confidence", True, 0.9, False, True, "confident", 1),
        ("confidence", True, 0.2, True, False, None, 1),  # the protocol's verdict is ignored
        ("confidence", True, 0.9, True, True, "confident", 1),
        ("confidence", False, 0.9, True, True, "confident", 0),  # not asked at all
        ("confidence", True, None, False, False, None, 1),  # unparsable confidence: go on
        ("protocol", False, 0.9, False, False, None, 1),  # the protocol decides (always asked)
        ("protocol", True, 0.1, True, True, None, 1),
        ("either", True, 0.9, False, True, "confident", 1),
        ("either", True, 0.1, True, True, None, 1),
        ("either", True, 0.1, False, False, None, 1),
    ],
)
def test_stop_rule(rule, check, conf, proto, stop, reason, proto_calls):
    from eqa_runner.policies.protocol import ExploreProtocol

    class P(VerdictProtocol, ExploreProtocol):
        pass

    protocol = P(proto)
    pol = GuidedExplorePolicy(
        pc.VLMExplorePolicyConfig(), stop_rule=rule, stop_threshold=0.5,
        protocol_check=check, protocol=protocol,
    )  # fmt: skip
    x = Exploration.__new__(Exploration)
    x.proposer, x.stop_reason = ConfProposer(conf), None
    rec: dict[str, Any] = {"step": 0}
    view = StepView(None, None, None, b"", False, 5, rec)  # type: ignore[arg-type]
    assert asyncio.run(pol.check_step(x, view, None)) is stop  # type: ignore[arg-type]
    assert x.stop_reason == reason and protocol.calls == proto_calls
    assert rec["stop_confidence"] == conf and rec["confident"] is bool(conf and conf >= 0.5)


# ---------------------------------------------------------------- schemas, dry run
def test_vlm_explore_weights_the_planner_semantically_and_fbe_does_not():
    assert pc.VLMExploreProposerConfig().planner.semantic is True
    assert pc.FrontierProposerConfig().planner.semantic is False  # fbe unchanged


@pytest.mark.slow
def test_dry_run_counts_the_extra_calls(compose_cfg, express_demo, tmp_path):
    ep = Episode("e", "Where is the TV?", "", "", [], "s", {})
    common = ["task=express", f"task.data_dir={express_demo}", "policy.max_steps=7"]

    def built(*extra: str) -> Any:
        return build(compose_cfg([*common, *extra]).policy, Policy, "policy")

    fbe, vlm, wp = built("policy=fbe"), built("policy=vlm_explore"), built("policy=vlm_waypoint")
    lean = built(
        "policy=vlm_explore", "policy.protocol_check=false", "policy.proposer.use_gsv=false"
    )
    n_fbe = len(fbe.estimate_requests(ep, None, None))
    assert n_fbe == 7 + 1
    assert len(vlm.estimate_requests(ep, None, None)) == n_fbe + 3 * 7
    assert len(lean.estimate_requests(ep, None, None)) == 1 + 2 * 7
    assert len(wp.estimate_requests(ep, None, None)) == n_fbe + 7
    reqs = vlm.estimate_requests(ep, None, None)
    assert all(r.image_sizes for r in reqs[:-1])
    assert set(vlm.prompts(None)) >= {"explore", "vlm/confident", "vlm/direction", "vlm/worth"}


# ---------------------------------------------------------------- over the test server
RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 1, 4"},
    {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: In the fridge."},
    {"pattern": "marked with black letters", "reply": "B"},
    {"pattern": "worth exploring to answer", "reply": "Yes"},
    {
        "pattern": "Are you confident",
        "key": r'question: "(.*?)"',
        "reply": ["No", "No", "No", "Yes"],
    },
    {"pattern": r"QUESTION: ", "reply": "no"},  # EXPRESS's stop check (last: rules are case-blind)
]


def _overrides(demo, srv, *extra):
    return [
        "task=express", "policy=vlm_explore", f"task.data_dir={demo}", "run.episodes=[0,1]",
        "policy.max_steps=6", "sim.width=256", "sim.height=256", "run.save_artifacts=true",
        "run.bootstrap_samples=50", *server_overrides(srv), *extra,
    ]  # fmt: skip


def _image_digests(req) -> list[str]:
    return [p["image_url"]["sha256"] for m in req["body"]["messages"]
            if isinstance(m["content"], list) for p in m["content"]
            if p.get("type") == "image_url"]  # fmt: skip


@pytest.mark.slow
def test_vlm_explore_over_the_test_server(compose_cfg, llm_server, express_demo, tmp_path):
    llm_server.configure(rules=RULES, log_size=1000)
    out = run(compose_cfg(_overrides(express_demo, llm_server), out=tmp_path / "r1"))
    assert out["counts"]["ok"] == 2 and out["counts"]["error"] == 0
    recs = read_records(tmp_path / "r1" / "episodes.jsonl")
    direction_imgs = {d for q in llm_server.requests if q["rule"] == "2" for d in _image_digests(q)}
    saved = set()
    for r in recs:
        t = r["trace"]
        assert t["stop_reason"] == "confident" and t["stopped_early"] and t["steps_taken"] == 4
        assert t["answer_prompt"] == "answer" and r["prediction"] == "In the fridge."
        assert [s["stop_confidence"] for s in t["steps"]] == [0.0, 0.0, 0.0, 1.0]
        assert all(s["protocol_stop"] is False for s in t["steps"])
        prompted = [s for s in t["steps"][:3] if s["vlm"].get("points")]
        assert prompted, "no step drew letters"
        for s in prompted:
            v = s["vlm"]
            n = len(v["points"])
            assert v["lsv"] == pytest.approx([0.0, n / 3] + [0.0] * (n - 2), abs=1e-5)
            assert v["gsv"] == pytest.approx(math.exp(2) / 3, abs=1e-5)
            assert [p["letter"] for p in v["points"]] == list("ABC"[:n])
            assert v["points"][1]["value"] == pytest.approx(n / 3 * math.exp(2) / 3, abs=1e-4)
            png = (tmp_path / "r1" / "artifacts" / r["episode_id"] / v["prompt_image"]).read_bytes()
            saved.add(hashlib.sha256(png).hexdigest())
        calls = t["vlm"]["calls"]
        assert calls == {"confident": 4, "direction": len(prompted), "worth": len(prompted)}
        assert t["vlm"]["prompt_images"] == [s["vlm"]["prompt_image"] for s in prompted]
    assert saved == direction_imgs  # the model saw exactly the saved annotated images
    # a re-run with the same cache asks nothing: requests (annotated images too) are keyed by
    # content and the run is deterministic
    n_before = llm_server.stats()["requests"]
    out2 = run(compose_cfg(_overrides(express_demo, llm_server), out=tmp_path / "r2"))
    assert out2["counts"]["ok"] == 2
    assert llm_server.stats()["requests"] == n_before
    recs2 = {r["episode_id"]: r for r in read_records(tmp_path / "r2" / "episodes.jsonl")}
    for r in recs:
        steps2 = recs2[r["episode_id"]]["trace"]["steps"]
        assert [_untimed(s.get("vlm")) for s in steps2] == [
            _untimed(s.get("vlm")) for s in r["trace"]["steps"]
        ]


def _untimed(d: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (d or {}).items() if not k.startswith("t_")}


def test_crossed_many_counts_as_one_line_at_a_time():
    """The batched line-of-sight count of the prompt points equals the per-line one, including
    lines of 0 and 1 steps (nothing between their end points) and lines along the grid edge."""
    from eqa_runner.mapping.prompt_points import PromptPointsMixin

    rng = np.random.default_rng(0)
    for trial in range(60):
        free = rng.random((70, 50)) < 0.75
        a = rng.integers(0, [70, 50])
        cells = rng.integers(0, [70, 50], size=(int(rng.integers(0, 40)), 2))
        cells[: len(cells) // 3] = np.clip(a + rng.integers(-1, 2, (len(cells) // 3, 2)), 0, 49)
        if trial % 5 == 0:
            cells = np.column_stack([np.full(len(cells), 69), cells[:, 1]])
        one = [PromptPointsMixin._crossed(a, c, free) for c in cells]
        assert PromptPointsMixin._crossed_many(a, cells, free).tolist() == one
    assert PromptPointsMixin._crossed_many(a, np.zeros((0, 2), int), free).tolist() == []
