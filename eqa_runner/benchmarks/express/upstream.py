"""EXPRESS-Bench results as its ``main.py`` (HCPLab-SYSU/EXPRESS-Bench) writes them.

``results.pkl``: a pickled list, one dict per question (``question_ind``: the index in the
dataset JSON) with ``scene``, ``type``, ``question``, ``answer``, ``geodesic_distance`` (the
reference length), ``cnt_step``, ``gen_answer``, ``EAC`` (the judge's reply "σ, δ", optionally
after "Your mark:"), ``end_pts``, ``goal_dis`` (final geodesic distance to the goal; inf when
unreachable), ``path_len`` (inf when a hop was unreachable) and ``path`` (``step_<t>``:
``pts``, ``rotation``). ``evaluation.py``'s ``score`` reads ``EAC``, ``path_len``,
``geodesic_distance`` and ``goal_dis`` of every item. Read back, the answer is re-judged by our
EAC judge; the final frame ``<dir>/<question_ind>/<cnt_step>.png`` (upstream's saved
observation) is the judge's image when it exists, and upstream's own EAC is kept in the trace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError
from eqa_runner.scoring.upstream import (
    Imported,
    UpstreamFormat,
    dump_pickle,
    finite,
    load_pickle,
    nullable,
)
from eqa_runner.types import Episode, EpisodeRecord

RESULTS = "results.pkl"
READ_FIELDS = ("EAC", "path_len", "geodesic_distance", "goal_dis")  # what evaluation.score reads


def _eac(rec: EpisodeRecord) -> str:
    m = rec["metrics"]
    if m.get("sigma") is None or m.get("delta") is None:
        return "Your mark: "  # unparsable: upstream's parser fails on it too
    return f"{float(m['sigma'] or 0):g}, {int(m['delta'] or 0)}"


def _result(i: int, rec: EpisodeRecord, ep: Episode) -> dict[str, Any]:
    t, m = rec["trace"], rec["metrics"]
    steps = t.get("steps") or []
    return {
        "question_ind": i,
        "scene": ep.scene,
        "type": ep.category,
        "question": ep.question,
        "answer": ep.answer,
        "geodesic_distance": float(ep.meta.get("geodesic_distance", m.get("gt_geodesic") or 0)),
        "cnt_step": max(len(steps) - 1, 0),
        "gen_answer": rec["prediction"] or "",
        "EAC": _eac(rec),
        "end_pts": t.get("final_position"),
        "goal_dis": finite(m.get("d_t", t.get("d_t"))),
        "path_len": finite(m.get("path_len", t.get("path_len"))),
        "path": {
            f"step_{k}": {"pts": s.get("position"), "rotation": s.get("rotation")}
            for k, s in enumerate(steps)
        },  # fmt: skip
    }


class ExpressResults(UpstreamFormat):
    """``--export express``: EXPRESS-Bench's ``results.pkl``."""

    name = "express"
    task = "express"
    files = f"{RESULTS} (EXPRESS-Bench main.py's list of per-question dicts)"

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        index = {e.episode_id: i for i, e in enumerate(episodes)}
        rows = [_result(index[str(r["episode_id"])], r, episodes[index[str(r["episode_id"])]])
                for r in records if str(r["episode_id"]) in index]  # fmt: skip
        return [dump_pickle(rows, Path(out_dir) / RESULTS)]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        data = load_pickle(path)
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a list of per-question dicts (EXPRESS-Bench)")
        return [self._one(res, i, path, episodes) for i, res in enumerate(data)]

    def _one(self, res: Any, i: int, path: Path, episodes: Sequence[Episode]) -> Imported:
        missing = [k for k in ("question_ind", "gen_answer", *READ_FIELDS)
                   if not isinstance(res, dict) or k not in res]  # fmt: skip
        if missing:
            raise DataError(f"{path}: item {i} lacks {', '.join(missing)}")
        q = int(res["question_ind"])
        if not 0 <= q < len(episodes):
            raise DataError(f"{path}: item {i}: question_ind {q} is not an index of the task's "
                            f"{len(episodes)} questions")  # fmt: skip
        d_t = nullable(res["goal_dis"])
        steps = [{"step": k, "position": list(map(float, s["pts"]))}
                 for k, s in enumerate((res.get("path") or {}).values())
                 if isinstance(s, dict) and s.get("pts") is not None]  # fmt: skip
        trace: dict[str, Any] = {
            "path_len": nullable(res["path_len"]),
            "gt_geodesic": float(res["geodesic_distance"]),
            "d_t": math.inf if d_t is None else d_t,
            "d_t_valid": d_t is not None,
            "steps_taken": int(res.get("cnt_step", 0)) + 1,
            "steps": steps,
            "upstream_eac": str(res["EAC"]),
        }
        if res.get("end_pts") is not None:
            trace["final_position"] = [float(v) for v in res["end_pts"]]
        if episodes[q].meta.get("goal_position") is not None:
            trace["goal_position"] = list(map(float, episodes[q].meta["goal_position"]))
        frame = Path(path).parent / str(q) / f"{int(res.get('cnt_step', 0))}.png"
        images = [frame] if frame.is_file() else []
        return Imported(episodes[q].episode_id, str(res["gen_answer"]) or None, trace, images)
