# ruff: noqa: SIM115, E402, B905, E702, E501
"""Golden inputs for VSI-Bench's scorer: every answer shape on every question type."""

import json
import sys

mca_preds = [
    "B",
    "b",
    "B.",
    "B..",
    "b) sofa",
    "(B)",
    "B is the answer",
    " B",
    "\nB",
    "B\n",
    "A",
    "",
    "The answer is B.",
    "C.",
    "unparsable text !!",
    "b.",
]
na_preds = [
    "3",
    "3.0",
    "3.5",
    "There are 3 boxes",
    "three",
    "Three boxes.",
    "twenty-one",
    "three hundred and twenty-one",
    "1,250",
    "1,250.5 m",
    "2.5 m",
    "2.5m",
    "-2",
    "-2.5 meters",
    "0",
    "zero",
    "one apple, room 2",
    "about 4 or 5",
    "I cannot tell",
    "",
    "12 square meters",
    "1e3",
    ".5",
    "5.",
    "4.99",
]
na_gts = ["3", "2.5", "1250", "12.0", "-2", "0.5", "21", "321", "not a number", "", None, "1000"]
docs = []
i = 0
for qt in [
    "object_rel_direction_easy",
    "object_rel_direction_medium",
    "object_rel_direction_hard",
    "object_rel_distance",
    "route_planning",
    "obj_appearance_order",
]:
    for gt in ["B", "b", "A"]:
        for p in mca_preds:
            docs.append({"id": i, "question_type": qt, "ground_truth": gt, "prediction": p})
            i += 1
for qt in [
    "object_abs_distance",
    "object_counting",
    "object_size_estimation",
    "room_size_estimation",
]:
    for gt in na_gts:
        for p in na_preds:
            docs.append({"id": i, "question_type": qt, "ground_truth": gt, "prediction": p})
            i += 1
# ground truth 0: upstream raises
for qt in ["object_counting"]:
    for p in ["0", "3", "none"]:
        docs.append({"id": i, "question_type": qt, "ground_truth": "0", "prediction": p})
        i += 1
json.dump(docs, open(sys.argv[1], "w"), indent=0)
print(len(docs))
