"""Stopping a run early, the one way: stop starting episodes → flush → partial summary → the
exact resume command on one line. Used by SIGINT / SIGTERM and by the cost cap
(``run.max_cost_usd``); the process then exits with the code of :data:`EXIT_CODES`.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

# the process exit codes (README "Exit codes")
EXIT_OK = 0  # every selected episode has an ok record
EXIT_EPISODES_FAILED = 1  # the run finished, some episodes are error records
EXIT_USER_ERROR = 2  # bad config, data or environment: nothing was run (one `error:` line)
EXIT_COST_CAP = 3  # stopped at run.max_cost_usd; resume with a higher cap
EXIT_SIGINT = 130  # interrupted (Ctrl-C); resume to finish
EXIT_SIGTERM = 143  # terminated (SIGTERM, e.g. a scheduler); resume to finish

# command-line options that are not overrides but change what is composed
_CONFIG_OPTS = ("--config-dir", "--config-path", "--config-name", "-cd", "-cp", "-cn")
_DROPPED_KEYS = ("run.resume", "hydra.run.dir", "run.output_dir", "run.num_shards")


@dataclass
class Stopper:
    """Why the run stops starting episodes (None while it goes on), and how it exits."""

    reason: str | None = None
    exit_code: int = EXIT_OK
    cancel_in_flight: bool = False  # signals: cancel running episodes (they re-run on resume)
    new_cap: float | None = None  # cost cap: the cap the resume command suggests
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _loop: asyncio.AbstractEventLoop | None = None

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def stop(self, reason: str, exit_code: int, *, cancel: bool = False) -> None:
        if self.reason is None:
            self.reason, self.exit_code = reason, exit_code
        if cancel and not self.cancel_in_flight:
            self.cancel_in_flight = True
            if self._loop is not None and not self._loop.is_closed():  # closed: nothing runs
                self._loop.call_soon_threadsafe(self._cancel_all)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self.cancel_in_flight:
            task.cancel()

    def _cancel_all(self) -> None:
        for t in list(self._tasks):
            t.cancel()


@contextmanager
def signals_stop(stopper: Stopper, out_dir: Path | None = None) -> Iterator[None]:
    """While inside: the first SIGINT / SIGTERM stops the run (in-flight episodes cancelled, the
    records written so far kept); a second one exits at once (with the resume line of
    ``out_dir``, if given). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
        if seen:  # a second signal: leave now (records are flushed per line)
            resume = f"; resume with: {resume_command(out_dir)}" if out_dir else ""
            sys.stderr.write(f"\n[eqa_runner] second signal: exiting without a summary{resume}\n")
            raise SystemExit(EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM)
        seen.append(signum)
        name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
        code = EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM
        sys.stderr.write(
            f"\n[eqa_runner] {name}: stopping (no new episodes; writing the summary) ...\n"
        )
        sys.stderr.flush()
        stopper.stop(f"interrupted ({name})", code, cancel=True)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# a command that runs the run in-process (``report --import``) says how it is resumed
_resume_builders: list[Callable[[dict[str, str]], list[str]]] = []


@contextmanager
def resumed_by(build: Callable[[dict[str, str]], list[str]]) -> Iterator[None]:
    """While inside, a resume line is ``build(keys)`` (the command's own argv, given the keys
    to set, ``run.resume=true`` among them), not ``python -m eqa_runner …``."""
    _resume_builders.append(build)
    try:
        yield
    finally:
        _resume_builders.remove(build)


def resume_command(out_dir: Path, *, set_keys: dict[str, str] | None = None) -> str:
    """The exact command that continues the run in ``out_dir`` (one line, shell-quoted): this
    process's overrides (sweep values of this job included) + ``run.resume=true`` and the dir."""
    if _resume_builders:
        return shlex.join(_resume_builders[-1]({"run.resume": "true", **(set_keys or {})}))
    args = _this_invocation()
    extra = {"run.resume": "true", "hydra.run.dir": str(out_dir), **(set_keys or {})}
    keep = [a for a in args if _key(a) not in (*_DROPPED_KEYS, *extra)]
    parts = ["python", "-m", "eqa_runner", *keep]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(shlex.quote(p) for p in parts)


def _key(arg: str) -> str:
    return arg.split("=", 1)[0].lstrip("+~") if "=" in arg else ""


def _this_invocation() -> list[str]:
    """The job's overrides (from Hydra when it runs this process) plus config-dir options."""
    opts: list[str] = []
    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a.split("=", 1)[0] in _CONFIG_OPTS:
            opts.append(a)
            if "=" not in a and i + 1 < len(argv):
                opts.append(argv[i + 1])
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            hc = HydraConfig.get()
            hyd = [o for o in hc.overrides.hydra if _key(o) not in ("hydra.mode",)]
            hyd = [o for o in hyd if not o.startswith("hydra.sweep.")]
            return [*opts, *[str(o) for o in hyd], *[str(o) for o in hc.overrides.task]]
    except Exception:  # noqa: BLE001 - no Hydra: the command line as given
        pass
    return [a for a in argv if a not in ("-m", "--multirun")]
