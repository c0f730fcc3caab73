"""One episode end to end: policy → judge → one :class:`EpisodeRecord` (never raises)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import traceback

import numpy as np

from eqa_runner.llm import track_usage
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.records import artifact_name, new_record
from eqa_runner.run.context import RunContext
from eqa_runner.run.maps import draw_episode_maps
from eqa_runner.timing import OFF, PartTimes
from eqa_runner.types import Episode, EpisodeRecord, ErrorInfo

log = logging.getLogger(__name__)


def episode_seed(run_seed: int, episode_id: str) -> int:
    return int(hashlib.sha256(f"{run_seed}:{episode_id}".encode()).hexdigest()[:8], 16)


def error_info(exc: BaseException, stage: str) -> ErrorInfo:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f"{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else None
    msg = str(exc) or repr(exc)
    if isinstance(exc, asyncio.TimeoutError):
        msg = "episode exceeded run.episode_timeout_s"
    return {"type": type(exc).__name__, "message": msg[:2000], "stage": stage, "where": where}


def episode_context(ep: Episode, run: RunContext) -> EpisodeContext:
    """What the policy gets for one episode: seeded RNG, model, CPU pool, artifacts dir."""
    s = run.settings
    seed = episode_seed(s.seed, ep.episode_id)
    art = run.out_dir / "artifacts" / artifact_name(ep.episode_id) if s.save_artifacts else None
    return EpisodeContext(
        llm=run.policy_llm,
        rng=np.random.default_rng(seed),
        seed=seed,
        executor=run.executor,
        task=run.task,
        prompts_dir=s.prompts_dir,
        artifacts_dir=art,
        run_dir=run.out_dir,
        scene_maps=run.scene_maps,
        times=PartTimes(True) if s.profile else OFF,
    )


async def run_episode(ep: Episode, run: RunContext) -> EpisodeRecord:
    """Run one episode end to end; never raises (failures become an error record)."""
    rec = new_record(ep, run.task.subset_of(ep))
    ctx = episode_context(ep, run)
    stage = "policy"
    t0 = time.perf_counter()
    with track_usage() as usage:
        try:

            async def _both() -> None:
                nonlocal stage
                pred = await run.policy.predict(ep, ctx)
                rec["prediction"], rec["trace"] = pred.answer, pred.trace
                rec["timings"]["policy_s"] = time.perf_counter() - t0
                if ctx.scene_map is not None:
                    await draw_episode_maps(rec, ctx)
                stage = "judge"
                t1 = time.perf_counter()
                score = await run.judge.score(ep, pred, run.judge_llm, run.settings.prompts_dir)
                rec["timings"]["judge_s"] = time.perf_counter() - t1
                rec.update(
                    {
                        "judge_raw": score.raw,
                        "judge_ok": score.ok,
                        "metrics": dict(score.metrics),
                        "status": "ok",
                    }
                )

            await asyncio.wait_for(_both(), timeout=run.settings.episode_timeout_s)
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            rec["status"] = "error"
            rec["error"] = err = error_info(exc, stage)
            log.warning(
                "episode %s failed in %s: %s: %s",
                ep.episode_id,
                stage,
                type(exc).__name__,
                err["message"][:300],
            )
    rec["timings"]["total_s"] = time.perf_counter() - t0
    rec["usage"] = usage.as_dict()
    return rec
