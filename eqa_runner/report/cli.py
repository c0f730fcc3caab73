"""``python -m eqa_runner.report <run_or_sweep_dir>… [--by …] [--compare] [--csv F] [--html]``.

One table of runs (task, policy, models, n, headline metrics with 95% intervals, judge failures,
errors, cost), printed as Markdown and optionally written as CSV. Shards of one config are merged
into one row by re-aggregating their records with the run's own judge. ``--compare`` shows only
the config keys that differ between the runs beside the metrics and their paired differences to
a baseline run (Δ on the episodes both scored, interval, p, n). ``--judges RUN`` compares the
judges that scored a run (rejudge); ``--power RUN --delta D`` estimates the episodes needed to
detect D. ``--html`` writes a self-contained ``report.html``. See docs/reports.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from eqa_runner.errors import ReportError, UserError, os_error_line
from eqa_runner.records import gc_paused
from eqa_runner.report.compare import (
    Paired,
    compare_table,
    paired_csv,
    paired_differences,
    paired_table,
    pick_baseline,
    reinterval,
    stamp_warnings,
)
from eqa_runner.report.markdown import to_markdown
from eqa_runner.report.runs import Run, load_runs, runs_differing_keys
from eqa_runner.report.tables import by_table, display_runs, headline_metrics, runs_table


def _formats() -> str:
    """The upstream formats of the registered benchmarks, as ``--format`` takes them."""
    from eqa_runner.registry import benchmarks

    return " | ".join(b.cli_name for b in benchmarks() if b.upstream) or "none installed"


def _add_upstream_args(ap: argparse.ArgumentParser) -> None:
    """``--export`` / ``--import``: the formats are the registered benchmarks' upstream ones."""
    formats = _formats()
    ap.add_argument(
        "--export",
        default=None,
        metavar="FORMAT",
        help=f"write the run's results in a benchmark's upstream format ({formats}) "
        "into --out (default <run>/export/FORMAT)",
    )
    ap.add_argument(
        "--import",
        dest="import_file",
        type=Path,
        default=None,
        metavar="FILE",
        help="read an upstream predictions/results file (--format) as a run, judged "
        "by our judge, into --out (default <FILE stem>_imported beside it)",
    )
    ap.add_argument("--format", default=None, help="--import: the file's upstream format")
    ap.add_argument("--out", type=Path, default=None, help="--export / --import: output dir")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m eqa_runner.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "dirs",
        nargs="*",
        type=str,
        help="run dirs and/or sweep dirs (with --import: config overrides)",
    )
    _add_upstream_args(ap)
    ap.add_argument("--by", choices=["category", "subset", "type", "split"], default=None)
    ap.add_argument("--compare", action="store_true", help="ablation table of differing keys")
    ap.add_argument("--baseline", default=None, help="baseline run: index (0-based) or dir")
    ap.add_argument("--csv", type=Path, default=None, help="write the table as CSV")
    ap.add_argument("--html", action="store_true", help="write a self-contained report.html")
    ap.add_argument("--html-out", type=Path, default=None, help="where to write report.html")
    ap.add_argument("--max-episodes", type=int, default=300, help="episode rows per run in HTML")
    ap.add_argument(
        "--interval",
        choices=["cluster", "iid"],
        default=None,
        help="intervals: resample scenes / episode histories (cluster; the default "
        "for Δ) or episodes (iid); run intervals default to what each summary used",
    )
    ap.add_argument(
        "--judges",
        action="store_true",
        help="agreement between the judges that scored the run (rejudge)",
    )
    ap.add_argument(
        "--power",
        action="store_true",
        help="episodes needed to detect --delta (one run; two: their differences)",
    )
    ap.add_argument("--delta", type=float, default=None, help="--power: the difference to detect")
    ap.add_argument("--metric", default=None, help="--power: metric (default: the headline)")
    ap.add_argument(
        "--correlation",
        type=float,
        default=0.5,
        help="--power with one run: assumed correlation of two runs' scores",
    )
    ap.add_argument("--samples", type=int, default=1000, help="bootstrap samples for Δ")
    ap.add_argument("--seed", type=int, default=0, help="seed of Δ intervals and p-values")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Print the tables (and write CSV / HTML); 0, or 2 after a one-line ``error: …``."""
    args = _parser().parse_args(argv)
    from eqa_runner.redact import install
    from eqa_runner.safe_io import refused_line

    install()
    refused_line()  # counts this command's refused paths only
    try:
        # a report builds trees of plain values (freed by reference counting); the collector's
        # passes over a sweep's records, triggered again and again as they pile up, were a fifth
        # of a sweep report's CPU (docs/benchmarks.md, issue 27); cycles are collected after
        with gc_paused():
            code = _report(args)
        if refused := refused_line():  # files a record names outside its run dir: not embedded
            print(refused, file=sys.stderr)
        return code
    except UserError as e:  # ReportError, and a bad imported file or override (--import)
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file it cannot read or write (--csv, --out, --export, a run's)
        fix = "check the path, its permissions and the free space"
        print(f"error: {os_error_line(e.filename or 'a file', e, fix)}", file=sys.stderr)
        return 2


def _upstream(args: argparse.Namespace) -> int:
    """``--export`` / ``--import`` (docs/reports.md "Upstream formats")."""
    from eqa_runner.report.upstream_formats import IMPORT_DIR, export_run, import_results
    from eqa_runner.run.stop import EXIT_COST_CAP, EXIT_SIGINT, EXIT_SIGTERM
    from eqa_runner.safe_io import as_it_was_on_refusal, refuse_links

    if args.import_file is not None:
        if not args.format:
            raise ReportError(f"--import FILE needs --format ({_formats()})")
        overrides = [str(d) for d in args.dirs]
        bad = [o for o in overrides if "=" not in o]
        if bad:
            raise ReportError(f"--import takes config overrides (key=value), not {bad[0]}")
        src = Path(args.import_file)
        dest = Path(args.out) if args.out else src.parent / f"{src.stem}_imported"
        fresh = not dest.exists()
        try:  # a refused import leaves its dir as it was (it kept imported/ before)
            with as_it_was_on_refusal(dest / IMPORT_DIR):
                out, code = import_results(args.import_file, args.format, overrides, args.out)
        except UserError:
            if fresh and dest.is_dir() and not any(dest.iterdir()):
                dest.rmdir()
            raise
        if code in (EXIT_COST_CAP, EXIT_SIGINT, EXIT_SIGTERM):  # its resume line is printed
            return code
        print(
            f"imported run: {out}\ncompare: python -m eqa_runner.report <our run> {out} --compare"
        )
        return code  # 1 when some imported episodes are error records, as a run (README)
    if len(args.dirs) != 1:
        raise ReportError("--export takes one run directory")
    run_dir = Path(args.dirs[0])
    if args.out:  # the formats write with open(): no file of theirs may be a link
        refuse_links(args.out)
    else:
        refuse_links(run_dir / "export" / args.export, within=run_dir)
    written = export_run(run_dir, args.export, args.out)
    for p in written:
        print(f"wrote: {p}")
    meta = json.loads(written[-1].read_text(encoding="utf-8"))
    if meta.get("error_records_left_out"):
        print(
            f"note: {meta['error_records_left_out']} error record(s) left out (not in the "
            "headline; judge.error_records=missing scores and writes them as missing "
            "predictions)"
        )
    if meta.get("error_records_as_missing"):
        print(
            f"note: {meta['error_records_as_missing']} error record(s) written as missing "
            "predictions (judge.error_records=missing), as the headline scored them"
        )
    print(f"score it upstream: {meta['upstream_command']}")
    return 0


def _report(args: argparse.Namespace) -> int:
    if args.export or args.import_file is not None:
        return _upstream(args)
    if not args.dirs:
        raise ReportError("give one or more run or sweep directories")
    runs = load_runs([Path(d) for d in args.dirs])
    originals = [r for r in runs if not r.label_suffix]  # without the rejudged-summary rows
    if args.judges:  # reads a run's rejudged files itself
        return _judges(args, originals)
    if args.power:
        return _power(args, originals)
    if args.html:  # the episode table's rows come from the records the numbers read
        for r in runs:
            r.keep_head = args.max_episodes
    if args.interval:
        for r in runs:
            reinterval(r, args.interval, samples=args.samples, seed=args.seed)
    baseline = pick_baseline(runs, args.baseline) if args.compare or args.html else 0
    paired = None
    notes = [f"- {r.label}: {n}" for r in runs for n in r.notes]
    if args.compare:
        csv_df, paired = _print_comparison(args, runs, baseline, notes)
    else:
        csv_df = runs_table(runs)
        print(to_markdown(display_runs(csv_df, headline_metrics(runs))))
    methods = sorted({str((r.summary.get("intervals") or {}).get("method", "iid")) for r in runs})
    notes.append(
        f"- run intervals: {' / '.join(_method_text(m) for m in methods)}"
        + (" (the runs differ: use --interval)" if len(methods) > 1 else "")
    )
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

        for p in write_reports(
            runs,
            compare=args.compare,
            out=args.html_out,
            baseline=baseline,
            max_episodes=args.max_episodes,
            paired=paired,
        ):
            print(f"html: {p}")
    return 0


def _print_comparison(
    args: argparse.Namespace, runs: list[Run], baseline: int, notes: list[str]
) -> tuple[pd.DataFrame, Paired]:
    """``--compare``: print the runs beside the baseline and their paired differences; return
    the csv table and the differences, and add their notes and the stamp warnings to ``notes``."""
    method = args.interval or "cluster"
    paired = paired_differences(runs, baseline, method=method, samples=args.samples, seed=args.seed)
    table = compare_table(runs, baseline, paired)
    print(f"baseline: row {baseline} ({runs[baseline].label})\n")
    print(to_markdown(table))
    print(
        f"\npaired differences to the baseline ({_method_text(method)}; "
        f"{args.samples} bootstrap samples, sign-flip p):\n"
    )
    print(to_markdown(paired_table(runs, paired)))
    csv_df = pd.concat([table, runs_table(runs)[["run", "n"]], paired_csv(runs, paired)], axis=1)
    notes += [f"- {n}" for n in paired.notes]
    notes += [f"- warning: {w}" for w in stamp_warnings(runs, runs_differing_keys(runs))]
    return csv_df, paired


def _method_text(method: str) -> str:
    return {
        "cluster": "95% intervals resampling whole scenes / episode histories",
        "iid": "95% intervals resampling episodes (i.i.d.)",
    }.get(method, method)


def _judges(args: argparse.Namespace, runs: list[Run]) -> int:
    from eqa_runner.report.agreement import judges_report, judges_tables

    if len(runs) != 1:
        raise ReportError("--judges takes one run directory")
    method = args.interval or "cluster"
    rep = judges_report(runs[0], method=method, samples=args.samples, seed=args.seed)
    tables = judges_tables(rep)
    print(f"judges of {runs[0].label} ({_method_text(method)}):\n")
    print(to_markdown(tables["judges"]))
    print(
        "\nagreement (per-episode scores on the episodes both judges scored; κ on the marks; "
        "shift = paired mean difference b − a):\n"
    )
    print(to_markdown(tables["agreement"]))
    if len(tables["disagreements"]):
        print("\nlargest disagreements:\n")
        print(to_markdown(tables["disagreements"]))
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        tables["agreement"].to_csv(args.csv, index=False)
        print(f"\ncsv: {args.csv}")
    if args.html:
        from eqa_runner.report.html import write_judges_report

        print(f"html: {write_judges_report(rep, out=args.html_out)}")
    return 0


def check_power_args(args: argparse.Namespace, percent: bool = True) -> None:
    """Refuse ``--delta`` / ``--correlation`` / ``--samples`` values no answer can come from;
    ``percent``: the metric is a percentage, as its judge declares (metres are not capped)."""
    import math

    d = float(args.delta)
    if not math.isfinite(d) or d <= 0:
        raise ReportError(f"--delta {args.delta}: give a finite difference > 0, e.g. --delta 5")
    if d >= 100 and percent:
        raise ReportError(
            f"--delta {args.delta}: the scored metrics are percentages (0-100), so no two "
            "runs differ by that much; give a difference below 100, e.g. --delta 5"
        )
    c = args.correlation
    if c is not None and (not math.isfinite(float(c)) or not -1.0 <= float(c) < 1.0):
        raise ReportError(f"--correlation {c}: a correlation is in [-1, 1), e.g. 0.5")
    if args.samples < 1:
        raise ReportError(f"--samples {args.samples}: give at least 1 bootstrap sample")


def _power(args: argparse.Namespace, runs: list[Run]) -> int:
    from eqa_runner.report.agreement import power_report, power_text

    if args.delta is None:
        raise ReportError("--power needs --delta D (in the metric's unit, e.g. 5 = 5 points)")
    from eqa_runner.scoring.declare import PERCENT

    decl = runs[0].declaration()
    heads = decl.headline()
    spec = decl.get(args.metric) if args.metric else (heads[0] if heads else None)
    check_power_args(args, percent=spec is None or spec.scale == PERCENT)
    rep = power_report(
        runs,
        args.delta,
        metric=args.metric,
        correlation=args.correlation,
        method=args.interval or "cluster",
    )
    print(power_text(rep, runs[0].label))
    return 0
