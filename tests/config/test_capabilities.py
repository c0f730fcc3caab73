"""Capabilities instead of name lists: a new policy whose needs a task meets just runs there;
a mismatch is one line naming the missing capability, before any run dir exists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eqa_runner.capabilities import check_fit
from eqa_runner.errors import ConfigError
from eqa_runner.run.loop import run
from tests.conftest import ROOT
from tests.helpers.datasets import make_openeqa_dataset

MINE = """\
# a lab's own policy: a new class, one YAML, no list to edit
defaults:
  - base_blind
  - _self_

_target_: tests.helpers.mine_policy.EchoFramesPolicy
name: mine
"""


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cmd = [sys.executable, "-m", "eqa_runner", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def lab_conf(tmp_path: Path) -> Path:
    (tmp_path / "lab" / "policy").mkdir(parents=True)
    (tmp_path / "lab" / "policy" / "mine.yaml").write_text(MINE)
    return tmp_path / "lab"


@pytest.mark.slow
def test_a_new_policy_yaml_with_a_capable_policy_runs(lab_conf: Path, tmp_path: Path) -> None:
    data = make_openeqa_dataset(tmp_path / "data", n_questions=3)
    run_dir = tmp_path / "run"
    res = _cli("--config-dir", str(lab_conf), "task=openeqa_em", "policy=mine", "llm=offline",
               "judge.model=offline", f"task.data_dir={data}",
               f"hydra.run.dir={run_dir}")  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    records = list(run_dir.glob("*.jsonl"))
    assert records and "an answer to:" in records[0].read_text()


@pytest.mark.slow
def test_a_policy_the_task_cannot_feed_is_one_line_before_the_run_dir(
    lab_conf: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    res = _cli("--config-dir", str(lab_conf), "task=express", "policy=mine",
               f"task.data_dir={tmp_path}", f"hydra.run.dir={run_dir}")  # fmt: skip
    assert res.returncode == 2
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [
        "error: policy=mine needs an episode's recorded frames; task=express provides goal, "
        "open_answer, protocol, question, simulator; pick a policy it can feed: blind, fbe, "
        "fine_eqa, imported, re, vlm_explore, vlm_waypoint (docs/architecture.md: capabilities)"
    ]
    assert not run_dir.exists()


def test_a_judge_reading_what_nobody_provides_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"judge=hmeqa reads answer options, the agent's"):
        check_fit(
            ("openeqa_em", frozenset({"question", "frames", "open_answer"})),
            ("multiframe", frozenset({"question", "frames"}), frozenset()),
            ("hmeqa", frozenset({"choices", "trajectory"})),
        )


# the same two checks in-process (the fast tier): the lab's dir on hydra.searchpath, run(cfg)


def test_a_new_policy_yaml_with_a_capable_policy_runs_in_process(
    lab_conf: Path, tmp_path: Path, compose_cfg
) -> None:
    data = make_openeqa_dataset(tmp_path / "data", n_questions=3)
    lab = f"hydra.searchpath=[file://{lab_conf}]"
    offline = ["llm=offline", "judge.model=offline"]
    cfg = compose_cfg([lab, "task=openeqa_em", "policy=mine", *offline, f"task.data_dir={data}"])
    assert run(cfg)["exit_code"] == 0
    assert "an answer to:" in (tmp_path / "run" / "episodes.jsonl").read_text()


def test_a_policy_the_task_cannot_feed_is_refused_in_process_before_the_run_dir(
    lab_conf: Path, tmp_path: Path, compose_cfg
) -> None:
    lab = f"hydra.searchpath=[file://{lab_conf}]"
    cfg = compose_cfg([lab, "task=express", "policy=mine", f"task.data_dir={tmp_path}"])
    with pytest.raises(ConfigError, match=r"^policy=mine needs an episode's recorded frames; "):
        run(cfg)
    assert not (tmp_path / "run").exists()
