"""Every config group refuses a typo'd key and an out-of-range value when the config is
composed, before a run directory exists, with one line naming the key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hydra.errors import ConfigCompositionException

from eqa_runner.errors import ConfigError
from eqa_runner.schema import check_config
from tests.conftest import ROOT

EXPRESS = ["task=express", "policy=re"]
FBE = ["task=express", "policy=fbe"]

# group (option) -> (the choices composing it, a misspelt key)
TYPOS = {
    "run": ([], "run.limt"),
    "task/openeqa_em": ([], "task.data_dri"),
    "task/express": (EXPRESS, "task.scenes_dri"),
    "policy/blind": (["policy=blind"], "policy.nmae"),
    "policy/frames": ([], "policy.num_frame"),
    "policy/re": (EXPRESS, "policy.proposer.radius"),
    "policy/fbe": (FBE, "policy.proposer.look_around"),
    "planner": (FBE, "policy.proposer.planner.epz"),
    "judge/llm_match": ([], "judge.strip_after_period"),
    "judge/eac": (EXPRESS, "judge.inf_polcy"),
    "llm": ([], "llm.temprature"),
    "sim/mesh": ([], "sim.widht"),
    "sim/habitat": (["sim=habitat"], "sim.max_try"),
}

# group (option) -> (the choices composing it, key=out-of-range value, what the error says)
OUT_OF_RANGE = {
    "run": ([], "run.workers=0", "run.workers=0: must be >= 1"),
    "run/limit": ([], "run.limit=-1", "run.limit=-1: must be >= 0 (or null)"),
    "run/timeout": ([], "run.episode_timeout_s=0", "run.episode_timeout_s=0.0: must be > 0"),
    "task/openeqa_em": ([], "task.subset=replica", "task.subset=replica: must be one of hm3d"),
    "task/openeqa_em/split": ([], "task.split=val", "task.split=val: must be one of all"),
    "task/express": (EXPRESS, "task.split=test", "task.split=test: must be one of all, val"),
    "policy/frames": ([], "policy.image_size=-3", "policy.image_size=-3: must be > 0 (or null)"),
    "policy/frames/strategy": ([], "policy.strategy=random", "policy.strategy=random: must be"),
    "policy/re": (EXPRESS, "policy.stop_match=maybe", "must be one of prefix, contains"),
    "policy/re/proposer": (EXPRESS, "policy.proposer.radius_m=0", "radius_m=0.0: must be > 0"),
    "policy/fbe": (FBE, "policy.max_steps=0", "policy.max_steps=0: must be >= 1 (or null)"),
    "policy/fbe/image_size": (FBE, "sim.width=-1", "sim.width=-1: must be >= 1"),
    "planner": (FBE, "policy.proposer.planner.voxel_size=0", "planner.voxel_size=0.0: must be > 0"),
    "planner/fallback": (FBE, "policy.proposer.planner.fallback=stay", "fallback=stay: must be"),
    "judge/llm_match": ([], "judge.max_tokens=0", "judge.max_tokens=0: must be >= 1 (or null)"),
    "judge/eac": (EXPRESS, "judge.inf_policy=ignore", "judge.inf_policy=ignore: must be one of"),
    "llm": ([], "llm.transport=grpc", "llm.transport=grpc: must be one of thread, async"),
    "llm/timeout": ([], "llm.timeout_s=0", "llm.timeout_s=0.0: must be > 0"),
    "llm/model": ([], "llm.model=", "llm.model=: must be a model: offline, or a litellm model"),
    "llm/model/blank": ([], "llm.model=' '", "llm.model= : must be a model: offline, or a"),
    "judge/model": ([], "judge.model=", "judge.model=: must be a model: offline, or a litellm"),
    "sim/mesh": ([], "sim.up_axis=x", "sim.up_axis=x: must be one of auto, y, z"),
    "sim/habitat": (
        ["sim=habitat"],
        "sim.hfov_deg=180",
        "sim.hfov_deg=180.0: must be > 0 and < 180",
    ),
}


@pytest.mark.parametrize("group", sorted(TYPOS))
def test_typo_in_every_group_fails_at_composition(compose_cfg, group):
    choices, key = TYPOS[group]
    with pytest.raises(ConfigCompositionException) as err:
        compose_cfg([*choices, f"{key}=1"])
    assert key in str(err.value)


@pytest.mark.parametrize("group", sorted(OUT_OF_RANGE))
def test_out_of_range_in_every_group_fails_when_composed(compose_cfg, group):
    choices, override, message = OUT_OF_RANGE[group]
    cfg = compose_cfg([*choices, override])
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).split("=", 1)[0].endswith(override.split("=", 1)[0])  # the key


def test_wrong_type_fails_at_composition(compose_cfg):
    with pytest.raises(ConfigCompositionException, match="policy.image_size"):
        compose_cfg(["policy.image_size=big"])


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", "eqa_runner", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "override, line",
    [
        ("policy.image_size=-3", "error: policy.image_size=-3: must be > 0 (or null)"),
        ("run.workers=0", "error: run.workers=0: must be >= 1"),
        (
            "policy.image_size=big",
            "error: policy.image_size=big: Value 'big' of type 'str' could not be converted "
            "to Integer",
        ),
        ("run.limt=3", "error: run.limt: unknown key; did you mean run.limit? (`--cfg job` lists"),
    ],
)
@pytest.mark.slow
def test_cli_prints_one_line_and_makes_no_run_dir(tmp_path, override, line):
    run_dir = tmp_path / "run"
    res = _cli(override, f"hydra.run.dir={run_dir}")
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.strip().splitlines()[0].startswith(line), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not run_dir.exists(), "the check runs before Hydra makes the run directory"


@pytest.mark.slow
def test_cli_sweep_checks_before_the_sweep_dir(tmp_path):
    sweep = tmp_path / "sweep"
    res = _cli("-m", "policy=blind,single", "run.workers=0", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 2 and "error: run.workers=0: must be >= 1" in res.stderr
    assert not sweep.exists()
