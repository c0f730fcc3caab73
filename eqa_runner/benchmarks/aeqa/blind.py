"""The blind source of A-EQA's ``blind_fallback`` rule: reading a blind run, and checking it is one.

``judge.blind_run_dir`` names a run directory (or one of its ``episodes*.jsonl``). Its marks stand
in for the scored run's missing predictions, so it must be what the rule assumes: a completed
A-EQA run of ``policy=blind`` over the same question file. :func:`check_blind_source` reads its
``provenance.json`` (written by every run before its first record) and ``summary.json`` and
refuses anything else in one line naming the directory and what is wrong: no provenance,
another task, another policy, another question file, or a run that did not finish.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eqa_runner.errors import ConfigError
from eqa_runner.records import (
    EPISODES_FILE,
    PROVENANCE_FILE,
    SUMMARY_FILE,
    final_records,
    read_records,
)
from eqa_runner.safe_io import read_json
from eqa_runner.types import EpisodeRecord

BLIND_POLICY = "blind"
FIX = "point it at a finished policy=blind run (python -m eqa_runner experiment=aeqa_blind ...)"


def number_or_none(v: Any) -> float | None:
    """A float that is not NaN, or None (null / missing / NaN / not a number / a bool)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def _files(source: Path) -> tuple[Path, Path]:
    """The records file and the summary beside it (a run dir, or one of its episodes files:
    ``episodes.rejudged-<tag>.jsonl`` goes with ``summary.rejudged-<tag>.json``)."""
    if source.is_dir():
        return source / EPISODES_FILE, source / SUMMARY_FILE
    summary = source.with_name(source.name.replace("episodes", "summary", 1)).with_suffix(".json")
    return source, summary


def _read_json(path: Path) -> Any:
    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


def load_blind_run(
    source: Path,
) -> tuple[dict[str, int], str | None, dict[str, EpisodeRecord]]:
    """{question_id: mark} of a blind run's ok, judged records, the judge model its summary
    names (if any), and those records by question id (in file order), which stand in for
    questions the scored run has no record of."""
    jsonl, summary = _files(source)
    recs = final_records(read_records(jsonl))
    scored = {
        i: r
        for i, r in recs.items()
        if r["status"] == "ok"
        and r["judge_ok"]
        and number_or_none(r["metrics"].get("score_1to5")) is not None
    }
    scores = {
        i: int(number_or_none(r["metrics"].get("score_1to5")) or 0) for i, r in scored.items()
    }
    data = _read_json(summary) if summary.is_file() else None
    model = (data.get("models") or {}).get("judge") if isinstance(data, dict) else None
    return scores, model, scored


def check_blind_source(source: Path, task_name: str | None, data: Mapping[str, Any]) -> None:
    """Refuse ``source`` unless it is a completed ``policy=blind`` run of task ``task_name``
    over the question file whose hash ``data["questions_sha256"]`` holds (the scored run's
    ``describe()``; not compared when unknown)."""
    jsonl, summary = _files(source)
    run_dir = jsonl.parent
    where = f"judge.blind_run_dir={source}"
    if not jsonl.is_file():
        raise ConfigError(f"{where}: no {EPISODES_FILE} there; {FIX}.")
    prov = _read_json(run_dir / PROVENANCE_FILE)
    if not isinstance(prov, dict) or not isinstance(prov.get("config"), dict):
        raise ConfigError(
            f"{where}: no readable {PROVENANCE_FILE} in {run_dir}, so nothing says it is a blind "
            f"run over these questions; {FIX}."
        )
    config, inputs = prov["config"], prov.get("inputs") or {}
    task, policy = config.get("task.name"), config.get("policy.name")
    if task_name is not None and task != task_name:
        raise ConfigError(f"{where}: a task={task} run, not task={task_name}; {FIX}.")
    if policy != BLIND_POLICY:
        raise ConfigError(f"{where}: a policy={policy} run, not policy={BLIND_POLICY}; {FIX}.")
    mine = data.get("questions_sha256")
    theirs = (inputs.get("data") or {}).get("questions_sha256")
    if mine and theirs != mine:
        raise ConfigError(
            f"{where}: its question file is another one (questions_sha256 {str(theirs)[:12]}… "
            f"there, {str(mine)[:12]}… here); run the blind baseline on this run's questions."
        )
    done = _read_json(summary) if summary.is_file() else None
    counts = done.get("counts") if isinstance(done, dict) else None
    if not isinstance(counts, dict) or counts.get("missing", 1) != 0:
        got = (
            "no summary"
            if not isinstance(counts, dict)
            else f"{counts.get('recorded')} of {counts.get('selected')} episodes recorded"
        )
        raise ConfigError(
            f"{where}: the blind run did not finish ({got}); resume it first "
            f"(run.resume=true hydra.run.dir={run_dir})."
        )
