"""Typed schemas of EXPRESS-Bench: the config nodes it adds (task, protocol, judge ...).

Registered in Hydra's ConfigStore through the benchmark registry; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING  # noqa: F401

from eqa_runner.policies.config import ProtocolConfig
from eqa_runner.schema import bounded, one_of
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.tasks.config import TaskConfig

EXPRESS_SPLITS = ("all", "val", "train")  # val: HM3D scenes >= 00800


@dataclass
class ExpressTaskConfig(TaskConfig):
    """``task=express``: EXPRESS-Bench, explore an HM3D scene from a recorded pose."""

    name: str = "express"
    data_dir: str = "${oc.env:EXPRESS_DATA_DIR,data/express}"
    scenes_dir: str | None = None  # default: <data_dir>/scenes (<split>/<NNNNN-id>/<id>.*)
    split: str = one_of("all", EXPRESS_SPLITS)
    scenes: list[str] | None = None  # optional scene ids to keep, e.g. [00800-TEEsavR23oF]
    types: list[str] | None = None  # optional question types to keep (object, location, ...)
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


@dataclass
class ExpressProtocolConfig(ProtocolConfig):
    """``protocol=express``: stop check each step, answer from the decision frame or blind."""

    _target_: str = "eqa_runner.benchmarks.express.protocol.ExpressProtocol"


INF_POLICIES = ("exclude", "penalize")


@dataclass
class EACJudgeConfig(JudgeConfig):
    """``judge=eac`` (EXPRESS-Bench): a judge VLM returns "sigma, delta"."""

    name: str = "eac"
    temperature: float | None = bounded(None, ge=0)  # upstream sends none; 0 = less variance
    max_tokens: int | None = bounded(64, ge=1)
    # exclude (paper) | penalize: infinite path/goal distances count as failures
    inf_policy: str = one_of("exclude", INF_POLICIES)
    # final-frame size (width, height), for dry-run estimates only
    image_size: list[int] = bounded(default_factory=lambda: ["${sim.width}", "${sim.height}"], gt=0)


# config group -> {schema node name -> dataclass} (run/configstore.py stores them)
SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_express": ExpressTaskConfig},
    "protocol": {"base_express_protocol": ExpressProtocolConfig},
    "judge": {"base_eac": EACJudgeConfig},
}
