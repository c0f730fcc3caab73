"""Writes genuine/gpt_answer.json and genuine/path_length_list.pkl with 3D-Mem's own Logger
(UMass-Embodied-AGI/3D-Mem @f5a88d2, `src/logger_aeqa.py`, imported unmodified from a
checkout): the calls `run_aeqa_evaluation.py` makes on it, in its order (questions sorted by
question_id; per question `init_episode`, one `log_step` per agent step, `log_episode_result`,
`save_results`; at the end `aggregate_results`). What is scripted instead of habitat-sim, the
scene graph and the VLM: each step's voxel position and each question's answer (below).
`src.tsdf_planner` (imported by the Logger for type annotations only) is a stand-in module
naming its three classes. Run with numpy 1.26 + matplotlib (from PyPI):

    python make_genuine.py <3D-Mem checkout> <A-EQA demo dir (seed 0)> <output dir> [FAILED]

FAILED: comma-separated question ids whose exploration fails (`success=False`, as when the
agent never reaches a snapshot): the Logger leaves them out of both files.
"""

import json
import sys
import types
from pathlib import Path

import numpy as np

checkout, demo, out = (Path(a) for a in sys.argv[1:4])
failed = set(sys.argv[4].split(",")) if len(sys.argv) > 4 else set()
stand_in = types.ModuleType("src.tsdf_planner")  # the Logger only names these in annotations
stand_in.TSDFPlanner = type("TSDFPlanner", (), {})
stand_in.Frontier = type("Frontier", (), {})
stand_in.SnapShot = type("SnapShot", (), {})
sys.modules["src.tsdf_planner"] = stand_in
sys.path.insert(0, str(checkout))
from src.logger_aeqa import Logger  # noqa: E402  (upstream's, unmodified)

ANSWERS = ["A lamp.", "zqx guess.", "A wooden chair by the window"]  # the "VLM" per question
questions = json.loads((demo / "aeqa_questions-184.json").read_text())
questions = sorted(questions, key=lambda x: x["question_id"])  # as run_aeqa_evaluation.py
out.mkdir(parents=True, exist_ok=True)
logger = Logger(str(out), 0.0, 1.0, len(questions), voxel_size=0.1)  # eval_aeqa.yaml's grid
for i, q in enumerate(questions):
    pts_voxel = np.array([50.0, 50.0])
    logger.init_episode(question_id=q["question_id"], init_pts_voxel=pts_voxel)
    for _ in range(4 + 12 * (i % 4)):  # each step moves 5 voxels (0.5 m): 2 to 20 m
        pts_voxel = pts_voxel + np.array([3.0, 4.0])
        logger.log_step(pts_voxel=pts_voxel)
    logger.log_episode_result(
        success=q["question_id"] not in failed,  # a snapshot reached
        question_id=q["question_id"],
        explore_dist=logger.explore_dist,
        gpt_answer=ANSWERS[i % 3],
        n_filtered_snapshots=1,
        n_total_snapshots=3,
        n_total_frames=4 + 12 * (i % 4),
    )
    logger.save_results()
logger.save_results()
logger.aggregate_results()
