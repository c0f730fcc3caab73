"""Typed schemas of MT-HM3D: the config nodes it adds (task, protocol, judge).

Registered in Hydra's ConfigStore through the benchmark registry; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqa_runner.benchmarks.hmeqa.config import (
    HMEQAJudgeConfig,
    HMEQAProtocolConfig,
    HMEQATaskConfig,
)
from eqa_runner.schema import bounded, one_of

POSE_FLOORS = ("zero", "question")  # zero = MemoryEQA (<scene>_0 for every question)


@dataclass
class MTHM3DTaskConfig(HMEQATaskConfig):
    """``task=mt_hm3d``: MT-HM3D (MemoryEQA), multi-target questions on HM3D scenes in
    explore-eqa's CSV + start-pose format (HM-EQA's keys, plus ``pose_floor``)."""

    name: str = "mt_hm3d"
    data_dir: str = "${oc.env:MT_HM3D_DATA_DIR,data/mt_hm3d}"
    poses_file: str | None = None  # default: <data_dir>/scene_init_poses_all.csv
    # whose start pose a question uses: zero = <scene>_0 as MemoryEQA | question = <scene>_<floor>
    pose_floor: str = one_of("zero", POSE_FLOORS)


@dataclass
class MTHM3DProtocolConfig(HMEQAProtocolConfig):
    """``protocol=mt_hm3d``: HM-EQA's per-step answer and confidence; stops at the first
    confident step and answers with that step's letter (MemoryEQA)."""

    _target_: str = "eqa_runner.benchmarks.mt_hm3d.protocol.MTHM3DProtocol"
    # last: the answer of the last answered step (MemoryEQA) | max | weighted (explore-eqa)
    answer_rule: str = one_of("last", ("last", "max", "weighted"))
    stop_confidence: float | None = bounded(0.5, ge=0, le=1)


@dataclass
class MTHM3DJudgeConfig(HMEQAJudgeConfig):
    """``judge=mt_hm3d``: success rate, normalised success step, early success; no model."""

    name: str = "mt_hm3d"


SCHEMAS: dict[str, dict[str, type]] = {
    "task": {"base_mt_hm3d": MTHM3DTaskConfig},
    "protocol": {"base_mt_hm3d_protocol": MTHM3DProtocolConfig},
    "judge": {"base_mt_hm3d": MTHM3DJudgeConfig},
}
