"""HM-EQA results as explore-eqa's ``run_vlm_exp.py`` (Stanford-ILIAD/explore-eqa) writes them.

``results.pkl``: a pickled list, one dict per question: ``question_ind`` (the row of
``questions.csv``) and per step ``step_<t>``: ``pts`` (habitat position), ``angle`` (yaw, rad),
``smx_vlm_pred`` (numpy array: the softmax over the options A-D) and ``smx_vlm_rel`` (numpy
array: P(Yes), P(No) of "confident with the current view?"); a skipped black frame has a uniform
``smx_vlm_pred`` and ``[0.01, 0.99]``. The upstream script scores it itself, at the end of each
question: ``success_weighted`` (argmax of the column-wise max of P(Yes)·pred) and ``success_max``
(the prediction at the most confident step), which are our ``weighted`` and ``max`` rules.
Read back, every step enters the rules as upstream's do (black frames with their placeholder
distributions); the imported answer is the ``max`` rule's (our protocol's default), and an
item's ``question_ind`` is its CSV row (our episode id), whatever the task's filters and order.

Two things upstream's file cannot say are written so that its end-of-question block scores them as
we do: an error record is left out (never scored; under ``judge.error_records=missing`` a
``no_answer`` item, as scored), and an episode with no parsable answer at any step (our answer:
none, scored wrong) puts every step's mass on a wrong option and carries ``no_answer: True`` (read
back as no answer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.benchmarks.hmeqa.choice_rules import apply_rule
from eqa_runner.errors import DataError
from eqa_runner.scoring.upstream import (
    Imported,
    UpstreamFormat,
    dump_pickle,
    int_field,
    load_pickle,
    vec_field,
)
from eqa_runner.types import Episode, EpisodeRecord

RESULTS = "results.pkl"
LETTERS = "ABCD"
BLACK_REL = (0.01, 0.99)  # upstream's placeholder for a skipped (black) frame


def _yaw(rotation_wxyz: Sequence[float] | None) -> float:
    """The yaw about +y of a (w, x, y, z) quaternion (upstream's ``angle``)."""
    if not rotation_wxyz:
        return 0.0
    w, _, y, _ = (float(v) for v in rotation_wxyz)
    return 2.0 * math.atan2(y, w)


def _step(s: dict[str, Any]) -> dict[str, Any]:
    probs = s.get("answer_probs")
    conf = s.get("confidence")
    if probs:
        pred = np.asarray(probs, dtype=float)
        r = 0.0 if conf is None else float(conf)
        rel = np.array([r, 1.0 - r])
    else:  # a black frame (or no parsable answer): upstream's placeholder
        pred, rel = np.ones(len(LETTERS)) / len(LETTERS), np.array(BLACK_REL)
    return {
        "pts": list(map(float, s.get("position") or [0, 0, 0])),
        "angle": _yaw(s.get("rotation")),
        "smx_vlm_pred": pred,
        "smx_vlm_rel": rel,
    }


def _no_answer(rec: EpisodeRecord) -> dict[str, Any]:
    """An episode without any parsable answer, as upstream's block scores it: wrong."""
    wrong = next(k for k, c in enumerate(LETTERS) if c != rec.get("answer"))
    res: dict[str, Any] = {"question_ind": int(rec["episode_id"]), "no_answer": True}
    for t, s in enumerate(rec["trace"].get("steps") or [{}]):
        res[f"step_{t}"] = {**_step(s), "smx_vlm_pred": np.eye(len(LETTERS))[wrong]}
    return res


class HMEQAResults(UpstreamFormat):
    """``--export hmeqa``: explore-eqa's ``results.pkl``."""

    name = "hmeqa"
    task = "hmeqa"
    files = f"{RESULTS} (explore-eqa's list of per-question step dicts)"
    command = (
        "explore-eqa has no standalone scorer: run_vlm_exp.py's end-of-question block "
        "(@18381da lines 337-354) on each item of {file} (docs/reports.md)"
    )

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        out = []
        for r in records:
            if r["status"] != "ok":
                continue  # an error record is never scored
            if r["prediction"] is None:
                out.append(_no_answer(r))
                continue
            res: dict[str, Any] = {"question_ind": int(r["episode_id"])}
            for t, s in enumerate(r["trace"].get("steps") or []):
                res[f"step_{t}"] = _step(s)
            out.append(res)
        path = dump_pickle(out, Path(out_dir) / RESULTS)
        self.last_command = self.command.format(file=path)
        return [path]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        data = load_pickle(path)
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a list of per-question dicts (explore-eqa)")
        rows = {e.episode_id: e for e in episodes}
        out = []
        for i, res in enumerate(data):
            if not isinstance(res, dict) or "question_ind" not in res:
                raise DataError(f"{path}: item {i} has no question_ind")
            q = int_field(path, i, "question_ind", res["question_ind"])
            if str(q) not in rows:
                raise DataError(
                    f"{path}: item {i}: question_ind {q} is not a row of the task's "
                    f"questions ({len(episodes)} selected; a task.categories / "
                    "task.scenes filter leaves it out?)"
                )
            steps = _read_steps(res, path, i)
            k = None if res.get("no_answer") is True else apply_rule("max", steps).index
            trace = {
                "steps": steps,
                "answer_rule": "max",
                "steps_taken": len(steps),
                "final_position": steps[-1]["position"] if steps else None,
            }
            out.append(Imported(str(q), None if k is None else LETTERS[k], trace))
        return out


def _read_steps(res: dict[str, Any], path: Path, i: int) -> list[dict[str, Any]]:
    steps = []
    t = 0
    while f"step_{t}" in res:
        s, name = res[f"step_{t}"], f"step_{t}"
        if not isinstance(s, dict) or "smx_vlm_pred" not in s or "smx_vlm_rel" not in s:
            raise DataError(f"{path}: item {i} {name}: needs smx_vlm_pred and smx_vlm_rel")
        pred = vec_field(path, i, f"{name}.smx_vlm_pred", s["smx_vlm_pred"], len(LETTERS))
        rel = vec_field(path, i, f"{name}.smx_vlm_rel", s["smx_vlm_rel"], 2)[0]
        pts = vec_field(path, i, f"{name}.pts", s["pts"], 3) if "pts" in s else []
        steps.append(
            {
                "step": t,
                "position": pts,
                "answer_probs": pred,
                "confidence": rel,
                "answer_source": "upstream",
                "confidence_source": "upstream",
            }
        )
        t += 1
    return steps
