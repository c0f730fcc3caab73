"""Where an exploration step's time goes (issue 27, item 3): EXPRESS ``fbe`` and ``vlm_explore``.

Runs the real run loop (``run.workers=1``, ``run.profile=true``) on the EXPRESS demo, each policy
in a fresh process (pinned with ``--cpu``, default core 0), after a one-episode warm-up in the
same process (numba compile, imports). Per step, the parts recorded in the trace
(``trace.steps[i].profile``): ``render`` (the simulator's ``observe``, forward view and
look-around), ``fuse`` (TSDF), ``plan`` (frontier planning; ``vlm_explore`` also ``points``,
the visual-prompt points, and ``semantic``, the value-map splat), ``hop`` / ``geodesic``
(navmesh snap and geodesic queries), ``encode`` (PNG of the frame, the drawn letters),
``prompt`` (building the messages), ``model`` (the model calls' wall time minus their prompt
building) and ``other`` = the step's wall time minus all of these (the loop itself: thread
hand-offs, trace entries, the black-frame check …). The runner's own overhead per step is
``step − render − model`` (goal: <= 20 ms on one core).

Per episode: the record's ``timings.total_s`` plus the record write (``RecordWriter.write``,
timed by this script) less the scene load, the renders and the model calls, per step. These
episode numbers come from wrappers this script puts around the simulator's ``observe`` /
``load_scene``, ``LLMClient.acomplete`` and ``RecordWriter.write``, so they are measured the same
way on ``--before DIR`` (another checkout of the project, run the same way, rows interleaved).

``--llm offline`` (default): the offline placeholder answers at once (EXPRESS's offline stop
check says yes at the third step). ``--llm server``: the project's test server in its own
process (pinned to ``--server-cpu``, default core 1), zero latency, replying "no" to every
question, so every episode runs ``--max-steps`` steps; its ``model`` part is then a local HTTP
round trip.

    .venv/bin/python bench/step_profile.py [--sim mesh|habitat] [--llm offline|server]
        [--episodes 6] [--max-steps 8] [--policies fbe vlm_explore fine_eqa] [--before DIR]
        [--server-rules RULES.json]
        [--override policy.proposer.look_around_deg=[] ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 20.0
# the parts of the trace, grouped into the rows printed
GROUPS = {
    "render": ("render",),
    "fuse": ("fuse",),
    "plan": ("plan", "points", "semantic", "regions"),
    "navmesh": ("hop", "geodesic"),
    "encode": ("encode",),
    "prompt": ("prompt",),
    "model": ("model",),
    "artifacts": ("artifacts",),
}


# ----------------------------------------------------------------------------- the child run
class Meter:
    """Wall and process-CPU seconds of the simulator's renders and scene loads, the model calls
    and the record writes, accumulated until the record write that ends an episode
    (run.workers=1: the CPU between two writes is one episode's)."""

    def __init__(self) -> None:
        self.acc = {k: 0.0 for k in ("render", "load", "model")}
        self.cpu = dict(self.acc)
        self.episodes: list[dict[str, Any]] = []
        self.mark = time.process_time()

    def _timed(self, key: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        yield
        self.acc[key] += time.perf_counter() - t0
        self.cpu[key] += time.process_time() - c0

    def wrap_sync(self, owner: Any, name: str, key: str) -> None:
        fn = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            with contextmanager(self._timed)(key):
                return fn(*a, **k)

        setattr(owner, name, timed)

    def wrap_model(self, owner: Any) -> None:
        fn = owner.acomplete

        async def timed(*a: Any, **k: Any) -> Any:
            with contextmanager(self._timed)("model"):
                return await fn(*a, **k)

        owner.acomplete = timed

    def wrap_writer(self, owner: Any) -> None:
        fn = owner.write

        def timed(this: Any, rec: Any) -> Any:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(this, rec)
            finally:
                now, wall = time.process_time(), time.perf_counter() - t0
                self.episodes.append({
                    "id": rec["episode_id"], "wall": {**self.acc, "write": wall},
                    "cpu": {**self.cpu, "write": now - c0, "episode": now - self.mark},
                })  # fmt: skip
                self.mark = now
                self.acc, self.cpu = dict.fromkeys(self.acc, 0.0), dict.fromkeys(self.cpu, 0.0)

        owner.write = timed


def _sim_class(sim: str) -> Any:
    if sim == "habitat":
        from eqa_runner.sim.habitat import HabitatSimulator

        return HabitatSimulator
    from eqa_runner.sim.mesh import MeshSimulator

    return MeshSimulator


def _compose(args: argparse.Namespace, out: Path, limit: int, profile: bool) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    over = [
        "task=express", f"policy={args.policy}", f"sim={args.sim}", f"task.data_dir={args.data}",
        f"run.output_dir={out}", f"run.limit={limit}", "run.workers=1", "run.progress=false",
        "run.cache=false", "run.bootstrap_samples=0", "judge.model=offline",
        f"policy.max_steps={args.max_steps}", "run.trajectory_maps=false",
    ]  # fmt: skip
    over += list(args.override or [])
    if profile:
        over.append("run.profile=true")
    if args.url:
        over += [f"llm.model={args.model}", f"llm.api_base={args.url}"]
    else:
        over.append("llm=offline")
    GlobalHydra.instance().clear()
    conf = Path(args.checkout) / "eqa_runner" / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=over)
    GlobalHydra.instance().clear()
    return cfg


def child(args: argparse.Namespace) -> None:
    """Warm-up episode, then the measured run; writes ``<out>/rows.json``."""
    sys.path.insert(0, str(args.checkout))
    from eqa_runner.llm import LLMClient
    from eqa_runner.records import RecordWriter, read_records
    from eqa_runner.run.configstore import register_configs
    from eqa_runner.run.loop import run

    register_configs()
    out = Path(args.out)
    profile = (Path(args.checkout) / "eqa_runner" / "timing.py").is_file()
    run(_compose(args, out / "warm", 1, profile))
    meter = Meter()
    sim_cls = _sim_class(args.sim)
    meter.wrap_sync(sim_cls, "observe", "render")
    meter.wrap_sync(sim_cls, "load_scene", "load")
    meter.wrap_model(LLMClient)
    meter.wrap_writer(RecordWriter)
    run(_compose(args, out / "run", args.episodes, profile))
    records = {r["episode_id"]: r for r in read_records(out / "run" / "episodes.jsonl")}
    rows = []
    for m in meter.episodes:
        r = records[m["id"]]
        steps = r["trace"].get("steps", [])
        rows.append({**m, "status": r["status"], "total": r["timings"]["total_s"],
                     "steps": [s.get("profile") for s in steps],
                     "outside": r["trace"].get("profile")})  # fmt: skip
    (out / "rows.json").write_text(json.dumps(rows))


# ----------------------------------------------------------------------------- the parent
def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def step_table(rows: list[dict[str, Any]], clock: str) -> list[tuple[str, float]]:
    """(part, median ms per step) of ``clock`` (wall / cpu) for every group, ``other`` and the
    step, and the runner's overhead (step - render - model)."""
    steps = [s[clock] for r in rows for s in r["steps"] if s]
    if not steps:
        return []
    table = []
    for group, parts in GROUPS.items():
        table.append((group, _median([sum(s.get(p, 0.0) for p in parts) * 1e3 for s in steps])))
    known = {p for parts in GROUPS.values() for p in parts}
    other = [(s["step"] - sum(v for k, v in s.items() if k in known)) * 1e3 for s in steps]
    table.append(("other", _median(other)))
    table.append(("step", _median([s["step"] * 1e3 for s in steps])))
    over = [(s["step"] - s.get("render", 0.0) - s.get("model", 0.0)) * 1e3 for s in steps]
    table.append(("overhead", _median(over)))
    return table


def episode_table(rows: list[dict[str, Any]], clock: str) -> dict[str, float]:
    """Medians over episodes of ``clock`` (wall / cpu), ms per step; ``steps``, ``episode`` s."""
    per = []
    for r in rows:
        n, m = max(len(r["steps"]), 1), r[clock]
        total = r["total"] + m["write"] if clock == "wall" else m["episode"]
        rest = total - m["load"] - m["render"] - m["model"]
        per.append({"steps": n, "episode": total, "load": m["load"] * 1e3 / n,
                    "render": m["render"] * 1e3 / n, "model": m["model"] * 1e3 / n,
                    "write": m["write"] * 1e3 / n, "overhead": rest * 1e3 / n})  # fmt: skip
    return {k: _median([p[k] for p in per]) for k in per[0]} if per else {}


@contextmanager
def _server(args: argparse.Namespace) -> Iterator[str | None]:
    if args.llm != "server":
        yield None
        return
    from bench._util import llm_server_process

    config: dict[str, Any] = {"default_reply": "no", "latency_s": 0.0}
    if args.server_rules:  # e.g. fine_eqa's region replies, so that GOE moves are measured
        config["rules"] = json.loads(Path(args.server_rules).read_text())
    with llm_server_process(config, cpus=args.server_cpu) as url:
        yield url


def run_child(args: argparse.Namespace, policy: str, checkout: Path, url: str | None) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--checkout",
               str(checkout), "--policy", policy, "--out", tmp, "--data", str(args.data),
               "--sim", args.sim, "--episodes", str(args.episodes), "--max-steps",
               str(args.max_steps), "--model", args.model, "--url", url or "",
               "--override", *args.override]  # fmt: skip
        if args.cpu is not None and hasattr(os, "sched_setaffinity"):
            cmd = ["taskset", "-c", str(args.cpu), *cmd]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"{policy} ({checkout}) failed:\n{proc.stderr[-3000:]}")
        return json.loads((Path(tmp) / "rows.json").read_text())


def report(name: str, rows: list[dict[str, Any]]) -> None:
    ok = sum(r["status"] == "ok" for r in rows)
    ep = episode_table(rows, "wall")
    print(f"\n{name}: {len(rows)} episodes ({ok} ok), median {ep.get('steps', 0):.0f} steps, "
          f"episode {ep.get('episode', 0):.2f} s wall")  # fmt: skip
    for clock in ("wall", "cpu"):
        table = step_table(rows, clock)
        if table:
            print(f"  per step, {clock} ms: " + "  ".join(f"{k} {v:.1f}" for k, v in table))
    for clock in ("wall", "cpu"):
        ep = episode_table(rows, clock)
        keys = ("load", "render", "model", "write", "overhead")
        print(f"  per episode, {clock} ms per step: "
              + "  ".join(f"{k} {ep[k]:.1f}" for k in keys))  # fmt: skip
    for clock in ("wall", "cpu"):
        outside = [r["outside"][clock] for r in rows if r.get("outside")]
        if outside:
            names = sorted({k for o in outside for k in o})
            med = {k: _median([o.get(k, 0.0) * 1e3 for o in outside]) for k in names}
            print(f"  outside the steps, {clock} ms per episode: "
                  + "  ".join(f"{k} {v:.1f}" for k, v in med.items()))  # fmt: skip
    for clock in ("wall", "cpu"):
        table = dict(step_table(rows, clock))
        over = table.get("overhead", episode_table(rows, clock)["overhead"])
        print(f"  runner overhead per step ({clock}): {over:.1f} ms = {over / GOAL_MS:.2f} x "
              f"the {GOAL_MS:.0f} ms goal")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", choices=("mesh", "habitat"), default="mesh")
    ap.add_argument("--llm", choices=("offline", "server"), default="offline")
    ap.add_argument("--policies", nargs="+", default=["fbe", "vlm_explore"])
    ap.add_argument(
        "--server-rules",
        default=None,
        help="--llm server: a JSON file of test-server rules (default: 'no' to all)",
    )
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--max-steps", type=int, default=8)
    ap.add_argument("--data", type=Path, default=None, help="EXPRESS data dir (default: demo)")
    ap.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    ap.add_argument("--cpu", type=int, default=0, help="pin the run to this core (-1: no pin)")
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--model", default="openai/gpt-4o-2024-08-06")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    ap.add_argument("--override", nargs="*", default=[], help="more run overrides (key=value)")
    # the child process
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--checkout", type=Path, default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--policy", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--url", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    args.cpu = None if args.cpu is not None and args.cpu < 0 else args.cpu
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp, _server(args) as url:
        if args.data is None:
            from eqa_runner.benchmarks.express.demo import write_express_demo

            args.data = Path(tmp) / "express"
            write_express_demo(args.data, seed=0)
        print(f"EXPRESS demo, sim={args.sim}, llm={args.llm}, {args.episodes} episodes x <= "
              f"{args.max_steps} steps, core {args.cpu}, {os.cpu_count()} cores, load avg "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        checkouts = [("this", ROOT)] + ([("before", args.before)] if args.before else [])
        out: dict[str, Any] = {}
        for policy in args.policies:
            for name, co in checkouts:
                rows = run_child(args, policy, Path(co).resolve(), url)
                out[f"{policy}/{name}"] = rows
                report(f"{policy} [{name}]", rows)
        if args.json:
            args.json.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
