"""Typed schemas of A-EQA: the config nodes it adds (task, protocol, judge ...).

Registered in Hydra's ConfigStore through the benchmark registry; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING  # noqa: F401

from eqa_runner.benchmarks.openeqa_em.config import CATEGORIES, LLMMatchJudgeConfig
from eqa_runner.policies.config import IMAGE_FORMATS, STRATEGIES, ProtocolConfig
from eqa_runner.schema import bounded, one_of
from eqa_runner.tasks.config import TaskConfig

AEQA_SPLITS = ("all",)  # the 184 questions are one set (HM3D val scenes)


@dataclass
class AEQATaskConfig(TaskConfig):
    """``task=aeqa``: OpenEQA's active mode, explore an HM3D scene from a recorded start pose."""

    name: str = "aeqa"
    data_dir: str = "${oc.env:AEQA_DATA_DIR,data/aeqa}"
    # questions_file: default the pose file; or an ids-only list (open-eqa-v0-184-questions.json)
    openeqa_file: str | None = None  # default: <data_dir>/open-eqa-v0.json (ids-only shape)
    poses_file: str | None = None  # default: <data_dir>/aeqa_questions-184.json
    path_lengths_file: str | None = None  # default: <data_dir>/gt_path_length.json
    require_path_lengths: bool = True  # a question without reference length is a data problem
    scenes_dir: str | None = None  # default: <data_dir>/scenes (<split>/<NNNNN-id>/<id>.*)
    split: str = one_of("all", AEQA_SPLITS)
    categories: list[str] | None = one_of(None, CATEGORIES)  # optional OpenEQA categories to keep
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


AEQA_MEMORY_STRATEGIES = ("last", *STRATEGIES)  # last K frames, or K spread as the frames policy


@dataclass
class AEQAProtocolConfig(ProtocolConfig):
    """``protocol=aeqa``: a fixed budget, a stop check each step, a free-form answer from K
    frames of a frame memory (see eqa_runner/benchmarks/aeqa/README.md)."""

    _target_: str = "eqa_runner.benchmarks.aeqa.protocol.AEQAProtocol"
    num_steps: int = bounded(50, ge=1)  # exploration steps (3D-Mem's A-EQA config: 50)
    stop_check: bool = True  # false: explore the whole budget, then answer
    memory_frames: int = bounded(8, ge=1)  # K frames shown to the answer VLM
    # linspace: K spread over the exploration (first and last included) | last: the K latest
    memory_strategy: str = one_of("linspace", AEQA_MEMORY_STRATEGIES)
    image_size: int | None = bounded(360, gt=0)  # longer side of the frames sent (3D-Mem: 360)
    image_format: str = one_of("png", IMAGE_FORMATS)


AEQA_MISSING_RULES = ("blind_fallback", "zero", "exclude")
AEQA_MISSING_PATH = ("weight0", "exclude")
AEQA_PATH_LENGTHS = ("geodesic", "euclidean_xz")


@dataclass
class AEQAJudgeConfig(LLMMatchJudgeConfig):
    """``judge=aeqa``: LLM-Match and its path-efficiency-weighted form ``llm_match_spl``."""

    name: str = "aeqa"
    # a question without prediction (no answer, the policy failed, no record): blind_fallback =
    # the blind run's mark, p = inf, every blind question counted (3D-Mem-AEQA-Eval, the published
    # rows; without blind_run_dir: scored as zero and the row is marked not comparable) |
    # zero = scored 1 (0%, open-eqa's rule) | exclude = left out of the means and counted
    missing_prediction: str = one_of("blind_fallback", AEQA_MISSING_RULES)
    blind_run_dir: str | None = None  # blind_fallback: a blind run on the same questions
    # a judged question whose trace has no path length: weight0 = kept with weight 0 (upstream)
    # | exclude = left out of the llm_match_spl mean
    missing_path: str = one_of("weight0", AEQA_MISSING_PATH)
    # p of the weight: geodesic = the loop's hop lengths (path_len) | euclidean_xz = the hops'
    # top-down straight lengths (3D-Mem's measure, without its 0.1 m voxel quantisation)
    path_length: str = one_of("geodesic", AEQA_PATH_LENGTHS)


# config group -> {schema node name -> dataclass} (run/configstore.py stores them)
SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_aeqa": AEQATaskConfig},
    "protocol": {"base_aeqa_protocol": AEQAProtocolConfig},
    "judge": {"base_aeqa": AEQAJudgeConfig},
}
