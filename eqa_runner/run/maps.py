"""An episode's pictures at its end: the trajectory map and, with saved artifacts, the replay.

Both are drawn from the record's trace (:mod:`eqa_runner.mapping.trajectory`) on the CPU pool;
a picture that cannot be drawn or written is logged and skipped, never the episode's failure.
"""

from __future__ import annotations

import logging
import time

from eqa_runner.policies.context import EpisodeContext
from eqa_runner.records import artifact_name
from eqa_runner.types import EpisodeRecord

log = logging.getLogger(__name__)
MAPS_DIR = "maps"


def _draw(rec: EpisodeRecord, ctx: EpisodeContext) -> dict[str, str]:
    from eqa_runner.mapping.replay import save_replay
    from eqa_runner.mapping.trajectory import save_trajectory

    assert ctx.scene_map is not None and ctx.run_dir is not None
    name = artifact_name(rec["episode_id"])
    out: dict[str, str] = {}
    png = save_trajectory(ctx.scene_map, rec["trace"], ctx.run_dir / MAPS_DIR / f"{name}.png")
    out["trajectory_map"] = png.relative_to(ctx.run_dir).as_posix()
    if ctx.artifacts_dir is not None:
        webp = save_replay(ctx.scene_map, rec["trace"], ctx.artifacts_dir)
        if webp is not None:
            out["replay"] = webp.relative_to(ctx.run_dir).as_posix()
    return out


async def draw_episode_maps(rec: EpisodeRecord, ctx: EpisodeContext) -> None:
    """Add ``trace.trajectory_map`` (and ``trace.replay``) and ``timings.map_s`` to ``rec``."""
    t0 = time.perf_counter()
    try:
        rec["trace"].update(await ctx.run_cpu(_draw, rec, ctx))
    except Exception as e:  # noqa: BLE001 - a picture never fails the episode
        log.warning(
            "episode %s: no trajectory map (%s: %s)", rec["episode_id"], type(e).__name__, e
        )
    rec["timings"]["map_s"] = round(time.perf_counter() - t0, 4)
