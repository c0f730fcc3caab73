"""``python -m eqa_runner.demo <dir>``: write the offline demo datasets.

One directory per benchmark of the registry (``<dir>/<name>/``: its questions in the upstream
file format, with frames or apartment meshes rendered from procedural apartments), each a
valid ``task.data_dir`` for its task. Deterministic per ``--seed``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from eqa_runner.errors import os_error_line
from eqa_runner.registry import benchmarks


def write_demo(out: Path, seed: int = 0, only: Iterable[str] | None = None) -> dict[str, Path]:
    """Write the demo datasets under ``out`` (every benchmark with a demo writer, or those
    named in ``only``); returns their data dirs by benchmark (``data``/``demo`` name)."""
    out = Path(out)
    wanted = set(only) if only is not None else None
    dirs: dict[str, Path] = {}
    for bench in benchmarks():
        if bench.demo is None or (wanted is not None and bench.cli_name not in wanted):
            continue
        bench.resolve("demo")(out / bench.cli_name, seed=seed)
        dirs[bench.cli_name] = out / bench.cli_name
    return dirs


def main(argv: list[str] | None = None) -> None:
    names = [b.cli_name for b in benchmarks() if b.demo is not None]
    ap = argparse.ArgumentParser(prog="python -m eqa_runner.demo", description=__doc__)
    ap.add_argument("out", type=Path, help="directory to write the demo datasets into")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=names, default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        dirs = write_demo(args.out, args.seed, only=[args.only] if args.only else None)
    except OSError as e:  # an unwritable or full place: one line naming it, no traceback
        fix = "write the demo to a writable directory with free space"
        print(f"error: {os_error_line(e.filename or args.out, e, fix)}", file=sys.stderr)
        sys.exit(2)
    for name, d in dirs.items():
        print(f"{name}: task.data_dir={d}")
    print(f"demo written in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
