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
EXPRESS_POLICIES = ("re", "fbe", "vlm_explore", "vlm_waypoint")  # exploration policies
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


# --- HM-EQA (eqa_runner/tasks/hmeqa.py) ---
HMEQA_POLICIES = ("re", "fbe", "vlm_explore", "vlm_waypoint")


@dataclass
class HMEQATaskConfig(TaskConfig):
    """``task=hmeqa``: HM-EQA (explore-eqa), multiple choice on one floor of an HM3D scene."""

    name: str = "hmeqa"
    policies: list[str] = field(default_factory=lambda: list(HMEQA_POLICIES))
    judges: list[str] = field(default_factory=lambda: ["hmeqa"])
    data_dir: str = "${oc.env:HMEQA_DATA_DIR,data/hmeqa}"
    poses_file: str | None = None  # default: <data_dir>/scene_init_poses.csv
    scenes_dir: str | None = None  # default: <data_dir>/scenes (<NNNNN-id>/<id>.basis.glb)
    split: str = one_of("all", ("all",))  # HM-EQA is one set of 500 questions
    categories: list[str] | None = None  # keep these labels (location, existence, state, ...)
    scenes: list[str] | None = None  # optional scene ids to keep, e.g. [00004-VqCaAuuoeWk]
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


# --- A-EQA (eqa_runner/tasks/aeqa.py, docs/aeqa.md) ---------------------------------------
AEQA_POLICIES = ("re", "fbe", "vlm_explore", "vlm_waypoint", "blind")
AEQA_SPLITS = ("all",)  # the 184 questions are one set (HM3D val scenes)


@dataclass
class AEQATaskConfig(TaskConfig):
    """``task=aeqa``: OpenEQA's active mode, explore an HM3D scene from a recorded start pose."""

    name: str = "aeqa"
    policies: list[str] = field(default_factory=lambda: list(AEQA_POLICIES))
    judges: list[str] = field(default_factory=lambda: ["aeqa"])
    data_dir: str = "${oc.env:AEQA_DATA_DIR,data/aeqa}"
    # questions_file: default the pose file; or an ids-only list (open-eqa-v0-184-questions.json)
    openeqa_file: str | None = None  # default: <data_dir>/open-eqa-v0.json (ids-only shape)
    poses_file: str | None = None  # default: <data_dir>/aeqa_questions-184.json
    path_lengths_file: str | None = None  # default: <data_dir>/gt_path_length.json
    require_path_lengths: bool = True  # a question without reference length is a data problem
    scenes_dir: str | None = None  # default: <data_dir>/scenes (<split>/<NNNNN-id>/<id>.*)
    split: str = one_of("all", AEQA_SPLITS)
    categories: list[str] | None = None  # optional OpenEQA categories to keep
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


SCHEMAS = {
    "base_openeqa_em": OpenEQATaskConfig,
    "base_express": ExpressTaskConfig,
    "base_hmeqa": HMEQATaskConfig,
    "base_aeqa": AEQATaskConfig,
}
