"""Writes genuine/results.pkl as EXPRESS-Bench's main.py (@e8789da) does, without habitat-sim:
the same dict per question, built with the real numpy-quaternion (`np.quaternion` rotations,
as habitat-sim's AgentState holds them) and float32 positions, pickled with the default
protocol. Run with numpy 1.26 + numpy-quaternion 2024.0.13 (both from PyPI):

    python make_genuine.py <express demo dir (python -m eqa_runner.demo, seed 0)> genuine/
"""

import json
import math
import pickle
import sys
from pathlib import Path

import numpy as np
import quaternion  # noqa: F401  (registers np.quaternion)

demo, out = Path(sys.argv[1]), Path(sys.argv[2])
questions = json.loads((demo / "express-bench.json").read_text())
replies = ["Your mark: 1, 5", "0.5, 3", "Your mark: 1, 4"]
results = []
for question_ind in (0, 3, 7):  # main.py loops over every row; a partial run's file is a prefix
    q = questions[question_ind]
    result = {"question_ind": question_ind, "regs_list": ["kitchen"], "path": {}}
    pts = np.array(q["start_position"], dtype=np.float32)
    rotation = np.quaternion(*q["start_rotation"])
    for cnt_step in range(3):
        result["path"][f"step_{cnt_step}"] = {"pts": pts.copy(), "rotation": rotation}
        pts = pts + np.array([0.25, 0.0, 0.0], dtype=np.float32)
        rotation = rotation * np.quaternion(math.cos(0.2), 0, math.sin(0.2), 0)
    unreachable = question_ind == 7
    result.update(
        {
            "scene": f"data/hm3d/{q['scene_id']}/{q['scene_id'].split('-')[1]}.basis.glb",
            "type": q["type"],
            "question": q["question"],
            "answer": q["answer"],
            "geodesic_distance": q["geodesic_distance"],
            "cnt_step": cnt_step,
            "gen_answer": "In the kitchen.",
            "EAC": replies.pop(0),
            "end_pts": pts,
            "goal_dis": math.inf if unreachable else 1.25 * (1 + question_ind),
            "path_len": math.inf if unreachable else 2.0 + question_ind,
        }
    )
    results.append(result)
out.mkdir(parents=True, exist_ok=True)
with open(out / "results.pkl", "wb") as f:
    pickle.dump(results, f)
