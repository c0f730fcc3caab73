"""Adaptive vs fixed concurrency against a server-side rate limit (real HTTP, LLMClient).

The test server (own process, 127.0.0.1) allows ``--rps`` requests per second (token bucket,
``--burst`` tokens) with ``--latency`` per reply; beyond that it answers 429 with
``Retry-After`` / ``retry-after-ms``. ``--calls`` chat calls are made through
:class:`~eqa_runner.llm.LLMClient` with ``--ceiling`` of them wanted at once (the run's
``run.workers``), first with ``llm.concurrency=adaptive`` (the default), then ``fixed``.
The time the limit allows is ``(calls - burst) / rps``; target: adaptive within 1.15x of it with
few 429s, where fixed is slower or fails calls.

    .venv/bin/python bench/rate_limit.py [--rps 20] [--burst 5] [--latency 0.2] [--calls 300]
        [--ceiling 64] [--max-retries 6] [--modes adaptive fixed] [--slow-start-step 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import llm_server_process  # noqa: E402


def server_stats(url: str) -> dict:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/_stats", timeout=10) as r:
        return json.loads(r.read())


def reset_server(url: str) -> None:
    req = urllib.request.Request(url.rsplit("/v1", 1)[0] + "/_reset", data=b"{}", method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def run_mode(url: str, mode: str, args: argparse.Namespace) -> dict:
    from eqa_runner.llm import LLMClient, LLMError, track_usage, user
    from eqa_runner.llm.client import endpoint_stats

    client = LLMClient(
        {
            "model": "openai/gpt-4o-2024-08-06",
            "api_base": url,
            "concurrency": mode,
            "max_retries": args.max_retries,
            "backoff_base_s": 0.5,
        },
        role="policy",
        ceiling=args.ceiling,
    )

    async def main() -> tuple[int, dict]:
        sem = asyncio.Semaphore(args.ceiling)  # the run's workers
        failed = 0

        async def one(i: int) -> None:
            nonlocal failed
            async with sem:
                try:
                    await client.acomplete([user(f"question {i}")])
                except LLMError:
                    failed += 1

        with track_usage() as usage:
            await asyncio.gather(*(one(i) for i in range(args.calls)))
        stats = (
            endpoint_stats().get(f"{client.endpoint} {client.model}", {})
            if mode == "adaptive"
            else {}
        )
        return failed, {"retries": usage.retries, **stats}

    reset_server(url)
    t0 = time.perf_counter()
    failed, info = asyncio.run(main())
    wall = time.perf_counter() - t0
    srv = server_stats(url)
    s429 = srv["by_fault"].get("rate_limit", 0)
    return {"wall": wall, "failed": failed, "s429": s429, "requests": srv["requests"], **info,
            "peak_in_flight": srv["max_in_flight"]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rps", type=float, default=20.0)
    ap.add_argument("--burst", type=float, default=5.0)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--ceiling", type=int, default=64)
    ap.add_argument("--max-retries", type=int, default=6)
    ap.add_argument("--modes", nargs="+", default=["adaptive", "fixed"])
    ap.add_argument(
        "--aimd",
        nargs=2,
        type=float,
        metavar=("INCREASE", "DECREASE"),
        help="override the client's AIMD constants (experiments)",
    )
    ap.add_argument(
        "--slow-start-step",
        type=float,
        help="override the client's slow-start growth per success (experiments)",
    )
    args = ap.parse_args()
    from eqa_runner.llm import client as client_mod

    if args.aimd:
        client_mod.ADAPTIVE_INCREASE, client_mod.ADAPTIVE_DECREASE = args.aimd
    if args.slow_start_step is not None:
        client_mod.ADAPTIVE_SLOW_START_STEP = args.slow_start_step
    from eqa_runner.llm import load_litellm

    load_litellm()  # import once, outside the timings
    server = {"latency_s": args.latency, "rate_limit_rps": args.rps,
              "rate_limit_burst": args.burst}  # fmt: skip
    allowed = (args.calls - args.burst) / args.rps
    with llm_server_process(server) as url:
        print(
            f"server limit {args.rps:g} req/s (burst {args.burst:g}), latency "
            f"{args.latency * 1000:.0f} ms; {args.calls} calls, ceiling {args.ceiling} "
            f"(run.workers), llm.max_retries={args.max_retries}; {os.cpu_count()} cores, "
            f"load avg {os.getloadavg()[0]:.1f}"
        )
        print(f"time the limit allows: {allowed:.2f} s")
        print(
            f"{'mode':>9} {'wall s':>7} {'/allowed':>8} {'ok':>5} {'failed':>6} {'429s':>5} "
            f"{'429/call':>8} {'requests':>8} {'peak in flight':>14} {'limit':>6} {'decreases':>9}"
        )
        for mode in args.modes:
            r = run_mode(url, mode, args)
            ok = args.calls - r["failed"]
            print(
                f"{mode:>9} {r['wall']:7.2f} {r['wall'] / allowed:8.2f} {ok:5d} {r['failed']:6d} "
                f"{r['s429']:5d} {r['s429'] / args.calls:8.2f} {r['requests']:8d} "
                f"{r.get('peak_in_flight', '-'):>14} {r.get('limit', '-'):>6} "
                f"{r.get('decreases', '-'):>9}",
                flush=True,
            )
    print("target: adaptive wall <= 1.15 x allowed with few 429s; fixed slower or failing calls")


if __name__ == "__main__":
    main()
