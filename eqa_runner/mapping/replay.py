"""An episode's replay: its saved step frames beside the trajectory map, as animated WebP.

Written with Pillow's WebP encoder (libwebp), already a dependency: one frame per recorded
step (``step_NNN.png`` in the episode's artifacts dir), beside the map with the path drawn up to
that step and the agent's position ringed. Only with ``run.save_artifacts=true`` (the frames
exist only then).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from eqa_runner.mapping.trajectory import render_trajectory
from eqa_runner.safe_io import write_atomic
from eqa_runner.sim.base import NavigableMap

REPLAY_FILE = "replay.webp"
FRAME_PX = 224  # height of each replay frame
FRAME_MS = 600  # display time per step


def step_frames(trace: Mapping[str, Any], artifacts_dir: Path) -> list[tuple[dict, Path]]:
    """(step record, its saved frame) for every step whose frame exists, in step order."""
    out = []
    for s in trace.get("steps") or []:
        if isinstance(s, Mapping) and "step" in s:
            p = Path(artifacts_dir) / f"step_{int(s['step']):03d}.png"
            if p.is_file():
                out.append((dict(s), p))
    return out


def _frame(rgb: Image.Image, base: Image.Image, xy: tuple[float, float] | None, label: str):
    """One replay frame: the view (height FRAME_PX), the map beside it with the agent ringed."""
    view = rgb.convert("RGB")
    view = view.resize((max(1, round(view.width * FRAME_PX / view.height)), FRAME_PX))
    m = base.copy()
    if m.height != FRAME_PX:
        k = FRAME_PX / m.height
        m = m.resize((max(1, round(m.width * k)), FRAME_PX), Image.Resampling.NEAREST)
        xy = None if xy is None else (xy[0] * k, xy[1] * k)
    d = ImageDraw.Draw(m)
    if xy is not None:
        r = 7
        d.ellipse([xy[0] - r, xy[1] - r, xy[0] + r, xy[1] + r], outline=(230, 0, 200), width=3)
    out = Image.new("RGB", (view.width + 4 + m.width, FRAME_PX), (255, 255, 255))
    out.paste(view, (0, 0))
    out.paste(m, (view.width + 4, 0))
    ImageDraw.Draw(out).text((4, 3), label, fill=(255, 255, 0))
    return out


def save_replay(nav: NavigableMap, trace: Mapping[str, Any], artifacts_dir: Path) -> Path | None:
    """Write ``<artifacts_dir>/replay.webp``; None when no step frame was saved."""
    frames = step_frames(trace, artifacts_dir)
    if not frames:
        return None
    order = {int(s["step"]): k for k, s in enumerate(trace.get("steps") or []) if "step" in s}
    taken = trace.get("steps_taken", len(order))
    images = []
    for s, path in frames:  # each frame's map: the path so far, the agent at this step
        base, px, _ = render_trajectory(nav, trace, upto=order.get(int(s["step"]), 0))
        pos = s.get("position")
        xy = px(np.asarray(pos, dtype=float)) if pos else None
        with Image.open(path) as im:
            images.append(_frame(im, base, xy, f"step {int(s['step']) + 1} of {taken}"))
    out = Path(artifacts_dir) / REPLAY_FILE
    buf = io.BytesIO()
    images[0].save(
        buf,
        format="WEBP",
        save_all=True,
        append_images=images[1:],
        duration=FRAME_MS,
        loop=0,
        quality=70,
        method=0,
    )
    return write_atomic(out, buf.getvalue())
