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
import fnmatch
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eqa_runner.errors import ReportError
from eqa_runner.records import EPISODES_FILE, SUMMARY_FILE, final_records, read_records

# run plumbing: never an ablation axis (paths, concurrency, caches, endpoints)
IGNORED_KEYS = (
    "run.output_dir",
    "run.shard",
    "run.num_shards",
    "run.workers",
    "run.cache_dir",
    "run.cache",
    "run.progress",
    "run.resume",
    "run.dry_run",
    "run.save_artifacts",
    "run.episode_timeout_s",
    "task.data_dir",
    "task.questions_file",
    "task.episodes_dir",
    "task.scenes_dir",
    "*.api_base",
    "*.api_key_env",
    "*.api_key",
    "*.timeout_s",
    "*.max_retries",
    "*.backoff_base_s",
    "*.backoff_max_s",
    "*.max_concurrent_calls",
    "hydra.*",
)
# config groups whose choice is shown as one column (``policy=single``) instead of its sub-keys
GROUPS = ("task", "policy", "llm", "judge", "sim", "experiment")


@dataclass
class Run:
    """One row: a run directory, or the merged shards of one config."""

    path: Path
    summary: dict[str, Any]
    config: dict[str, Any]
    choices: dict[str, str] = field(default_factory=dict)
    dirs: list[Path] = field(default_factory=list)  # run dirs behind the row (shards)
    notes: list[str] = field(default_factory=list)
    label: str = ""
    short: str = ""  # the differing config values, when several runs are reported

    def records(self) -> list[dict[str, Any]]:
        recs: list[dict[str, Any]] = []
        for d in self.dirs or [self.path]:
            recs += read_records(d / EPISODES_FILE)
        return list(final_records(recs).values())


# ----------------------------------------------------------------------------- loading


def is_run_dir(d: Path) -> bool:
    return (
        (d / SUMMARY_FILE).is_file()
        or (d / ".hydra" / "config.yaml").is_file()
        or (d / EPISODES_FILE).is_file()
    )


def _num_key(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]


def find_run_dirs(paths: list[Path]) -> list[Path]:
    """Run dirs among ``paths``: a run dir itself, or the run sub-dirs of a sweep (recursive)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise ReportError(f"{p}: not a directory")
        if is_run_dir(p):
            out.append(p)
            continue
        subs = sorted((s for s in p.iterdir() if s.is_dir() and not s.name.startswith(".")),
                      key=_num_key)  # fmt: skip
        found = find_run_dirs(subs) if subs else []
        if not found:
            raise ReportError(f"{p}: no run directories (summary.json / .hydra/) found in it")
        out += found
    return out


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys; lists are kept as values (compared as a whole)."""
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): obj}


def load_config(run_dir: Path, summary: dict[str, Any] | None) -> dict[str, Any]:
    """The run's composed config: ``.hydra/config.yaml`` (resolved if possible), else summary's."""
    cfg_file = run_dir / ".hydra" / "config.yaml"
    if cfg_file.is_file():
        from omegaconf import OmegaConf

        from eqa_runner.run.configstore import register_configs

        register_configs()
        cfg = OmegaConf.load(cfg_file)
        try:
            return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
        except Exception:
            return OmegaConf.to_container(cfg, resolve=False)  # type: ignore[return-value]
    if summary and isinstance(summary.get("config"), dict):
        return summary["config"]
    return {}


def load_choices(run_dir: Path, config: dict[str, Any]) -> dict[str, str]:
    """Group choices (``policy: single``) from ``.hydra/hydra.yaml``, else ``<group>.name``."""
    hy = run_dir / ".hydra" / "hydra.yaml"
    if hy.is_file():
        from omegaconf import OmegaConf

        choices = OmegaConf.load(hy).hydra.runtime.get("choices") or {}
        return {str(k): str(v) for k, v in choices.items() if str(k) in GROUPS}
    out = {}
    for g in GROUPS:
        node = config.get(g)
        if isinstance(node, dict) and node.get("name"):
            out[g] = str(node["name"])
    return out


def shard_of(run: Run) -> str | None:
    s = run.summary.get("shard") or (run.config.get("run") or {}).get("shard")
    return str(s) if s else None


def load_run(run_dir: Path) -> Run:
    run_dir = Path(run_dir)
    summary: dict[str, Any] | None = None
    notes = []
    if (run_dir / SUMMARY_FILE).is_file():
        summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    config = load_config(run_dir, summary)
    run = Run(run_dir, summary or {}, config, load_choices(run_dir, config), [run_dir], notes)
    if summary is None:
        notes.append("incomplete: no summary.json (killed or still running)")
        run.summary = reaggregate(run, [run_dir])
    elif (summary.get("counts") or {}).get("missing"):
        notes.append(f"incomplete: {summary['counts']['missing']} episodes without a record")
    return run


def _judge(config: dict[str, Any]):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    node = config.get("judge")
    if not isinstance(node, dict) or "_target_" not in node:
        raise ReportError("the run's config has no judge._target_; cannot re-aggregate")
    return instantiate(OmegaConf.create(node))


def reaggregate(run: Run, dirs: list[Path]) -> dict[str, Any]:
    """A summary-like dict re-computed from the records of ``dirs`` with the run's judge."""
    from eqa_runner.run.summary import usage_totals

    recs: list[dict[str, Any]] = []
    for d in dirs:
        recs += read_records(d / EPISODES_FILE)
    final = list(final_records(recs).values())
    rcfg = run.config.get("run") or {}
    judge = _judge(run.config)
    agg = judge.aggregate(
        final,
        bootstrap_samples=int(rcfg.get("bootstrap_samples", 1000)),
        seed=int(rcfg.get("seed", 0)),
    )
    ok = [r for r in final if r.get("status") == "ok"]
    base = dict(run.summary)
    base.update(agg)
    selected = None
    sums = [
        json.loads((d / SUMMARY_FILE).read_text()) for d in dirs if (d / SUMMARY_FILE).is_file()
    ]
    if len(sums) == len(dirs):
        selected = sum(int(s["counts"]["selected"]) for s in sums)
    base["counts"] = {
        "selected": selected,
        "recorded": len(final),
        "missing": None if selected is None else selected - len(final),
        "ok": len(ok),
        "error": sum(1 for r in final if r.get("status") == "error"),
        "judge_unparsable": sum(1 for r in ok if not r.get("judge_ok")),
        "scored": sum(1 for r in ok if r.get("judge_ok")),
    }
    base["usage"] = usage_totals(final)
    base.setdefault("task", {"name": (run.config.get("task") or {}).get("name")})
    base.setdefault("policy", (run.config.get("policy") or {}).get("name"))
    models = {"policy": (run.config.get("llm") or {}).get("model")}
    models["judge"] = (run.config.get("judge") or {}).get("model")
    base.setdefault("models", models)
    return base


def _ignored(key: str) -> bool:
    return any(fnmatch.fnmatchcase(key, pat) for pat in IGNORED_KEYS)


def config_key(run: Run) -> str:
    flat = {k: v for k, v in flatten(run.config).items() if not _ignored(k)}
    return json.dumps(flat, sort_keys=True, default=str)


def merge_shards(runs: list[Run]) -> list[Run]:
    """Shards of the same config (only ``run.shard`` differs) become one re-aggregated row."""
    out: list[Run] = []
    groups: dict[str, list[Run]] = {}
    for r in runs:
        if shard_of(r) is None:
            out.append(r)
            continue
        key = config_key(r)
        if key not in groups:
            groups[key] = []
            out.append(r)  # placeholder at the position of the first shard
        groups[key].append(r)
    by_first = {id(g[0]): g for g in groups.values()}
    merged = []
    for r in out:
        g = by_first.get(id(r))
        merged.append(r if g is None else _merge(g))
    return merged


def _merge(shards: list[Run]) -> Run:
    parsed = []
    for s in shards:
        i, _, n = shard_of(s).partition("/")  # type: ignore[union-attr]
        parsed.append((int(i), int(n), s))
    parsed.sort(key=lambda t: t[0])
    n = max(t[1] for t in parsed)
    first = parsed[0][2]
    dirs = [t[2].path for t in parsed]
    notes = []
    present = sorted({t[0] for t in parsed})
    if len(present) < n:
        missing = [str(i) for i in range(n) if i not in present]
        notes.append(f"{len(present)} of {n} shards present (missing shard {', '.join(missing)})")
    else:
        notes.append(f"{n} shards merged")
    for i, _, s in parsed:
        for note in s.notes:
            notes.append(f"shard {i}/{n} {note}")
    run = Run(first.path, dict(first.summary), first.config, first.choices, dirs, notes)
    run.summary = reaggregate(run, dirs)
    run.summary["shard"] = f"merged {len(present)}/{n}"
    return run


def load_runs(paths: list[Path]) -> list[Run]:
    dirs = find_run_dirs(paths)
    runs = merge_shards([load_run(d) for d in dirs])
    common = _common_parent([r.path for r in runs])
    for r in runs:
        try:
            r.label = (
                str(r.path.relative_to(common)) if common and r.path != common else r.path.name
            )
        except ValueError:
            r.label = str(r.path)
        if len(r.dirs) > 1:
            r.label += f" (+{len(r.dirs) - 1} shards)"
    if len(runs) > 1:
        keys = differing_keys(runs)
        for r in runs:
            flat = dict(flatten(r.config), **r.choices)
            r.short = ", ".join(f"{k}={_cell(flat.get(k))}" for k in keys)
    return runs


def _common_parent(paths: list[Path]) -> Path | None:
    if len(paths) < 2:
        return paths[0].parent if paths else None
    parts = [p.resolve().parts for p in paths]
    common = []
    for xs in zip(*parts, strict=False):
        if len(set(xs)) != 1:
            break
        common.append(xs[0])
    return Path(*common) if common else None


# ----------------------------------------------------------------------------- tables


def headline_metrics(runs: list[Run]) -> list[str]:
    names: list[str] = []
    for r in runs:
        for k in r.summary.get("headline") or {}:
            if k not in names:
                names.append(k)
    return names


def fmt_ci(m: dict[str, Any] | None, digits: int = 1) -> str:
    if not m or m.get("mean") is None:
        return "-"
    lo, hi = (m.get("ci95") or [None, None])[:2]
    s = f"{m['mean']:.{digits}f}"
    if lo is not None and hi is not None:
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return s


def _metric_cells(row: dict[str, Any], name: str, m: dict[str, Any] | None) -> None:
    m = m or {}
    lo, hi = (m.get("ci95") or [None, None])[:2]
    row[name] = m.get("mean")
    row[f"{name}_ci_lo"] = lo
    row[f"{name}_ci_hi"] = hi


def runs_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: numeric columns (means and interval bounds separately)."""
    metrics = headline_metrics(runs)
    rows = []
    for r in runs:
        s = r.summary
        c = s.get("counts") or {}
        models = s.get("models") or {}
        row: dict[str, Any] = {
            "run": r.label,
            "task": (s.get("task") or {}).get("name"),
            "policy": s.get("policy"),
            "model": models.get("policy"),
            "judge_model": models.get("judge"),
            "n": c.get("scored"),
            "selected": c.get("selected"),
        }
        for m in metrics:
            _metric_cells(row, m, (s.get("headline") or {}).get(m))
        row["judge_unparsable"] = c.get("judge_unparsable")
        row["errors"] = c.get("error")
        row["missing"] = c.get("missing")
        row["cost_usd"] = (s.get("usage") or {}).get("cost_usd")
        row["cost_unknown_calls"] = (s.get("usage") or {}).get("cost_unknown_calls") or 0
        row["notes"] = "; ".join(
            r.notes + ([s["offline_warning"]] if s.get("offline_warning") else [])
        )
        rows.append(row)
    return pd.DataFrame(rows)


def display_runs(df: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The printable form: ``mean [lo, hi]`` strings, interval columns folded in."""
    out = df.drop(columns=[c for c in df.columns if c.endswith(("_ci_lo", "_ci_hi"))]).copy()
    for m in metrics:
        out[m] = [
            fmt_ci({"mean": v, "ci95": [lo, hi]})
            for v, lo, hi in zip(df[m], df[f"{m}_ci_lo"], df[f"{m}_ci_hi"], strict=False)
        ]
    out["cost_usd"] = [
        ("-" if _nan(v) else f"{v:.4f}") + (f" (+{int(u)} unpriced calls)" if u else "")
        for v, u in zip(df["cost_usd"], df["cost_unknown_calls"], strict=False)
    ]
    out = out.drop(columns=["cost_unknown_calls"])
    return out


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def breakdown_key(by: str) -> tuple[str, ...]:
    return {"category": ("by_category",), "subset": ("by_subset", "by_split"),
            "type": ("by_type", "by_category"), "split": ("by_split", "by_subset")}[by]  # fmt: skip


def _groups(summary: dict[str, Any], by: str) -> dict[str, dict[str, Any]]:
    for k in breakdown_key(by):
        g = summary.get(k)
        if isinstance(g, dict) and g:
            head = next(iter(summary.get("headline") or {"value": None}))
            # OpenEQA: {group: {mean, ci95, n}}; EXPRESS: {group: {metric: {mean, ci95, n}}}
            return {name: ({head: v} if "mean" in v else v) for name, v in g.items()}
    return {}


def by_table(runs: list[Run], by: str) -> pd.DataFrame:
    """Rows = groups; one column per (run, metric) with ``mean [lo, hi] (n)``."""
    metrics = headline_metrics(runs)
    data: dict[str, dict[str, str]] = {}
    for r in runs:
        for g, ms in _groups(r.summary, by).items():
            for m in metrics:
                if m in ms:
                    name = r.short or r.label
                    col = name if len(metrics) == 1 else f"{name}: {m}"
                    n = ms[m].get("n")
                    data.setdefault(col, {})[g] = fmt_ci(ms[m]) + (f" (n={n})" if n else "")
    df = pd.DataFrame(data)
    df.index.name = by
    return df.sort_index().fillna("-").reset_index()


def differing_keys(runs: list[Run]) -> list[str]:
    """Config keys (dotted, or a group name for a group choice) that differ between runs.

    A group's choice (``policy``) replaces its sub-keys (``policy.num_frames``) unless a sub-key
    also varies between runs with the same choice (then it is shown too).
    """
    flats = []
    for r in runs:
        f = {k: v for k, v in flatten(r.config).items() if not _ignored(k)}
        for g, choice in r.choices.items():
            f[g] = choice
        flats.append(f)
    keys: list[str] = []
    for f in flats:
        for k in f:
            if k not in keys:
                keys.append(k)
    missing = object()

    def values(k: str) -> list[str]:
        return [json.dumps(f.get(k, missing), sort_keys=True, default=str) for f in flats]

    diff = [k for k in keys if len(set(values(k))) > 1]
    groups = [g for g in GROUPS if g in diff]
    keep = []
    for k in diff:
        g = k.split(".", 1)[0]
        if g in groups and k != g:
            by_choice: dict[str, set[str]] = {}
            for f, v in zip(flats, values(k), strict=False):
                by_choice.setdefault(str(f.get(g)), set()).add(v)
            if all(len(vs) == 1 for vs in by_choice.values()):
                continue  # follows from the group choice
        keep.append(k)
    # group choices first, in GROUPS order, then the dotted keys in config order
    return [g for g in GROUPS if g in keep] + [k for k in keep if k not in GROUPS]


def pick_baseline(runs: list[Run], baseline: str | None) -> int:
    if baseline is None:
        return 0
    if re.fullmatch(r"-?\d+", baseline.strip()):
        i = int(baseline)
        if not -len(runs) <= i < len(runs):
            raise ReportError(f"--baseline {baseline}: only {len(runs)} runs")
        return i % len(runs)
    want = Path(baseline).resolve()
    for i, r in enumerate(runs):
        if want in [d.resolve() for d in r.dirs] or want == r.path.resolve():
            return i
    for i, r in enumerate(runs):
        if baseline in (r.label, r.path.name):
            return i
    raise ReportError(f"--baseline {baseline}: not one of the reported runs")


def compare_table(runs: list[Run], baseline: int = 0) -> pd.DataFrame:
    """Differing config keys, each headline metric with its interval, and Δ to the baseline."""
    keys = differing_keys(runs)
    metrics = headline_metrics(runs)
    flats = [dict(flatten(r.config), **r.choices) for r in runs]
    base = runs[baseline].summary.get("headline") or {}
    if not keys:  # identical configs (e.g. repeated runs): name the rows by their run dirs
        keys = ["run"]
        flats = [{"run": r.label or r.path.name} for r in runs]
    rows = []
    for r, f in zip(runs, flats, strict=False):
        row: dict[str, Any] = {k: _cell(f.get(k)) for k in keys}
        head = r.summary.get("headline") or {}
        for m in metrics:
            row[m] = fmt_ci(head.get(m))
            a, b = (head.get(m) or {}).get("mean"), (base.get(m) or {}).get("mean")
            if r is runs[baseline]:
                row[f"Δ {m}"] = "(baseline)"
            else:
                row[f"Δ {m}"] = "-" if a is None or b is None else f"{a - b:+.1f}"
        rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, *[c for m in metrics for c in (m, f"Δ {m}")]])


def _cell(v: Any) -> str:
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "null" if v is None else str(v)


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub Markdown table (no ``tabulate`` needed); numbers right-aligned."""
    cols = [str(c) for c in df.columns]

    def cell(v: Any) -> str:
        if _nan(v):
            return "-"
        if isinstance(v, float):
            return f"{v:.2f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    rows = [[cell(v) for v in rec] for rec in df.itertuples(index=False)]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]

    def line(vals: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                v.rjust(w) if num else v.ljust(w)
                for v, w, num in zip(vals, widths, numeric, strict=False)
            )
            + " |"
        )

    sep = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                         for w, num in zip(widths, numeric, strict=False)) + "|"  # fmt: skip
    return "\n".join([line(cols), sep, *(line(r) for r in rows)])


# ----------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
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
    args = ap.parse_args(argv)
    try:
        runs = load_runs(args.dirs)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    metrics = headline_metrics(runs)
    if args.compare:
        try:
            bi = pick_baseline(runs, args.baseline)
        except ReportError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        table = compare_table(runs, bi)
        print(f"baseline: row {bi} ({runs[bi].label})\n")
        print(to_markdown(table))
        csv_df = pd.concat([table, runs_table(runs)[["run", "n"]]], axis=1)
    else:
        csv_df = runs_table(runs)
        print(to_markdown(display_runs(csv_df, metrics)))
        table = csv_df
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
                               baseline=pick_baseline(runs, args.baseline),
                               max_episodes=args.max_episodes):  # fmt: skip
            print(f"html: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
