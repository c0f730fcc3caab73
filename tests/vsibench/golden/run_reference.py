# ruff: noqa: SIM115, E402, B905, E702, E501
"""Score the golden inputs with lmms-eval's vsibench utils.py, unmodified (datasets/loguru stubbed:
only their names are used at import time)."""

import json
import logging
import sys
import types

sys.modules["datasets"] = types.SimpleNamespace(Dataset=object)
lg = types.ModuleType("loguru")
lg.logger = logging.getLogger("x")
sys.modules["loguru"] = lg
sys.path.insert(0, sys.argv[1])
import utils as U

docs = json.load(open(sys.argv[2]))
per = []
for d in docs:
    doc = {"id": d["id"], "question_type": d["question_type"], "ground_truth": d["ground_truth"]}
    try:
        out = U.vsibench_process_results(dict(doc), [d["prediction"]])["vsibench_overall"]
        key = "accuracy" if d["question_type"] in U.MCA_QUESTION_TYPES else "MRA:.5:.95:.05"
        per.append({"id": d["id"], "score": float(out[key])})
    except Exception as e:
        per.append({"id": d["id"], "error": type(e).__name__})
# aggregates: all scorable docs; and a subset (two types, directions dropped but easy) is not
# possible upstream (KeyError), so aggregate sets always hold all three direction types
ok = [
    dict(
        question_type=d["question_type"],
        ground_truth=d["ground_truth"],
        **{
            ("accuracy" if d["question_type"] in U.MCA_QUESTION_TYPES else "MRA:.5:.95:.05"): p[
                "score"
            ]
        },
    )
    for d, p in zip(docs, per)
    if "score" in p
]
subs = {k: float(v) for k, v in U._compute_all_subscores(ok).items()}
subset = [
    r
    for r in ok
    if r["question_type"].startswith("object_rel_direction")
    or r["question_type"] == "object_counting"
]
subs2 = {k: float(v) for k, v in U._compute_all_subscores(subset).items()}
missing_dir = [r for r in ok if r["question_type"] != "object_rel_direction_hard"]
try:
    U._compute_all_subscores(missing_dir)
    md = "no error"
except Exception as e:
    md = type(e).__name__
json.dump(
    {
        "per_question": per,
        "aggregate_all": subs,
        "overall_all": U.vsibench_aggregate_overall(ok),
        "aggregate_directions_and_counting": subs2,
        "aggregate_without_hard_direction": md,
    },
    open(sys.argv[3], "w"),
    indent=0,
)
print(len(per), subs["overall"], md)
