"""Policy lifecycle: the run builds the simulator, opens the policy, closes both, even on errors."""

from __future__ import annotations

import pytest

from eqa_runner.benchmarks.express.protocol import ExpressProtocol
from eqa_runner.errors import ConfigError
from eqa_runner.llm import LLMClient
from eqa_runner.policies.base import Policy
from eqa_runner.policies.config import REPolicyConfig
from eqa_runner.policies.context import RunResources
from eqa_runner.policies.explore import ExplorePolicy
from eqa_runner.run.loop import run
from eqa_runner.sim.mesh import MeshSimulator

EXPRESS = ExpressProtocol()

CLOSED: list[str] = []


class RecordingSim(MeshSimulator):
    """The mesh simulator, noting when the run closes it."""

    def close(self) -> None:
        CLOSED.append("sim")
        super().close()


class _Policy(Policy):
    def __init__(self, fail_open: bool) -> None:
        self.fail_open, self.calls = fail_open, []

    def open(self, resources):
        self.calls.append("open")
        if self.fail_open:
            raise RuntimeError("open failed")

    def close(self):
        self.calls.append("close")

    async def predict(self, episode, ctx):
        raise NotImplementedError


@pytest.mark.parametrize("fail_open", [False, True])
def test_opened_always_closes(fail_open):
    p = _Policy(fail_open)
    res = RunResources(llm=LLMClient({"model": "offline"}, role="policy"), task=None)
    match = "open failed" if fail_open else "in the run"
    with pytest.raises(RuntimeError, match=match), p.opened(res):
        raise RuntimeError("in the run")
    assert p.calls == ["open", "close"]


def test_explore_policy_needs_the_runs_simulator():
    p = ExplorePolicy(REPolicyConfig(), protocol=EXPRESS)
    assert p.needs_sim
    with pytest.raises(ConfigError, match="needs a simulator"):
        p.open(RunResources(llm=LLMClient({"model": "offline"}, role="policy"), task=None))
    p.close()  # safe after a failed open
    assert p.session is None


def _overrides(demo):
    return [
        "task=express",
        "policy=re",
        f"task.data_dir={demo}",
        "judge.model=offline",
        "policy.max_steps=2",
        "run.limit=2",
        "sim.width=64",
        "sim.height=64",
        f"sim._target_={__name__}.RecordingSim",
    ]


@pytest.mark.slow
def test_run_closes_the_simulator(tmp_path, compose_cfg, express_demo):
    CLOSED.clear()
    out = run(compose_cfg(_overrides(express_demo)))
    assert out["counts"]["ok"] == 2
    assert CLOSED == ["sim"]


def test_run_closes_the_simulator_when_the_policy_cannot_open(
    tmp_path, compose_cfg, express_demo, monkeypatch
):
    CLOSED.clear()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose_cfg([*_overrides(express_demo), "policy.stop_model=openai/gpt-4o-mini"])
    with pytest.raises(ConfigError, match="policy.stop_model"):
        run(cfg)
    assert CLOSED == ["sim"]
