# ruff: noqa: SIM115, E402, B905, E702, E501
"""Golden inputs for MT-HM3D's reference metrics: results.json samples with every shape of
per-step and final prediction."""

import json
import sys

STEP_PREDS = [
    "A",
    "a",
    "B",
    "b",
    "A. sofa",
    "a. sofa",
    "b) sofa",
    "yes",
    "Yes",
    "y",
    "Y",
    "n",
    "no",
    "No. not there",
    [0.1, 0.6, 0.2, 0.1],
    [0.7, 0.1, 0.1, 0.1],
    [0.25, 0.25, 0.25, 0.25],
    "",
    "I cannot tell",
    None,
]
FINAL_PREDS = ["A", "a", "A. sofa", "B", "yes", "Yes", "no", "y", [0.9, 0.1], "", "unparsable"]
ANSWERS = ["A", "B", "a", "yes", "no", "Yes"]


def sample(i, answer, steps, final, max_steps):
    return {
        "meta": {
            "question_ind": i,
            "answer": answer,
            "max_steps": max_steps,
            "question": f"q{i}",
            "scene": "00001-DemoApt0",
            "floor": "0",
        },
        "step": [
            {
                "step": t,
                "pts": [0.0, 0.0, 0.0],
                "angle": 0.0,
                "smx_vlm_rel": "No",
                "smx_vlm_pred": p,
            }
            for t, p in enumerate(steps)
        ],
        "summary": {
            "smx_vlm_pred": final,
            "is_success": False,
            "path_length": 1.5 * i,
            "all_time_comsume": 2.0,
        },
    }


samples = []
i = 0
for answer in ANSWERS:
    for k, final in enumerate(FINAL_PREDS):
        # three step sequences per (answer, final): rotating through the step shapes
        for r in range(3):
            steps = [STEP_PREDS[(k * 3 + r + j * 7) % len(STEP_PREDS)] for j in range(1 + (i % 5))]
            samples.append(sample(i, answer, steps, final, 4 + i % 7))
            i += 1
samples.append(sample(i, "A", [], "A", 5))  # no step recorded
json.dump(samples, open(sys.argv[1], "w"), indent=0)
print(len(samples))
