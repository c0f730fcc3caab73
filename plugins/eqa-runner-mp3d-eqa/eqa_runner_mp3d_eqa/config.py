"""Typed schemas of MP3D-EQA: the config nodes it adds (task, protocol, judge).

Registered in Hydra's ConfigStore through the benchmark registry (the plugin's entry point);
nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqa_runner.policies.config import ProtocolConfig
from eqa_runner.schema import bounded, one_of
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.tasks.config import TaskConfig

SPLITS = ("val", "train")  # habitat-lab's two files (val: 1,950 episodes)
QUESTION_TYPES = ("location", "color", "color_room")


@dataclass
class MP3DEQATaskConfig(TaskConfig):
    """``task=mp3d_eqa``: MP3D-EQA v1, explore a Matterport3D house from a recorded start pose
    and answer with one word of the answer vocabulary."""

    name: str = "mp3d_eqa"
    # the directory habitat-lab calls data/datasets/eqa/mp3d/v1 (<split>/<split>.json.gz)
    data_dir: str = "${oc.env:MP3D_EQA_DATA_DIR,data/mp3d_eqa}"
    # questions_file: default <data_dir>/<split>/<split>.json.gz
    scenes_dir: str | None = None  # default: <data_dir>/scenes (holds mp3d/<house>/<house>.glb)
    split: str = one_of("val", SPLITS)
    types: list[str] | None = one_of(None, QUESTION_TYPES)  # keep these question types
    scenes: list[str] | None = None  # keep these houses, e.g. [17DRP5sb8fy]
    # start k actions before the end of the shortest path (the papers' T_-10/-30/-50);
    # null: at the episode's start_position (habitat-baselines' "rand_init")
    spawn_steps: int | None = bounded(None, ge=1)
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


@dataclass
class MP3DEQAProtocolConfig(ProtocolConfig):
    """``protocol=mp3d_eqa``: a stop check per step, then one answer from the vocabulary given
    the last frames (docs: the plugin's README)."""

    _target_: str = "eqa_runner_mp3d_eqa.protocol.MP3DEQAProtocol"
    stop_check: bool = True  # ask "can you answer from this view?" every step (yes stops)
    # upstream's step budget as a path length: 500 actions of 0.25 m (EQA-v0 max_episode_steps,
    # habitat's forward_step_size); null: the hop budget alone
    max_path_m: float | None = bounded(125.0, gt=0)
    answer_frames: int = bounded(5, ge=1)  # the last K frames (habitat-baselines' VQA: 5)
    image_size: int = bounded(256, ge=16)  # longer side of a frame sent to the model
    image_format: str = one_of("png", ("png", "jpeg"))


@dataclass
class MP3DEQAJudgeConfig(JudgeConfig):
    """``judge=mp3d_eqa``: habitat-lab's answer accuracy (the answer's vocabulary index against
    answer_token) and the navigation numbers d_T, d_D, d_min; calls no model."""

    name: str = "mp3d_eqa"
    model: str = "none"


SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_mp3d_eqa": MP3DEQATaskConfig},
    "protocol": {"base_mp3d_eqa_protocol": MP3DEQAProtocolConfig},
    "judge": {"base_mp3d_eqa": MP3DEQAJudgeConfig},
}
