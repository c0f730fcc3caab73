"""The fast tier's guard (the checkout's conftest.py): an unmarked test starting a process fails."""

from __future__ import annotations

import importlib.util
import multiprocessing.process
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

INNER = """
import multiprocessing, os, subprocess, sys
import pytest

@pytest.fixture
def server():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    yield proc
    proc.wait()

def test_unmarked_run():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

@pytest.mark.slow
def test_marked_run():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_unmarked_fixture(server):
    assert server.pid

def test_unmarked_multiprocessing():
    p = multiprocessing.get_context("fork").Process(target=print)
    p.start()
    p.join()

def test_unmarked_swallowed():
    try:  # the code under test hides the failure: the spawn still counts
        subprocess.run(["/nonexistent-command"])
    except OSError:
        pass

def test_unmarked_system():
    os.system("true")

def test_in_process():
    assert sum(range(4)) == 6
"""


def test_wraps_every_way_to_start_a_process() -> None:
    for fn in (subprocess.Popen._execute_child, multiprocessing.process.BaseProcess.start):  # type: ignore[attr-defined]
        assert hasattr(fn, "__wrapped__"), fn
    for name in ("fork", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            assert hasattr(getattr(os, name), "__wrapped__"), name


@pytest.mark.slow
def test_unmarked_test_that_starts_a_process_fails(tmp_path: Path) -> None:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    (tmp_path / "test_inner.py").write_text(INNER)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:dash", "-rA", "-q"]
    out = subprocess.run(
        [*cmd, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    ).stdout
    outcome = {
        line.split("::")[1].split()[0]: line.split()[0]
        for line in out.splitlines()
        if line.startswith(("PASSED", "FAILED", "ERROR")) and "::" in line
    }
    assert outcome == {
        "test_unmarked_run": "FAILED",
        "test_marked_run": "PASSED",
        "test_unmarked_fixture": "FAILED",
        "test_unmarked_multiprocessing": "FAILED",
        "test_unmarked_swallowed": "FAILED",
        "test_unmarked_system": "FAILED",
        "test_in_process": "PASSED",
    }, out
    assert "is not marked slow" in out and "-c pass" in out


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "expr, deselects",
    [("not slow", True), ("", False), ("slow", False), ("not slow and not habitat", True),
     ("not (slow or slurm)", True), ("habitat or not slow", False), ("not habitat", False)],
)  # fmt: skip
def test_a_module_marked_slow_is_skipped_only_when_the_expression_drops_slow(expr, deselects):
    assert _root_conftest()._deselects_slow(expr) is deselects


def test_the_module_mark_is_recognised_in_each_form():
    slow = _root_conftest()._SLOW_MODULE.search
    assert slow('"""Doc."""\nimport pytest\n\npytestmark = pytest.mark.slow\n')
    assert slow("pytestmark = [pytest.mark.habitat, pytest.mark.slow]\n")
    assert slow("pytestmark = [  # why\n    pytest.mark.slurm,\n    pytest.mark.slow,\n]\n")
    assert not slow("pytestmark = pytest.mark.habitat\n\n@pytest.mark.slow\ndef test_x(): ...\n")
    assert not slow("pytestmark = [pytest.mark.slurm]\nx = [pytest.mark.slow]\n")
    assert not slow("    pytestmark = pytest.mark.slow\n")  # not at module level


def test_compiled_modules_are_cached_even_where_the_environment_says_not_to():
    assert sys.dont_write_bytecode is False


def test_the_processor_name_is_read_before_the_tests():
    # Python runs `uname -p` on the first platform.processor() of a process (litellm asks):
    # the checkout's conftest asks first, outside any test, or the guard fails this one
    assert isinstance(platform.processor(), str)
