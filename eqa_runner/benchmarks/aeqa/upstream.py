"""A-EQA for 3D-Mem-AEQA-Eval (NoahFrahm/3D-Mem-AEQA-Eval): predictions + path lengths.

``evaluate-predictions.py`` there reads the same JSON list as OpenEQA's (``question_id``,
``answer``; items with a null/empty answer are dropped before judging), and
``get-scores-grounded.py`` reads ``path_length_list.pkl`` from the result dir: a pickled dict
question_id → the agent's path length (a question missing from it counts as an infinite path),
for ``l / max(l, p)`` with the reference lengths of ``data/gt_path_length.json``. The length
exported is the one our judge used (``judge.path_length``: geodesic or 3D-Mem's top-down).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from eqa_runner.benchmarks.openeqa_em.upstream import PREDICTIONS, predictions, read_predictions
from eqa_runner.errors import DataError
from eqa_runner.scoring.upstream import (
    Imported,
    UpstreamFormat,
    by_id,
    dump_pickle,
    finite,
    load_pickle,
    nullable,
)
from eqa_runner.types import Episode, EpisodeRecord

PATH_LENGTHS = "path_length_list.pkl"


class AEQAPredictions(UpstreamFormat):
    """``--export aeqa``: ``predictions.json`` + ``path_length_list.pkl``."""

    name = "aeqa"
    task = "aeqa"
    files = f"{PREDICTIONS} ({{question_id, answer}} list) and {PATH_LENGTHS} (id -> path m)"

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / PREDICTIONS).write_text(json.dumps(predictions(records), indent=2))
        lengths = {str(r["episode_id"]): finite(r["metrics"].get("path_len"))
                   for r in records if r["metrics"].get("has_path")}  # fmt: skip
        return [out / PREDICTIONS, dump_pickle(lengths, out / PATH_LENGTHS)]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        items = read_predictions(path)
        by_id(episodes, path, [str(it["question_id"]) for it in items])
        pkl = Path(path).parent / PATH_LENGTHS
        lengths = load_pickle(pkl) if pkl.is_file() else {}
        if not isinstance(lengths, dict):
            raise DataError(f"{pkl}: expected a dict question_id -> path length")
        out = []
        for it in items:
            qid = str(it["question_id"])
            trace = {}
            if qid in lengths:
                p = float(lengths[qid])
                trace = {"path_len": nullable(p), "path_infinite": math.isinf(p)}
            out.append(Imported(qid, it["answer"] or None, trace))
        return out
