"""Frame pipeline: K=50 frames of 1920x1080 PNGs decoded, resized to 512 and encoded.

Prints frames/s of the pipeline and of bare PIL decode of the same files (the floor) and their
ratio (target >= 0.8), plus the peak RSS of one multi-frame episode (target <= 250 MB) measured
in a fresh process, and the time to list an episode folder (nothing decoded).

    .venv/bin/python bench/frame_pipeline.py [--frames 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._util import ROOT  # noqa: E402
from eqa_runner.benchmarks.openeqa_em.task import list_frames  # noqa: E402
from eqa_runner.images import load_frame  # noqa: E402


def make_frames(d: Path, n: int, seed: int = 0) -> list[Path]:
    """Photo-like 1920x1080 frames: smooth shading, edges and sensor noise (realistic PNG size)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:1080, 0:1920].astype(np.float32)
    paths = []
    for i in range(n):
        base = np.stack(
            [
                np.sin(xx / (200 + 10 * i)) * 60 + 120,
                np.cos(yy / (150 + 7 * i)) * 50 + 110,
                (xx + yy) / 3000 * 80 + 90,
            ],
            axis=-1,
        )
        for _ in range(12):  # furniture-like blocks
            x0, y0 = rng.integers(0, 1700), rng.integers(0, 900)
            base[y0 : y0 + rng.integers(60, 300), x0 : x0 + rng.integers(60, 400)] = rng.integers(
                30, 230, size=3
            )
        img = np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8)
        p = d / f"{i:05d}-rgb.png"
        Image.fromarray(img).save(p)
        paths.append(p)
    return paths


def bare_decode(p: Path) -> int:
    with Image.open(p) as im:
        im.load()
        return im.size[0]


def timed(fn, paths: list[Path], workers: int) -> float:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, paths))
    return time.perf_counter() - t0


EPISODE_RSS = """
import asyncio, sys
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.llm import LLMClient
from eqa_runner.policies.frames import FramesPolicy
from eqa_runner.benchmarks.openeqa_em.task import OpenEQATask
from eqa_runner.types import Episode
def hwm():  # peak RSS of this process image (VmHWM resets on exec, unlike ru_maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
root = sys.argv[1]
task = OpenEQATask(data_dir=root)
ep = Episode("e0", "What is on the table?", "a lamp", "object recognition", scene="hm3d-v0/ep")
before = hwm()
with ThreadPoolExecutor(4) as pool:
    ctx = EpisodeContext(llm=LLMClient({"model": "offline"}, role="policy"),
                         rng=np.random.default_rng(0), seed=0, executor=pool, task=task)
    asyncio.run(FramesPolicy(num_frames=50).predict(ep, ctx))
after = hwm()
print(f"{before:.1f} {after:.1f}")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ep_dir = Path(tmp) / "episodes" / "hm3d-v0" / "ep"
        ep_dir.mkdir(parents=True)
        paths = make_frames(ep_dir, args.frames)
        size_mb = sum(p.stat().st_size for p in paths) / 2**20
        timed(bare_decode, paths, args.workers)  # warm the page cache
        dec, pipe = [], []
        for _ in range(args.repeats):
            dec.append(timed(bare_decode, paths, args.workers))
            pipe.append(timed(lambda p: load_frame(p, 512, "png"), paths, args.workers))
        d, p = statistics.median(dec), statistics.median(pipe)
        t0 = time.perf_counter()
        for _ in range(100):
            list_frames(ep_dir)
        list_ms = (time.perf_counter() - t0) * 10
        out = subprocess.run(
            [sys.executable, "-c", EPISODE_RSS, tmp],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout.split()
        base_rss, ep_rss = float(out[0]), float(out[1])
    print(
        f"frames: {args.frames} x 1920x1080 PNG ({size_mb:.1f} MB on disk), "
        f"{args.workers} threads, median of {args.repeats}"
    )
    print(f"bare PIL decode      : {args.frames / d:7.1f} frames/s")
    print(f"decode+resize+encode : {args.frames / p:7.1f} frames/s")
    print(f"pipeline / decode    : {d / p:.2f}   (target >= 0.80)")
    print(f"list episode folder  : {list_ms:.2f} ms (paths only, nothing decoded)")
    print(
        f"peak RSS, one K=50 episode (fresh process): {ep_rss:.0f} MB "
        f"(after imports {base_rss:.0f} MB; target <= 250 MB)"
    )


if __name__ == "__main__":
    main()
