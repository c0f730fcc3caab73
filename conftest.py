"""The fast tier's guard, for every test path (tests/ and the plugins' tests).

A test that starts a process (``subprocess``, ``os.fork``/``posix_spawn``/``system``,
``multiprocessing``) must be marked ``@pytest.mark.slow``: an unmarked one fails with the
commands it started, in any tier, so ``make test-fast`` (``-m "not slow"``) stays a couple of
minutes. Setup and teardown count (a fixture's server process is the test's). The checkout's
git state, which every run's summary stamps (``git_state``, cached), is read before each
unmarked test, outside it.

Two savings at collection: compiled and assertion-rewritten modules are cached in
``__pycache__`` even where ``PYTHONDONTWRITEBYTECODE`` is set (without the cache every run
compiles the package and rewrites 200 test modules: 6 s of the fast tier here), and when the
``-m`` expression deselects slow tests, a module marked slow as a whole is not imported (its
imports, mlflow and wandb, took seconds for tests that are all deselected).
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing.process
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_SPAWNS: list[str] | None = None  # what the running unmarked test started; None: not watching
_STARTED = pytest.StashKey[list[str]]()


def _describe(name: str, args: tuple[Any, ...]) -> str:
    if name == "Popen" and len(args) > 1:
        cmd = args[1]  # _execute_child(self, args, executable, …)
        return " ".join(map(str, cmd)) if isinstance(cmd, (list, tuple)) else str(cmd)
    if name == "Process.start" and args:
        return f"multiprocessing {type(args[0]).__name__}"
    return f"os.{name}"


def _watched(name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _SPAWNS is not None:
            _SPAWNS.append(_describe(name, args)[:200])
        return orig(*args, **kwargs)

    return wrapper


def _install() -> None:
    """Wrap every way a Python process starts another (idempotent)."""
    if hasattr(subprocess.Popen._execute_child, "__wrapped__"):  # type: ignore[attr-defined]
        return
    # Popen covers subprocess.run/check_output, os.popen and asyncio's subprocesses
    popen = subprocess.Popen
    popen._execute_child = _watched("Popen", popen._execute_child)  # type: ignore[attr-defined]
    base = multiprocessing.process.BaseProcess
    base.start = _watched("Process.start", base.start)  # type: ignore[method-assign]
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            setattr(os, name, _watched(name, getattr(os, name)))


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001
    _install()
    sys.dont_write_bytecode = False  # __pycache__ is git-ignored; see the module docstring
    # Python runs `uname -p` once per process, on the first platform.processor() (litellm
    # asks): before the tests, as mlflow's import did when every module was imported
    platform.processor()


_SLOW_MODULE = re.compile(
    r"^pytestmark\s*=\s*(pytest\.mark\.slow\b|\[[^\]]*\bpytest\.mark\.slow\b)", re.M
)


@functools.lru_cache(maxsize=8)
def _deselects_slow(markexpr: str) -> bool:
    """Whether ``-m markexpr`` deselects every test marked slow, whatever its other marks."""
    if not markexpr:
        return False
    from _pytest.mark.expression import Expression

    try:
        expr = Expression.compile(markexpr)
    except SyntaxError:
        return False  # pytest reports it
    names = set(re.findall(r"[A-Za-z_]\w*", markexpr)) - {"and", "or", "not", "slow"}
    for values in itertools.product((False, True), repeat=len(names)):
        marks = {"slow", *(n for n, v in zip(sorted(names), values, strict=True) if v)}
        if expr.evaluate(lambda name, /, _on=marks, **_kw: name in _on):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A module marked slow as a whole (``pytestmark``) is not imported when slow tests are
    deselected."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if _deselects_slow(config.getoption("markexpr", "")) and _SLOW_MODULE.search(
        collection_path.read_text(encoding="utf-8")
    ):
        return True
    return None


def _warm_git_state() -> None:
    """Read the checkout's git state into its cache, outside any test (a test that clears the
    cache to test ``git_state`` itself must not make the next test start git)."""
    try:
        from eqa_runner.run.stamp import git_state
    except ImportError:  # a checkout without the package installed: nothing to warm
        return
    git_state()  # lru_cache: a cache hit unless a test cleared it


def _watch(item: pytest.Item) -> Iterator[None]:
    global _SPAWNS
    if item.get_closest_marker("slow") is not None:
        yield
        return
    _warm_git_state()
    _SPAWNS = item.stash.setdefault(_STARTED, [])
    try:
        yield
    finally:
        _SPAWNS = None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _watch(item)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _watch(item)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from _watch(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    started = item.stash.get(_STARTED, [])
    if not started or (call.when == "setup" and report.passed):
        return  # a fixture's processes are reported with the test's call
    if report.failed:  # failing already: one failure is enough
        started.clear()
        return
    report.outcome = "failed"
    report.longrepr = (
        f"{item.nodeid} started {len(started)} process(es) but is not marked slow: "
        "mark it @pytest.mark.slow, or test the same thing in-process (make test-fast "
        "stays a couple of minutes).\n  " + "\n  ".join(dict.fromkeys(started))
    )
    started.clear()
