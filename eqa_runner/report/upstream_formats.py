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
from eqa_runner.scoring.upstream import Imported, UpstreamFormat

IMPORT_DIR = "imported"


def formats() -> dict[str, UpstreamFormat]:
    """Every benchmark's upstream format (the registry's ``upstream``), by its name."""
    from eqa_runner import registry

    found: dict[str, UpstreamFormat] = {}
    for b in registry.benchmarks():
        if b.upstream:
            fmt = b.resolve("upstream")()
            if not isinstance(fmt, UpstreamFormat):
                raise ReportError(f"benchmark {b.name}: upstream={b.upstream} is not an "
                                  "UpstreamFormat")  # fmt: skip
            found[fmt.name] = fmt
    return found


def get_format(name: str) -> UpstreamFormat:
    known = formats()
    if name not in known:
        raise ReportError(f"--format/--export {name!r}: unknown; known: {', '.join(sorted(known))}")
    return known[name]


def _episodes(cfg: DictConfig) -> list[Any]:
    from eqa_runner.run.build import build
    from eqa_runner.tasks.base import Task

    task = build(cfg.task, Task, "task")  # type: ignore[type-abstract]  # checked, not built
    return list(task.load_episodes())


def export_run(run_dir: Path, name: str, out: Path | None = None) -> list[Path]:
    """Write the run's records in format ``name``; the files written."""
    from omegaconf import OmegaConf

    from eqa_runner.report.runs import load_run

    fmt = get_format(name)
    run = load_run(Path(run_dir))
    cfg = OmegaConf.create(run.config)  # .hydra/config.yaml, else the summary's config
    if "task" not in cfg:
        raise ReportError(f"{run_dir}: no recorded config (.hydra/config.yaml or summary.json)")
    task = str(cfg.task.get("name"))
    if task != fmt.task:
        raise ReportError(f"{run_dir}: a task={task} run; --export {name} is for task={fmt.task}")
    out_dir = Path(out) if out else Path(run_dir) / "export" / name
    return fmt.export(run.records(), _episodes(cfg), out_dir)


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
            return compose("config", overrides=[
                f"task={fmt.task}", "policy=imported", "llm=offline",
                f"run.output_dir={out}", f"policy.predictions_file={d / 'predictions.jsonl'}",
                f"run.episodes={d / 'episode_ids.json'}", *overrides,
            ])  # fmt: skip
    finally:
        GlobalHydra.instance().clear()


def _write_normalised(rows: list[Imported], d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    with (d / "predictions.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            line = {"episode_id": r.episode_id, "answer": r.answer, "trace": r.trace,
                    "judge_images": [str(Path(p).resolve()) for p in r.judge_images]}  # fmt: skip
            f.write(json.dumps(line, default=_json_num) + "\n")
    (d / "episode_ids.json").write_text(json.dumps([r.episode_id for r in rows]))


def _json_num(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def import_results(path: Path, name: str, overrides: list[str], out: Path | None) -> Path:
    """Read an upstream file as a run (judged by the task's judge); returns the run dir."""
    from eqa_runner.run.loop import run

    fmt = get_format(name)
    src = Path(path)
    if not src.is_file():
        raise ReportError(f"--import {src}: not found")
    out_dir = Path(out) if out else src.parent / f"{src.stem}_imported"
    cfg = compose_import(fmt, [*overrides, f"policy.source='{name}:{src}'"], out_dir)
    rows = fmt.read(src, _episodes(cfg))
    if not rows:
        raise ReportError(f"--import {src}: no answers in it")
    _write_normalised(rows, out_dir / IMPORT_DIR)
    run(cfg)
    return out_dir
