"""The run loop: select episodes → policy → judge → one JSONL line each → summary.json.

The start: :mod:`~eqa_runner.run.start` (every check that can refuse it, in one list) fills a
:class:`~eqa_runner.run.plan.RunPlan`; :func:`execute` runs it. The pieces:
:mod:`~eqa_runner.run.build` (components, simulator, model clients from the config),
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig

from eqa_runner.errors import RunDirError, UserError, os_error_line
from eqa_runner.llm import LLMClient
from eqa_runner.records import (
    EPISODES_FILE,
    LOCK_FILE,
    RecordWriter,
    RunLock,
    final_records,
    read_records,
)
from eqa_runner.run.build import build, build_sim
from eqa_runner.run.context import EpisodeSettings, RunContext
from eqa_runner.run.cost_cap import CostCap
from eqa_runner.run.dry_run import dry_run
from eqa_runner.run.execute import Execution, run_episodes
from eqa_runner.run.plan import RunPlan
from eqa_runner.run.provenance import PROVENANCE_FILE
from eqa_runner.run.rundir import label_run_dir, release_run_log
from eqa_runner.run.stamp import reproducibility_stamp, versions
from eqa_runner.run.start import LOCKED, prepare, run_checks
from eqa_runner.run.stop import (
    EXIT_COST_CAP,
    EXIT_EPISODES_FAILED,
    EXIT_OK,
    Stopper,
    resume_command,
    signals_stop,
)
from eqa_runner.run.summary import SummaryInputs, models_of, write_summary
from eqa_runner.run.tracking import ReportWriter, run_info
from eqa_runner.run.tracking import finish as finish_tracking
from eqa_runner.trackers.hub import TrackerHub

__all__ = ["build", "run"]

log = logging.getLogger(__name__)


def run(cfg: DictConfig, *, report: ReportWriter | None = None) -> dict[str, Any]:
    """Run one configuration; returns the headline metrics (the sweep objective) and the
    process ``exit_code`` (:mod:`eqa_runner.run.stop`). ``report(run_dir)`` writes the HTML
    report handed to the experiment trackers (``logger=…``) at the end.

    Every check that can refuse the start runs before anything is written to the run dir: the
    list is :data:`eqa_runner.run.start.START` (docs/reliability.md)."""
    return execute(prepare(cfg), report=report)


def execute(plan: RunPlan, *, report: ReportWriter | None = None) -> dict[str, Any]:
    """Run a checked plan: a dry run's estimate; else make and lock the run dir, run the
    checks that need the lock (:data:`eqa_runner.run.start.LOCKED`), label the dir, run."""
    if plan.run.dry_run:
        return {**dry_run(plan), "exit_code": EXIT_OK}
    out_dir = plan.out_dir
    warm: Callable[[], object] = versions
    if any(m != "offline" for m in (plan.llm.model, plan.judge_model)):
        warm = _load_litellm_and_versions
    threading.Thread(target=warm, daemon=True).start()  # overlap the slow import, the metadata
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunDirError(os_error_line(out_dir, e, f"pick another {plan.dir_key}")) from None
    lock_file = out_dir / LOCK_FILE
    had_lock_file = lock_file.exists()
    try:
        with RunLock(out_dir):  # before the slower checks: a second process is refused at once
            run_checks(plan, LOCKED)
            try:
                label_run_dir(
                    out_dir, plan.cfg, plan.container, plan.inputs, adopted=plan.has_records
                )
            except OSError as e:
                raise RunDirError(
                    os_error_line(out_dir, e, "free space or fix permissions")
                ) from None
            release_run_log(keep=True)
            if not plan.trackers:
                return _run_locked(plan)
            return _tracked(plan, report)
    except UserError:
        if not had_lock_file and not (out_dir / PROVENANCE_FILE).exists():
            lock_file.unlink(missing_ok=True)  # a refused start leaves the dir as it was
        raise


def _load_litellm_and_versions() -> None:
    from eqa_runner.llm import load_litellm

    load_litellm()
    versions()


def _tracked(plan: RunPlan, report: ReportWriter | None) -> dict[str, Any]:
    """:func:`_run_locked` with the trackers fed: start, live metrics, the end events."""
    stamp = reproducibility_stamp(
        config=plan.container,
        task_info=plan.task_info,
        prompts=plan.prompts,
        judge_model=_clients(plan)[1].model,
    )
    hub = TrackerHub(plan.trackers)
    hub.start(run_info(plan.cfg, plan.out_dir, stamp))
    status, result = "FAILED", cast(dict[str, Any], {})
    try:
        result = _run_locked(plan, hub)
        status = "KILLED" if result.get("exit_code", 0) >= 128 else "FINISHED"
        return result
    finally:
        records = list(final_records(read_records(plan.out_dir / EPISODES_FILE)).values())
        finish_tracking(hub, plan.out_dir, result, records, status, report)


def _clients(plan: RunPlan) -> tuple[LLMClient, LLMClient]:
    assert plan.clients is not None, "made by the credentials check"
    return plan.clients


def _run_locked(plan: RunPlan, hub: TrackerHub | None = None) -> dict[str, Any]:
    """Run the episodes without an ok record, write the summary, say how the run ended."""
    out_dir, episodes, parts, cap = plan.out_dir, plan.episodes, plan.parts, plan.cap
    jsonl = out_dir / EPISODES_FILE
    all_lines = read_records(jsonl)  # under the lock: what this session resumes from
    final = final_records(all_lines)
    done = {eid for eid, r in final.items() if r["status"] == "ok"}
    todo = [e for e in episodes if e.episode_id not in done]
    n_done = len(episodes) - len(todo)
    log.info(
        "%d episodes selected, %d already ok, %d to run -> %s",
        len(episodes),
        n_done,
        len(todo),
        out_dir,
    )
    progress = [
        v
        for r in final.values()
        if r["status"] == "ok"
        and r["judge_ok"]
        and (v := parts.judge.progress_value(r["metrics"])) is not None
    ]
    if cap is not None:
        cap.spent = sum(float(r["usage"]["cost_usd"] or 0.0) for r in all_lines)
    stopper = Stopper()
    # the run's signal handling lasts to its exit line: closing the resources and writing the
    # summary take time too, and Python's default would kill silently (SIGTERM) or raise
    with signals_stop(stopper, out_dir):
        with ExitStack() as stack:  # unwound in reverse: writer, policy, pool, simulator
            ctx = _context(stack, plan)
            ex = Execution(stack.enter_context(RecordWriter(jsonl)), stopper, cap, hub)
            asyncio.run(run_episodes(ctx, todo, ex, (sum(progress), len(progress))))
        if ex.write_error:  # e.g. a full disk: what was written stays, the rest runs on resume
            _stop_on_write_error(ctx, jsonl, ex.write_error[0])
        result = _try_summary(ctx)
        return {**result, "exit_code": _exit_code(result, stopper, cap, out_dir, len(episodes))}


def _context(stack: ExitStack, plan: RunPlan) -> RunContext:
    """The run's shared state, from its plan; the simulator, the CPU pool and the policy's
    resources are opened on ``stack`` (closed in reverse)."""
    parts = plan.parts
    sim = build_sim(plan.cfg) if parts.policy.needs_sim else None
    if sim is not None:
        stack.callback(sim.close)
    pool = stack.enter_context(ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)))
    policy_llm, judge_llm = _clients(plan)
    summary = SummaryInputs(
        config=plan.container,
        run=plan.run,
        models=models_of(plan.cfg, parts.judge),
        task_info=plan.task_info,
        policy_name=parts.policy.name,
        judge=parts.judge,
        episode_ids=[e.episode_id for e in plan.episodes],
        out_dir=plan.out_dir,
        prompts=plan.prompts,
    )
    maps = None
    if sim is not None and plan.run.trajectory_maps:  # the navigable-map cache of the maps
        from eqa_runner.mapping.trajectory import SceneMaps

        maps = SceneMaps()
    ctx = RunContext(
        run=plan.run,
        parts=parts,
        episodes=plan.episodes,
        out_dir=plan.out_dir,
        prompts=plan.prompts,
        policy_llm=policy_llm,
        judge_llm=judge_llm,
        settings=EpisodeSettings.of(plan.run, plan.prompts_dir),
        summary=summary,
        executor=pool,
        sim=sim,
        scene_maps=maps,
    )
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


def _try_summary(ctx: RunContext) -> dict[str, Any]:
    try:
        return write_summary(ctx.summary)
    except OSError as e:
        raise RunDirError(
            os_error_line(ctx.out_dir, e, "free space or fix permissions, then resume")
        ) from None
