"""The pictures of an episode's row in the report: its trajectory map with the caption, the step
strip, the replay and the frontier planner's top-down maps, each read through the run-dir
confinement (:func:`eqa_runner.safe_io.confine`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqa_runner.report.figures import Thumbs, file_uri
from eqa_runner.safe_io import confine


@dataclass
class Image:
    uri: str
    alt: str
    title: str


MAX_TOPDOWN = 12  # top-down maps shown per episode (a long episode has one per step)


def episode_media(
    trace: dict[str, Any], run_dir: Path, thumbs: Thumbs, episode_id: str | None = None
) -> dict[str, Any]:
    """The trajectory map, the step strip, the replay and the frontier policies' top-down maps
    (``trace.topdown_maps`` in ``artifacts/<episode>/``) of one episode (when recorded)."""
    out: dict[str, Any] = {}
    for key in ("trajectory_map", "topdown"):
        path = confine(trace[key], run_dir, what=f"trace.{key}") if trace.get(key) else None
        uri = file_uri(path, "image/png") if path else None
        if uri:
            from eqa_runner.mapping.trajectory import caption

            out["map"] = Image(uri, "trajectory map", str(trace[key]))
            out["map_caption"] = caption(trace)
            break
    if trace.get("topdown_maps") and episode_id is not None:
        from eqa_runner.records import artifact_name

        art = run_dir / "artifacts" / artifact_name(episode_id)
        names = list(trace["topdown_maps"])  # at most MAX_TOPDOWN, evenly spaced, the last kept
        k = min(MAX_TOPDOWN, len(names))
        picked = sorted({round(i * (len(names) - 1) / max(1, k - 1)) for i in range(k)})
        inside = {
            i: confine(art / str(names[i]), run_dir, what="trace.topdown_maps")
            for i in {*picked, len(names) - 1}
        }
        maps = [(names[i], thumbs(q)) for i in picked if (q := inside[i]) is not None]
        out["topdown"] = [Image(uri, "top-down map", str(n)) for n, uri in maps if uri]
        final = inside[len(names) - 1]
        last = file_uri(final, "image/png") if final else None
        if "map" not in out and last:  # the final map stands in for a trajectory map
            out["map"] = Image(last, "top-down map", str(trace["topdown_maps"][-1]))
    replay = confine(trace["replay"], run_dir, what="trace.replay") if trace.get("replay") else None
    if replay is not None:
        out["replay"] = file_uri(replay, "image/webp")
        strip = []
        for step in trace.get("steps") or []:
            p = replay.parent / f"step_{int(step.get('step', 0)):03d}.png"
            uri = thumbs.small(p)
            if uri:
                strip.append(Image(uri, p.name, f"step {step.get('step')}"))
        out["strip"] = strip
    return out
