"""Start-up time of the CLI: ``--help`` and ``--cfg job`` (target <= 1.5 s each).

Baseline in the same run: ``python -c pass`` and ``python -c "import hydra"``. Also checks that
the start-up path imports neither litellm nor open3d (they take seconds) and opens no socket.

    .venv/bin/python bench/startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import sys, socket\n"
    "def _no(*a, **k): raise SystemExit('network touched at start-up')\n"
    "socket.socket.connect = _no\n"
    "sys.argv = ['eqa_runner', '--cfg', 'job']\n"
    "import runpy\n"
    "try:\n    runpy.run_module('eqa_runner', run_name='__main__')\n"
    "except SystemExit as e:\n    assert not e.code, e.code\n"
    "heavy = [m for m in ('litellm', 'open3d', 'habitat_sim', 'pandas', 'numba')\n"
    "         if m in sys.modules]\n"
    "print('heavy modules imported:', heavy or 'none')\n"
)


def timed(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(
            cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    rows = [
        ("python -c pass", [py, "-c", "pass"]),
        ("python -c 'import hydra'", [py, "-c", "import hydra.main"]),
        ("python -m eqa_runner --help", [py, "-m", "eqa_runner", "--help"]),
        ("python -m eqa_runner --cfg job", [py, "-m", "eqa_runner", "--cfg", "job"]),
    ]
    print(f"median of {args.repeats} runs")
    for name, cmd in rows:
        t = timed(cmd, args.repeats)
        flag = "" if "eqa_runner" not in name else f"  ({t / 1.5:.2f} of the 1.5 s target)"
        print(f"  {name:34s} {t:6.3f} s{flag}")
    out = subprocess.run(
        [py, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    print("  " + out.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
