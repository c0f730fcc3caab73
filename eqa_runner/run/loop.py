"""The run loop: select episodes → policy → judge → one JSONL line each → summary.json.

The pieces: :mod:`~eqa_runner.run.build` (components, simulator, model clients from the config),
:mod:`~eqa_runner.run.selection` (which episodes), :mod:`~eqa_runner.run.dry_run`,
:mod:`~eqa_runner.run.episode` (one episode → one record), :mod:`~eqa_runner.run.summary`
(``summary.json``) and :mod:`~eqa_runner.run.context` (:class:`RunContext`, the state the
episodes of one run share).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigSecretError, DataError, RunDirError, UserError, os_error_line
from eqa_runner.llm import LLMClient
from eqa_runner.llm.secrets import screen_values
from eqa_runner.records import (
    EPISODES_FILE,
    LOCK_FILE,
    RecordWriter,
    RunLock,
    final_records,
    read_records,
)
from eqa_runner.run.build import (
    build,
    build_components,
    build_sim,
    llm_clients,
    resolve_output_dir,
)
from eqa_runner.run.context import Components, EpisodeSettings, RunContext
from eqa_runner.run.cost_cap import CostCap
from eqa_runner.run.dry_run import dry_run
from eqa_runner.run.execute import Execution, execute
from eqa_runner.run.provenance import PROVENANCE_FILE, check_same_config, input_hashes
from eqa_runner.run.rundir import (
    check_cache_dir,
    check_prompts_dir,
    check_writable_dir,
    config_container,
    label_run_dir,
    release_run_log,
)
from eqa_runner.run.selection import select_episodes
from eqa_runner.run.stop import (
    EXIT_COST_CAP,
    EXIT_EPISODES_FAILED,
    EXIT_OK,
    Stopper,
    resume_command,
    signals_stop,
)
from eqa_runner.run.summary import reproducibility_stamp, versions, write_summary
from eqa_runner.run.tracking import ReportWriter, build_trackers, run_info
from eqa_runner.run.tracking import finish as finish_tracking
from eqa_runner.schema import check_config
from eqa_runner.trackers.base import Tracker
from eqa_runner.trackers.hub import TrackerHub
from eqa_runner.types import Episode, EpisodeRecord

__all__ = ["build", "run"]

log = logging.getLogger(__name__)


def run(cfg: DictConfig, *, report: ReportWriter | None = None) -> dict[str, Any]:
    """Run one configuration; returns the headline metrics (the sweep objective) and the
    process ``exit_code`` (:mod:`eqa_runner.run.stop`). ``report(run_dir)`` writes the HTML
    report handed to the experiment trackers (``logger=…``) at the end.

    Every check that can refuse the start runs before anything is written to the run dir
    (docs/reliability.md): secrets, values, choices, selection, data, credentials, prices,
    the run dir and cache dir, the recorded config; then the dir is labelled and episodes run.
    """
    container = _screened_container(cfg)
    parts = build_components(cfg)
    trackers = [] if cfg.run.dry_run else build_trackers(cfg)
    episodes = select_episodes(parts.task.load_episodes(), cfg.run, cfg.task)
    check_prompts_dir(cfg)
    parts.judge.check_inputs(parts.task.name, parts.task.describe())  # e.g. a blind run it reads
    if cfg.run.dry_run:
        return {**dry_run(cfg, parts, episodes), "exit_code": EXIT_OK}
    if cfg.task.get("check_data", True):
        _check_data(parts, episodes)
    out_dir = resolve_output_dir(cfg)
    check_writable_dir(out_dir, key=_dir_key(cfg))
    check_cache_dir(cfg)
    prompts = {**parts.policy.prompts(cfg.prompts.dir), **parts.judge.prompts(cfg.prompts.dir)}
    inputs = run_inputs(cfg, parts, prompts)
    jsonl = out_dir / EPISODES_FILE
    same = {"has_records": jsonl.is_file() and jsonl.stat().st_size > 0,
            "adopt": bool(cfg.run.get("adopt"))}  # fmt: skip
    check_same_config(out_dir, container, inputs, **same)  # before anything is written
    _existing_records(cfg, jsonl)  # refused unless resuming
    models = (cfg.llm.model, parts.judge.llm_overrides.get("model"))
    warm = _load_litellm_and_versions if any(str(m) != "offline" for m in models) else versions
    threading.Thread(target=warm, daemon=True).start()  # overlap the slow import, the metadata
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunDirError(os_error_line(out_dir, e, f"pick another {_dir_key(cfg)}")) from None
    lock_file = out_dir / LOCK_FILE
    had_lock_file = lock_file.exists()
    try:
        with RunLock(out_dir):  # before the slower checks: a second process is refused at once
            check_same_config(out_dir, container, inputs, **same)  # again under the lock
            salt = {name: str(p["sha256"]) for name, p in prompts.items()}
            clients = llm_clients(cfg, parts.judge, salt)
            cap = CostCap.from_cfg(cfg, parts, clients) if cfg.run.get("max_cost_usd") else None
            try:
                label_run_dir(out_dir, cfg, container, inputs, adopted=same["has_records"])
            except OSError as e:
                raise RunDirError(
                    os_error_line(out_dir, e, "free space or fix permissions")
                ) from None
            release_run_log(keep=True)
            if not trackers:
                return _run_locked(cfg, parts, episodes, out_dir, prompts, clients, cap)
            return _tracked(cfg, parts, episodes, out_dir, prompts, clients, cap, trackers,
                            report)  # fmt: skip
    except UserError:
        if not had_lock_file and not (out_dir / PROVENANCE_FILE).exists():
            lock_file.unlink(missing_ok=True)  # a refused start leaves the dir as it was
        raise


def _load_litellm_and_versions() -> None:
    from eqa_runner.llm import load_litellm

    load_litellm()
    versions()


def _screened_container(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data, refused when it holds a secret or a value its schema forbids
    (a sweep job's own values; a single run's were checked before)."""
    container = config_container(cfg)
    refusal = screen_values(container)
    if refusal:
        raise ConfigSecretError(refusal)
    check_config(cfg)
    return container


def _tracked(
    cfg: DictConfig,
    parts: Components,
    episodes: list[Episode],
    out_dir: Path,
    prompts: dict[str, dict[str, object]],
    clients: tuple[LLMClient, LLMClient],
    cap: CostCap | None,
    trackers: list[Tracker],
    report: ReportWriter | None,
) -> dict[str, Any]:
    """:func:`_run_locked` with the trackers fed: start, live metrics, the end events."""
    stamp = reproducibility_stamp(
        config=config_container(cfg), task_info=parts.task.describe(), prompts=prompts,
        judge_model=clients[1].model,
    )  # fmt: skip
    hub = TrackerHub(trackers)
    hub.start(run_info(cfg, out_dir, stamp))
    status, result = "FAILED", cast(dict[str, Any], {})
    try:
        result = _run_locked(cfg, parts, episodes, out_dir, prompts, clients, cap, hub)
        status = "KILLED" if result.get("exit_code", 0) >= 128 else "FINISHED"
        return result
    finally:
        records = list(final_records(read_records(out_dir / EPISODES_FILE)).values())
        finish_tracking(hub, out_dir, result, records, status, report)


def run_inputs(
    cfg: DictConfig, parts: Components, prompts: dict[str, dict[str, object]]
) -> dict[str, dict[str, str]]:
    """Content hashes of what produced the records: the task's data files, the prompt files and
    the judge's inputs (a blind run's records)."""
    blind = cfg.judge.get("blind_run_dir")
    judge_files = [Path(str(blind)) / EPISODES_FILE] if blind else []
    files = {
        k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("policy", "judge") if k in cfg
    }
    return input_hashes(parts.task.describe(), prompts, judge_files, config=files)


def _dir_key(cfg: DictConfig) -> str:
    return "run.output_dir" if cfg.run.get("output_dir") else "hydra.run.dir"


def _check_data(parts: Components, episodes: Sequence[Episode]) -> None:
    problems = parts.task.check(episodes)
    if problems:
        shown = "\n  ".join(problems[:10])
        more = f"\n  … and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise DataError(
            f"{len(problems)} data problem(s) for the selected episodes:\n  "
            f"{shown}{more}\nStage the data (`python -m eqa_runner.data check "
            f"...`) or pass task.check_data=false to record them as errors."
        )


def _existing_records(cfg: DictConfig, jsonl: Path) -> dict[str, EpisodeRecord]:
    """The final records already in the run dir; refused unless resuming (or SLURM requeued)."""
    existing = read_records(jsonl)
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
    if existing and not cfg.run.resume and restarts.isdigit() and int(restarts) >= 1:
        # SLURM requeued this job (preemption / time limit): same config, same run dir.
        log.warning(
            "requeued SLURM job (SLURM_RESTART_COUNT=%s): auto-resuming %s (%d records)",
            restarts,
            jsonl,
            len(existing),
        )
    elif cfg.run.resume and not existing:
        log.warning(
            "run.resume=true, but %s holds no records yet: starting a fresh run there "
            "(check hydra.run.dir if you meant to continue another run)",
            jsonl.parent,
        )
    elif existing and not cfg.run.resume:
        raise RunDirError(
            f"{jsonl} already holds {len(existing)} records; pass run.resume=true "
            "to continue this run, or choose a new hydra.run.dir."
        )
    return final_records(existing)


def _run_locked(
    cfg: DictConfig,
    parts: Components,
    episodes: list[Episode],
    out_dir: Path,
    prompts: dict[str, dict[str, object]],
    clients: tuple[LLMClient, LLMClient],
    cap: CostCap | None,
    hub: TrackerHub | None = None,
) -> dict[str, Any]:
    """Run the episodes without an ok record, write the summary, say how the run ended."""
    jsonl = out_dir / EPISODES_FILE
    all_lines = read_records(jsonl)
    final = final_records(all_lines)
    done = {eid for eid, r in final.items() if r["status"] == "ok"}
    todo = [e for e in episodes if e.episode_id not in done]
    n_done = len(episodes) - len(todo)
    log.info("%d episodes selected, %d already ok, %d to run -> %s",
             len(episodes), n_done, len(todo), out_dir)  # fmt: skip
    progress = [
        v
        for r in final.values()
        if r["status"] == "ok" and r["judge_ok"]
        and (v := parts.judge.progress_value(r["metrics"])) is not None
    ]  # fmt: skip
    if cap is not None:
        cap.spent = sum(float(r["usage"]["cost_usd"] or 0.0) for r in all_lines)
    stopper = Stopper()
    # the run's signal handling lasts to its exit line: closing the resources and writing the
    # summary take time too, and Python's default would kill silently (SIGTERM) or raise
    with signals_stop(stopper, out_dir):
        with ExitStack() as stack:  # unwound in reverse: writer, policy, pool, simulator
            ctx = _context(stack, cfg, parts, episodes, out_dir, prompts, clients)
            ex = Execution(stack.enter_context(RecordWriter(jsonl)), stopper, cap, hub)
            asyncio.run(execute(ctx, todo, ex, (sum(progress), len(progress))))
        if ex.write_error:  # e.g. a full disk: what was written stays, the rest runs on resume
            _stop_on_write_error(ctx, jsonl, ex.write_error[0])
        result = _try_summary(ctx)
        return {**result, "exit_code": _exit_code(result, stopper, cap, out_dir, len(episodes))}


def _context(
    stack: ExitStack,
    cfg: DictConfig,
    parts: Components,
    episodes: list[Episode],
    out_dir: Path,
    prompts: dict[str, dict[str, object]],
    clients: tuple[LLMClient, LLMClient],
) -> RunContext:
    """The run's shared state; the simulator, the CPU pool and the policy's resources are
    opened on ``stack`` (closed in reverse)."""
    sim = build_sim(cfg) if parts.policy.needs_sim else None
    if sim is not None:
        stack.callback(sim.close)
    pool = stack.enter_context(ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)))
    ctx = RunContext(cfg=cfg, parts=parts, episodes=episodes, out_dir=out_dir, prompts=prompts,
                     policy_llm=clients[0], judge_llm=clients[1],
                     settings=EpisodeSettings.from_cfg(cfg), executor=pool, sim=sim,
                     scene_maps=_scene_maps(cfg, sim))  # fmt: skip
    stack.enter_context(parts.policy.opened(ctx.policy_resources()))
    return ctx


def _stop_on_write_error(ctx: RunContext, jsonl: Path, e: OSError) -> None:
    """A record could not be written: a partial summary if it fits, the resume line, and the
    records' write error as the one-line error."""
    try:
        _try_summary(ctx)
    except RunDirError as summary_error:
        log.warning("partial summary not written: %s", summary_error)
    print(f"[eqa_runner] resume with: {resume_command(ctx.out_dir)}", file=sys.stderr, flush=True)
    raise RunDirError(os_error_line(jsonl, e, "free space (or fix the permissions), then resume"))


def _exit_code(
    result: dict[str, Any], stopper: Stopper, cap: CostCap | None, out_dir: Path, selected: int
) -> int:
    """The process exit code; a stopped run also prints how far it got and its resume line."""
    counts = result.get("counts") or {}
    if not stopper.stopped:
        return EXIT_EPISODES_FAILED if counts.get("error") or counts.get("missing") else EXIT_OK
    code = stopper.exit_code
    at_cap = cap is not None and code == EXIT_COST_CAP
    keys = {"run.max_cost_usd": f"{cap.suggest():.2f}"} if cap is not None and at_cap else None
    why = stopper.reason or "stopped"
    if cap is not None and at_cap:
        why += f" (spent ${cap.spent:.4f} of ${cap.cap:.2f})"
    line = (
        f"[eqa_runner] {why}: {counts.get('recorded', '?')}/{selected} episodes recorded; "
        f"resume with: {resume_command(out_dir, set_keys=keys)}"
    )
    print(line, file=sys.stderr, flush=True)
    return code


def _scene_maps(cfg: DictConfig, sim: Any) -> Any:
    """The run's navigable-map cache for trajectory maps (None: no simulator or maps off)."""
    if sim is None or not cfg.run.get("trajectory_maps", True):
        return None
    from eqa_runner.mapping.trajectory import SceneMaps

    return SceneMaps()


def _try_summary(ctx: RunContext) -> dict[str, Any]:
    try:
        return write_summary(ctx.summary_inputs())
    except OSError as e:
        raise RunDirError(
            os_error_line(ctx.out_dir, e, "free space or fix permissions, then resume")
        ) from None
