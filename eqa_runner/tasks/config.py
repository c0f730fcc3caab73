"""Typed schemas of the ``task`` config group: one per benchmark, beside its code.

Nothing heavy is imported here; the task classes take their defaults from these schemas.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from eqa_runner.schema import one_of

OPENEQA_POLICIES = ("blind", "single", "multiframe")
OPENEQA_SPLITS = ("all", "val", "test")  # OpenEQA has no official split: use all
OPENEQA_SUBSETS = ("hm3d", "scannet")
EXPRESS_POLICIES = ("re", "fbe")
EXPRESS_SPLITS = ("all", "val", "train")  # val: HM3D scenes >= 00800


@dataclass
class TaskConfig:
    """Keys every benchmark has."""

    _target_: str = MISSING
    name: str = MISSING
    policies: list[str] = MISSING  # the policies that can run this task
    judges: list[str] = field(default_factory=list)  # judges whose metrics fit it (run-checked)
    data_dir: str = MISSING
    questions_file: str | None = None  # default: a file in data_dir
    split: str = "all"
    check_data: bool = True  # at start, check that every selected episode's data is there


@dataclass
class OpenEQATaskConfig(TaskConfig):
    """``task=openeqa_em``: OpenEQA, episodic-memory mode."""

    name: str = "openeqa_em"
    policies: list[str] = field(default_factory=lambda: list(OPENEQA_POLICIES))
    judges: list[str] = field(default_factory=lambda: ["llm_match"])
    data_dir: str = "${oc.env:OPENEQA_DATA_DIR,data/openeqa}"
    episodes_dir: str | None = None  # default: <data_dir>/episodes
    split: str = one_of("all", OPENEQA_SPLITS)
    subset: str | None = one_of(None, OPENEQA_SUBSETS)  # hm3d | scannet | null (both)
    categories: list[str] | None = None  # optional list of categories to keep
    allow_unknown_categories: bool = False  # keep questions of categories not in the paper


@dataclass
class ExpressTaskConfig(TaskConfig):
    """``task=express``: EXPRESS-Bench, explore an HM3D scene from a recorded pose."""

    name: str = "express"
    policies: list[str] = field(default_factory=lambda: list(EXPRESS_POLICIES))
    judges: list[str] = field(default_factory=lambda: ["eac"])
    data_dir: str = "${oc.env:EXPRESS_DATA_DIR,data/express}"
    scenes_dir: str | None = None  # default: <data_dir>/scenes (<split>/<NNNNN-id>/<id>.*)
    split: str = one_of("all", EXPRESS_SPLITS)
    scenes: list[str] | None = None  # optional scene ids to keep, e.g. [00800-TEEsavR23oF]
    types: list[str] | None = None  # optional question types to keep (object, location, ...)
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


SCHEMAS = {"base_openeqa_em": OpenEQATaskConfig, "base_express": ExpressTaskConfig}
