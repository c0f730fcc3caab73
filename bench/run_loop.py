"""Run-loop overhead: N blind episodes against the test server with fixed latency.

Reports wall time over the ideal ``episodes x calls x latency / workers`` for several worker
counts (target <= 1.10 at 16 workers), and, as the same-run baselines, the same run with
``llm.direct_http=false`` (every call through litellm, the path before the direct one) and
plain litellm ``completion`` calls from a thread pool doing the same number of calls. ``floor``
is the ratio two calls in series per episode cannot beat (``ceil(episodes / workers)`` rounds).

    .venv/bin/python bench/run_loop.py [--episodes 200] [--latency 0.2] [--workers 1 4 16 64]
        [--models POLICY JUDGE] [--repeat 1]

The models default to the shipped judge's pinned snapshot (``openai/gpt-4o-2024-08-06``) for
both roles, served by the local test server through ``api_base``: litellm prices every call,
and for a model name missing from its cost map (e.g. ``openai/bench-policy``) that lookup
walks its fallback tables, about 3.5 ms more CPU per call, in both columns alike.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT, llm_server_process  # noqa: E402

CALLS_PER_EPISODE = 2  # blind policy + LLM-Match judge


def run_once(
    url: str, data: Path, out: Path, workers: int, models: list[str], *extra: str
) -> float:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.run.configstore import register_configs
    from eqa_runner.run.loop import run

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "eqa_runner" / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "policy=blind",
                f"task.data_dir={data}",
                f"run.output_dir={out}",
                f"run.workers={workers}",
                "run.cache=false",
                "run.progress=false",
                "task.check_data=false",
                f"llm.model={models[0]}",
                f"llm.api_base={url}",
                f"judge.model={models[1]}",
                f"judge.api_base={url}",
                "run.bootstrap_samples=0",
                *extra,
            ],
        )
    t0 = time.perf_counter()
    res = run(cfg)
    wall = time.perf_counter() - t0
    assert res["counts"]["ok"] == res["counts"]["selected"], res["counts"]
    return wall


def plain_litellm(url: str, calls: int, workers: int, model: str) -> float:
    import litellm

    def one(i: int) -> None:
        litellm.completion(
            model=model,
            api_base=url,
            api_key="x",
            messages=[{"role": "user", "content": f"Q: question {i}"}],
            num_retries=0,
            max_retries=0,
        )

    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(calls)))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--repeat", type=int, default=1, help="rounds over the worker counts")
    ap.add_argument(
        "--models",
        nargs=2,
        default=["openai/gpt-4o-2024-08-06", "openai/gpt-4o-2024-08-06"],
        metavar=("POLICY", "JUDGE"),
        help="litellm model names (served by the local test server)",
    )
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.helpers.datasets import make_openeqa_dataset

    rules = {
        "rules": [
            {"pattern": "Your mark", "reply": "Your mark: 4"},
            {"pattern": ".", "reply": "A: a chair\nExplanation: common."},
        ],
        "latency_s": args.latency,
    }
    with tempfile.TemporaryDirectory() as tmp, llm_server_process(rules) as url:
        data = make_openeqa_dataset(
            Path(tmp) / "d", n_questions=args.episodes, n_episodes=2, frames=2
        )
        from eqa_runner.llm import load_litellm

        load_litellm()  # import once, outside the timings
        run_once(url, data, Path(tmp) / "warm", 16, args.models)  # warm-up (first calls)
        print(
            f"{args.episodes} blind episodes x {CALLS_PER_EPISODE} calls, "
            f"server latency {args.latency * 1000:.0f} ms, {os.cpu_count()} cores, "
            f"models {' / '.join(args.models)}, load avg {os.getloadavg()[0]:.1f}"
        )
        print(
            f"{'workers':>7} {'ideal s':>7} {'floor':>5} | {'direct s':>8} {'ratio':>5} | "
            f"{'litellm s':>9} {'ratio':>5} | {'plain litellm threads s':>23} {'ratio':>5}"
        )
        calls = args.episodes * CALLS_PER_EPISODE
        for rnd in range(args.repeat):
            for w in args.workers:
                ideal = calls * args.latency / w
                floor = math.ceil(args.episodes / w) * CALLS_PER_EPISODE * args.latency / ideal
                out = Path(tmp) / f"r{rnd}w{w}"
                fast = run_once(url, data, out, w, args.models)
                slow = run_once(
                    url,
                    data,
                    out.with_name(out.name + "-litellm"),
                    w,
                    args.models,
                    "llm.direct_http=false",
                )  # the judge inherits it
                plain = plain_litellm(url, calls, w, args.models[0]) if w > 1 else None
                ptxt = f"{plain:23.2f} {plain / ideal:5.2f}" if plain else f"{'-':>23} {'-':>5}"
                print(
                    f"{w:7d} {ideal:7.2f} {floor:5.2f} | {fast:8.2f} {fast / ideal:5.2f} | "
                    f"{slow:9.2f} {slow / ideal:5.2f} | {ptxt}",
                    flush=True,
                )
    print("target: ratio <= 1.10 at 16 workers (direct, the default path)")


if __name__ == "__main__":
    main()
