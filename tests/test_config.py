"""Config tree: every option of every group composes and instantiates; the CLI front door works."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from eqa_runner.errors import ConfigSecretError
from eqa_runner.llm import LLMClient
from eqa_runner.policies.base import Policy
from eqa_runner.run.build import check_capabilities
from eqa_runner.run.loop import build
from eqa_runner.scoring.base import Judge
from eqa_runner.tasks.base import Task
from tests.conftest import ROOT, option_names


def _options(group: str) -> list[str]:
    return option_names(group)


@pytest.mark.parametrize("policy", _options("policy"))
def test_every_policy_instantiates(compose_cfg, policy):
    # exploration policies run under an exploration task's protocol (its conf/protocol/)
    explore = ("re", "fbe", "vlm_explore", "vlm_waypoint", "fine_eqa")
    task = "express" if policy in explore else "openeqa_em"
    cfg = compose_cfg([f"policy={policy}", f"task={task}"])
    assert isinstance(build(cfg.policy, Policy, "policy"), Policy)
    assert cfg.policy.name == policy, "a policy's name must match its config file"


@pytest.mark.parametrize("task", _options("task"))
def test_every_task_and_its_judge_instantiate(compose_cfg, task, tmp_path):
    cfg = compose_cfg([f"task={task}", f"task.data_dir={tmp_path}"])
    assert isinstance(build(cfg.task, Task, "task"), Task)
    assert isinstance(build(cfg.judge, Judge, "judge"), Judge)
    assert cfg.task.name == task


@pytest.mark.parametrize("judge", _options("judge"))
def test_every_judge_is_pinned_to_a_dated_snapshot(compose_cfg, judge):
    cfg = compose_cfg([f"judge={judge}"])
    model = cfg.judge.model
    built = build(cfg.judge, Judge, "judge")
    assert isinstance(built, Judge)
    if built.needs_model:  # a judge that calls no model (hmeqa: exact match) has none to pin
        assert re.search(r"\d{4}-?\d{2}-?\d{2}|\d{4}$", model), f"{judge}: {model} is not dated"


@pytest.mark.parametrize("llm", _options("llm"))
def test_every_llm_preset_builds_a_client(compose_cfg, llm):
    cfg = compose_cfg([f"llm={llm}"])
    client = LLMClient(OmegaConf.to_container(cfg.llm, resolve=True), role="policy")
    assert client.model == cfg.llm.model
    if llm != "offline" and llm != "local":
        assert re.search(r"\d{4}-?\d{2}-?\d{2}|\d{3,4}$", client.model), "presets are pinned"


@pytest.mark.parametrize("experiment", _options("experiment"))
def test_every_experiment_composes(compose_cfg, experiment, tmp_path):
    cfg = compose_cfg([f"experiment={experiment}", f"task.data_dir={tmp_path}"])
    check_capabilities(cfg)  # the preset's policy and judge fit its task


def test_openeqa_presets_match_the_paper(compose_cfg):
    cfg = compose_cfg(["experiment=openeqa_multiframe"])
    assert (cfg.policy.num_frames, cfg.policy.image_size, cfg.policy.strategy) == (
        50,
        512,
        "linspace",
    )
    assert (cfg.llm.temperature, cfg.llm.max_tokens, cfg.llm.seed) == (0.2, 128, 1234)
    assert compose_cfg(["experiment=openeqa_single"]).policy.num_frames == 1
    assert compose_cfg(["experiment=openeqa_blind"]).policy.name == "blind"


def test_typo_in_run_key_fails_at_composition(compose_cfg):
    with pytest.raises(ConfigCompositionException):
        compose_cfg(["run.limt=3"])


def test_api_key_in_config_is_refused(compose_cfg):
    cfg = compose_cfg(["llm=gpt-4o", "llm.api_key=sk-live-123"])
    with pytest.raises(ConfigSecretError, match="api_key_env"):
        LLMClient(OmegaConf.to_container(cfg.llm), role="policy")


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", "eqa_runner", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_cli_help_and_cfg_job():
    res = _cli("--help")
    assert res.returncode == 0 and "eqa_runner: run one Embodied Question Answering" in res.stdout
    groups = dict(
        ln.split(": ", 1)
        for ln in res.stdout.splitlines()
        if re.match(r"^(task|policy|llm|judge): ", ln)
    )
    assert "openeqa_em" in groups["task"] and "multiframe" in groups["policy"]
    res = _cli("--cfg", "job", "policy=single")
    assert res.returncode == 0
    assert "strategy: middle" in res.stdout and "_target_: eqa_runner.benchmarks" in res.stdout


def test_help_and_cfg_job_in_process(compose_cfg):
    """What ``--help`` and ``--cfg job policy=single`` print, without a process."""
    from eqa_runner.cli_help import render_help, wants_fast_help

    assert wants_fast_help(["--help"]) and wants_fast_help(["--help", "policy=single"])
    text = render_help()
    assert "eqa_runner: run one Embodied Question Answering" in text
    groups = dict(
        ln.split(": ", 1) for ln in text.splitlines() if re.match(r"^(task|policy|llm|judge): ", ln)
    )
    assert "openeqa_em" in groups["task"] and "multiframe" in groups["policy"]
    job = OmegaConf.to_yaml(compose_cfg(["policy=single"]))
    assert "strategy: middle" in job and "_target_: eqa_runner.benchmarks" in job


@pytest.mark.slow
def test_cli_incompatible_policy_is_one_line_error(tmp_path):
    res = _cli(
        "task=openeqa_em",
        "policy=re",
        f"task.data_dir={tmp_path}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert res.returncode == 2
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert line == [
        "error: policy=re needs an exploration protocol, a simulator (a scene and a start "
        "pose); task=openeqa_em provides frames, open_answer, question; pick a policy it can "
        "feed: blind, imported, multiframe, single (docs/architecture.md: capabilities)"
    ]
    assert not (tmp_path / "run").exists()  # refused before the run dir is made


@pytest.mark.slow
def test_cli_multirun_offline(tmp_path):
    from tests.helpers.datasets import make_openeqa_dataset

    data = make_openeqa_dataset(tmp_path / "d", n_questions=4, n_episodes=1, frames=3)
    res = _cli(
        "-m",
        "policy=blind,single",
        "llm=offline",
        "judge.model=offline",
        f"task.data_dir={data}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "run.progress=false",
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    summaries = sorted((tmp_path / "sweep").glob("*/summary.json"))
    assert len(summaries) == 2
