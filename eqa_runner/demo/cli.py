"""``python -m eqa_runner.demo <dir>``: write the offline demo datasets.

One directory per benchmark of the registry (``<dir>/<name>/``: its questions in the upstream
file format, with frames or apartment meshes rendered from procedural apartments), each a
valid ``task.data_dir`` for its task. Deterministic per ``--seed``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from eqa_runner.errors import os_error_line
from eqa_runner.registry import Benchmark, benchmarks

STAMP = (
    ".demo-stamp.json"  # what wrote a benchmark's demo dir: seed, version, writer sources, files
)


def write_demo(
    out: Path,
    seed: int = 0,
    only: Iterable[str] | None = None,
    reuse: bool = False,
    reused: list[str] | None = None,
) -> dict[str, Path]:
    """Write the demo datasets under ``out`` (every benchmark with a demo writer, or those
    named in ``only``); returns their data dirs by benchmark (``data``/``demo`` name). With
    ``reuse``, a dir whose stamp says it was written for this seed by the same writer code, with
    every file still there at its size, is kept as it is (its name appended to ``reused``)."""
    out = Path(out)
    wanted = set(only) if only is not None else None
    dirs: dict[str, Path] = {}
    for bench in benchmarks():
        if bench.demo is None or (wanted is not None and bench.cli_name not in wanted):
            continue
        dest = out / bench.cli_name
        key = stamp_key(bench, seed)
        if reuse and stamp_matches(dest, key):
            if reused is not None:
                reused.append(bench.cli_name)
        else:
            (dest / STAMP).unlink(missing_ok=True)
            bench.resolve("demo")(dest, seed=seed)
            write_stamp(dest, key)
        dirs[bench.cli_name] = dest
    return dirs


def stamp_key(bench: Benchmark, seed: int) -> dict[str, object]:
    """The seed, the version and a hash of the writer's code (the shared demo package and the
    benchmark's demo module): a change to any of them writes the data again."""
    from eqa_runner import __version__

    writer_file = getattr(sys.modules[bench.resolve("demo").__module__], "__file__", None)
    sources = sorted(Path(__file__).parent.glob("*.py"))
    if writer_file:  # the benchmark's package: its demo module and what that builds on
        sources += sorted(Path(writer_file).parent.glob("*.py"))
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return {"seed": seed, "version": __version__, "writer_sha256": digest.hexdigest()}


def write_stamp(dest: Path, key: dict[str, object]) -> None:
    files = {
        str(p.relative_to(dest)): p.stat().st_size
        for p in sorted(dest.rglob("*"))
        if p.is_file() and p.name != STAMP
    }
    (dest / STAMP).write_text(json.dumps({**key, "files": files}, indent=1) + "\n")


def stamp_matches(dest: Path, key: dict[str, object]) -> bool:
    try:
        stamp = json.loads((dest / STAMP).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict) or any(stamp.get(k) != v for k, v in key.items()):
        return False
    files = stamp.get("files")
    if not isinstance(files, dict) or not files:
        return False
    for rel, size in files.items():
        path = dest / rel
        if not path.is_file() or path.stat().st_size != size:
            return False
    return True


def main(argv: list[str] | None = None) -> None:
    names = [b.cli_name for b in benchmarks() if b.demo is not None]
    ap = argparse.ArgumentParser(prog="python -m eqa_runner.demo", description=__doc__)
    ap.add_argument("out", type=Path, help="directory to write the demo datasets into")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=names, default=None)
    ap.add_argument(
        "--force", action="store_true", help="write again even where the same seed is written"
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    only = [args.only] if args.only else None
    try:
        reused: list[str] = []
        dirs = write_demo(args.out, args.seed, only=only, reuse=not args.force, reused=reused)
    except OSError as e:  # an unwritable or full place: one line naming it, no traceback
        fix = "write the demo to a writable directory with free space"
        print(f"error: {os_error_line(e.filename or args.out, e, fix)}", file=sys.stderr)
        sys.exit(2)
    for name, d in dirs.items():
        kept = f" (kept: written for --seed {args.seed} by this code; --force rewrites)"
        print(f"{name}: task.data_dir={d}{kept if name in reused else ''}")
    print(f"demo ready in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
