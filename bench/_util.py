"""Small helpers shared by the benchmark scripts (timing, RSS, the test model server)."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@contextlib.contextmanager
def llm_server_process(config: dict, cpus: int | None = None) -> Iterator[str]:
    """Start ``eqa_runner.testing.llm_server`` in its own process (pinned to core ``cpus`` if
    given); yields the /v1 base URL."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, port_file = Path(tmp) / "rules.json", Path(tmp) / "port"
        cfg.write_text(json.dumps(config))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "eqa_runner.testing.llm_server",
                "--port",
                "0",
                "--config",
                str(cfg),
                "--port-file",
                str(port_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        if cpus is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(proc.pid, {cpus})
        try:
            deadline = time.time() + 20
            while not port_file.exists() or not port_file.read_text().strip():
                if time.time() > deadline:
                    raise RuntimeError("test server did not start")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
