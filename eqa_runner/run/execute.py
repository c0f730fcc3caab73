"""Running the selected episodes: ``run.workers`` at a time, one record each, a progress bar.

Episodes are started one at a time while a worker is free and the run was not stopped (a
signal, the cost cap, a failed write); a stop by signal also cancels the episodes in flight (no
record: they run again on resume). :func:`run_episodes` is called by :mod:`eqa_runner.run.loop`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from eqa_runner.records import RecordWriter
from eqa_runner.run.context import RunContext
from eqa_runner.run.cost_cap import CostCap
from eqa_runner.run.episode import run_episode
from eqa_runner.run.stop import EXIT_COST_CAP, EXIT_USER_ERROR, Stopper
from eqa_runner.run.tracking import live_metrics
from eqa_runner.trackers.hub import TrackerHub
from eqa_runner.types import Episode, EpisodeRecord


@dataclass
class Execution:
    """Where records go and what can stop the run (shared with the loop, which reads
    ``write_error`` and ``stopper`` afterwards)."""

    writer: RecordWriter
    stopper: Stopper
    cap: CostCap | None = None
    hub: TrackerHub | None = None
    write_error: list[OSError] = field(default_factory=list)


class Progress:
    """The progress bar, the running headline metric and the trackers' live metrics."""

    def __init__(
        self, ctx: RunContext, already: int, progress: tuple[float, int], hub: TrackerHub | None
    ) -> None:
        from tqdm import tqdm

        self.ctx, self.hub = ctx, hub
        self.counts = {"ok": already, "err": 0}
        self.total, self.n = progress  # the progress-bar metric, kept incrementally
        self.bar = tqdm(
            total=len(ctx.episodes),
            initial=already,
            disable=not ctx.run.progress,
            dynamic_ncols=True,
            desc=f"{ctx.task.name}/{ctx.policy.name}",
            mininterval=0.5,
        )

    def recorded(self, rec: EpisodeRecord) -> None:
        judge = self.ctx.judge
        self.counts["ok" if rec["status"] == "ok" else "err"] += 1
        if rec["status"] == "ok" and rec["judge_ok"]:
            v = judge.progress_value(rec["metrics"])
            if v is not None:
                self.total, self.n = self.total + v, self.n + 1
        m = 100.0 * self.total / self.n if self.n else None
        self.bar.set_postfix_str(
            f"ok={self.counts['ok']} err={self.counts['err']} "
            f"{judge.headline}={'-' if m is None else f'{m:.1f}'}",
            refresh=False,
        )
        self.bar.update(1)
        if self.hub is not None:  # never blocks: a full queue drops the event
            n = self.counts["ok"] + self.counts["err"]
            self.hub.log_metrics(live_metrics(self.counts, judge.headline, m), step=n)

    def close(self) -> None:
        self.bar.close()


async def run_episodes(
    ctx: RunContext, todo: list[Episode], ex: Execution, progress: tuple[float, int]
) -> None:
    """Run ``todo`` (see the module docstring); ``progress``: the (sum, n) of the headline
    metric over the records already there."""
    ex.stopper.attach(asyncio.get_running_loop())
    sem = asyncio.Semaphore(ctx.workers)
    shown = Progress(ctx, len(ctx.episodes) - len(todo), progress, ex.hub)

    async def one(ep: Episode, estimate: float) -> None:
        try:
            rec = await run_episode(ep, ctx)
        finally:
            sem.release()
            if ex.cap is not None:
                ex.cap.in_flight -= estimate
        if ex.cap is not None:
            ex.cap.finished(float(rec["usage"]["cost_usd"] or 0.0))
        if ex.write_error:
            return
        try:
            ex.writer.write(rec)
        except OSError as e:
            ex.write_error.append(e)
            ex.stopper.stop(f"cannot write {ex.writer.path}", EXIT_USER_ERROR, cancel=True)
            return
        shown.recorded(rec)

    try:
        tasks = await _start(todo, sem, ex, one)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                raise r
    finally:
        shown.close()


async def _start(
    todo: list[Episode],
    sem: asyncio.Semaphore,
    ex: Execution,
    one: Callable[[Episode, float], Coroutine[Any, Any, None]],
) -> list[asyncio.Task[None]]:
    """Start an episode whenever a worker is free, until all started or the run is stopped
    (a stop by signal or a failed write, or the cost cap before the next episode)."""
    tasks: list[asyncio.Task[None]] = []
    for i, ep in enumerate(todo):
        await sem.acquire()
        if ex.stopper.stopped:
            sem.release()
            break
        estimate = 0.0
        if ex.cap is not None:
            estimate = ex.cap.estimate(ep)
            if not ex.cap.may_start(estimate):
                ex.cap.remember_left(todo[i:])
                sem.release()
                ex.stopper.stop("stopped at the cost cap run.max_cost_usd", EXIT_COST_CAP)
                break
            ex.cap.in_flight += estimate
        task = asyncio.create_task(one(ep, estimate))
        ex.stopper.track(task)
        tasks.append(task)
    return tasks
