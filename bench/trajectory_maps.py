"""Cost of the trajectory map (and the replay) per episode, against the episode itself.

    .venv/bin/python bench/trajectory_maps.py [--task hmeqa|express] [--episodes 6] [--steps 20]

Runs the real run loop on a procedural demo (``policy=fbe``, offline models, mesh simulator;
HM-EQA by default: its offline episodes run the whole step budget, EXPRESS's stop after 3)
twice in one process: maps only (the default), then with ``run.save_artifacts=true`` (map +
animated WebP replay). Each record's ``timings.map_s`` (drawing and writing the PNG,
and the replay, on the CPU pool) is compared with the same record's ``timings.total_s``. The
offline model answers at once, so the ratio is an upper bound: with a real model every step
adds a model call (seconds), and the share shrinks accordingly. The navigable raster and its
background are built once per scene per run, in the first episode of each scene (the "max").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _run(data: Path, out: Path, args: argparse.Namespace, artifacts: bool) -> list[dict]:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.records import read_records
    from eqa_runner.run.configstore import register_configs
    from eqa_runner.run.loop import run

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "eqa_runner" / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[
            f"task={args.task}", "policy=fbe", f"task.data_dir={data}", "llm=offline",
            "judge.model=offline", f"run.limit={args.episodes}", f"sim.width={args.width}",
            f"sim.height={args.width}", f"policy.max_steps={args.steps}", "run.progress=false",
            f"run.output_dir={out}", f"run.cache_dir={out}.cache", "run.workers=1",
            f"run.save_artifacts={str(artifacts).lower()}",
        ])  # fmt: skip
    GlobalHydra.instance().clear()
    run(cfg)
    return read_records(out / "episodes.jsonl")


def _row(name: str, recs: list[dict]) -> str:
    maps = [r["timings"]["map_s"] for r in recs if "map_s" in r["timings"]]
    tot = [r["timings"]["total_s"] for r in recs]
    share = [m / t for m, t in zip(maps, tot, strict=True)]
    steps = statistics.median(len(r["trace"]["steps"]) for r in recs)
    return (f"{name:<22} {len(maps):>3} eps  {steps:>5.0f} steps  map_s median "
            f"{statistics.median(maps) * 1e3:7.1f} ms  max {max(maps) * 1e3:7.1f} ms  "
            f"episode median {statistics.median(tot):6.2f} s  map/episode median "
            f"{statistics.median(share):.3f}  max {max(share):.3f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=("hmeqa", "express"), default="hmeqa")
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=256)
    args = ap.parse_args()
    from eqa_runner.demo.datasets import write_express_demo
    from eqa_runner.demo.hmeqa import write_hmeqa_demo

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / args.task
        (write_hmeqa_demo if args.task == "hmeqa" else write_express_demo)(data, seed=0)
        rows = [
            _row("maps (default)", _run(Path(data), Path(tmp) / "a", args, artifacts=False)),
            _row("maps + replay", _run(Path(data), Path(tmp) / "b", args, artifacts=True)),
        ]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
