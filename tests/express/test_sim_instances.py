"""``sim.instances=N``: N simulators per process, each on its own thread and scene lease."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from eqa_runner.benchmarks.express.protocol import ExpressProtocol
from eqa_runner.errors import UserError
from eqa_runner.policies.config import REPolicyConfig
from eqa_runner.policies.explore import ExplorePolicy
from eqa_runner.records import read_records
from eqa_runner.run.build import build_sim
from eqa_runner.run.loop import run
from eqa_runner.schema import check_config
from eqa_runner.sim.mesh import MeshSimulator
from eqa_runner.sim.pool import SimulatorPool
from tests.conftest import server_overrides
from tests.express.test_e2e import RULES, STABLE, _overrides, _paths
from tests.express.test_explore import FakeSim, _episode, _run

EXPRESS = ExpressProtocol()


class ThreadedFakeSim(FakeSim):
    """FakeSim that records the threads it is called on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    def observe(self):
        self.threads.add(threading.current_thread().name)
        return super().observe()


def _episodes():
    scenes = ["00800-A"] * 4 + ["00801-B"] * 4 + ["00802-C"] * 3
    return [_episode(i, s) for i, s in enumerate(scenes)]


def _stable(preds):
    keep = ("position", "next_position", "stop_reply", "source", "hop_m")
    return [
        (p.answer, [{k: s.get(k) for k in keep} for s in p.trace["steps"]], p.trace["d_t"])
        for p in preds
    ]


@pytest.mark.parametrize("n", [2, 3])
def test_n_instances_give_the_results_of_one_and_load_a_scene_once_per_instance(tmp_path, n):
    one, session1 = _run(
        ExplorePolicy(REPolicyConfig(), protocol=EXPRESS, max_steps=4),
        _episodes(),
        FakeSim(),
        tmp_path / "1",
    )
    sims = [ThreadedFakeSim() for _ in range(n)]
    many, session = _run(
        ExplorePolicy(REPolicyConfig(), protocol=EXPRESS, max_steps=4),
        _episodes(),
        SimulatorPool(sims),
        tmp_path,
    )
    assert _stable(many) == _stable(one)  # per-episode seeds: the lane does not matter
    assert session1.scene_loads == 3
    used = [s for s in sims if s.loads]
    assert len(used) >= 2, "episodes were spread over several simulators"
    for s in sims:
        assert max(Counter(s.loads).values(), default=0) <= 1, s.loads  # once per instance
    assert session.scene_loads == sum(len(s.loads) for s in sims) >= 3
    threads = [t for s in used for t in s.threads]
    assert len(threads) == len(set(threads)) == len(used), "one thread per simulator"


def test_build_sim_builds_a_pool_and_the_rule_is_checked(compose_cfg):
    cfg = compose_cfg(["task=express", "policy=re", "sim=mesh", "sim.instances=3"])
    sim = build_sim(cfg)
    try:
        assert isinstance(sim, SimulatorPool) and len(sim) == 3
        assert all(isinstance(s, MeshSimulator) for s in sim.instances)
        assert len({id(s) for s in sim.instances}) == 3
    finally:
        sim.close()
    assert isinstance(build_sim(compose_cfg(["task=express", "policy=re"])), MeshSimulator)
    with pytest.raises(UserError, match="sim.instances"):
        check_config(compose_cfg(["task=express", "policy=re", "sim.instances=0"]))


@pytest.mark.slow
def test_express_run_with_two_simulators_matches_one(tmp_path, compose_cfg, llm_server,
                                                     express_demo):  # fmt: skip
    llm_server.configure(rules=RULES)
    run(compose_cfg(_overrides(express_demo, llm_server), out=tmp_path / "one"))
    llm_server.reset()
    over = [*_overrides(express_demo, llm_server), "sim.instances=2"]
    out = run(compose_cfg(over, out=tmp_path / "two"))
    assert out["counts"]["ok"] == 12
    a = {r["episode_id"]: r for r in read_records(tmp_path / "one" / "episodes.jsonl")}
    b = {r["episode_id"]: r for r in read_records(tmp_path / "two" / "episodes.jsonl")}
    assert _paths(a.values()) == _paths(b.values())
    for eid, r in a.items():
        assert {k: r[k] for k in STABLE} == {k: b[eid][k] for k in STABLE}
    assert server_overrides  # same model set-up as the single-simulator e2e test
