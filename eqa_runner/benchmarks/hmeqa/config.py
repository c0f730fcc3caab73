"""Typed schemas of HM-EQA: the config nodes it adds (task, protocol, judge ...).

Registered in Hydra's ConfigStore through the benchmark registry; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING  # noqa: F401

from eqa_runner.policies.config import ProtocolConfig
from eqa_runner.schema import bounded, one_of
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.tasks.config import TaskConfig


@dataclass
class HMEQATaskConfig(TaskConfig):
    """``task=hmeqa``: HM-EQA (explore-eqa), multiple choice on one floor of an HM3D scene."""

    name: str = "hmeqa"
    data_dir: str = "${oc.env:HMEQA_DATA_DIR,data/hmeqa}"
    poses_file: str | None = None  # default: <data_dir>/scene_init_poses.csv
    scenes_dir: str | None = None  # default: <data_dir>/scenes (<NNNNN-id>/<id>.basis.glb)
    split: str = one_of("all", ("all",))  # HM-EQA is one set of 500 questions
    categories: list[str] | None = None  # keep these labels (location, existence, state, ...)
    scenes: list[str] | None = None  # optional scene ids to keep, e.g. [00004-VqCaAuuoeWk]
    simulator: str = "${sim._target_}"  # backend class that resolves scene files in check()


HMEQA_ANSWER_RULES = ("weighted", "max")


@dataclass
class HMEQAProtocolConfig(ProtocolConfig):
    """``protocol=hmeqa``: per step an answer distribution and a confidence (P(Yes)); the final
    answer by upstream's ``weighted`` or ``max`` rule (eqa_runner/benchmarks/hmeqa/README.md)."""

    _target_: str = "eqa_runner.benchmarks.hmeqa.protocol.HMEQAProtocol"
    # max: the answer at the most confident step | weighted: argmax_k max_t r_t * p_t[k]
    answer_rule: str = one_of("max", HMEQA_ANSWER_RULES)
    # null: run the whole budget (upstream); a number: stop at the first step with P(Yes) >= it
    stop_confidence: float | None = bounded(None, ge=0, le=1)
    # alternatives per token asked for (logprobs path); null: never ask (parse path only)
    top_logprobs: int | None = bounded(20, ge=1, le=20)
    # a black step: uniform = upstream (uniform answer, P(Yes) 0.01, kept in both rules) | skip
    black_steps: str = one_of("uniform", ("uniform", "skip"))
    # ties between letters: first = upstream (numpy argmax) | votes = the larger sum of p_t[k]
    tie_break: str = one_of("first", ("first", "votes"))


@dataclass
class HMEQAJudgeConfig(JudgeConfig):
    """``judge=hmeqa``: exact match of the chosen letter; calls no model (the model keys are
    accepted, so ``judge.model=…`` overrides of a sweep do no harm, and ignored)."""

    name: str = "hmeqa"
    model: str = "none"


# config group -> {schema node name -> dataclass} (run/configstore.py stores them)
SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_hmeqa": HMEQATaskConfig},
    "protocol": {"base_hmeqa_protocol": HMEQAProtocolConfig},
    "judge": {"base_hmeqa": HMEQAJudgeConfig},
}
