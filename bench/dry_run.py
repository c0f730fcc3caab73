"""Dry run and data check at the real benchmarks' size (issue 27, item 1).

Writes the four full-size synthetic question files (``bench/full_size.py``: EXPRESS-Bench 2,044
episodes, HM-EQA 500, OpenEQA 1,636, A-EQA 184, over symlinked demo scenes / walkthroughs), then
times, each in a fresh process, every task's ``run.dry_run=true`` and ``python -m
eqa_runner.data check`` (OpenEQA with ``--no-decode``). Same-run baselines: ``python -m
eqa_runner --cfg job`` (start-up and config composition, the floor of any run command) and, with
``--before DIR``, the same commands run from another checkout of the project (e.g. the commit
before the speed work) — the rows alternate, so load hits both alike.

    .venv/bin/python bench/dry_run.py [--before DIR] [--repeat 1] [--only express ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT  # noqa: E402
from bench.full_size import write_full_size  # noqa: E402

DRY = {  # task -> overrides of its dry run (the models: gpt-4o for the policy)
    "express": ["task=express", "policy=fbe", "llm=gpt-4o"],
    "hmeqa": ["task=hmeqa", "policy=fbe", "llm=gpt-4o"],
    "openeqa_em": ["task=openeqa_em", "policy=multiframe", "llm=gpt-4o"],
    "aeqa": ["task=aeqa", "policy=vlm_explore", "llm=gpt-4o"],
}
CHECK = {"express": "express", "hmeqa": "hmeqa", "openeqa_em": "openeqa", "aeqa": "aeqa"}


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, last output line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = (proc.stdout + proc.stderr).strip().splitlines() or [""]
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{lines[-1]}")
    return wall, cpu, lines[-1]


def commands(task: str, data: Path, out: Path, checkout: Path) -> dict[str, list[str]]:
    py = sys.executable
    check = [py, "-m", "eqa_runner.data", "check", CHECK[task], "--data-dir", str(data)]
    sources = [checkout / "eqa_runner" / "benchmarks" / "openeqa_em" / "data.py",
               checkout / "eqa_runner" / "data" / "commands.py"]  # fmt: skip
    known = any(p.is_file() and "--no-decode" in p.read_text() for p in sources)
    if task == "openeqa_em" and known:  # a checkout without the option decodes every frame
        check.append("--no-decode")
    dry = [py, "-m", "eqa_runner", *DRY[task], f"task.data_dir={data}", "run.dry_run=true"]
    return {"dry run": dry + [f"run.output_dir={out}"], "data check": check}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", type=Path, default=None, help="another checkout to compare with")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", nargs="+", choices=list(DRY), default=list(DRY))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dirs = write_full_size(Path(tmp) / "full")
        startup = [sys.executable, "-m", "eqa_runner", "--cfg", "job"]
        print(f"2 cores, load avg {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"{'task':<11} {'command':<10} {'checkout':<8} {'wall s':>7} {'cpu s':>6}  output")
        checkouts = [("this", ROOT)] + ([("before", args.before)] if args.before else [])
        for _ in range(args.repeat):
            for name, co in checkouts:
                w, c, _ = timed(startup, co)
                print(f"{'-':<11} {'--cfg job':<10} {name:<8} {w:7.2f} {c:6.2f}", flush=True)
            for task in args.only:
                for name, co in checkouts:
                    for what, cmd in commands(task, dirs[task], Path(tmp) / "o", co).items():
                        w, c, last = timed(cmd, co)
                        print(
                            f"{task:<11} {what:<10} {name:<8} {w:7.2f} {c:6.2f}  {last[:90]}",
                            flush=True,
                        )
        print("targets: dry run <= 3 s wall, data check <= 5 s wall (each task, full size)")


if __name__ == "__main__":
    main()
