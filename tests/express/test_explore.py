"""The exploration loop on a fake simulator: black frames, fallbacks, routing, scene leases."""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.benchmarks.express.protocol import ExpressProtocol
from eqa_runner.errors import ConfigError
from eqa_runner.llm import LLMClient
from eqa_runner.policies.config import RandomProposerConfig, REPolicyConfig
from eqa_runner.policies.context import EpisodeContext, RunResources
from eqa_runner.policies.explore import (
    ExplorePolicy,
    RandomProposer,
    Waypoint,
)
from eqa_runner.sim.base import Observation, SceneSpec, Simulator
from eqa_runner.types import Episode

EXPRESS = ExpressProtocol()
RE = REPolicyConfig()  # policy=re's schema: the random proposer


class FakeSim(Simulator):
    """A 10 m x 10 m empty floor; Euclidean geodesics; grey or black frames."""

    def __init__(self, black: bool = False) -> None:
        self.black = black
        self.pos, self.rot = np.zeros(3), np.array([1.0, 0, 0, 0])
        self.loads: list[str] = []

    def resolve_scene(self, scenes_dir, scene_id):
        return SceneSpec(scene_id, Path(f"/fake/{scene_id}.ply"))

    def load_scene(self, scene, *, start_position=None):
        self.loads.append(scene.scene_id)

    def set_agent_pose(self, position, rotation_wxyz):
        self.pos, self.rot = np.asarray(position, float), np.asarray(rotation_wxyz, float)

    def agent_pose(self):
        return self.pos.copy(), self.rot.copy()

    def observe(self):
        rgb = np.zeros((8, 8, 3), np.uint8) if self.black else np.full((8, 8, 3), 90, np.uint8)
        return Observation(rgb, np.ones((8, 8), np.float32), np.eye(4), np.eye(3))

    def _inside(self, p):
        return bool(np.all(np.isfinite(p)) and 0 <= p[0] <= 10 and 0 <= p[2] <= 10)

    def snap_point(self, p):
        p = np.array(p, float)
        return np.array([p[0], 0.0, p[2]]) if self._inside(p) else np.full(3, np.nan)

    def random_navigable_point_near(self, p, radius, rng):
        for _ in range(100):
            q = np.asarray(p, float) + np.array([rng.uniform(-radius, radius), 0.0,
                                                 rng.uniform(-radius, radius)])  # fmt: skip
            if self._inside(q) and np.hypot(q[0] - p[0], q[2] - p[2]) <= radius:
                return np.array([q[0], 0.0, q[2]])
        return np.full(3, np.nan)

    def geodesic_distance(self, a, b):
        return float(np.linalg.norm(np.asarray(a, float) - np.asarray(b, float)))

    def bounds(self):
        return np.zeros(3), np.array([10.0, 0.0, 10.0])

    def is_navigable(self, p):
        return self._inside(np.asarray(p, float))

    def close(self):
        pass


class NaNProposer(RandomProposer):
    name = "nan"

    def propose(self, agent_state):
        return Waypoint((math.nan, math.nan), math.nan, "nan", {"why": "test"})


class _Task:
    scenes_dir = Path("/fake")

    def resolve_scene(self, episode, sim):
        return sim.resolve_scene(self.scenes_dir, episode.scene)


def _episode(i: int, scene: str = "00800-A") -> Episode:
    return Episode(
        str(i), f"Question {i}?", "yes", "object", scene=scene,
        meta={"start_position": [5.0, 0.0, 5.0], "start_rotation": [1.0, 0.0, 0.0, 0.0],
              "goal_position": [8.0, 0.0, 9.0], "geodesic_distance": 5.0},
    )  # fmt: skip


def _run(policy, episodes, sim, tmp_path, artifacts=False):
    llm = LLMClient({"model": "offline"}, role="policy")

    async def main():
        with ThreadPoolExecutor(2) as pool:
            ctxs = [
                EpisodeContext(
                    llm=llm,
                    rng=np.random.default_rng(int(e.episode_id)),
                    seed=0,
                    executor=pool,
                    task=_Task(),
                    run_dir=tmp_path,
                    artifacts_dir=(tmp_path / "art" / e.episode_id) if artifacts else None,
                )  # fmt: skip
                for e in episodes
            ]
            return await asyncio.gather(
                *(policy.predict(e, c) for e, c in zip(episodes, ctxs, strict=True))
            )

    # as the run loop does: the run builds the simulator, opens the policy, closes both
    with sim, policy.opened(RunResources(llm=llm, task=_Task(), sim=sim, run_dir=tmp_path)):
        session = policy.session
        return asyncio.run(main()), session


def test_black_frames_never_stop_and_answer_blind(tmp_path):
    policy = ExplorePolicy(RE, protocol=EXPRESS, max_steps=5)
    (pred,), _ = _run(policy, [_episode(1)], FakeSim(black=True), tmp_path)
    t = pred.trace
    assert t["num_steps"] == 5 and t["steps_taken"] == 5  # budget int(sqrt(100)*3)=30, capped
    assert not t["stopped_early"] and t["answer_prompt"] == "random_answer"
    assert all(s["black"] and "stop_reply" not in s for s in t["steps"])
    assert t["path_len"] == pytest.approx(sum(s["hop_m"] for s in t["steps"]))
    assert t["path_len"] > 0
    assert t["judge_images"] == ["judge_images/1.png"]
    assert (tmp_path / "judge_images" / "1.png").read_bytes() == pred.images_for_judge[0]
    assert pred.images_for_judge[0].startswith(b"\x89PNG")
    # d_t from the final position (after the last hop, as upstream)
    final = np.array(t["final_position"])
    assert t["d_t"] == pytest.approx(np.linalg.norm(final - [8.0, 0.0, 9.0]), abs=1e-3)


def test_nan_waypoint_falls_back_to_random_point_within_3m(tmp_path):
    policy = ExplorePolicy(
        REPolicyConfig(proposer=RandomProposerConfig(_target_=f"{__name__}.NaNProposer")),
        protocol=EXPRESS,
        max_steps=4,
    )
    (pred,), _ = _run(policy, [_episode(2)], FakeSim(black=True), tmp_path)
    for s in pred.trace["steps"]:
        assert s["fallback"] and not s["snapped"] and s["source"] == "nan"
        assert math.dist(s["position"], s["next_position"]) <= 3.0 + 1e-9
        assert s["info"] == {"why": "test"}


def test_offline_stop_check_stops_at_step_2_with_decision_frame(tmp_path):
    policy = ExplorePolicy(RE, protocol=EXPRESS)
    (pred,), _ = _run(policy, [_episode(3)], FakeSim(), tmp_path, artifacts=True)
    t = pred.trace
    assert t["stopped_early"] and t["steps_taken"] == 3 and t["answer_prompt"] == "answer"
    assert [s["stop_reply"].split()[0] for s in t["steps"]] == ["no", "no", "yes"]
    assert "[offline placeholder]" in t["steps"][0]["stop_reply"]
    assert "hop_m" not in t["steps"][-1]  # no hop after the decision
    assert sorted(p.name for p in (tmp_path / "art" / "3").iterdir()) == [
        "step_000.png", "step_001.png", "step_002.png"
    ]  # fmt: skip


def test_scene_leases_load_each_scene_once(tmp_path):
    sim = FakeSim()
    eps = [_episode(i, "00800-A") for i in range(3)] + [_episode(i, "00801-B") for i in (4, 5)]
    eps.append(_episode(6, "00800-A"))  # out of order: joins A's lease while A is in use
    preds, session = _run(ExplorePolicy(RE, protocol=EXPRESS, max_steps=3), eps, sim, tmp_path)
    assert len(preds) == 6
    assert sim.loads == ["00800-A", "00801-B"]  # B waited until no episode used A
    assert session.scene_loads == 2


def test_same_rng_same_path(tmp_path):
    policy = ExplorePolicy(RE, protocol=EXPRESS, max_steps=6)
    (a,), _ = _run(policy, [_episode(7)], FakeSim(black=True), tmp_path)
    (b,), _ = _run(policy, [_episode(7)], FakeSim(black=True), tmp_path)
    assert [s["next_position"] for s in a.trace["steps"]] == [
        s["next_position"] for s in b.trace["steps"]
    ]


def test_the_proposer_is_built_per_episode_from_its_node():
    """``policy.proposer`` is a node: each episode gets a fresh proposer of its keys; a
    ``_target_`` that is no proposer class and a bad loop key are one-line config errors."""
    policy = ExplorePolicy(RE, protocol=EXPRESS, proposer={"radius_m": 1.5})
    a, b = policy.proposer_factory(), policy.proposer_factory()
    assert isinstance(a, RandomProposer) and a is not b and a.config.radius_m == 1.5
    bad = RandomProposerConfig(_target_="eqa_runner.policies.explore.Exploration")
    with pytest.raises(ConfigError, match=r"^policy.proposer._target_=.*not a WaypointProposer"):
        ExplorePolicy(REPolicyConfig(proposer=bad), protocol=EXPRESS)
    with pytest.raises(ConfigError, match=r"^policy.stop_match=maybe: must be one of"):
        ExplorePolicy(RE, protocol=EXPRESS, stop_match="maybe")
    with pytest.raises(ConfigError, match="has none"):
        ExplorePolicy(RE)


def test_a_start_on_no_island_is_a_scene_error_naming_the_scene(tmp_path):
    """The exploration loop checks the start with ``sim.check_start``: a start whose nearest
    navigable point is farther than ``OFF_FLOOR_M`` (or that has none) is a ``SceneError``
    naming the scene, the start and the distance; a start 0.3 m above the floor runs."""
    from eqa_runner.errors import SceneError

    class NamedSim(FakeSim):
        scene = SceneSpec("00800-A", Path("/fake/00800-A.ply"))

    def ep(start):
        e = _episode(1)
        e.meta["start_position"] = start
        return e

    policy = ExplorePolicy(RE, protocol=EXPRESS, max_steps=2)
    (pred,), _ = _run(policy, [ep([5.0, 0.3, 5.0])], NamedSim(black=True), tmp_path)
    assert pred.trace["steps_taken"] == 2
    for start, why in (([5.0, 0.8, 5.0], r"the nearest navigable point is 0\.80 m away, more "
                        r"than 0\.5 m"), ([12.0, 0.0, 5.0], "nothing navigable")):  # fmt: skip
        where = r"start \[" + ", ".join(f"{v:.2f}" for v in start) + r"\] is on no island"
        with pytest.raises(SceneError, match=rf"^scene 00800-A: {where} \({why}"):
            _run(policy, [ep(start)], NamedSim(black=True), tmp_path)


def test_protocol_asks_for_goal_distances_and_an_off_floor_goal(tmp_path):
    """A protocol whose goal is an object above the floor (``goal_on_floor = False``) and that
    asks for the distance at every step (``goal_distance_each_step``) gets both: no off-floor
    refusal, and ``goal_distances`` = the start, each step, the end."""

    class ObjectGoal(ExpressProtocol):
        goal_on_floor = False
        goal_distance_each_step = True

    ep = Episode(
        "9", "Question?", "yes", "object", scene="00800-A",
        meta={"start_position": [5.0, 0.0, 5.0], "start_rotation": [1.0, 0.0, 0.0, 0.0],
              "goal_position": [8.0, 1.2, 9.0], "geodesic_distance": 5.0},  # 1.2 m up
    )  # fmt: skip
    with pytest.raises(Exception, match="off the navigable floor"):
        _run(ExplorePolicy(RE, protocol=EXPRESS, max_steps=4), [ep], FakeSim(black=True), tmp_path)
    policy = ExplorePolicy(RE, max_steps=4, protocol=ObjectGoal())
    (pred,), _ = _run(policy, [ep], FakeSim(black=True), tmp_path)
    t = pred.trace
    d = t["goal_distances"]
    assert len(d) == t["steps_taken"] + 1 == 5
    goal = np.array([8.0, 1.2, 9.0])
    assert d[0] == pytest.approx(np.linalg.norm(goal - [5.0, 0.0, 5.0]), abs=1e-4)
    assert [s["goal_distance"] for s in t["steps"]] == d[:-1]
    assert d[-1] == pytest.approx(t["d_t"], abs=1e-4)
    plain_policy = ExplorePolicy(RE, protocol=EXPRESS, max_steps=4)
    (plain,), _ = _run(plain_policy, [_episode(1)], FakeSim(black=True), tmp_path)
    assert "goal_distances" not in plain.trace  # only when a protocol asks
