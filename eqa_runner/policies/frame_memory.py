"""A frame memory for an exploration's answer step: the frames seen, K of them for the VLM.

Every non-black frame of an exploration goes in (the protocol's ``on_frame`` hook), resized as
the frame policies resize a stored episode frame (:func:`eqa_runner.images.encode_frame`: longer
side ``image_size``, never upscaled), so a long exploration keeps small frames only. At the
answer step :meth:`FrameMemory.select` picks K of them:

* ``last`` — the K most recent frames (the decision frame is the last of them);
* ``linspace`` / ``stride`` / ``first_last_middle`` / ``middle`` — K frames spread over the whole
  exploration, by the same index rule the multi-frame policy applies to a recorded episode
  (:func:`select_indices`; ``linspace`` keeps the first and the last).

With ``last`` only the K most recent frames are kept in memory; the other rules keep them all.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from eqa_runner.images import encode_frame, mime_of, resized_size
from eqa_runner.policies.config import STRATEGIES

MEMORY_STRATEGIES = ("last", "linspace", "stride", "first_last_middle", "middle")


def select_indices(n: int, k: int, strategy: str) -> list[int]:
    """Indices of the frames to show, sorted and unique (at most ``n``)."""
    if n <= 0:
        return []
    k = max(1, min(k, n))
    if strategy == "middle":
        idx = [n // 2] if k == 1 else np.round(np.linspace(0, n - 1, k)).astype(int).tolist()
    elif strategy == "linspace":
        idx = np.round(np.linspace(0, n - 1, k)).astype(int).tolist()
    elif strategy == "stride":
        step = max(1, n // k)
        idx = list(range(0, n, step))[:k]
    elif strategy == "first_last_middle":
        anchors = {1: [n // 2], 2: [0, n - 1]}.get(k, [0, n // 2, n - 1])
        chosen = set(anchors)
        while len(chosen) < k:  # k <= n, so a gap of >= 2 exists until k frames are chosen
            pts = sorted(chosen)
            _, a, b = max((b - a, a, b) for a, b in zip(pts, pts[1:], strict=False))
            chosen.add((a + b) // 2)  # fill the widest gap: extra frames spread evenly
        idx = sorted(chosen)
    else:
        raise ValueError(f"policy.strategy={strategy!r}: expected one of {', '.join(STRATEGIES)}")
    return sorted(set(int(i) for i in idx))


@dataclass
class MemoryFrame:
    """One remembered frame: the exploration step it was seen at, and the encoded image."""

    step: int
    data: bytes
    size: tuple[int, int]  # (width, height) as sent


@dataclass
class FrameMemory:
    """The frames of one exploration (see the module docstring)."""

    k: int
    strategy: str = "linspace"
    image_size: int | None = 360
    image_format: str = "png"
    frames: deque[MemoryFrame] = field(default_factory=deque)
    seen: int = 0  # frames offered (the memory may hold fewer with ``last``)

    def __post_init__(self) -> None:
        if self.strategy not in MEMORY_STRATEGIES:
            raise ValueError(
                f"frame memory strategy {self.strategy!r}: expected one of "
                f"{', '.join(MEMORY_STRATEGIES)}"
            )
        if self.k < 1:
            raise ValueError(f"frame memory size {self.k}: must be >= 1")
        if self.strategy == "last":
            self.frames = deque(self.frames, maxlen=self.k)

    @property
    def mime(self) -> str:
        return mime_of(self.image_format)

    def add(self, step: int, rgb: np.ndarray) -> MemoryFrame:
        """Remember the frame seen at ``step`` (resized and encoded now)."""
        data = encode_frame(rgb, self.image_size, self.image_format)
        h, w = rgb.shape[:2]
        frame = MemoryFrame(step, data, resized_size(w, h, self.image_size))
        self.frames.append(frame)
        self.seen += 1
        return frame

    @property
    def latest(self) -> MemoryFrame | None:
        return self.frames[-1] if self.frames else None

    def select(self) -> list[MemoryFrame]:
        """The K frames for the answer step, in the order they were seen."""
        frames = list(self.frames)
        if self.strategy == "last":
            return frames[-self.k :]
        return [frames[i] for i in select_indices(len(frames), self.k, self.strategy)]
