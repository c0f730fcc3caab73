"""Per-step part timings of the exploration loop (``run.profile=true``).

A :class:`PartTimes` collects wall seconds per named part (``render``, ``fuse``, ``plan``,
``encode``, ``prompt``, ``model`` …) of one episode's current step; the loop takes them into
the step's trace entry (``trace.steps[i].profile``) and starts the next step afresh. Disabled
(the default, :data:`OFF`) it does nothing: :meth:`PartTimes.part` returns one shared
``nullcontext`` and :meth:`PartTimes.add` returns at once, so the hooks cost a method call.

Each episode has its own instance; its parts run one after another (on the event loop, the
simulator thread or the CPU pool, each awaited), so no lock is needed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager

_NULL: AbstractContextManager[None] = contextlib.nullcontext()


class PartTimes:
    """Seconds per part since the last :meth:`take`, wall and CPU (nothing unless ``enabled``).

    CPU is the process's (``time.process_time``: every thread, native ones included), so it
    belongs to the episode only with ``run.workers=1``; wall time is always the episode's.
    """

    __slots__ = ("enabled", "wall", "cpu")

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def part(self, name: str) -> AbstractContextManager[None]:
        """``with times.part("render"): ...`` adds the block's time to ``name``."""
        return self._timed(name) if self.enabled else _NULL

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0, time.process_time() - c0)

    @contextlib.contextmanager
    def span(self, name: str) -> Iterator[None]:
        """``name`` gets the block's time minus the other parts timed inside it (e.g. the model
        calls of a step, awaited together, minus their prompt building). Nested spans of the
        same name add up to the outer block's time minus the other parts."""
        if not self.enabled:
            yield
            return
        t0, c0 = time.perf_counter(), time.process_time()
        w0, k0 = sum(self.wall.values()), sum(self.cpu.values())
        try:
            yield
        finally:
            wall = time.perf_counter() - t0 - (sum(self.wall.values()) - w0)
            cpu = time.process_time() - c0 - (sum(self.cpu.values()) - k0)
            self.add(name, max(wall, 0.0), max(cpu, 0.0))

    def add(self, name: str, wall: float, cpu: float = 0.0) -> None:
        if self.enabled:
            self.wall[name] = self.wall.get(name, 0.0) + wall
            self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    def merge(self, parts: dict[str, dict[str, float]]) -> None:
        """Add back what :meth:`take` returned (e.g. an episode's set-up after its steps)."""
        for name, wall in parts["wall"].items():
            self.add(name, wall, parts["cpu"].get(name, 0.0))

    def take(self) -> dict[str, dict[str, float]]:
        """``{"wall": {part: s}, "cpu": {part: s}}`` so far (rounded to 10 µs); start afresh."""
        out = {
            "wall": {k: round(v, 5) for k, v in self.wall.items()},
            "cpu": {k: round(v, 5) for k, v in self.cpu.items()},
        }
        self.wall, self.cpu = {}, {}
        return out

    def step(self, started: tuple[float, float]) -> dict[str, dict[str, float]]:
        """:meth:`take` with the whole step since ``started`` (:func:`clock`) as ``step``."""
        out = self.take()
        out["wall"]["step"] = round(time.perf_counter() - started[0], 5)
        out["cpu"]["step"] = round(time.process_time() - started[1], 5)
        return out


def clock() -> tuple[float, float]:
    """(wall, process CPU) now, for :meth:`PartTimes.step`."""
    return time.perf_counter(), time.process_time()


OFF = PartTimes(False)  # the shared disabled instance (the default everywhere)
