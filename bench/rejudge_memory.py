"""Rejudge streams: peak memory against the number of records (issue 27, item 4).

For runs of ``--sizes`` EXPRESS-shaped records (``bench/sweep_data.py``), times ``python -m
eqa_runner.rejudge RUN judge.model=offline`` in a fresh process (wall, CPU, and peak RSS: the
child's own ``VmHWM``), then the same command again: the resume, which finds every episode
re-judged and only re-aggregates. ``--before DIR`` runs the same from another checkout (its own
copy of each run), the same-run baseline. ``--interval iid`` records ``run.interval=iid`` in
each copy's config (the summary's intervals resample episodes, not scenes).

    .venv/bin/python bench/rejudge_memory.py [--sizes 250 1000 2044 4088] [--before DIR]
        [--interval cluster|iid]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT  # noqa: E402
from bench.report_sweep import measured  # noqa: E402
from bench.sweep_data import seed_run, write_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 1000, 2044, 4088])
    ap.add_argument("--work", type=Path, default=Path("/tmp/eqa-bench-sweep"))
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--interval", choices=["cluster", "iid"], default=None)
    args = ap.parse_args()
    seed = seed_run(args.work)
    print(f"2 cores, load avg {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'records':>7} {'MB':>5} {'checkout':<8} {'run':<7} {'wall s':>7} {'cpu s':>6} "
          f"{'peak RSS MB':>11} rejudged")  # fmt: skip
    checkouts = [("this", ROOT)] + ([("before", args.before)] if args.before else [])
    for n in args.sizes:
        src = write_run(seed, args.work / f"rejudge-{n}" / "src", 0, n)
        mb = (src / "episodes.jsonl").stat().st_size / 2**20
        for name, co in checkouts:
            run = src.with_name(name)
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(src, run)
            if args.interval:
                _set_interval(run, args.interval)
            cmd = [sys.executable, "-m", "eqa_runner.rejudge", str(run), "judge.model=offline",
                   "--tag", "bench"]  # fmt: skip
            for what in ("first", "resume"):
                w, c, rss = measured(cmd, co)
                s = json.loads((run / "summary.rejudged-bench.json").read_text())
                print(f"{n:7d} {mb:5.0f} {name:<8} {what:<7} {w:7.2f} {c:6.2f} {rss:11.0f} "
                      f"{s['counts'].get('recorded')}", flush=True)  # fmt: skip
    print("target: peak RSS flat in the number of records (streaming)")


def _set_interval(run: Path, method: str) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    cfg.run.interval = method
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")


if __name__ == "__main__":
    main()
