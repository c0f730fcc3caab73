"""Run-loop overhead: N blind episodes against the test server with fixed latency.

Reports wall time over the ideal ``episodes x calls x latency / workers`` for several worker
counts (targets: <= 1.10 at 16 workers, <= 1.35 at 64), once per ``--concurrency`` mode:
``fixed`` (up to ``run.workers`` calls in flight from the first: what the runner itself costs)
and ``adaptive`` (the default: the limiter's slow start from ``ADAPTIVE_INITIAL`` calls, on
purpose). ``cpu s`` is this process's CPU time over the run (all threads: the runner alone,
the server is another process); ``episodes`` the ratio of the episodes alone (first start to
last record: the run without its set-up and summary); ``bare`` the ratio of the same calls made
by a bare aiohttp client (the server's, the network's and aiohttp's share). ``floor`` is the
ratio two calls in series per episode cannot beat (``ceil(episodes / workers)`` rounds of 2
calls) for ``fixed``, and for ``adaptive`` the ratio the slow start cannot beat: the same
episodes through a simulated limiter (zero CPU, every call exactly ``--latency``) that grows as
the client's does. Same-run baselines with ``--baselines``: the adaptive run with
``llm.direct_http=false`` (every call through litellm) and plain litellm
``completion`` calls from a thread pool.

    .venv/bin/python bench/run_loop.py [--episodes 200] [--latency 0.2] [--workers 1 4 16 64]
        [--concurrency fixed adaptive] [--baselines] [--server-cpu 1 --runner-cpu 0]
        [--slow-start-step 1] [--models POLICY JUDGE] [--repeat 1]

``--server-cpu`` / ``--runner-cpu`` pin the test server's process and this one to a core each,
so that their threads do not compete for one. ``--slow-start-step`` (experiments) sets the
limit's growth per success during the slow start (``ADAPTIVE_SLOW_START_STEP``).
The models default to the shipped judge's pinned snapshot (``openai/gpt-4o-2024-08-06``) for
both roles, served by the local test server through ``api_base``: litellm's cost map prices
every call.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import ROOT, llm_server_process  # noqa: E402

CALLS_PER_EPISODE = 2  # blind policy + LLM-Match judge


def run_once(
    url: str, data: Path, out: Path, workers: int, models: list[str], *extra: str
) -> tuple[float, float]:
    """(wall s, CPU s of this process) of one run."""
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
    t0, c0 = time.perf_counter(), time.process_time()
    res = run(cfg)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert res["counts"]["ok"] == res["counts"]["selected"], res["counts"]
    return wall, cpu


EPISODES_S: list[float] = []  # the wall time of each run's episodes (first start to last record)


def time_episodes() -> None:
    """Time the run loop's episodes apart from its set-up and summary (wraps ``execute``)."""
    from eqa_runner.run import loop

    execute = loop.execute

    async def timed(*a: Any, **kw: Any) -> None:
        t0 = time.perf_counter()
        try:
            await execute(*a, **kw)
        finally:
            EPISODES_S.append(time.perf_counter() - t0)

    loop.execute = timed


def bare_client(url: str, episodes: int, workers: int) -> float:
    """The same calls without the runner: ``workers`` episodes at a time, each two chat POSTs in
    series from one aiohttp session (what the server, the network and aiohttp cost)."""
    import aiohttp

    async def main() -> float:
        sem = asyncio.Semaphore(workers)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def call(text: str) -> None:
                body = {"model": "gpt-4o-2024-08-06", "max_tokens": 32,
                        "messages": [{"role": "user", "content": text}]}  # fmt: skip
                async with session.post(f"{url}/chat/completions", json=body) as r:
                    json.loads(await r.read())

            async def episode(i: int) -> None:
                async with sem:
                    for k in range(CALLS_PER_EPISODE):
                        await call(f"Q: question {i} ({k})")

            await asyncio.gather(*(episode(i) for i in range(min(workers, episodes))))  # warm
            t0 = time.perf_counter()
            await asyncio.gather(*(episode(i) for i in range(episodes)))
            return time.perf_counter() - t0

    return asyncio.run(main())


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


def slow_start_wall(episodes: int, workers: int, latency: float, grow: float | None) -> float:
    """Wall time of ``episodes`` x 2 calls through a simulated limiter: ``workers`` episodes at a
    time, every call exactly ``latency``, no CPU; waiting calls start first come, first served.
    ``grow``: the limit's growth per successful call from the client's initial limit (slow
    start, no 429), capped at the ceiling (``workers``); None: ``workers`` from the start
    (``fixed``)."""
    from eqa_runner.llm.transport import ADAPTIVE_INITIAL

    limit = float(workers) if grow is None else float(min(workers, ADAPTIVE_INITIAL))
    left = {e: CALLS_PER_EPISODE for e in range(episodes)}
    waiting = deque(range(min(workers, episodes)))  # episodes whose next call waits
    started, now, in_flight, done = min(workers, episodes), 0.0, 0, 0
    events: list[tuple[float, int]] = []
    while done < episodes:
        while waiting and in_flight < math.floor(limit):
            heapq.heappush(events, (now + latency, waiting.popleft()))
            in_flight += 1
        now, e = heapq.heappop(events)
        in_flight -= 1
        if grow is not None:
            limit = min(float(workers), limit + grow)
        left[e] -= 1
        if left[e]:
            waiting.append(e)
            continue
        done += 1
        if started < episodes:
            waiting.append(started)
            started += 1
    return now


def slow_start_growth() -> float:
    """The client's limit growth per successful call during slow start."""
    from eqa_runner.llm import transport

    return float(transport.ADAPTIVE["slow_start_step"])


def set_slow_start_step(step: float) -> None:
    """Experiments: the client's slow-start step (1 doubles the limit per round, 2 triples)."""
    from eqa_runner.llm import transport

    transport.ADAPTIVE["slow_start_step"] = step


def measure(args: argparse.Namespace, url: str, data: Path, tmp: Path) -> list[dict]:
    """Every (round, workers, mode) run once, the modes alternating; one row each."""
    rows = []
    for rnd in range(args.repeat):
        for w in args.workers:
            for mode in args.concurrency:
                out = tmp / f"r{rnd}w{w}{mode}"
                extra = [f"llm.concurrency={mode}"]  # the judge inherits it
                wall, cpu = run_once(url, data, out, w, args.models, *extra)
                row = {"workers": w, "mode": mode, "wall": wall, "cpu": cpu,
                       "episodes": EPISODES_S[-1], "load": os.getloadavg()[0]}  # fmt: skip
                if mode == args.concurrency[-1]:
                    row["bare"] = bare_client(url, args.episodes, w)
                if args.baselines and mode == "adaptive":
                    row["litellm"] = run_once(
                        url,
                        data,
                        tmp / f"{out.name}-litellm",
                        w,
                        args.models,
                        *extra,
                        "llm.direct_http=false",
                    )[0]
                    calls = args.episodes * CALLS_PER_EPISODE
                    row["plain"] = plain_litellm(url, calls, w, args.models[0]) if w > 1 else None
                rows.append(row)
                print(format_row(args, row), flush=True)
    return rows


def format_row(args: argparse.Namespace, row: dict) -> str:
    w = row["workers"]
    ideal = args.episodes * CALLS_PER_EPISODE * args.latency / w
    grow = None if row["mode"] == "fixed" else slow_start_growth()
    floor = slow_start_wall(args.episodes, w, args.latency, grow) / ideal
    bare = f"{row['bare'] / ideal:5.2f}" if "bare" in row else f"{'':5}"
    line = (
        f"{row['mode']:>8} {w:7d} {ideal:7.2f} {floor:5.2f} {bare} | {row['wall']:6.2f} "
        f"{row['wall'] / ideal:5.2f} {row['episodes'] / ideal:8.2f} {row['cpu']:5.2f} | "
        f"{row['load']:4.1f}"
    )
    if "litellm" in row:
        p = row["plain"]
        ptxt = f"{p:7.2f} {p / ideal:5.2f}" if p else f"{'-':>7} {'-':>5}"
        line += f" | {row['litellm']:9.2f} {row['litellm'] / ideal:5.2f} | {ptxt}"
    return line


def medians(args: argparse.Namespace, rows: list[dict]) -> None:
    print(f"medians of {args.repeat}:")
    for w in args.workers:
        ideal = args.episodes * CALLS_PER_EPISODE * args.latency / w
        for mode in args.concurrency:
            mine = [r for r in rows if r["workers"] == w and r["mode"] == mode]
            wall = statistics.median(r["wall"] for r in mine)
            eps = statistics.median(r["episodes"] for r in mine)
            cpu = statistics.median(r["cpu"] for r in mine)
            bare = [r["bare"] for r in rows if r["workers"] == w and "bare" in r]
            print(f"{mode:>8} {w:7d}  ratio {wall / ideal:5.2f}  episodes {eps / ideal:5.2f}  "
                  f"cpu s {cpu:5.2f}  bare {statistics.median(bare) / ideal:5.2f}")  # fmt: skip


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument(
        "--concurrency",
        nargs="+",
        default=["fixed", "adaptive"],
        choices=["fixed", "adaptive"],
        help="llm.concurrency modes, alternating",
    )
    ap.add_argument(
        "--baselines",
        action="store_true",
        help="also the litellm path and plain litellm threads (adaptive rows)",
    )
    ap.add_argument("--slow-start-step", type=float, help="experiments: growth per success")
    ap.add_argument("--server-cpu", type=int, help="pin the test server to this core")
    ap.add_argument("--runner-cpu", type=int, help="pin this process to this core")
    ap.add_argument("--repeat", type=int, default=1, help="rounds over the worker counts")
    ap.add_argument(
        "--models",
        nargs=2,
        default=["openai/gpt-4o-2024-08-06", "openai/gpt-4o-2024-08-06"],
        metavar=("POLICY", "JUDGE"),
        help="litellm model names (served by the local test server)",
    )
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    if args.runner_cpu is not None:
        os.sched_setaffinity(0, {args.runner_cpu})
    if args.slow_start_step is not None:
        set_slow_start_step(args.slow_start_step)
    sys.path.insert(0, str(ROOT))
    from tests.helpers.datasets import make_openeqa_dataset

    rules = {
        "rules": [
            {"pattern": "Your mark", "reply": "Your mark: 4"},
            {"pattern": ".", "reply": "A: a chair\nExplanation: common."},
        ],
        "latency_s": args.latency,
    }
    with (
        tempfile.TemporaryDirectory() as tmp,
        llm_server_process(rules, cpus=args.server_cpu) as url,
    ):
        data = make_openeqa_dataset(
            Path(tmp) / "d", n_questions=args.episodes, n_episodes=2, frames=2
        )
        from eqa_runner.llm import load_litellm

        load_litellm()  # import once, outside the timings
        time_episodes()
        run_once(url, data, Path(tmp) / "warm", 16, args.models)  # warm-up (first calls)
        pins = f", server on core {args.server_cpu}, runner on core {args.runner_cpu}"
        print(
            f"{args.episodes} blind episodes x {CALLS_PER_EPISODE} calls, "
            f"server latency {args.latency * 1000:.0f} ms, {os.cpu_count()} cores"
            f"{pins if args.server_cpu is not None else ''}, models {' / '.join(args.models)}, "
            f"load avg {os.getloadavg()[0]:.1f}"
        )
        head = f"{'mode':>8} {'workers':>7} {'ideal s':>7} {'floor':>5} {'bare':>5} | " \
               f"{'wall s':>6} {'ratio':>5} {'episodes':>8} {'cpu s':>5} | load"  # fmt: skip
        if args.baselines:
            head += f" | {'litellm s':>9} {'ratio':>5} | {'plain s':>7} {'ratio':>5}"
        print(head)
        rows = measure(args, url, data, Path(tmp))
    medians(args, rows)
    print("floor: fixed = ceil(episodes / workers) rounds of 2 calls; adaptive = the slow start")
    print("bare: the same calls from a bare aiohttp client (server + network + aiohttp); ratio:")
    print("the whole run (set-up, episodes, summary); episodes: first start to last record")
    print("target: ratio <= 1.10 at 16 workers and <= 1.35 at 64")


if __name__ == "__main__":
    main()
