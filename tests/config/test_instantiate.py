"""Every option of every group composes, passes the range checks and builds (cheaply: the
simulators load no scene, the models are not called)."""

from __future__ import annotations

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from eqa_runner.llm import LLMClient
from eqa_runner.policies.base import Policy
from eqa_runner.policies.explore import ExplorePolicy, WaypointProposer
from eqa_runner.run.loop import build
from eqa_runner.schema import check_config
from eqa_runner.scoring.base import Judge
from eqa_runner.sim.base import Simulator
from eqa_runner.tasks.base import Task
from tests.conftest import option_names


def _options(group: str) -> list[str]:
    return option_names(group)


# exploration policies: task=express
EXPLORE = ("re", "fbe", "vlm_explore", "vlm_waypoint", "fine_eqa")

# each option with a task it can run under
CASES = (
    [("task", t, [f"task={t}"]) for t in _options("task")]
    + [("policy", p, ["task=express"] if p in EXPLORE else []) for p in _options("policy")]
    + [("judge", j, []) for j in _options("judge")]
    + [("llm", m, []) for m in _options("llm")]
    + [("sim", s, ["task=express", "policy=re"]) for s in _options("sim")]
    + [("experiment", e, []) for e in _options("experiment")]
)


@pytest.mark.parametrize("group, option, extra", CASES, ids=[f"{g}/{o}" for g, o, _ in CASES])
def test_every_option_composes_checks_and_builds(compose_cfg, tmp_path, group, option, extra):
    if option == "aeqa_published":  # scored against a blind run: it must exist (else refused)
        (tmp_path / "blind").mkdir()
        (tmp_path / "blind" / "episodes.jsonl").write_text("")
        extra = [*extra, f"judge.blind_run_dir={tmp_path / 'blind'}"]
    cfg = compose_cfg([*extra, f"{group}={option}", f"task.data_dir={tmp_path}"])
    check_config(cfg)
    if group in ("task", "experiment"):
        assert isinstance(build(cfg.task, Task, "task"), Task)
        assert isinstance(build(cfg.judge, Judge, "judge"), Judge)
    if group in ("policy", "experiment"):
        policy = build(cfg.policy, Policy, "policy")
        if isinstance(policy, ExplorePolicy):
            assert isinstance(policy.proposer_factory(), WaypointProposer)  # a fresh one
    if group == "judge":
        assert isinstance(build(cfg.judge, Judge, "judge"), Judge)
    if group == "llm":
        LLMClient(OmegaConf.to_container(cfg.llm, resolve=True), role="policy")
    if group == "sim":
        sim = instantiate(cfg.sim, _convert_="all")  # no scene loaded: nothing heavy imported
        assert isinstance(sim, Simulator) and sim.config.seed == cfg.run.seed
        sim.close()
