"""SIGTERM for a command that runs one asyncio loop (``eqa_runner.rejudge``): it stops as on
Ctrl-C (what is done is kept, the resume line printed); a second SIGTERM exits at once. The
run loop has its own way (:func:`eqa_runner.run.stop.signals_stop`), which also writes a summary.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

from eqa_runner.run.stop import EXIT_SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler, ``kill``) during a rejudge: stops it as Ctrl-C does."""

    signame = "SIGTERM"


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside: the first SIGTERM raises :class:`Terminated` (the rejudge stops, what is
    judged is kept, the resume line printed); a second one exits at once. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
        if seen:
            _exit_at_once()
        seen.append(signum)
        raise Terminated()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_until_signalled(coro: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run(coro)``, where SIGTERM cancels ``coro`` as asyncio's own Ctrl-C handling
    does, then raises :class:`Terminated`. Raised from a plain signal handler instead, it could
    land inside a running task (mid-request), escape as that task's unretrieved exception and
    print a traceback at exit. A second SIGTERM, in the loop or after it, exits at once."""
    hit: list[int] = []

    def on_sigterm(task: asyncio.Task[None]) -> None:
        if hit:
            _exit_at_once()
        hit.append(signal.SIGTERM)
        task.cancel()

    async def guarded() -> None:
        if threading.current_thread() is not threading.main_thread():
            return await coro
        loop, me = asyncio.get_running_loop(), asyncio.current_task()
        assert me is not None  # a coroutine run by asyncio.run is a task
        before = signal.getsignal(signal.SIGTERM)
        loop.add_signal_handler(signal.SIGTERM, on_sigterm, me)
        try:
            await coro
        finally:
            loop.remove_signal_handler(signal.SIGTERM)  # leaves SIG_DFL: put the caller's back
            signal.signal(signal.SIGTERM, (lambda *_: _exit_at_once()) if hit else before)

    try:
        asyncio.run(guarded())
    except asyncio.CancelledError:
        if hit:
            raise Terminated() from None
        raise


def _exit_at_once() -> NoReturn:
    sys.stderr.write("\n[eqa_runner] second signal: exiting at once\n")
    raise SystemExit(EXIT_SIGTERM)
