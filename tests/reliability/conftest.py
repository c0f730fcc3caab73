"""Fixtures of the reliability suite, and the summary line printed when the session ends."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.conftest import ROOT
from tests.reliability import tally

# markers of these secrets must never appear in anything a run writes
SECRETS = {
    "OPENAI_API_KEY": "sk-test-SECRET123-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-test-SECRET456-anthropic-0123456789",
    "MY_KEY": "my-test-SECRET789-custom-0123456789",
}


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if any(v for v in tally.TALLY.values()):
        terminalreporter.write_line(tally.line())


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: offline cost map, no inherited provider keys."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", HYDRA_FULL_ERROR="0", **extra)
    return env


def run_cli(
    args: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``python -m eqa_runner *args`` to completion, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "eqa_runner", *args],
        cwd=ROOT,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen_cli(args: Sequence[str], log: Path, env: dict[str, str] | None = None):
    """Start ``python -m eqa_runner *args`` in the background; stdout+stderr go to ``log``."""
    fh = log.open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "eqa_runner", *args],
        cwd=ROOT,
        env=env or cli_env(),
        stdout=fh,
        stderr=subprocess.STDOUT,
    )
