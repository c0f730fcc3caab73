"""EXPRESS demo episodes per minute with ``sim.instances`` = 1, 2, 4 (one process).

Writes the procedural EXPRESS demo (``--scenes`` apartments x ``--questions`` each), starts the
test model server (own process, fixed ``--latency``, the stop check always says "no", so every
episode spends its ``policy.max_steps`` budget) and runs ``task=express policy=re`` for each
``--instances`` value on ``--sim`` (mesh, or habitat inside the habitat-cpu chroot), the same
episodes and workers each time; the first row is the same-run baseline.

    .venv/bin/python bench/sim_instances.py [--sim mesh] [--instances 1 2 4] [--workers 8]
        [--scenes 4] [--questions 6] [--max-steps 8] [--latency 0.2] [--size 512]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT, llm_server_process  # noqa: E402

RULES = [
    {"pattern": "Your mark", "reply": "Your mark: 1, 4"},
    {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: It is in the kitchen."},
    {"pattern": r"QUESTION: ", "reply": "no"},
]


def run_once(url: str, data: Path, out: Path, n: int, args: argparse.Namespace) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.policies import sim_session
    from eqa_runner.run.configstore import register_configs
    from eqa_runner.run.loop import run

    loads: list[tuple[int, str]] = []
    ensure = sim_session.SimSession.ensure_scene

    def counted(self, spec, start):  # type: ignore[no-untyped-def]
        before = self.loaded
        ensure(self, spec, start)
        if self.loaded != before:
            loads.append((self.index, str(spec.mesh_path)))

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "eqa_runner" / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[
            "task=express", "policy=re", f"sim={args.sim}", f"sim.instances={n}",
            f"sim.width={args.size}", f"sim.height={args.size}",
            f"task.data_dir={data}", f"run.output_dir={out}", f"run.workers={args.workers}",
            "run.cache=false", "run.progress=false", "run.bootstrap_samples=0",
            f"policy.max_steps={args.max_steps}",
            "llm.model=openai/gpt-4o-2024-08-06", f"llm.api_base={url}",
            "judge.model=openai/gpt-4o-2024-08-06", f"judge.api_base={url}",
        ])  # fmt: skip
    sim_session.SimSession.ensure_scene = counted  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        res = run(cfg)
        wall = time.perf_counter() - t0
    finally:
        sim_session.SimSession.ensure_scene = ensure  # type: ignore[method-assign]
    assert res["counts"]["ok"] == res["counts"]["selected"], res["counts"]
    per_lane = {}
    for lane, _ in loads:
        per_lane[lane] = per_lane.get(lane, 0) + 1
    repeats = len(loads) - len(set(loads))
    return {"wall": wall, "episodes": res["counts"]["ok"], "loads": len(loads),
            "per_lane": per_lane, "repeats": repeats}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", default="mesh", choices=["mesh", "habitat"])
    ap.add_argument("--instances", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--scenes", type=int, default=4)
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-steps", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--size", type=int, default=512)
    args = ap.parse_args()
    from eqa_runner.benchmarks.express.demo import write_express_demo
    from eqa_runner.llm import load_litellm

    load_litellm()
    with tempfile.TemporaryDirectory() as tmp:
        data = write_express_demo(Path(tmp) / "express", seed=0, n_scenes=args.scenes,
                                  questions_per_scene=args.questions).parent  # fmt: skip
        with llm_server_process({"rules": RULES, "latency_s": args.latency}) as url:
            print(
                f"EXPRESS demo: {args.scenes} scenes x {args.questions} questions, policy re, "
                f"{args.max_steps} steps each, sim={args.sim} {args.size}x{args.size}, "
                f"run.workers={args.workers}, model latency {args.latency * 1000:.0f} ms, "
                f"{os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}"
            )
            print(f"{'instances':>9} {'wall s':>7} {'episodes/min':>12} {'x N=1':>6} "
                  f"{'scene loads':>11} {'per instance':>14} {'reloads':>7}")  # fmt: skip
            base = None
            for n in args.instances:
                r = run_once(url, data, Path(tmp) / f"n{n}", n, args)
                epm = r["episodes"] / r["wall"] * 60
                base = base or epm
                lanes = "/".join(str(r["per_lane"].get(i, 0)) for i in range(n))
                print(f"{n:9d} {r['wall']:7.2f} {epm:12.1f} {epm / base:6.2f} "
                      f"{r['loads']:11d} {lanes:>14} {r['repeats']:7d}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
