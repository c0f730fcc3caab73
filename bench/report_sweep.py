"""Reports and rejudge at sweep scale (issue 27, item 4).

Builds (once, under ``--work``) a synthetic sweep of ``--runs`` EXPRESS-shaped runs of
``--episodes`` records each (``bench/sweep_data.py``), then times in fresh processes
``report SWEEP --compare`` and ``report SWEEP --compare --html``: wall, CPU and peak resident
memory of the child (its own ``VmHWM``). With ``--before DIR`` the same commands also run from
another checkout (alternating), the same-run baseline.

    .venv/bin/python bench/report_sweep.py [--runs 32] [--episodes 2044] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT  # noqa: E402
from bench.sweep_data import write_sweep  # noqa: E402

# The child reports its own VmHWM: wait4's ru_maxrss (and the child's own getrusage) keep the
# high-water mark of the memory it was forked from, i.e. this bench's own peak, across exec.
_HWM = """
import atexit, runpy, sys
def _hwm(path=sys.argv.pop(1)):
    with open("/proc/self/status") as fh:
        kb = next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(str(kb))
atexit.register(_hwm)
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def measured(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one child process (``cmd``: ``python -m module ...``)."""
    assert cmd[1] == "-m", cmd
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        hwm = Path(tmp) / "hwm"
        t0 = time.perf_counter()
        proc = subprocess.Popen([cmd[0], "-c", _HWM, str(hwm), *cmd[2:]], cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):  # 1: a rejudge with errored episodes
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed: {err.read().decode()[-400:]}")
        peak_kb = int(hwm.read_text())
    return wall, ru.ru_utime + ru.ru_stime, peak_kb / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=32)
    ap.add_argument("--episodes", type=int, default=2044)
    ap.add_argument("--work", type=Path, default=Path("/tmp/eqa-bench-sweep"))
    ap.add_argument("--before", type=Path, default=None, help="another checkout to compare with")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    sweep = write_sweep(args.work, args.runs, args.episodes)
    size = sum(f.stat().st_size for f in sweep.rglob("episodes.jsonl")) / 2**20
    py = [sys.executable, "-m", "eqa_runner.report", str(sweep), "--compare"]
    cmds = {"--compare": py, "--compare --html": py + ["--html", "--html-out",
            str(args.work / "report.html")]}  # fmt: skip
    print(f"sweep: {args.runs} runs x {args.episodes} records ({size:.0f} MB of JSONL); "
          f"2 cores, load avg {' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    print(f"{'command':<18} {'checkout':<8} {'wall s':>7} {'cpu s':>6} {'peak RSS MB':>11}")
    checkouts = [("this", ROOT)] + ([("before", args.before)] if args.before else [])
    for _ in range(args.repeat):
        for what, cmd in cmds.items():
            for name, co in checkouts:
                w, c, rss = measured(cmd, co)
                print(f"{what:<18} {name:<8} {w:7.2f} {c:6.2f} {rss:11.0f}", flush=True)
    print("targets: <= 10 s and <= 1 GB resident each")


if __name__ == "__main__":
    main()
