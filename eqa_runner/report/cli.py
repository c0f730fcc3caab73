"""``python -m eqa_runner.report <run_or_sweep_dir>… [--by …] [--compare] [--csv F] [--html]``.

One table of runs (task, policy, models, n, headline metrics with 95% intervals, judge failures,
errors, cost), printed as Markdown and optionally written as CSV. Shards of one config are merged
into one row by re-aggregating their records with the run's own judge. ``--compare`` shows only
the config keys that differ between the runs beside the metrics and their differences to a
baseline run (an ablation table). ``--html`` writes a self-contained ``report.html``.
See docs/reports.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from eqa_runner.errors import ReportError
from eqa_runner.report.compare import compare_table, pick_baseline
from eqa_runner.report.markdown import to_markdown
from eqa_runner.report.runs import load_runs
from eqa_runner.report.tables import by_table, display_runs, headline_metrics, runs_table


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m eqa_runner.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("dirs", nargs="+", type=Path, help="run dirs and/or sweep dirs")
    ap.add_argument("--by", choices=["category", "subset", "type", "split"], default=None)
    ap.add_argument("--compare", action="store_true", help="ablation table of differing keys")
    ap.add_argument("--baseline", default=None, help="baseline run: index (0-based) or dir")
    ap.add_argument("--csv", type=Path, default=None, help="write the table as CSV")
    ap.add_argument("--html", action="store_true", help="write a self-contained report.html")
    ap.add_argument("--html-out", type=Path, default=None, help="where to write report.html")
    ap.add_argument("--max-episodes", type=int, default=300, help="episode rows per run in HTML")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Print the tables (and write CSV / HTML); 0, or 2 after a one-line ``error: …``."""
    args = _parser().parse_args(argv)
    try:
        return _report(args)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _report(args: argparse.Namespace) -> int:
    runs = load_runs(args.dirs)
    baseline = pick_baseline(runs, args.baseline) if args.compare or args.html else 0
    if args.compare:
        table = compare_table(runs, baseline)
        print(f"baseline: row {baseline} ({runs[baseline].label})\n")
        print(to_markdown(table))
        csv_df = pd.concat([table, runs_table(runs)[["run", "n"]]], axis=1)
    else:
        csv_df = runs_table(runs)
        print(to_markdown(display_runs(csv_df, headline_metrics(runs))))
    notes = [f"- {r.label}: {n}" for r in runs for n in r.notes]
    if notes:
        print("\nnotes:\n" + "\n".join(notes))
    if args.by:
        print(f"\nby {args.by}:\n")
        print(to_markdown(by_table(runs, args.by)))
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        csv_df.to_csv(args.csv, index=False)
        print(f"\ncsv: {args.csv}")
    if args.html:
        from eqa_runner.report.html import write_reports

        for p in write_reports(runs, compare=args.compare, out=args.html_out,
                               baseline=baseline, max_episodes=args.max_episodes):  # fmt: skip
            print(f"html: {p}")
    return 0
