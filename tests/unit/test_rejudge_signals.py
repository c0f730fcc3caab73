"""SIGTERM during a rejudge's judging loop cancels the loop as Ctrl-C does: it never lands inside
a running task (CI once saw it raised mid-request there, escape as the task's unretrieved
exception and print a traceback at exit)."""

from __future__ import annotations

import asyncio
import contextlib
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


async def _loses_every_cancel(sig: int, done: list[int]) -> None:
    """Raises ``sig`` in this process, then swallows each cancel, as Python 3.11's
    ``asyncio.wait_for`` does with a cancel that arrives as its inner call completes."""
    asyncio.get_running_loop().call_later(0.05, signal.raise_signal, sig)
    for step in range(10):
        with contextlib.suppress(asyncio.CancelledError):  # lost
            await asyncio.sleep(0.03)
        done.append(step)


@pytest.mark.parametrize(
    ("sig", "raised"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_sticks_when_the_loop_loses_its_cancel(sig, raised):
    # CI saw a rejudge exit 0 after a SIGINT: the cancel was lost in wait_for and the judging
    # went on to the end; now the interrupt is raised once the loop ends, however it ends
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    done: list[int] = []
    try:
        with pytest.raises(raised) as info:
            run_until_signalled(_loses_every_cancel(sig, done))
        assert type(info.value) is raised and len(done) == 10
    finally:
        for s, h in before.items():
            signal.signal(s, h)
