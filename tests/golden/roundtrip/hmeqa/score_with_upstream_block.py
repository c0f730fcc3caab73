"""Runs explore-eqa's own end-of-question block (run_vlm_exp.py @18381da, lines 337-354,
read from the checkout, not copied) on each item of a results.pkl, as run_vlm_exp.py does at
the end of each question, and prints the mean success_weighted and success_max in percent.

    python score_with_upstream_block.py <explore-eqa checkout> <results.pkl> <questions.csv>
"""

import csv
import pickle
import sys
from pathlib import Path

import numpy as np

checkout, results, questions = (Path(a) for a in sys.argv[1:4])
block = "".join((checkout / "run_vlm_exp.py").read_text().splitlines(True)[336:354])
block = "\n".join(line[8:] for line in block.splitlines())  # the loop body's indentation
rows = list(csv.DictReader(questions.open(), skipinitialspace=True))
weighted, best = [], []
for result in pickle.load(results.open("rb")):
    scope = {
        "np": np,
        "result": result,
        "answer": rows[result["question_ind"]]["answer"],
        "num_step": sum(1 for k in result if k.startswith("step_")),
    }
    exec(block, scope)  # noqa: S102 - the upstream block, from the upstream checkout
    weighted.append(scope["success_weighted"])
    best.append(scope["success_max"])
print(f"questions: {len(weighted)}")
print(f"success_weighted: {100 * np.mean(weighted):.4f}")
print(f"success_max: {100 * np.mean(best):.4f}")
