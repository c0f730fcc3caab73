"""lmms-eval's per-sample log (``--log_samples``: ``samples_vsibench.jsonl``), the file a
VSI-Bench result of lmms-eval comes with.

One JSON object per line: ``doc_id``, ``doc`` (the dataset record: ``id``, ``dataset``,
``scene_name``, ``question_type``, ``question``, ``options``, ``ground_truth``), ``target``,
``resps`` (``[[reply]]``) and ``filtered_resps`` (``[reply]``: what the scorer reads). Reading
takes ``doc.id`` and ``filtered_resps[0]`` (else ``resps[0][0]``); a missing reply is null.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError
from eqa_runner.safe_io import loads_json, write_atomic
from eqa_runner.scoring.upstream import Imported, UpstreamFormat, by_id
from eqa_runner.types import Episode, EpisodeRecord

SAMPLES = "samples_vsibench.jsonl"


def _doc(ep: Episode) -> dict[str, Any]:
    source, _, scene = ep.scene.partition("/")
    return {
        "id": ep.episode_id,
        "dataset": source,
        "scene_name": scene,
        "question_type": ep.category,
        "question": ep.meta.get("raw_question", ep.question),
        "options": ep.meta.get("options") or None,
        "ground_truth": ep.answer,
    }


def _reply(item: dict[str, Any]) -> str | None:
    for key, pick in (("filtered_resps", lambda v: v[0]), ("resps", lambda v: v[0][0])):
        try:
            value = pick(item[key])
        except (KeyError, IndexError, TypeError):
            continue
        return None if value is None else str(value)
    return None


class VSIBenchSamples(UpstreamFormat):
    """``--export vsibench``: lmms-eval's ``samples_vsibench.jsonl``."""

    name = "vsibench"
    task = "vsibench"
    files = f"{SAMPLES} (lmms-eval's --log_samples lines: doc, resps, filtered_resps)"

    def export(
        self, records: Sequence[EpisodeRecord], episodes: Sequence[Episode], out_dir: Path
    ) -> list[Path]:
        known = {e.episode_id: e for e in episodes}
        lines = []
        for i, r in enumerate(records):
            ep = known.get(str(r["episode_id"]))
            if ep is None:
                continue
            reply = r["prediction"]
            lines.append(
                json.dumps(
                    {
                        "doc_id": i,
                        "doc": _doc(ep),
                        "target": ep.answer,
                        "resps": [[reply]],
                        "filtered_resps": [reply],
                    }
                )
            )
        out = Path(out_dir) / SAMPLES
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, "".join(line + "\n" for line in lines))
        return [out]

    def read(self, path: Path, episodes: Sequence[Episode]) -> list[Imported]:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            items = [
                loads_json(line, f"{path}: line {n + 1}")
                for n, line in enumerate(lines)
                if line.strip()
            ]
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not an lmms-eval samples file ({e})") from None
        ids = []
        for n, it in enumerate(items):
            doc = it.get("doc") if isinstance(it, dict) else None
            if not isinstance(doc, dict) or doc.get("id") is None:
                raise DataError(f"{path}: line {n + 1} needs doc.id (lmms-eval --log_samples)")
            ids.append(str(doc["id"]))
        by_id(episodes, path, ids)
        return [Imported(i, _reply(it)) for i, it in zip(ids, items, strict=True)]
