"""A synthetic sweep of EXPRESS-Bench-sized runs, for the report and rejudge benches.

One real run (the EXPRESS demo, ``policy=re``, offline models, 3 steps) is made once; its
records are then repeated up to ``episodes`` per run (fresh ids, 174 scenes, judge marks drawn
per run and episode from a seeded generator, the derived metrics recomputed as the EAC judge
does), and its ``.hydra`` / provenance copied with ``run.seed`` set to the run's index, so the
runs differ in one key. ``summary.json`` of each run is the project's own re-aggregation of its
records (``eqa_runner.report.runs.reaggregate``): every number a report shows is consistent.

    .venv/bin/python bench/sweep_data.py OUT [--runs 32] [--episodes 2044]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT  # noqa: E402

N_SCENES = 174


def seed_run(out: Path) -> Path:
    """A real 12-episode EXPRESS demo run (offline models), written once under ``out``."""
    run = out / "seed-run"
    if (run / "summary.json").is_file():
        return run
    from eqa_runner.benchmarks.express.demo import write_express_demo

    data = write_express_demo(out / "seed-data", seed=0)
    data = data.parent if data.is_file() else data  # the demo writer returns its question file
    cmd = [sys.executable, "-m", "eqa_runner", "task=express", "policy=re", "llm=offline",
           "judge.model=offline", f"task.data_dir={data}", f"run.output_dir={run}",
           "policy.max_steps=3", "run.progress=false"]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=900)
    return run


def _record(base: dict[str, Any], i: int, rng: np.random.Generator) -> dict[str, Any]:
    rec = json.loads(json.dumps(base))
    rec["episode_id"] = str(i)
    rec["scene"] = f"hm3d/val/{800 + i % N_SCENES:05d}-FullApt{i % N_SCENES:03d}"
    sigma, delta = float(rng.choice([0.0, 0.5, 1.0])), float(rng.integers(1, 6))
    m = rec["metrics"]
    weight = float(rng.uniform(0.2, 1.0))
    m.update(sigma=sigma, delta=delta, c=sigma * delta, c_star=delta, weight=weight)
    m["e_path"] = min(max(sigma * delta, 0.0), 5.0) / 5 * weight
    m["d_t"] = float(rng.uniform(0.0, 10.0))
    rec["judge_raw"] = f"Your mark: {sigma:g}, {delta:g}"
    return rec


def write_run(seed: Path, dst: Path, k: int, episodes: int) -> Path:
    """Run ``k`` of the sweep: ``episodes`` records, ``run.seed=k``, its own summary.json."""
    from omegaconf import OmegaConf

    from eqa_runner.report.runs import load_run, reaggregate

    if (dst / "summary.json").is_file():
        return dst
    shutil.copytree(seed / ".hydra", dst / ".hydra", dirs_exist_ok=True)
    cfg = OmegaConf.load(dst / ".hydra" / "config.yaml")
    cfg.run.seed = k
    OmegaConf.save(cfg, dst / ".hydra" / "config.yaml")
    prov = json.loads((seed / "provenance.json").read_text())
    if isinstance(prov.get("config"), dict) and "run.seed" in prov["config"]:
        prov["config"]["run.seed"] = k
    (dst / "provenance.json").write_text(json.dumps(prov))
    base = [json.loads(ln) for ln in (seed / "episodes.jsonl").read_text().splitlines() if ln]
    rng = np.random.default_rng(1000 + k)
    with open(dst / "episodes.jsonl", "w") as fh:
        for i in range(episodes):
            fh.write(json.dumps(_record(base[i % len(base)], i, rng)) + "\n")
    seed_summary = json.loads((seed / "summary.json").read_text())
    (dst / "summary.json").write_text(json.dumps({**seed_summary, "counts": {"selected": 0}}))
    run = load_run(dst)
    summary = reaggregate(run, [dst])
    summary["counts"]["selected"] = summary["counts"]["missing"] = None
    summary["counts"].update(selected=episodes, missing=0)
    (dst / "summary.json").write_text(json.dumps(summary, indent=1))
    return dst


def write_sweep(out: Path, runs: int = 32, episodes: int = 2044) -> Path:
    seed = seed_run(out)
    sweep = out / f"sweep-{runs}x{episodes}"
    for k in range(runs):
        write_run(seed, sweep / str(k), k, episodes)
    return sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=32)
    ap.add_argument("--episodes", type=int, default=2044)
    args = ap.parse_args()
    print(write_sweep(args.out, args.runs, args.episodes))


if __name__ == "__main__":
    main()
