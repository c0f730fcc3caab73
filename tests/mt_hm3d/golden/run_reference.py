# ruff: noqa: SIM115, E402, B905, E702, E501
"""Run MemoryEQA's evaluation/eval_results_on_json.py (unmodified) on each golden sample alone
and on all of them; its locals at return (results, success_count, norm_steps, early_count,
norm_early_steps) are read with sys.setprofile, its printout captured."""

import contextlib
import io
import json
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import eval_results_on_json as E

captured = {}


def prof(frame, event, arg):
    if event == "return" and frame.f_code is E.evaluate.__code__:
        loc = frame.f_locals
        captured.update(
            {
                k: loc.get(k)
                for k in (
                    "results",
                    "success_count",
                    "norm_steps",
                    "early_count",
                    "norm_early_steps",
                    "results_num",
                )
            }
        )


def run(samples):
    captured.clear()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(samples, fh)
    out = io.StringIO()
    sys.setprofile(prof)
    try:
        with contextlib.redirect_stdout(out):
            E.evaluate([fh.name])
        err = None
    except Exception as e:
        err = type(e).__name__
    finally:
        sys.setprofile(None)
    text = "\n".join(line for line in out.getvalue().splitlines() if not line.startswith("/"))
    return {"error": err, "printed": text, **({} if err else captured)}


samples = json.load(open(sys.argv[2]))
per = [run([s]) for s in samples]
ok = [s for s, p in zip(samples, per) if p["error"] is None]
json.dump(
    {
        "per_sample": per,
        "all_scorable": run(ok),
        "scorable_ids": [s["meta"]["question_ind"] for s in ok],
    },
    open(sys.argv[3], "w"),
    indent=0,
    default=float,
)
print(len(per), sum(p["error"] is None for p in per))
