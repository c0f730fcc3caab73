"""``report <run> --export NAME`` and ``report --import FILE --format NAME``: the shared driver.

Each benchmark's format lives in its package (``benchmarks/<name>/upstream.py``, an
:class:`~eqa_runner.scoring.upstream.UpstreamFormat`) and is found through the benchmark
registry (``Benchmark.upstream``), so a plugin benchmark adds its own.

Export: the run's final records and its task's episodes (loaded from the run's recorded config,
in dataset order: upstream files index questions by their position) go to the format's writer.
Import: the upstream file is read against the task's episodes, normalised into
``<out>/imported/predictions.jsonl`` and run as ``policy=imported`` with the task's own judge
(``llm=offline``: the policy calls no model), so the result is an ordinary run directory that
``report --compare`` pairs with ours by episode id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from eqa_runner.errors import ReportError
from eqa_runner.safe_io import write_atomic
from eqa_runner.scoring.upstream import Imported, UpstreamFormat

IMPORT_DIR = "imported"
EXPORT_META = "export.json"  # beside an export: the question file's hash, the command


def formats() -> dict[str, UpstreamFormat]:
    """Every benchmark's upstream format (the registry's ``upstream``), by its name."""
    from eqa_runner import registry

    found: dict[str, UpstreamFormat] = {}
    for b in registry.benchmarks():
        if b.upstream:
            fmt = b.resolve("upstream")()
            if not isinstance(fmt, UpstreamFormat):
                raise ReportError(
                    f"benchmark {b.name}: upstream={b.upstream} is not an UpstreamFormat"
                )
            found[fmt.name] = fmt
    return found


def get_format(name: str) -> UpstreamFormat:
    known = formats()
    if name not in known:
        raise ReportError(f"--format/--export {name!r}: unknown; known: {', '.join(sorted(known))}")
    return known[name]


def _task(cfg: DictConfig) -> Any:
    from eqa_runner.run.build import build
    from eqa_runner.tasks.base import Task

    return build(cfg.task, Task, "task")  # type: ignore[type-abstract]  # checked, not built


def _episodes(cfg: DictConfig) -> list[Any]:
    return list(_task(cfg).load_episodes())


def recorded_questions_hash(run: Any) -> str | None:
    """The question file's hash the run recorded (summary ``task``, else its provenance)."""
    from eqa_runner.run.provenance import read_provenance

    digest = (run.summary.get("task") or {}).get("questions_sha256")
    if digest is None:
        try:
            prov = read_provenance(run.path) or {}
        except Exception:  # noqa: BLE001 - an unreadable provenance records no hash
            prov = {}
        digest = ((prov.get("inputs") or {}).get("data") or {}).get("questions_sha256")
    return str(digest) if digest else None


def _check_questions(run_dir: Path, task: Any, recorded: str | None) -> dict[str, Any]:
    """The task's question file and hash now; refused when it is not the one the run used."""
    info = task.describe()
    now = info.get("questions_sha256")
    if recorded and now != recorded:
        raise ReportError(
            f"{run_dir}: the question file {info.get('questions_file')} is not the one the run "
            f"used (sha256 {str(now)[:12]}… now, {recorded[:12]}… recorded): upstream files map "
            "by its rows and ids; restore that file or pass task.questions_file of the original"
        )
    return {"questions_file": info.get("questions_file"), "questions_sha256": now}


def export_run(run_dir: Path, name: str, out: Path | None = None) -> list[Path]:
    """Write the run's records in format ``name``; the files written (the last: ``export.json``,
    the question file's hash and the upstream command that scores the export)."""
    from omegaconf import OmegaConf

    from eqa_runner.records import write_json_atomic
    from eqa_runner.report.runs import judge_for, load_run
    from eqa_runner.scoring.comparability import headline_records

    fmt = get_format(name)
    run = load_run(Path(run_dir))
    cfg = OmegaConf.create(run.config)  # .hydra/config.yaml, else the summary's config
    if "task" not in cfg:
        raise ReportError(f"{run_dir}: no recorded config (.hydra/config.yaml or summary.json)")
    task_name = str(cfg.task.get("name"))
    if task_name != fmt.task:
        raise ReportError(
            f"{run_dir}: a task={task_name} run; --export {name} is for task={fmt.task}"
        )
    task = _task(cfg)
    questions = _check_questions(Path(run_dir), task, recorded_questions_hash(run))
    out_dir = Path(out) if out else Path(run_dir) / "export" / name
    # judge.error_records=missing: an error record is written as the missing prediction the
    # headline scored it as (the upstream scorer then counts it so too)
    records, as_missing = headline_records(judge_for(run.config), run.records())
    written = fmt.export(records, list(task.load_episodes()), out_dir)
    errors = sum(1 for r in records if r["status"] != "ok")
    meta = out_dir / EXPORT_META
    write_json_atomic(
        meta,
        {
            "format": name,
            "run_dir": str(run_dir),
            **questions,
            "files": [p.name for p in written],
            "error_records_left_out": errors,
            "error_records_as_missing": as_missing,
            "upstream_command": fmt.last_command or fmt.command,
        },
    )
    return [*written, meta]


def quoted(value: object) -> str:
    """A value as a single-quoted Hydra override value (a path with ``'``, ``,`` or ``=``)."""
    return "'" + str(value).replace("'", "\\'") + "'"


def compose_import(fmt: UpstreamFormat, overrides: list[str], out: Path) -> DictConfig:
    """The run config of an import: the format's task, ``policy=imported``, the overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.run.configstore import register_configs

    register_configs()
    conf = Path(__file__).resolve().parents[1] / "conf"
    d = out / IMPORT_DIR
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
            return compose(
                "config",
                overrides=[
                    f"task={fmt.task}",
                    "policy=imported",
                    "llm=offline",
                    f"run.output_dir={quoted(out)}",
                    f"policy.predictions_file={quoted(d / 'predictions.jsonl')}",
                    f"run.episodes={quoted(d / 'episode_ids.json')}",
                    *overrides,
                ],
            )
    finally:
        GlobalHydra.instance().clear()


def _write_normalised(rows: list[Imported], d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "episode_id": r.episode_id,
                "answer": r.answer,
                "trace": r.trace,
                "judge_images": [str(Path(p).resolve()) for p in r.judge_images],
            },
            default=_json_num,
        )
        + "\n"
        for r in rows
    ]
    write_atomic(d / "predictions.jsonl", "".join(lines))
    write_atomic(d / "episode_ids.json", json.dumps([r.episode_id for r in rows]))


def _json_num(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def import_results(
    path: Path, name: str, overrides: list[str], out: Path | None
) -> tuple[Path, int]:
    """Read an upstream file as a run (judged by the task's judge); returns the run dir and the
    run's exit code (README "Exit codes": an interrupted import prints its resume line)."""
    from eqa_runner.run.loop import run
    from eqa_runner.run.stop import resumed_by

    fmt = get_format(name)
    src = Path(path)
    if not src.is_file():
        raise ReportError(f"--import {src}: not found")
    out_dir = Path(out) if out else src.parent / f"{src.stem}_imported"
    cfg = compose_import(fmt, [*overrides, f"policy.source={quoted(f'{name}:{src}')}"], out_dir)
    rows = fmt.read(src, _episodes(cfg))
    if not rows:
        raise ReportError(f"--import {src}: no answers in it")
    _write_normalised(rows, out_dir / IMPORT_DIR)

    def resume(keys: dict[str, str]) -> list[str]:  # this import again, resumed
        kept = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in keys]
        return [
            "python",
            "-m",
            "eqa_runner.report",
            "--import",
            str(src),
            "--format",
            name,
            "--out",
            str(out_dir),
            *kept,
            *(f"{k}={v}" for k, v in keys.items()),
        ]

    with resumed_by(resume):
        result = run(cfg)
    return out_dir, int(result.get("exit_code", 0))
