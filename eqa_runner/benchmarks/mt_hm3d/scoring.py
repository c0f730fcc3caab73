"""MT-HM3D's metrics as MemoryEQA's ``evaluation/eval_results_on_json.py`` (memory-eqa/MemoryEQA
at ``6663429``) computes them from a ``results.json`` (the golden cases in
``tests/mt_hm3d/golden/`` are that script's numbers).

Per question (``meta.answer``, ``meta.max_steps``, ``step`` list, ``summary.smx_vlm_pred``):

- final success: the summary prediction's first element (a string's first character) equals
  the answer, case-sensitively;
- a step's answer: a string prediction's text before the first ``". "`` (``"y"`` / ``"n"``
  read as ``yes`` / ``no``, otherwise its case kept), or a list's argmax as a lowercase letter;
  the step succeeds when ``answer.lower()`` equals it (so an upper-case letter never does);
- ``norm_success_step``: (last step + 1) / max_steps, kept when the last step succeeded;
- ``norm_early_success_step``: (first succeeding step + 1) / max_steps.

The script's printout: success rate = (final successes + last-step successes) / questions (its
success counter is incremented in both loops), the mean normalised success step over that same
doubled count, the early-success rate and the mean normalised early-success step.
:func:`reference_printout` reproduces those numbers; :func:`episode_metrics` gives the
per-question values this package's judge reports (with the letter compared case-insensitively:
eqa_runner/benchmarks/mt_hm3d/README.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CHOICES = "abcd"


def step_answer(pred: Any) -> str | None:
    """A step's answer as the reference reads ``smx_vlm_pred``."""
    if isinstance(pred, str):
        head = pred.split(". ")[0]
        return {"y": "yes", "n": "no"}.get(head.lower(), head)
    if isinstance(pred, list) and pred:
        return CHOICES[max(range(len(pred)), key=lambda i: (pred[i], -i))]
    return None


def final_success(pred: Any, answer: str) -> bool:
    """The summary prediction's first element equals the answer (a string: its first letter)."""
    if pred is None or len(pred) == 0:
        raise TypeError("summary.smx_vlm_pred is null or empty (the reference raises)")
    return bool(pred[0] == answer)


def question_values(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The reference's per-question result: ``is_success`` (of the last step),
    ``norm_success_step``, ``norm_early_success_step`` (keys present as the script sets them)."""
    meta, out = sample["meta"], {}
    answer, max_steps = str(meta["answer"]), meta["max_steps"]
    for step in sample["step"]:
        n = step["step"] + 1
        ok = answer.lower() == step_answer(step.get("smx_vlm_pred"))
        if ok and "norm_early_success_step" not in out:
            out["norm_early_success_step"] = n / max_steps
        out["norm_success_step"] = n / max_steps
        out["is_success"] = ok
    return out


def reference_printout(samples: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """The numbers the script prints (None where it prints "No successful results found.")."""
    final = sum(final_success(s["summary"]["smx_vlm_pred"], s["meta"]["answer"]) for s in samples)
    per = [question_values(s) for s in samples]
    last = [p for p in per if p.get("is_success")]
    count = final + len(last)
    if count == 0:
        return None
    early = [p["norm_early_success_step"] for p in per if p.get("norm_early_success_step")]
    out = {
        "success_rate": count / len(samples),
        "norm_success_step": sum(p["norm_success_step"] for p in last) / count,
    }
    if early:
        out["early_success_rate"] = len(early) / len(samples)
        out["norm_early_success_step"] = sum(early) / len(early)
    return out


def episode_metrics(
    letters: Sequence[str | None], final: str | None, answer: str, max_steps: int
) -> dict[str, float]:
    """This package's per-episode metrics from the per-step letters (None: no answer at that
    step) and the final letter: ``success``, ``early_success``, ``last_step_success``,
    ``norm_success_step`` (when the last step is right), ``norm_early_success_step``
    (when some step is right); letters compared case-insensitively."""
    want = answer.lower()
    hits = [i for i, x in enumerate(letters) if x is not None and x.lower() == want]
    last_ok = bool(letters) and letters[-1] is not None and letters[-1].lower() == want
    out = {
        "success": float(final is not None and final.lower() == want),
        "early_success": float(bool(hits)),
        "last_step_success": float(last_ok),
    }
    if last_ok:
        out["norm_success_step"] = len(letters) / max_steps
    if hits:
        out["norm_early_success_step"] = (hits[0] + 1) / max_steps
    return out
