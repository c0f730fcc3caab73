"""A read-only copy of a directory for a test: a read-only bind mount when the tests run as root
(root writes through file modes), the write bits taken away otherwise."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def read_only(where: Path, src: Path) -> Iterator[Path]:
    """``src`` copied to ``where/<name>`` and made read-only for the ``with`` block."""
    store, mnt = where / "store", where / "mnt"
    shutil.copytree(src, store / src.name)
    mnt.mkdir(parents=True)
    if os.geteuid() != 0:
        paths = [store / src.name, *(store / src.name).rglob("*")]
        for p in paths:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            yield store / src.name
        finally:
            for p in paths:
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
        return
    mounted = subprocess.run(["mount", "--bind", str(store), str(mnt)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root without a read-only mount: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mnt)], check=True)
        yield mnt / src.name
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
