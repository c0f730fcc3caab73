"""OpenEQA's predictions file, as ``evaluate-predictions.py`` (facebookresearch/open-eqa) reads it.

The reader loads a JSON list and uses two fields of each item: ``question_id`` (matched against
the dataset's; all must be present unless ``-f``/``--force``) and ``answer`` (the prediction
text; the scorer itself trims anything after the last period; a null answer scores 0 without a
judge call). The export holds one item per ``ok`` record (a null answer stays null); an error
record is left out (unless ``judge.error_records=missing``: a null answer, as scored), so a run
with error records, or a ``run.limit``/filtered run, covers part of the dataset and upstream's
scorer needs ``-f``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError
from eqa_runner.records import write_json_atomic
from eqa_runner.safe_io import read_json
from eqa_runner.scoring.upstream import Imported, UpstreamFormat, by_id, str_field
from eqa_runner.types import Episode, EpisodeRecord

PREDICTIONS = "predictions.json"
COMMAND = (
    "python evaluate-predictions.py {file} --dataset data/open-eqa-v0.json "
    "--output-directory {out}/metrics{force}"
)


def predictions(records: Sequence[EpisodeRecord]) -> list[dict[str, Any]]:
    """``[{"question_id", "answer"}]`` of the ok records, in record order (null: no answer)."""
    return [
        {"question_id": str(r["episode_id"]), "answer": r["prediction"]}
        for r in records
        if r["status"] == "ok"
    ]


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """The items of a predictions file, each checked for the two fields the scorer reads."""
    try:
        items = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise DataError(f"{path}: not a JSON predictions file ({str(e)[:120]})") from None
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON list of {{question_id, answer}} items")
    for i, it in enumerate(items):
        if not isinstance(it, dict) or "question_id" not in it or "answer" not in it:
            raise DataError(f"{path}: item {i} needs the fields question_id and answer")
        str_field(path, i, "question_id", it["question_id"])
        str_field(path, i, "answer", it["answer"], null=True)
    return items


def force_flag(n_items: int, episodes: Sequence[Episode]) -> str:
    """`` -f`` when the export covers part of the dataset (upstream asserts all ids otherwise)."""
    return "" if n_items == len(episodes) else " -f"


class OpenEQAPredictions(UpstreamFormat):
    """``--export openeqa``: ``predictions.json`` for open-eqa's ``evaluate-predictions.py``."""

    name = "openeqa"
    task = "openeqa_em"
    files = f"{PREDICTIONS} (a JSON list of {{question_id, answer}})"
    command = COMMAND

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        out = Path(out_dir) / PREDICTIONS
        out.parent.mkdir(parents=True, exist_ok=True)
        items = predictions(records)
        write_json_atomic(out, items)
        self.last_command = COMMAND.format(
            file=out, out=out.parent, force=force_flag(len(items), episodes)
        )
        return [out]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        items = read_predictions(path)
        by_id(episodes, path, [str(it["question_id"]) for it in items])
        return [Imported(str(it["question_id"]), it["answer"]) for it in items]
