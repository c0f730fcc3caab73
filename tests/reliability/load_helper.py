"""Run one configuration in-process and sample this process's RSS (used by test_load.py).

    python -m tests.reliability.load_helper <out.json> <marks, e.g. 200,2000> <overrides>...

A background thread reads ``/proc/self/statm`` and the run's JSONL every 20 ms and notes the
RSS when the JSONL first holds each mark's number of lines. The result goes to ``out.json``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE / 2**20


def count_lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return fh.read().count(b"\n")
    except FileNotFoundError:
        return 0


def main() -> None:
    out_file, marks = Path(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")]
    overrides = sys.argv[3:]
    from hydra import compose, initialize_config_dir

    from eqa_runner.run.configstore import register_configs
    from eqa_runner.run.loop import run

    register_configs()
    conf = Path(__file__).resolve().parents[2] / "eqa_runner" / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    jsonl = Path(cfg.run.output_dir) / "episodes.jsonl"
    seen: dict[str, float] = {}
    times: dict[str, float] = {}
    stop = threading.Event()

    def sample() -> None:
        todo = list(marks)
        while todo and not stop.is_set():
            n = count_lines(jsonl)
            while todo and n >= todo[0]:
                seen[str(todo[0])] = rss_mb()
                times[str(todo[0])] = time.perf_counter()
                todo.pop(0)
            stop.wait(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    t.start()
    result = run(cfg)
    elapsed = time.perf_counter() - t0
    stop.set()
    t.join()
    out_file.write_text(
        json.dumps(
            {
                "rss_mb_at": seen,
                "t_at": {k: v - t0 for k, v in times.items()},
                "elapsed_s": elapsed,
                "counts": result["counts"],
                "rss_mb_end": rss_mb(),
            }
        )
    )


if __name__ == "__main__":
    main()
