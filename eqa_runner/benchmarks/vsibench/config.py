"""Typed schemas of VSI-Bench: the config nodes it adds (task, judge).

Registered in Hydra's ConfigStore through the benchmark registry; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqa_runner.schema import bounded, one_of
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.tasks.config import TaskConfig

VARIANTS = ("full", "debiased")  # the dataset's configs: test.jsonl | test_debiased.parquet
SOURCES = ("arkitscenes", "scannet", "scannetpp")  # the `dataset` field: the video folders
SAMPLING = ("uniform", "uniform_round")


@dataclass
class VSIBenchTaskConfig(TaskConfig):
    """``task=vsibench``: VSI-Bench (Yang et al., "Thinking in Space"), questions on scene
    videos; the frames are K of each video's frames, sampled once and cached as PNGs."""

    name: str = "vsibench"
    data_dir: str = "${oc.env:VSIBENCH_DATA_DIR,data/vsibench}"
    # full: the 5,130 questions (test.jsonl) | debiased: VSI-Bench-Debiased (test_debiased.parquet)
    variant: str = one_of("full", VARIANTS)
    videos_dir: str | None = None  # default: <data_dir> (<dataset>/<scene_name>.mp4)
    frames_dir: str | None = None  # the sampled-frame cache; default: <data_dir>/frames
    # frames taken from each video (lmms-eval's default 32), by the rule below
    num_frames: int = bounded(32, ge=1)
    # uniform: floor(linspace(0, n-1, K)) as lmms-eval | uniform_round: rounded
    sampling: str = one_of("uniform", SAMPLING)
    question_types: list[str] | None = None  # keep these types (the categories)
    sources: list[str] | None = None  # keep these video sources (arkitscenes, scannet, scannetpp)
    prompts_dir: str | None = None  # a folder with mca.txt / na.txt to use instead of ours


@dataclass
class VSIBenchJudgeConfig(JudgeConfig):
    """``judge=vsibench``: lmms-eval's scorer (exact first-token letter match; Mean Relative
    Accuracy over .50:.95:.05 for numbers); calls no model (the model keys are ignored)."""

    name: str = "vsibench"
    model: str = "none"


# config group -> {schema node name -> dataclass} (run/configstore.py stores them)
SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_vsibench": VSIBenchTaskConfig},
    "judge": {"base_vsibench": VSIBenchJudgeConfig},
}
