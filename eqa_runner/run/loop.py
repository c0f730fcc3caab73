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
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from eqa_runner.errors import DataError, RunDirError
from eqa_runner.records import EPISODES_FILE, RecordWriter, RunLock, final_records, read_records
from eqa_runner.run.build import (
    build,
    build_components,
    build_sim,
    llm_clients,
    resolve_output_dir,
)
from eqa_runner.run.context import Components, EpisodeSettings, RunContext
from eqa_runner.run.dry_run import dry_run
from eqa_runner.run.episode import run_episode
from eqa_runner.run.selection import select_episodes
from eqa_runner.run.summary import write_summary
from eqa_runner.types import Episode, EpisodeRecord

__all__ = ["build", "run"]

log = logging.getLogger(__name__)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Run one configuration; returns the headline metrics (the sweep objective)."""
    parts = build_components(cfg)
    episodes = select_episodes(parts.task.load_episodes(), cfg.run)
    if cfg.run.dry_run:
        return dry_run(cfg, parts, episodes)
    if cfg.task.get("check_data", True):
        _check_data(parts, episodes)
    out_dir = resolve_output_dir(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    if any(str(m) != "offline" for m in (cfg.llm.model, parts.judge.llm_overrides.get("model"))):
        from eqa_runner.llm import load_litellm

        threading.Thread(target=load_litellm, daemon=True).start()  # overlap the slow import
    with RunLock(out_dir):
        return _run_locked(cfg, parts, episodes, out_dir)


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
    elif existing and not cfg.run.resume:
        raise RunDirError(
            f"{jsonl} already holds {len(existing)} records; pass run.resume=true "
            "to continue this run, or choose a new hydra.run.dir."
        )
    return final_records(existing)


def _run_locked(
    cfg: DictConfig, parts: Components, episodes: list[Episode], out_dir: Path
) -> dict[str, Any]:
    jsonl = out_dir / EPISODES_FILE
    final = _existing_records(cfg, jsonl)
    done = {eid for eid, r in final.items() if r["status"] == "ok"}
    todo = [e for e in episodes if e.episode_id not in done]
    prompts = {**parts.policy.prompts(cfg.prompts.dir), **parts.judge.prompts(cfg.prompts.dir)}
    salt = {name: str(p["sha256"]) for name, p in prompts.items()}
    policy_llm, judge_llm = llm_clients(cfg, parts.judge, salt)
    log.info(
        "%d episodes selected, %d already ok, %d to run -> %s",
        len(episodes),
        len(episodes) - len(todo),
        len(todo),
        out_dir,
    )
    progress = [
        v
        for r in final.values()
        if r["status"] == "ok" and r["judge_ok"]
        and (v := parts.judge.progress_value(r["metrics"])) is not None
    ]  # fmt: skip
    with ExitStack() as stack:  # unwound in reverse: writer, policy, pool, simulator
        sim = build_sim(cfg) if parts.policy.needs_sim else None
        if sim is not None:
            stack.callback(sim.close)
        pool = stack.enter_context(
            ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2))
        )
        ctx = RunContext(
            cfg=cfg,
            parts=parts,
            episodes=episodes,
            out_dir=out_dir,
            prompts=prompts,
            policy_llm=policy_llm,
            judge_llm=judge_llm,
            settings=EpisodeSettings.from_cfg(cfg),
            executor=pool,
            sim=sim,
        )
        stack.enter_context(parts.policy.opened(ctx.policy_resources()))
        writer = stack.enter_context(RecordWriter(jsonl))
        asyncio.run(_execute(ctx, todo, writer, (sum(progress), len(progress))))
    return write_summary(ctx.summary_inputs())


async def _execute(
    ctx: RunContext, todo: list[Episode], writer: RecordWriter, progress: tuple[float, int]
) -> None:
    """Run ``todo`` with ``run.workers`` episodes at a time; one record each, a progress bar."""
    from tqdm import tqdm

    sem = asyncio.Semaphore(ctx.workers)
    already = len(ctx.episodes) - len(todo)
    counts = {"ok": already, "err": 0}
    running_sum, running_n = progress  # the progress-bar metric, kept incrementally
    bar = tqdm(
        total=len(ctx.episodes),
        initial=already,
        disable=not ctx.cfg.run.progress,
        dynamic_ncols=True,
        desc=f"{ctx.task.name}/{ctx.policy.name}",
        mininterval=0.5,
    )

    async def one(ep: Episode) -> None:
        async with sem:
            rec = await run_episode(ep, ctx)
        writer.write(rec)
        counts["ok" if rec["status"] == "ok" else "err"] += 1
        nonlocal running_sum, running_n
        if rec["status"] == "ok" and rec["judge_ok"]:
            v = ctx.judge.progress_value(rec["metrics"])
            if v is not None:
                running_sum, running_n = running_sum + v, running_n + 1
        m = 100.0 * running_sum / running_n if running_n else None
        bar.set_postfix_str(
            f"ok={counts['ok']} err={counts['err']} "
            f"{ctx.judge.headline}={'-' if m is None else f'{m:.1f}'}",
            refresh=False,
        )
        bar.update(1)

    try:
        await asyncio.gather(*(one(e) for e in todo))
    finally:
        bar.close()
