"""``python -m eqa_runner.data fetch|check <benchmark>``: stage and verify datasets.

``fetch`` downloads what a benchmark's upstream publishes (question files, original prompt
files, frame archives) and prints how to stage what cannot be downloaded (licensed scenes);
``check`` verifies that every question's frames / scene is present and readable (exit code 1
if not). Each benchmark of the registry brings its own options (its package's ``data``
module); ``python -m eqa_runner.data check <benchmark> --help`` lists them. See docs/data.md.
"""

from __future__ import annotations

import argparse
import re
import sys

from eqa_runner.data.sources import FetchError
from eqa_runner.errors import DataError
from eqa_runner.registry import benchmarks


def build_parser() -> argparse.ArgumentParser:
    """``fetch`` and ``check``, one sub-command per benchmark with its own options."""
    ap = argparse.ArgumentParser(
        prog="python -m eqa_runner.data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="download a benchmark's questions, prompts and frames")
    check = sub.add_parser("check", help="verify that every question's frames / scene is present")
    fetch_by = fetch.add_subparsers(dest="benchmark", required=True, metavar="benchmark")
    check_by = check.add_subparsers(dest="benchmark", required=True, metavar="benchmark")
    for bench in benchmarks():
        if bench.data is None:
            continue
        module = bench.resolve("data")
        name = bench.cli_name
        if hasattr(module, "fetch"):
            p = fetch_by.add_parser(name, help=bench.title)
            _data_dir_arg(p, name)
            module.add_fetch_args(p)
            p.set_defaults(run=module.fetch)
        p = check_by.add_parser(name, help=bench.title)
        _data_dir_arg(p, name)
        module.add_check_args(p)
        p.set_defaults(run=module.check)
    return ap


def _data_dir_arg(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument("--data-dir", default=f"data/{name}", help=f"default data/{name}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except FetchError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    except DataError as e:
        print(f"FAILED: {in_option_terms(str(e), args)}")
        return 1


def in_option_terms(message: str, args: argparse.Namespace) -> str:
    """A data error names the run's keys (``task.data_dir``); here the command's options
    (``--data-dir``) say the same, for each key the command has an option for."""
    for key in vars(args):
        message = re.sub(rf"\btask\.{key}\b", f"--{key.replace('_', '-')}", message)
    return message


if __name__ == "__main__":
    sys.exit(main())
