"""Start-up cost of hashing the scene files on a resume of a 2,044-episode run (issue 33, item 5).

Writes the full-size EXPRESS set (``bench/full_size.py``: 2,044 episodes over 174 scenes) and
replaces each scene's symlinked ``.glb`` by a file of its own of ``--mb`` MB (the demo mesh
followed by random bytes; only hashed, never loaded), labels a run dir with a first start, then
times resumes into it, each a fresh process running the start checks (``run.start.prepare``:
Hydra composition, loading and selecting the episodes, the data check, the provenance check):

- ``none``: the ``episode inputs`` check removed (the start-up without hashing);
- ``cold``: an empty ``run.cache_dir`` (every scene file read and hashed);
- ``warm``: the cache written by the previous start (stat calls only).

Rows alternate; the medians are printed with their ratio to ``none``. The files were just
written, so "cold" reads them from the page cache (a disk read would add to it).

    .venv/bin/python bench/provenance_hashing.py [--mb 4] [--repeats 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT  # noqa: E402
from bench.full_size import write_express  # noqa: E402

PROBE = """
import json, sys, time
t0 = time.perf_counter()
from hydra import compose, initialize_config_dir
from eqa_runner.run import start
from eqa_runner.run.configstore import register_configs
from eqa_runner.run.rundir import label_run_dir
mode, conf, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
register_configs()
with initialize_config_dir(config_dir=conf, version_base="1.3"):
    cfg = compose("config", overrides=overrides)
hashing = [0.0]
def timed(check):
    def step(plan):
        t = time.perf_counter(); check.step(plan); hashing[0] += time.perf_counter() - t
    return start.Check(check.name, step, check.dry_run)
checks = [timed(c) if c.name == "episode inputs" else c for c in start.START
          if mode != "none" or c.name != "episode inputs"]
plan = start.run_checks(start.RunPlan(cfg), checks)
if mode == "label":
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    label_run_dir(plan.out_dir, cfg, plan.container, plan.inputs)
total = time.perf_counter() - t0
print(json.dumps({"start": total, "hashing": hashing[0], "episodes": len(plan.episodes),
                  "scenes": len(plan.inputs.get("scenes", {}))}))
"""


def real_scenes(data: Path, mb: int) -> int:
    """Replace each symlinked scene mesh by a file of its own, ``mb`` MB; returns the count."""
    n = 0
    for link in sorted((data / "scenes").rglob("*.glb")):
        mesh = link.resolve().read_bytes()
        link.unlink()
        with link.open("wb") as fh:
            fh.write(mesh)
            fh.write(os.urandom(max(0, mb * 2**20 - len(mesh))))
        n += 1
    return n


def probe(mode: str, overrides: list[str]) -> dict:
    conf = str(ROOT / "eqa_runner" / "conf")
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", PROBE, mode, conf, *overrides]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=int, default=4, help="size of each scene file")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write the data here and keep it")
    args = ap.parse_args()
    from eqa_runner.benchmarks.express.demo import write_express_demo

    tmp = Path(tempfile.mkdtemp(prefix="provhash-")) if args.keep is None else args.keep
    try:
        if not (tmp / "express" / "express-bench.json").is_file():
            write_express_demo(tmp / "demo", seed=0)
            write_express(tmp / "demo", tmp / "express")
            print(f"scene files: {real_scenes(tmp / 'express', args.mb)} of {args.mb} MB")
        cache = tmp / "cache"
        over = ["task=express", "policy=fbe", "llm=gpt-4o", f"task.data_dir={tmp / 'express'}",
                f"run.output_dir={tmp / 'run'}", f"run.cache_dir={cache}",
                "run.progress=false"]  # fmt: skip
        shutil.rmtree(tmp / "run", ignore_errors=True)
        first = probe("label", over)
        print(f"first start: {first['episodes']} episodes, {first['scenes']} scene files hashed")
        rows: dict[str, list[dict]] = {"none": [], "cold": [], "warm": []}
        for _ in range(args.repeats):
            for mode in rows:
                if mode == "cold":
                    (cache / "content_hashes.json").unlink(missing_ok=True)
                rows[mode].append(probe(mode, [*over, "run.resume=true"]))
        report(rows)
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def report(rows: dict[str, list[dict]]) -> None:
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("wall", "start", "hashing")}
           for m, rs in rows.items()}  # fmt: skip
    base = med["none"]["wall"]
    n, load = len(rows["none"]), os.getloadavg()[0]
    print(f"median of {n} resumes (fresh process each), load {load:.1f}")
    print("mode   process wall s  start checks s  hashing s  hashing / start-up without hashing")
    for mode, m in med.items():
        print(f"{mode:6s} {m['wall']:14.3f} {m['start']:15.3f} {m['hashing']:10.3f} "
              f"{m['hashing'] / base:10.1%}  (wall {m['wall'] / base:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
