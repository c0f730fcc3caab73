"""EXPRESS-Bench results as its ``main.py`` (HCPLab-SYSU/EXPRESS-Bench @e8789da) writes them.

``results.pkl``: a pickled list, one dict per question (``question_ind``: the index in the
dataset JSON, whatever the task's filters and order) with ``scene``, ``type``, ``question``,
``answer``, ``geodesic_distance`` (the reference length), ``cnt_step``, ``gen_answer``, ``EAC``
(the judge's reply "σ, δ", optionally after "Your mark:"), ``end_pts``, ``goal_dis`` (final
geodesic distance to the goal; inf when unreachable), ``path_len`` (inf when a hop was
unreachable) and ``path`` (``step_<t>``: ``pts``, ``rotation`` — an ``np.quaternion``, read as
plain ``(w, x, y, z)`` data). ``evaluation.py``'s ``score`` reads ``EAC``, ``path_len``,
``geodesic_distance`` and ``goal_dis`` of every item; an item with ``path_len`` inf is left out
of C, C* and E_path, one with ``goal_dis`` inf out of d_T.

Export: an error record is left out (never scored; under ``judge.error_records=missing`` it is
written with ``path_len`` and ``goal_dis`` inf and ``error_record: True``, as scored); a record
whose judge reply did not parse (left out of C, C* and E_path here, its d_T kept) is written with
``path_len`` inf, which is how ``score`` leaves an item out of those three, and keeps its measured
length in ``path_len_measured`` and ``judge_unparsable: True``. Read back, the answer is re-judged
by our EAC judge; the final frame ``<dir>/<question_ind>/<cnt_step>.png`` (upstream's saved
observation) is the judge's image when it exists, and upstream's own EAC is kept in the trace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError
from eqa_runner.scoring.comparability import MISSING_MARK
from eqa_runner.scoring.upstream import (
    Imported,
    UpstreamFormat,
    dump_pickle,
    finite,
    int_field,
    load_pickle,
    nullable,
    num_field,
    str_field,
    vec_field,
)
from eqa_runner.types import Episode, EpisodeRecord

RESULTS = "results.pkl"
READ_FIELDS = ("EAC", "path_len", "geodesic_distance", "goal_dis")  # what evaluation.score reads
COMMAND = (
    'python -c "import pickle, evaluation; '
    "print(evaluation.score(pickle.load(open('{file}', 'rb'))))\""
)


def _eac(rec: EpisodeRecord) -> str:
    m = rec["metrics"]
    return f"{float(m['sigma'] or 0):g}, {int(m['delta'] or 0)}"


def row_of(ep: Episode) -> int:
    """The episode's index in the dataset JSON (upstream's ``question_ind``)."""
    return int(ep.meta["row"])


def _result(rec: EpisodeRecord, ep: Episode) -> dict[str, Any]:
    t, m = rec["trace"], rec["metrics"]
    steps = t.get("steps") or []
    path_len = finite(m.get("path_len", t.get("path_len")))
    judged = rec["judge_ok"] and m.get("sigma") is not None and m.get("delta") is not None
    out = {
        "question_ind": row_of(ep),
        "scene": ep.scene,
        "type": ep.category,
        "question": ep.question,
        "answer": ep.answer,
        "geodesic_distance": float(ep.meta.get("geodesic_distance", m.get("gt_geodesic") or 0)),
        "cnt_step": max(len(steps) - 1, 0),
        "gen_answer": rec["prediction"] or "",
        "EAC": _eac(rec) if judged else str(rec.get("judge_raw") or ""),
        "end_pts": t.get("final_position"),
        "goal_dis": finite(m.get("d_t", t.get("d_t"))),
        "path_len": path_len if judged else math.inf,
        "path": {
            f"step_{k}": {"pts": s.get("position"), "rotation": s.get("rotation")}
            for k, s in enumerate(steps)
        },
    }
    if m.get(MISSING_MARK):  # an error record scored as missing (judge.error_records=missing)
        out.update(error_record=True, goal_dis=math.inf)
    elif not judged:  # score() leaves an item with an infinite path out of C, C*, E_path
        out.update(judge_unparsable=True, path_len_measured=path_len)
    return out


class ExpressResults(UpstreamFormat):
    """``--export express``: EXPRESS-Bench's ``results.pkl``."""

    name = "express"
    task = "express"
    files = f"{RESULTS} (EXPRESS-Bench main.py's list of per-question dicts)"
    command = COMMAND

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        index = {e.episode_id: e for e in episodes}
        rows = [
            _result(r, index[str(r["episode_id"])])
            for r in records
            if r["status"] == "ok" and str(r["episode_id"]) in index
        ]
        path = dump_pickle(rows, Path(out_dir) / RESULTS)
        self.last_command = COMMAND.format(file=path)
        return [path]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        data = load_pickle(path)
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a list of per-question dicts (EXPRESS-Bench)")
        rows = {row_of(e): e for e in episodes}
        return [self._one(res, i, path, rows) for i, res in enumerate(data)]

    def _one(self, res: Any, i: int, path: Path, rows: dict[int, Episode]) -> Imported:
        missing = [
            k
            for k in ("question_ind", "gen_answer", *READ_FIELDS)
            if not isinstance(res, dict) or k not in res
        ]
        if missing:
            raise DataError(f"{path}: item {i} lacks {', '.join(missing)}")
        q = int_field(path, i, "question_ind", res["question_ind"])
        if q not in rows:
            raise DataError(
                f"{path}: item {i}: question_ind {q} is not a record of the task's question "
                f"file ({len(rows)} selected; a task filter leaves it out?)"
            )
        ep = rows[q]
        nums = {k: num_field(path, i, k, res[k]) for k in READ_FIELDS[1:]}
        if res.get("judge_unparsable") is True and "path_len_measured" in res:
            nums["path_len"] = num_field(path, i, "path_len_measured", res["path_len_measured"])
        d_t = nullable(nums["goal_dis"])
        cnt = int_field(path, i, "cnt_step", res.get("cnt_step", 0))
        trace: dict[str, Any] = {
            "path_len": nullable(nums["path_len"]),
            "gt_geodesic": nums["geodesic_distance"],
            "d_t": math.inf if d_t is None else d_t,
            "d_t_valid": d_t is not None,
            "steps_taken": cnt + 1,
            "steps": _steps(res.get("path"), path, i),
            "upstream_eac": str_field(path, i, "EAC", res["EAC"]),
        }
        if res.get("end_pts") is not None:
            trace["final_position"] = vec_field(path, i, "end_pts", res["end_pts"], 3)
        if ep.meta.get("goal_position") is not None:
            trace["goal_position"] = list(map(float, ep.meta["goal_position"]))
        frame = Path(path).parent / str(q) / f"{cnt}.png"
        images = [frame] if frame.is_file() else []
        answer = str_field(path, i, "gen_answer", res["gen_answer"], null=True)
        return Imported(ep.episode_id, answer or None, trace, images)


def _steps(steps: Any, path: Path, i: int) -> list[dict[str, Any]]:
    """``path``'s ``step_<t>`` positions (and rotations, when the file has them)."""
    if steps is None:
        return []
    if not isinstance(steps, dict):
        raise DataError(f"{path}: item {i}: field path must be a dict of step_<t> entries")
    out = []
    for k, (name, s) in enumerate(steps.items()):
        if not isinstance(s, dict) or s.get("pts") is None:
            continue
        step: dict[str, Any] = {
            "step": k,
            "position": vec_field(path, i, f"path.{name}.pts", s["pts"], 3),
        }
        if s.get("rotation") is not None:
            step["rotation"] = vec_field(path, i, f"path.{name}.rotation", s["rotation"], 4)
        out.append(step)
    return out
