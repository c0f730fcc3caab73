"""The start of a run as one list of checks (eqa_runner/run/start.py), tested in-process: a
refused start raises its ``UserError`` before the run dir exists, without a subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eqa_runner.errors import ConfigError, ConfigSecretError, DataError, RunDirError
from eqa_runner.run.plan import RunPlan
from eqa_runner.run.start import LOCKED, REJUDGE, START, check_composed, prepare, run_checks


def test_the_start_is_one_ordered_list_each_check_once() -> None:
    names = [c.name for c in START]
    assert names == [
        "secrets", "added keys", "values", "fit", "typed config", "pinned judge", "task",
        "policy", "judge", "trackers", "selection", "prompts dir", "judge inputs", "data",
        "run dir", "cache dir", "prompt files", "episode inputs", "same config", "existing records",
    ]  # fmt: skip
    assert len(set(names)) == len(names)
    # a check that runs again says why: the callback's composed-config checks, the lock race
    again = [c for c in (*START, *LOCKED) if c.again]
    assert {c.name for c in again} == {"secrets", "added keys", "values", "fit", "same config"}
    assert [c.name for c in LOCKED if c.name in names] == ["same config"]
    assert all(c.composed for c in START[:4]) and not any(c.composed for c in START[4:])
    assert set(REJUDGE) <= set(names)  # rejudge picks from the same list


@pytest.mark.parametrize(
    ("override", "error", "words"),
    [
        ("run.workers=0", ConfigError, "run.workers"),
        ("run.shard=3/2", ConfigError, "run.shard"),
        ("judge.model=openai/gpt-4o", ConfigError, "bare alias"),
        ("llm.api_base=https://u:sk-abcdefabcdefabcdef12@h.example", ConfigSecretError, "llm"),
        ("run.limit=0", ConfigError, "run.limit"),
        ("policy=fbe", ConfigError, "policy=fbe"),
    ],
)
def test_a_bad_value_is_refused_before_the_run_dir_exists(
    override: str, error: type, words: str, compose_cfg: Any, openeqa_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cfg = compose_cfg([f"task.data_dir={openeqa_data}", override], out=out)
    with pytest.raises(error, match=words):
        prepare(cfg)
    assert not out.exists()


def test_missing_data_is_refused_before_the_run_dir_exists(
    compose_cfg: Any, openeqa_data: Path, tmp_path: Path
) -> None:
    import shutil

    shutil.rmtree(next(p for p in (openeqa_data / "episodes").rglob("*") if p.is_dir()))
    out = tmp_path / "run"
    with pytest.raises(DataError, match="task.check_data=false"):
        prepare(compose_cfg([f"task.data_dir={openeqa_data}"], out=out))
    assert not out.exists()
    # the schema's default (check_data: true) decides, and false turns the check off
    plan = prepare(compose_cfg([f"task.data_dir={openeqa_data}", "task.check_data=false"], out=out))
    assert plan.run.resume is False and not out.exists()


def test_records_without_resume_are_refused_and_the_dir_is_left_as_it_was(
    compose_cfg: Any, openeqa_data: Path, tmp_path: Path
) -> None:
    from eqa_runner.run.episode import new_record
    from eqa_runner.types import Episode

    out = tmp_path / "run"
    out.mkdir()
    rec = new_record(Episode("x", "q?", "a", "c", [], "s", {}), None)
    (out / "episodes.jsonl").write_text(json.dumps(rec) + "\n")
    before = sorted(p.name for p in out.iterdir())
    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "run.adopt=true"], out=out)
    with pytest.raises(RunDirError, match="run.resume=true"):
        prepare(cfg)
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_plan_is_typed_and_a_dry_run_stops_before_the_run_dir(
    compose_cfg: Any, openeqa_data: Path, tmp_path: Path
) -> None:
    from eqa_runner.run.config import RunConfig

    out = tmp_path / "run"
    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "run.dry_run=true", "run.limit=2",
                       "logger=csv"], out=out)  # fmt: skip
    plan = prepare(cfg)
    assert isinstance(plan.run, RunConfig) and plan.run.limit == 2
    assert plan.run.interval == "cluster"  # the schema's default
    assert len(plan.episodes) == 2 and plan.trackers == [] and plan.out_dir == Path()
    assert plan.task_info == plan.parts.task.describe()
    assert not out.exists()


def test_the_callback_runs_the_composed_checks_of_the_same_list(compose_cfg: Any) -> None:
    with pytest.raises(ConfigError, match="run.workers"):
        check_composed(compose_cfg(["run.workers=0"]))
    with pytest.raises(ConfigError, match="policy=fbe"):
        check_composed(compose_cfg(["policy=fbe"]))
    check_composed(compose_cfg(["policy=fbe"]), fit=False)  # a sweep's base config


def test_the_data_is_described_once_per_run(
    compose_cfg: Any, openeqa_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task's describe() hashes its data files: the start computes it once and the
    provenance, the judge's input check and the summary use that (three calls before)."""
    from eqa_runner.run.loop import run

    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "llm=offline", "judge.model=offline",
                       "run.limit=1", "run.cache=false"], out=tmp_path / "run")  # fmt: skip
    plan = run_checks(RunPlan(cfg), START, names=("typed config", "task"))
    calls: list[int] = []
    cls = type(plan.task)
    real = cls.describe
    monkeypatch.setattr(cls, "describe", lambda self: calls.append(1) or real(self))
    result = run(cfg)
    assert result["exit_code"] == 0 and len(calls) == 1
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    provenance = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert summary["task"]["questions_sha256"] == provenance["inputs"]["data"]["questions_sha256"]
