"""docs/slurm.md's sweep on the local test cluster runs as written: the page's block, in a fresh
directory beside the project's venv, ends with both jobs' run dirs holding ok records.

The block's first line (``source …/env.sh``) is what the test process already did: CI starts the
cluster under another state dir, so the test runs the lines after it with the same environment.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from eqa_runner.records import EPISODES_FILE, read_records
from tests.slurm.test_sweeps import _PROBLEM

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM)),
]


def docs_sweep_block() -> str:
    page = (REPO / "docs" / "slurm.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", page, re.S)
    block = next(b for b in blocks if "hydra/launcher=slurm experiment=debug" in b)
    lines = block.strip().splitlines()
    assert lines[0].startswith("source ") and lines[0].endswith("/env.sh")
    return "\n".join(lines[1:])


def test_the_pages_test_cluster_sweep_runs_as_written(tmp_path):
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EQA_")}
    proc = subprocess.run(["bash", "-euc", docs_sweep_block()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    sweep = re.search(r"\[eqa_runner\] sweep dir: (\S+)", out)
    assert sweep, out[-2000:]
    jobs = sorted(p for p in (tmp_path / sweep.group(1)).iterdir() if (p / EPISODES_FILE).is_file())
    assert [p.name.rsplit(",", 1)[-1] for p in jobs] == ["policy=blind", "policy=single"]
    for job in jobs:
        records = read_records(job / EPISODES_FILE)
        assert len(records) == 3 and all(r["status"] == "ok" for r in records)
