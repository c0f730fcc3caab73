"""A-EQA for 3D-Mem-AEQA-Eval (NoahFrahm/3D-Mem-AEQA-Eval @47c8e61): answers + path lengths.

Its ``evaluate-predictions.py`` reads a JSON list of ``{question_id, answer}`` (items with a
null/empty answer are dropped before judging; ``-f`` when not every question of the dataset is
there) and writes ``data/metrics/<stem>-metrics.json``; its ``get-scores.py --result-path DIR``
reads the fixed ``data/metrics/gpt_answer-metrics.json`` and ``DIR/path_length_list.pkl`` (a
pickled dict question_id → the agent's path length; a question without one has an infinite
path), and scores every question of the blind baseline's metrics file: a question with no
mark is scored with the blind answer's mark at ``p = ∞``. So the export is ``gpt_answer.json`` (the
stem ``get-scores.py`` expects) and ``path_length_list.pkl``; an error record is left out (under
``judge.error_records=missing`` a null answer, dropped the same way), which upstream scores as a
missing prediction (the project leaves it out of the headline, and the summary says the row is then
not comparable). The length exported is the one our judge used (``judge.path_length``: geodesic or
3D-Mem's top-down).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from eqa_runner.benchmarks.openeqa_em.upstream import force_flag, predictions, read_predictions
from eqa_runner.errors import DataError
from eqa_runner.records import write_json_atomic
from eqa_runner.scoring.upstream import (
    Imported,
    UpstreamFormat,
    by_id,
    dump_pickle,
    finite,
    load_pickle,
    nullable,
    num_field,
)
from eqa_runner.types import Episode, EpisodeRecord

ANSWERS = "gpt_answer.json"  # get-scores.py reads data/metrics/gpt_answer-metrics.json
PATH_LENGTHS = "path_length_list.pkl"
COMMAND = (
    "rm -f data/metrics/gpt_answer-metrics.json && python evaluate-predictions.py "
    "--dataset data/open-eqa-184.json {file}{force} && python get-scores.py "
    "--dataset open-eqa-184 --result-path {out}"
)


class AEQAPredictions(UpstreamFormat):
    """``--export aeqa``: ``gpt_answer.json`` + ``path_length_list.pkl``."""

    name = "aeqa"
    task = "aeqa"
    files = f"{ANSWERS} ({{question_id, answer}} list) and {PATH_LENGTHS} (id -> path m)"
    command = COMMAND

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        items = predictions(records)
        write_json_atomic(out / ANSWERS, items)
        ok = [r for r in records if r["status"] == "ok"]
        lengths = {
            str(r["episode_id"]): finite(r["metrics"].get("path_len"))
            for r in ok
            if r["metrics"].get("has_path")
        }
        self.last_command = COMMAND.format(
            file=out / ANSWERS, out=out, force=force_flag(len(items), episodes)
        )
        return [out / ANSWERS, dump_pickle(lengths, out / PATH_LENGTHS)]

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
                p = num_field(pkl, qid, "path length", lengths[qid])
                trace = {"path_len": nullable(p), "path_infinite": math.isinf(p)}
            out.append(Imported(qid, it["answer"] or None, trace))
        return out
