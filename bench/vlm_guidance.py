"""Does the VLM's guidance steer ``vlm_explore``? Steps to reach the goal region, per episode.

On the procedural EXPRESS demo apartments (each episode has a ``goal_position``), three agents
explore with the same loop, budget and look-around, and never stop early (the stop check and the
confidence question always answer no):

* ``guided``  — ``vlm_explore`` with the local test server scripted to answer the direction
  question with the letter of the marked point nearest (geodesically) to the goal: the bench
  sees the points the policy marks and the goal, and re-scripts the server before each question;
* ``random``  — ``vlm_explore`` with the server answering a uniformly random drawn letter;
* ``fbe``     — frontier exploration without semantics.

The worth-exploring question always answers Yes. Reported: the first step at which the agent
stands within ``--radius`` metres (geodesic) of the goal, per episode and agent (``-`` = not
within the budget), and how often each VLM agent beats ``fbe``.

    python bench/vlm_guidance.py --steps 20 --seeds 0 1
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eqa_runner.mapping.frontier import FrontierPlanner, PromptPoints  # noqa: E402
from eqa_runner.policies.frontier import FrontierProposer  # noqa: E402
from eqa_runner.policies.proposer import AgentState, Waypoint  # noqa: E402
from eqa_runner.policies.vlm_explore import VLMExploreProposer  # noqa: E402
from eqa_runner.sim import geometry as geo  # noqa: E402

STATE: dict[str, Any] = {"server": None, "radius": 1.5, "rng": np.random.default_rng(0)}


class _Reach:
    """Records the first step at which the agent is within ``STATE['radius']`` of the goal."""

    sim: Any
    goal: np.ndarray | None = None
    reached: int | None = None
    min_dist: float = math.inf

    def _track(self, episode: Any, sim: Any) -> None:
        g = episode.meta.get("goal_position")
        self.goal = None if g is None else np.asarray(g, float)
        self.reached, self.min_dist, self.sim = None, math.inf, sim

    def _check(self, state: AgentState) -> None:
        if self.goal is None:
            return
        d = float(self.sim.geodesic_distance(state.position, self.goal))
        self.min_dist = min(self.min_dist, d)
        if self.reached is None and d <= STATE["radius"]:
            self.reached = state.step

    def _result(self) -> dict[str, Any]:
        return {"bench_reached_step": self.reached, "bench_min_goal_dist": self.min_dist}


class TrackedFBE(FrontierProposer, _Reach):
    def reset(self, episode, sim, rng):  # type: ignore[no-untyped-def]
        super().reset(episode, sim, rng)
        self._track(episode, sim)

    def propose(self, agent_state: AgentState) -> Waypoint:
        self._check(agent_state)
        return super().propose(agent_state)

    def finish(self) -> dict[str, Any]:
        return {**super().finish(), **self._result()}


class ScriptedVLM(VLMExploreProposer, _Reach):
    """``vlm_explore``; before each direction question the server is scripted by :meth:`pick`."""

    def reset(self, episode, sim, rng):  # type: ignore[no-untyped-def]
        super().reset(episode, sim, rng)
        self._track(episode, sim)
        self.planner.prompt_points = self._points  # type: ignore[method-assign]

    def _points(self, *args: Any) -> PromptPoints:
        pts = FrontierPlanner.prompt_points(self.planner, *args)
        if len(pts) >= self.config.visual_prompt.min_num_prompt_points:
            letter = "ABCDEFGH"[self.pick(pts)]
            STATE["server"].configure(rules=rules(letter))
        return pts

    def pick(self, pts: PromptPoints) -> int:
        raise NotImplementedError

    def propose(self, agent_state: AgentState) -> Waypoint:
        self._check(agent_state)
        return super().propose(agent_state)

    def finish(self) -> dict[str, Any]:
        return {**super().finish(), **self._result()}


class OracleVLM(ScriptedVLM):
    def pick(self, pts: PromptPoints) -> int:
        floor = float(self.planner.floor_height)
        d = []
        for xy in pts.xy:
            p = geo.normal_to_habitat([float(xy[0]), float(xy[1]), floor])
            p = np.asarray(self.sim.snap_point(p), float)
            ok = np.all(np.isfinite(p)) and self.goal is not None
            d.append(float(self.sim.geodesic_distance(p, self.goal)) if ok else math.inf)
        if not np.isfinite(d).any():  # unreachable: nearest in a straight line
            g = geo.habitat_to_normal(np.asarray(self.goal, float))[:2]
            d = list(np.linalg.norm(pts.xy - g, axis=1))
        return int(np.argmin(d))


class RandomVLM(ScriptedVLM):
    def pick(self, pts: PromptPoints) -> int:
        return int(STATE["rng"].integers(len(pts)))


def rules(letter: str = "A") -> list[dict[str, Any]]:
    return [
        {"pattern": "Your mark", "reply": "Your mark: 1, 3"},
        {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: unknown"},
        {"pattern": "marked with black letters", "reply": letter},
        {"pattern": "worth exploring to answer", "reply": "Yes"},
        {"pattern": "Are you confident", "reply": "No"},
        {"pattern": r"QUESTION: ", "reply": "no"},
    ]


def _state() -> dict[str, Any]:
    """The STATE of the module Hydra's ``_target_`` imports (not ``__main__``'s copy)."""
    import bench.vlm_guidance as me

    return me.STATE


AGENTS = {
    "guided": ("vlm_explore", "bench.vlm_guidance.OracleVLM"),
    "random": ("vlm_explore", "bench.vlm_guidance.RandomVLM"),
    "fbe": ("fbe", "bench.vlm_guidance.TrackedFBE"),
}


def run_agent(agent: str, data: Path, out: Path, steps: int, size: int, seed: int) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.records import read_records
    from eqa_runner.run.configstore import register_configs
    from eqa_runner.run.loop import run

    policy, target = AGENTS[agent]
    srv = _state()["server"]
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "eqa_runner" / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "task=express", f"policy={policy}", f"policy.proposer._target_={target}",
                "policy.proposer.look_around_deg=[120,240]",  # the same for every agent
                f"task.data_dir={data}", f"policy.max_steps={steps}", f"sim.width={size}",
                f"sim.height={size}", "run.workers=1", "run.cache=false", "run.progress=false",
                f"run.seed={seed}", "run.bootstrap_samples=10", f"run.output_dir={out}",
                "llm.model=openai/test-model", f"llm.api_base={srv.url}",
                "judge.model=openai/test-judge", f"judge.api_base={srv.url}",
            ],
        )  # fmt: skip
    GlobalHydra.instance().clear()
    srv.configure(rules=rules())
    run(cfg)
    return {r["episode_id"]: r["trace"] for r in read_records(out / "episodes.jsonl")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="step budget per episode")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--size", type=int, default=256, help="frame side, pixels")
    ap.add_argument("--radius", type=float, default=1.5, help="goal region, geodesic metres")
    ap.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from eqa_runner.benchmarks.express.demo import write_express_demo
    from eqa_runner.testing.llm_server import LLMTestServer

    state = _state()
    state["radius"] = args.radius
    tmp = Path(tempfile.mkdtemp(prefix="vlm_guidance_"))
    data = tmp / "express"
    write_express_demo(data, seed=0)
    table: dict[tuple[int, str], dict[str, Any]] = {}
    t0 = time.perf_counter()
    with LLMTestServer() as srv:
        state["server"] = srv
        for seed in args.seeds:
            state["rng"] = np.random.default_rng(1000 + seed)
            for agent in args.agents:
                out = tmp / f"{agent}_s{seed}"
                for eid, t in run_agent(agent, data, out, args.steps, args.size, seed).items():
                    table.setdefault((seed, eid), {})[agent] = t
    print(f"vlm_guidance: {len(table)} episode runs x {len(args.agents)} agents, budget "
          f"{args.steps} steps, goal region {args.radius} m (geodesic), frames {args.size} px, "
          f"seeds {args.seeds}, {time.perf_counter() - t0:.0f} s")  # fmt: skip
    cols = args.agents
    print("seed episode " + " ".join(f"{c:>7}" for c in cols) + "   (first step within the region)")
    penal: dict[str, list[int]] = {c: [] for c in cols}
    for (seed, eid), row in sorted(table.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
        cells = []
        for c in cols:
            s = row.get(c, {}).get("bench_reached_step")
            cells.append(f"{'-' if s is None else s:>7}")
            penal[c].append(args.steps if s is None else int(s))
        print(f"{seed:>4} {eid:>7} " + " ".join(cells))
    n = len(table)
    means = {c: float(np.mean(v)) for c, v in penal.items()}
    print("mean steps (not reached = budget): "
          + ", ".join(f"{c} {m:.2f}" for c, m in means.items()))  # fmt: skip
    print("reached: " + ", ".join(f"{c} {sum(v < args.steps for v in penal[c])}/{n}" for c in cols))
    if "fbe" in cols:
        for c in cols:
            if c == "fbe":
                continue
            better = sum(a < b for a, b in zip(penal[c], penal["fbe"], strict=True))
            worse = sum(a > b for a, b in zip(penal[c], penal["fbe"], strict=True))
            print(
                f"{c} vs fbe: fewer steps on {better}/{n} episodes, more on {worse}/{n}, "
                f"mean ratio {means[c] / max(means['fbe'], 1e-9):.2f}"
            )
    summary = {f"{s}/{e}": {c: r.get(c, {}).get("bench_reached_step") for c in cols}
               for (s, e), r in table.items()}  # fmt: skip
    (tmp / "vlm_guidance.json").write_text(json.dumps(summary, indent=1))
    print(f"per-episode results: {tmp / 'vlm_guidance.json'}")


if __name__ == "__main__":
    main()
