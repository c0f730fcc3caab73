"""OpenEQA's predictions file, as ``evaluate-predictions.py`` (facebookresearch/open-eqa) reads it.

The reader loads a JSON list and uses two fields of each item: ``question_id`` (matched against
the dataset's; all must be present unless ``--force``) and ``answer`` (the prediction text; the
scorer itself trims anything after the last period). A missing prediction is written as null.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError
from eqa_runner.scoring.upstream import Imported, UpstreamFormat, by_id
from eqa_runner.types import Episode, EpisodeRecord

PREDICTIONS = "predictions.json"


def predictions(records: Sequence[EpisodeRecord]) -> list[dict[str, Any]]:
    """``[{"question_id", "answer"}]`` in record order (null answer: no prediction)."""
    return [{"question_id": str(r["episode_id"]), "answer": r["prediction"]} for r in records]


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """The items of a predictions file, each checked for the two fields the scorer reads."""
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not a JSON predictions file ({e})") from None
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON list of {{question_id, answer}} items")
    for i, it in enumerate(items):
        if not isinstance(it, dict) or "question_id" not in it or "answer" not in it:
            raise DataError(f"{path}: item {i} needs the fields question_id and answer")
        if it["answer"] is not None and not isinstance(it["answer"], str):
            raise DataError(f"{path}: item {i}: answer must be a string or null")
    return items


class OpenEQAPredictions(UpstreamFormat):
    """``--export openeqa``: ``predictions.json`` for open-eqa's ``evaluate-predictions.py``."""

    name = "openeqa"
    task = "openeqa_em"
    files = f"{PREDICTIONS} (a JSON list of {{question_id, answer}})"

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        out = Path(out_dir) / PREDICTIONS
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(predictions(records), indent=2), encoding="utf-8")
        return [out]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        items = read_predictions(path)
        by_id(episodes, path, [str(it["question_id"]) for it in items])
        return [Imported(str(it["question_id"]), it["answer"]) for it in items]
