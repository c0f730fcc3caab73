"""A lab's own config dir composes in without forking (docs/config.md): an llm preset, a policy
preset and launcher settings, via ``hydra.searchpath`` and via ``--config-dir``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from eqa_runner.run.configstore import register_configs
from tests.conftest import CONF

LAB_LLM = """\
# a lab's vLLM server: the project's llm schema, then only what differs
defaults:
  - base_llm
  - _self_
model: hosted_vllm/lab/qwen-72b
api_base: http://gpu-node-7:8000/v1
api_key_env: LAB_LLM_KEY
"""
LAB_POLICY = """\
# the project's multiframe policy with the lab's frame budget
defaults:
  - multiframe
  - _self_
num_frames: 8
"""
LAB_LAUNCHER = """\
defaults:
  - slurm
  - _self_
partition: lab-gpu
account: lab
"""


@pytest.fixture
def lab_conf(tmp_path: Path) -> Path:
    root = tmp_path / "lab_conf"
    for rel, text in (
        ("llm/lab-qwen.yaml", LAB_LLM),
        ("policy/lab_multiframe.yaml", LAB_POLICY),
        ("hydra/launcher/lab_cluster.yaml", LAB_LAUNCHER),
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_user_presets_compose_via_hydra_searchpath(lab_conf: Path) -> None:
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose(
                "config",
                overrides=[
                    f"hydra.searchpath=[file://{lab_conf}]",
                    "llm=lab-qwen",
                    "policy=lab_multiframe",
                    "hydra/launcher=lab_cluster",
                ],
                return_hydra_config=True,
            )
    finally:
        GlobalHydra.instance().clear()
    assert cfg.llm.model == "hosted_vllm/lab/qwen-72b"
    assert cfg.llm.api_base == "http://gpu-node-7:8000/v1"
    assert "max_tokens" in cfg.llm  # the schema's other keys, with their defaults
    assert cfg.policy.num_frames == 8 and "_target_" in cfg.policy
    assert cfg.hydra.launcher.partition == "lab-gpu"
    assert cfg.hydra.launcher._target_.startswith("hydra_plugins.eqa_runner_launcher.")
    assert cfg.hydra.launcher.max_num_timeout == 3  # the project's slurm.yaml under the lab's


@pytest.mark.slow
def test_user_presets_compose_via_config_dir(lab_conf: Path, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "eqa_runner", "--config-dir", str(lab_conf),
           "llm=lab-qwen", "policy=lab_multiframe", "--cfg", "job"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "model: hosted_vllm/lab/qwen-72b" in proc.stdout
    assert "num_frames: 8" in proc.stdout


@pytest.mark.slow
def test_a_typo_in_a_user_preset_fails_at_composition(lab_conf: Path, tmp_path: Path) -> None:
    """The user's preset is checked against the same schema as the project's."""
    (lab_conf / "llm" / "lab-typo.yaml").write_text(LAB_LLM + "max_tokenz: 10\n")
    cmd = [sys.executable, "-m", "eqa_runner", "--config-dir", str(lab_conf),
           "llm=lab-typo", "--cfg", "job"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "max_tokenz" in proc.stderr


def test_a_typo_in_a_user_preset_fails_at_composition_in_process(lab_conf: Path) -> None:
    """The same check without a process: the lab's dir on ``hydra.searchpath``."""
    from hydra.errors import ConfigCompositionException

    (lab_conf / "llm" / "lab-typo.yaml").write_text(LAB_LLM + "max_tokenz: 10\n")
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            overrides = [f"hydra.searchpath=[file://{lab_conf}]", "llm=lab-typo"]
            with pytest.raises(ConfigCompositionException) as err:
                compose("config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()
    assert "max_tokenz" in str(err.value.__cause__ or err.value)
