"""Typed schemas of OpenEQA (episodic-memory mode): the config nodes it adds.


Registered in Hydra's ConfigStore through the benchmark registry; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING  # noqa: F401

from eqa_runner.policies.config import IMAGE_FORMATS, STRATEGIES, PolicyConfig
from eqa_runner.schema import bounded, one_of
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.tasks.config import TaskConfig

OPENEQA_SPLITS = ("all",)  # OpenEQA has no official split: another value is refused
OPENEQA_SUBSETS = ("hm3d", "scannet")
CATEGORIES = (  # the paper's seven (open-eqa-v0.json's category field)
    "object recognition",
    "object localization",
    "attribute recognition",
    "spatial understanding",
    "object state recognition",
    "functional reasoning",
    "world knowledge",
)


@dataclass
class OpenEQATaskConfig(TaskConfig):
    """``task=openeqa_em``: OpenEQA, episodic-memory mode."""

    name: str = "openeqa_em"
    data_dir: str = "${oc.env:OPENEQA_DATA_DIR,data/openeqa}"
    episodes_dir: str | None = None  # default: <data_dir>/episodes
    split: str = one_of("all", OPENEQA_SPLITS)
    subset: str | None = one_of(None, OPENEQA_SUBSETS)  # hm3d | scannet | null (both)
    categories: list[str] | None = None  # optional list of categories to keep
    allow_unknown_categories: bool = False  # keep questions of categories not in the paper


@dataclass
class BlindPolicyConfig(PolicyConfig):
    """``policy=blind``: an LLM answers from the question alone."""

    name: str = "blind"


@dataclass
class FramesPolicyConfig(PolicyConfig):
    """``policy=single|multiframe``: K frames of the episode shown to a VLM."""

    name: str = "multiframe"
    num_frames: int = bounded(50, ge=1)
    # linspace: round(linspace(0, n-1, K)) | stride | first_last_middle | middle
    strategy: str = one_of("linspace", STRATEGIES)
    image_size: int | None = bounded(512, gt=0)  # longer side in pixels; null = as stored
    image_format: str = one_of("png", IMAGE_FORMATS)  # png (paper) | jpeg


@dataclass
class LLMMatchJudgeConfig(JudgeConfig):
    """``judge=llm_match`` (OpenEQA): a judge LLM marks the prediction 1..5."""

    name: str = "llm_match"
    # as open-eqa's evaluate-predictions.py ("It is 2.5 m" -> "It is 2.")
    strip_after_last_period: bool = True


# config group -> {schema node name -> dataclass} (run/configstore.py stores them)
SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_openeqa_em": OpenEQATaskConfig},
    "policy": {"base_blind": BlindPolicyConfig, "base_frames": FramesPolicyConfig},
    "judge": {"base_llm_match": LLMMatchJudgeConfig},
}
