"""SIGTERM during a rejudge's judging loop cancels the loop as Ctrl-C does: it never lands inside
a running task (CI once saw it raised mid-request there, escape as the task's unretrieved
exception and print a traceback at exit)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import subprocess

import pytest

from eqa_runner.run.sigterm import Terminated, run_until_signalled, sigterm_interrupts


def _sigterm_after(seconds: float) -> subprocess.Popen[bytes]:
    """SIGTERM from another process, as a scheduler sends it: it lands wherever the main thread
    is (a thread of this process would need the GIL, so it lands while the loop waits in
    select, never inside a task)."""
    return subprocess.Popen(["sh", "-c", f"sleep {seconds}; kill -TERM {os.getpid()}"])


async def _busy(i: int, cancelled: list[int]) -> None:
    """A task that is almost always running Python code: where a raising handler would land."""
    try:
        while True:
            for _ in range(20_000):
                pass
            await asyncio.sleep(0)
    except asyncio.CancelledError:
        cancelled.append(i)
        raise


@pytest.mark.slow
def test_sigterm_cancels_every_task_and_raises_terminated_outside_them(caplog):
    cancelled: list[int] = []

    async def main() -> None:
        await asyncio.gather(*(_busy(i, cancelled) for i in range(4)))

    caplog.set_level(logging.ERROR, logger="asyncio")
    timer = _sigterm_after(0.3)
    with sigterm_interrupts():
        with pytest.raises(Terminated):
            run_until_signalled(main())
        # while the interrupted rejudge writes its resume line, a second SIGTERM exits at once
        with pytest.raises(SystemExit) as e:
            os.kill(os.getpid(), signal.SIGTERM)
        assert e.value.code == 143
    timer.wait(timeout=30)
    gc.collect()  # an unretrieved task exception is logged when its task is collected
    assert sorted(cancelled) == [0, 1, 2, 3], "every task is cancelled, none failed"
    assert "never retrieved" not in caplog.text and "Terminated" not in caplog.text


@pytest.mark.slow
def test_a_second_sigterm_exits_at_once(capsys):
    async def stubborn() -> None:  # a slow shutdown: the first cancellation does not stop it
        try:
            while True:
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            os.kill(os.getpid(), signal.SIGTERM)  # the impatient user's second signal
            while True:
                await asyncio.sleep(0.01)

    timer = _sigterm_after(0.2)
    with sigterm_interrupts(), pytest.raises(SystemExit) as e:
        run_until_signalled(stubborn())
    timer.wait(timeout=30)
    assert e.value.code == 143
    assert "second signal: exiting at once" in capsys.readouterr().err


def test_a_loop_that_finishes_returns_and_restores_the_handler():
    async def quick() -> None:
        await asyncio.sleep(0)

    with sigterm_interrupts():
        outer = signal.getsignal(signal.SIGTERM)
        run_until_signalled(quick())
        assert signal.getsignal(signal.SIGTERM) is outer
