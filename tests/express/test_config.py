"""EXPRESS config composition: the task picks the EAC judge; the paper preset pins gpt-4o-mini."""

from __future__ import annotations

import pytest

from eqa_runner.benchmarks.express.eac import EACJudge
from eqa_runner.benchmarks.express.task import ExpressTask
from eqa_runner.errors import ConfigError
from eqa_runner.policies.base import Policy
from eqa_runner.policies.explore import ExplorePolicy, RandomProposer
from eqa_runner.run.build import build, check_capabilities
from eqa_runner.scoring.base import Judge
from eqa_runner.tasks.base import Task


def test_task_express_policy_re_composes_with_eac(compose_cfg):
    cfg = compose_cfg(["task=express", "policy=re"])
    assert cfg.judge._target_.endswith("EACJudge") and cfg.judge.name == "eac"
    check_capabilities(cfg)
    with pytest.raises(ConfigError, match="judge=eac reads .*the frame the answer was given from"):
        check_capabilities(compose_cfg(["task=express", "policy=blind"]))
    assert cfg.task.simulator == cfg.sim._target_
    task, policy, judge = (
        build(cfg[k], base, k) for k, base in (("task", Task), ("policy", Policy), ("judge", Judge))
    )
    assert isinstance(task, ExpressTask) and isinstance(judge, EACJudge)
    assert isinstance(policy, ExplorePolicy) and isinstance(
        policy.proposer_factory(), RandomProposer
    )
    assert judge.llm_overrides["model"] == "openai/gpt-4o-mini-2024-07-18"
    assert policy.protocol.terms.frame_size == (512, 512)


def test_habitat_backend_resolves_scenes_in_check(compose_cfg):
    cfg = compose_cfg(["task=express", "policy=re", "sim=habitat"])
    assert cfg.task.simulator == "eqa_runner.sim.habitat.HabitatSimulator"


def test_paper_preset(compose_cfg):
    cfg = compose_cfg(["experiment=express_re"])
    assert cfg.task.name == "express" and cfg.policy.name == "re"
    assert cfg.llm.model == "openai/gpt-4o-mini-2024-07-18"
    assert cfg.judge.model == "openai/gpt-4o-mini-2024-07-18"
    assert cfg.policy.stop_model is None  # the stop check uses llm.model
    assert (cfg.sim.width, cfg.sim.height, cfg.sim.hfov_deg, cfg.sim.sensor_height_m) == (
        512,
        512,
        90.0,
        1.5,
    )
