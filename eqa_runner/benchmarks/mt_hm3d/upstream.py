"""MT-HM3D results as MemoryEQA's ``src/runs/run_memory_eqa.py`` writes them (``results.json``,
what ``evaluation/eval_results_on_json.py`` reads): a JSON list, one object per question:

``meta``: ``question_ind`` (the question's row), ``question``, ``answer`` (the letter),
``scene``, ``floor``, ``max_steps`` (the step budget); ``step``: per step ``step``, ``pts``
(habitat position), ``angle`` (yaw, rad), ``smx_vlm_rel`` (the confidence reply),
``smx_vlm_pred`` (the step's answer letter) and ``is_success``; ``summary``:
``smx_vlm_pred`` (the final answer), ``is_success``, ``path_length``, ``all_time_comsume``.
Read back, a step's letter becomes a one-hot ``answer_probs`` and the final answer the
episode's prediction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.benchmarks.mt_hm3d.protocol import step_letter
from eqa_runner.errors import DataError
from eqa_runner.safe_io import read_json, write_atomic
from eqa_runner.scoring.upstream import Imported, UpstreamFormat
from eqa_runner.types import Episode, EpisodeRecord

RESULTS = "results.json"
LETTERS = "ABCD"


def _yaw(q: Sequence[float] | None) -> float:
    if not q:
        return 0.0
    w, _, y, _ = (float(v) for v in q)
    return 2.0 * math.atan2(y, w)


def _result(r: EpisodeRecord, ep: Episode) -> dict[str, Any]:
    trace = r["trace"] or {}
    steps = [s for s in trace.get("steps") or [] if "answer_probs" in s]
    out_steps: list[dict[str, Any]] = []
    for s in steps:
        letter = step_letter(s)
        conf = s.get("confidence")
        out_steps.append(
            {
                "step": int(s.get("step", len(out_steps))),
                "pts": s.get("position") or [0, 0, 0],
                "angle": _yaw(s.get("rotation")),
                "smx_vlm_rel": None if conf is None else ("Yes" if conf >= 0.5 else "No"),
                "smx_vlm_pred": letter,
                "is_success": letter == ep.answer,
            }
        )
    pred = r["prediction"]
    return {
        "meta": {
            "question_ind": int(r["episode_id"]),
            "question": ep.question,
            "answer": ep.answer,
            "scene": ep.scene,
            "floor": ep.meta.get("floor"),
            "max_steps": int(trace.get("num_steps") or len(out_steps) or 1),
        },
        "step": out_steps,
        "summary": {
            "smx_vlm_pred": pred,
            "is_success": pred == ep.answer,
            "path_length": float(trace.get("path_len") or 0.0),
            "all_time_comsume": float((r.get("timings") or {}).get("total_s") or 0.0),
        },
    }


class MTHM3DResults(UpstreamFormat):
    """``--export mt_hm3d``: MemoryEQA's ``results.json``."""

    name = "mt_hm3d"
    task = "mt_hm3d"
    files = f"{RESULTS} (MemoryEQA's list of meta / step / summary objects)"

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        known = {e.episode_id: e for e in episodes}
        items = [
            _result(r, known[str(r["episode_id"])])
            for r in records
            if str(r["episode_id"]) in known
        ]
        out = Path(out_dir) / RESULTS
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, json.dumps(items, indent=1))
        return [out]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        try:
            data = read_json(path)
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a MemoryEQA results.json ({e})") from None
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a JSON list of meta/step/summary objects")
        known = {e.episode_id: e for e in episodes}
        out = []
        for i, res in enumerate(data):
            try:
                qid = str(int(res["meta"]["question_ind"]))
                pred = res["summary"]["smx_vlm_pred"]
                raw_steps = res.get("step") or []
            except (KeyError, TypeError, ValueError):
                raise DataError(
                    f"{path}: item {i} needs meta.question_ind and summary.smx_vlm_pred "
                    "(MemoryEQA results.json)"
                ) from None
            if qid not in known:
                raise DataError(
                    f"{path}: item {i}: question_ind {qid} is not a question of the "
                    "task; pass the task.data_dir the file was made from"
                )
            steps = [_step(s, t) for t, s in enumerate(raw_steps)]
            trace = {
                "steps": steps,
                "num_steps": int(res["meta"].get("max_steps") or len(steps)),
                "answer_rule": "upstream",
            }
            out.append(Imported(qid, None if pred is None else str(pred), trace))
        return out


def _step(s: dict[str, Any], t: int) -> dict[str, Any]:
    pred = s.get("smx_vlm_pred") if isinstance(s, dict) else None
    letter = str(pred).split(". ")[0].strip().upper() if isinstance(pred, str) else None
    probs = [1.0 if x == letter else 0.0 for x in LETTERS] if letter in tuple(LETTERS) else None
    if isinstance(pred, list) and len(pred) == len(LETTERS):
        probs = [float(v) for v in pred]
    return {
        "step": int(s.get("step", t)) if isinstance(s, dict) else t,
        "position": s.get("pts") if isinstance(s, dict) else None,
        "answer_probs": probs,
        "answer_source": "upstream",
    }
