"""Components take their typed config: ``Cls(config=None, **overrides)`` (eqa_runner/configured.py).

A run hands each component its schema object; tests and library users pass schema field names;
either way the one checker judges the values, with the same one-line ``ConfigError``."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import pytest

from eqa_runner.benchmarks.aeqa.config import AEQAJudgeConfig, AEQAProtocolConfig, AEQATaskConfig
from eqa_runner.benchmarks.aeqa.judge import AEQAJudge
from eqa_runner.benchmarks.aeqa.protocol import AEQAProtocol
from eqa_runner.benchmarks.aeqa.task import AEQATask
from eqa_runner.benchmarks.express.eac import EACJudge
from eqa_runner.benchmarks.express.task import ExpressTask
from eqa_runner.benchmarks.hmeqa.protocol import HMEQAProtocol
from eqa_runner.configured import Configured
from eqa_runner.errors import ConfigError
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies import config as pc
from eqa_runner.policies.base import Policy
from eqa_runner.policies.explore import ExplorePolicy
from eqa_runner.policies.frontier import FrontierProposer
from eqa_runner.policies.guided import GuidedExplorePolicy
from eqa_runner.policies.vlm_waypoint import WaypointVLMProposer
from eqa_runner.run.build import build
from eqa_runner.schema import bounded, check_config, one_of
from eqa_runner.scoring.base import JUDGE_LLM_KEYS, Judge
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.tasks.base import Task

P = AEQAProtocol()
RE = pc.REPolicyConfig()


def test_a_run_hands_each_component_its_schema_object(compose_cfg, tmp_path):
    cfg = compose_cfg(["task=aeqa", "policy=fbe", f"task.data_dir={tmp_path}", "sim=habitat"])
    task = build(cfg.task, Task, "task")
    assert type(task.config) is AEQATaskConfig
    assert task.config.data_dir == str(tmp_path) and task.data_dir == tmp_path
    # the interpolation is resolved against the run's config: the backend in use
    assert task.simulator == "eqa_runner.sim.habitat.HabitatSimulator"
    judge = build(cfg.judge, Judge, "judge")
    assert type(judge.config) is AEQAJudgeConfig and judge.name == "aeqa"
    assert judge.llm_overrides["model"] == cfg.judge.model
    proto = AEQAProtocol(AEQAProtocolConfig(num_steps=7))
    assert proto.config.num_steps == 7 and proto.config.memory_frames == 8


def test_a_run_builds_an_exploration_policy_with_its_tasks_protocol(compose_cfg, tmp_path):
    """The policy's schema object from the node; the protocol, another component, built from
    ``policy.protocol`` (the task's) and handed over as ``protocol=``; one proposer per episode
    from ``policy.proposer``."""
    cfg = compose_cfg(
        ["task=aeqa", "policy=vlm_waypoint", f"task.data_dir={tmp_path}", "protocol.num_steps=9"]
    )
    policy = build(cfg.policy, Policy, "policy")
    assert isinstance(policy, GuidedExplorePolicy)
    assert type(policy.config) is pc.VLMWaypointPolicyConfig and policy.name == "vlm_waypoint"
    assert policy.config.stop_rule == "protocol" and policy.protocol.terms.frame_size == (
        1280,
        1280,
    )
    assert isinstance(policy.protocol, AEQAProtocol) and policy.protocol.config.num_steps == 9
    first, second = policy.proposer_factory(), policy.proposer_factory()
    assert isinstance(first, WaypointVLMProposer) and first is not second


def test_an_exploration_policy_takes_a_config_of_any_subclass_of_its_schema():
    policy = ExplorePolicy(pc.FBEPolicyConfig(), protocol=P, proposer={"map_scale": 2})
    assert type(policy.config) is pc.FBEPolicyConfig and policy.name == "fbe"
    proposer = policy.proposer_factory()
    assert isinstance(proposer, FrontierProposer) and proposer.config.map_scale == 2


@dataclass
class _Base:
    name: str = "base"
    n: int = bounded(1, ge=1)


@dataclass
class _Sub(_Base):
    name: str = "sub"
    extra: str = one_of("a", ("a", "b"))


class _Thing(Configured):
    config_class: ClassVar[type[Any]] = _Base
    config_key: ClassVar[str] = "thing"


def test_a_config_of_a_subclass_keeps_its_type_and_its_own_keys():
    thing = _Thing(_Sub(), extra="b", n=2)
    assert type(thing.config) is _Sub and thing.name == "sub"
    assert (thing.config.extra, thing.config.n) == ("b", 2)
    with pytest.raises(ConfigError, match=r"^thing.extra=c: must be one of a, b"):
        _Thing(_Sub(), extra="c")
    with pytest.raises(ConfigError, match=r"^thing.extra: not a key of _Thing"):
        _Thing(extra="b")  # the base schema has no such key


@pytest.mark.parametrize(
    "override, key",
    [
        ("task.split=val", "split"),
        ("task.categories=[colours]", "categories"),
    ],
)
def test_an_override_is_refused_with_the_checkers_message(compose_cfg, override, key):
    """``AEQATask(split="val")`` fails with the line ``task.split=val`` gives on the command
    line: one checker, one exception type, one message."""
    with pytest.raises(ConfigError) as on_the_command_line:
        check_config(compose_cfg(["task=aeqa", override]))
    value = override.split("=", 1)[1]
    kwargs = {key: [value.strip("[]")] if value.startswith("[") else value}
    with pytest.raises(ConfigError) as in_code:
        AEQATask(**kwargs)
    assert str(in_code.value) == str(on_the_command_line.value)


def test_rules_the_constructors_checked_are_the_schemas():
    """Each was a constructor's own check with its own exception type (DataError, ValueError)."""
    cases = [
        (lambda: ExpressTask(split="test"), "task.split=test: must be one of all, val, train"),
        (lambda: EACJudge(model="offline", inf_policy="x"), "judge.inf_policy=x: must be one of"),
        (lambda: HMEQAProtocol(tie_break="coin"), "protocol.tie_break=coin: must be one of"),
        (lambda: AEQAProtocol(memory_frames=0), "protocol.memory_frames=0: must be >= 1"),
        (lambda: ExplorePolicy(RE, protocol=P, stop_match="x"), "policy.stop_match=x: must be"),
        (
            lambda: ExplorePolicy(RE, protocol=P, unreachable_hop="x"),
            "policy.unreachable_hop=x: must be one of",
        ),
        (
            lambda: GuidedExplorePolicy(pc.VLMExplorePolicyConfig(), protocol=P, stop_rule="x"),
            "policy.stop_rule=x: must be one of",
        ),
    ]
    for make, message in cases:
        with pytest.raises(ConfigError) as e:
            make()
        assert str(e.value).startswith(message), str(e.value)


def test_an_unknown_override_is_named():
    with pytest.raises(ConfigError, match=r"^task.num_steps: not a key of AEQATask \(its keys: "):
        AEQATask(num_steps=3)
    with pytest.raises(ConfigError, match=r"^judge.temprature: not a key of AEQAJudge"):
        AEQAJudge(model="offline", temprature=0)


def test_a_wrong_type_and_a_missing_mandatory_key_are_one_line_config_errors():
    with pytest.raises(ConfigError, match=r"^task.require_path_lengths: .*not a valid bool"):
        AEQATask(require_path_lengths="maybe")
    with pytest.raises(ConfigError, match=r"^judge.model: not set; .*AEQAJudge\(model=\.\.\.\)"):
        AEQAJudge()
    with pytest.raises(ConfigError, match="a ExpressTaskConfig is not a AEQATaskConfig"):
        AEQATask(ExpressTask().config)


def test_a_schema_object_and_overrides_combine():
    base = AEQATaskConfig(data_dir="d", categories=["world knowledge"])
    task = AEQATask(base, require_path_lengths=False)
    assert task.config.categories == ["world knowledge"] and task.config.data_dir == "d"
    assert task.config.require_path_lengths is False and base.require_path_lengths is True
    # built without Hydra, ${sim._target_} is the default backend's
    assert task.simulator == "eqa_runner.sim.mesh.MeshSimulator"


def test_the_judge_model_keys_are_the_schemas():
    """Written once, in JudgeConfig: the fields that override the ``llm`` settings."""
    llm = {f.name for f in fields(LLMConfig)}
    assert set(JUDGE_LLM_KEYS) == {f.name for f in fields(JudgeConfig)} & llm
    judge = AEQAJudge(model="openai/x-2024-01-01", temperature=0.0)
    assert judge.llm_overrides == {k: getattr(judge.config, k) for k in JUDGE_LLM_KEYS}
    assert judge.llm_overrides["temperature"] == 0.0
