"""SIGINT and SIGTERM for a command that runs one asyncio loop (``eqa_runner.rejudge``): it stops
as on Ctrl-C (what is done is kept, the resume line printed); a second signal exits at once. The
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

from eqa_runner.run.stop import EXIT_SIGINT, EXIT_SIGTERM


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
    """``asyncio.run(coro)``, where SIGINT or SIGTERM cancels ``coro`` (as asyncio's own Ctrl-C
    handling does), then raises ``KeyboardInterrupt`` or :class:`Terminated`. Raised from a
    plain signal handler instead, it could land inside a running task (mid-request), escape as
    that task's unretrieved exception and print a traceback at exit.

    The signal sticks: the cancel is repeated until ``coro`` ends, and the interrupt is raised
    even when ``coro`` ended normally. Python 3.11's ``asyncio.wait_for`` loses a cancel that
    arrives as its inner call completes (fixed in 3.12), and a lost cancel let the rejudge judge
    on to the end and exit 0 after a Ctrl-C. A second signal, in the loop or after it, exits at
    once."""
    hit: list[int] = []

    def on_signal(signum: int, task: asyncio.Task[None]) -> None:
        if hit:
            _exit_at_once(signum)
        hit.append(signum)
        _cancel_until_done(task)

    async def guarded() -> None:
        if threading.current_thread() is not threading.main_thread():
            return await coro
        loop, me = asyncio.get_running_loop(), asyncio.current_task()
        assert me is not None  # a coroutine run by asyncio.run is a task
        before = {s: signal.getsignal(s) for s in STOPPING}
        for s in STOPPING:
            loop.add_signal_handler(s, on_signal, s, me)
        try:
            await coro
        finally:
            for s in STOPPING:  # removing leaves SIG_DFL: put the caller's back
                loop.remove_signal_handler(s)
                signal.signal(s, (lambda n, _f: _exit_at_once(n)) if hit else before[s])

    try:
        asyncio.run(guarded())
    except asyncio.CancelledError:
        if hit:
            raise _interrupt(hit[0]) from None
        raise
    if hit:  # every cancel was lost: the coroutine ran to its end
        raise _interrupt(hit[0])


STOPPING = (signal.SIGINT, signal.SIGTERM)


def _cancel_until_done(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
        asyncio.get_running_loop().call_later(0.05, _cancel_until_done, task)


def _interrupt(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _exit_at_once(signum: int = signal.SIGTERM) -> NoReturn:
    sys.stderr.write("\n[eqa_runner] second signal: exiting at once\n")
    raise SystemExit(EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM)
