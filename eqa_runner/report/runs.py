"""The runs a report shows: run dirs found, their summaries and configs loaded, shards merged.

A :class:`Run` is one row: a run directory, or the merged shards of one config (their records
pooled and re-aggregated with the run's own judge, exactly as the runner aggregates).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from eqa_runner.errors import ReportError
from eqa_runner.records import EPISODES_FILE, SUMMARY_FILE, final_records, read_records
from eqa_runner.report.keys import GROUPS, cell, config_key, differing_keys, flatten
from eqa_runner.safe_io import read_json
from eqa_runner.scoring.declare import Declaration, Metric, declaration_for, merged
from eqa_runner.types import EpisodeRecord


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
    label_suffix: str = ""  # " [rejudged: <tag>]" for a rejudged summary's row
    records_file: str = EPISODES_FILE  # a rejudged row: episodes.rejudged-<tag>.jsonl
    # records() keeps its first ``keep_head`` records (and their count) in ``head``, so the
    # HTML episode table does not read a sweep's files a second time
    keep_head: int = 0
    head: tuple[list[EpisodeRecord], int] | None = field(default=None, repr=False)

    def records(self) -> list[EpisodeRecord]:
        """One final record per episode over all the run's dirs (shards): the row's own
        records (a rejudged row's are the rejudged ones, for every figure of the row)."""
        recs = load_records(self.dirs or [self.path], self.records_file)
        if self.keep_head:
            self.head = (recs[: self.keep_head], len(recs))
        return recs

    def declaration(self) -> Declaration:
        """What the run's judge declares (its metrics, their scales); a run whose judge class
        is not importable here has its summary's headline names, as percentages."""
        d = declaration_for(self.config)
        if d is None:
            d = Declaration(tuple(Metric(str(k)) for k in self.summary.get("headline") or {}))
        return d

    def section(self, name: str) -> dict[str, Any]:
        """A config group's node (``{}`` when the run's config has none)."""
        node = self.config.get(name)
        return node if isinstance(node, dict) else {}


# ----------------------------------------------------------------------------- records


def load_records(dirs: Iterable[Path], name: str = EPISODES_FILE) -> list[EpisodeRecord]:
    """The final record of each episode (last ok, else last) over ``dirs``, in file order."""
    recs: list[EpisodeRecord] = []
    for d in dirs:
        recs += read_records(Path(d) / name)
    return list(final_records(recs).values())


# ----------------------------------------------------------------------------- loading


def is_run_dir(d: Path) -> bool:
    """A directory a run wrote to: a summary, records or its provenance (a dir that only holds
    Hydra's files or a log, from a refused start or a dry run, is not a run)."""
    return (
        (d / SUMMARY_FILE).is_file()
        or (d / "provenance.json").is_file()
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
        found = _runs_below(p)
        if not found:
            raise ReportError(
                f"{p}: no run directory in it (one with a summary.json, provenance.json or "
                f"{EPISODES_FILE}); give a run dir or a sweep dir"
            )
        out += found
    return out


def _runs_below(d: Path) -> list[Path]:
    """``d`` if it is a run dir, else the run dirs below it (a sub-dir without runs, such as
    a user's ``plots/`` beside a sweep's jobs, is passed over)."""
    if is_run_dir(d):
        return [d]
    subs = sorted(
        (s for s in d.iterdir() if s.is_dir() and not s.name.startswith(".")), key=_num_key
    )
    return [r for s in subs for r in _runs_below(s)]


def load_yaml(path: Path) -> Any:
    """A YAML file read as ``OmegaConf.load`` reads it (its loader's float and duplicate-key
    rules), on LibYAML's parser when PyYAML has it: a sweep's ``.hydra`` files were a quarter
    of a sweep report's time with the pure-Python parser (docs/benchmarks.md, issue 27)."""
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_yaml_loader())


@functools.cache
def _yaml_loader() -> Any:
    import yaml
    from omegaconf._utils import get_yaml_loader

    slow = get_yaml_loader()
    if not getattr(yaml, "__with_libyaml__", False):
        return slow

    class FastLoader(yaml.CSafeLoader):
        yaml_implicit_resolvers = slow.yaml_implicit_resolvers

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            keys = set()
            for key_node, _ in node.value:
                if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                    continue
                if key_node.value in keys:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value}",
                        key_node.start_mark,
                    )
                keys.add(key_node.value)
            return super().construct_mapping(node, deep=deep)

    return FastLoader


def load_config(run_dir: Path, summary: dict[str, Any] | None) -> dict[str, Any]:
    """The run's recorded config: ``.hydra/config.yaml`` with the fingerprinted result keys of
    ``provenance.json`` laid over it (resolved if possible), else the summary's."""
    cfg_file = run_dir / ".hydra" / "config.yaml"
    if cfg_file.is_file():
        from omegaconf import OmegaConf

        from eqa_runner.run.configstore import register_configs
        from eqa_runner.run.provenance import read_provenance

        register_configs()
        data = load_yaml(cfg_file)
        cfg = OmegaConf.create(data) if data is not None else OmegaConf.create()
        OmegaConf.set_struct(cfg, False)
        try:
            prov = read_provenance(run_dir) or {}
        except Exception:  # noqa: BLE001 - unreadable provenance: .hydra as written
            prov = {}
        for key, value in (prov.get("config") or {}).items():
            OmegaConf.update(cfg, key, value, force_add=True)
        try:
            # a run's config.yaml is a mapping (omegaconf types any node's container)
            return cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))
        except Exception:
            return cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=False))
    if summary and isinstance(summary.get("config"), dict):
        return summary["config"]
    return {}


def load_choices(run_dir: Path, config: dict[str, Any]) -> dict[str, str]:
    """Group choices (``policy: single``) from ``.hydra/hydra.yaml``, else ``<group>.name``."""
    hy = run_dir / ".hydra" / "hydra.yaml"
    if hy.is_file():
        choices = ((load_yaml(hy) or {})["hydra"]["runtime"]).get("choices") or {}
        return {str(k): str(v) for k, v in choices.items() if str(k) in GROUPS}
    out = {}
    for g in GROUPS:
        node = config.get(g)
        if isinstance(node, dict) and node.get("name"):
            out[g] = str(node["name"])
    return out


def shard_of(run: Run) -> str | None:
    s = run.summary.get("shard") or run.section("run").get("shard")
    return str(s) if s else None


def read_summary(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A run's summary (None when absent), and why it could not be read (a truncated or
    hand-edited file: the report then recomputes it from the records)."""
    try:
        summary = read_json(path)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, str(e).splitlines()[0]
    if not isinstance(summary, dict):
        return None, "not a JSON object"
    return summary, None


def load_run(run_dir: Path) -> Run:
    run_dir = Path(run_dir)
    summary: dict[str, Any] | None = None
    notes: list[str] = []
    summary, unreadable = read_summary(run_dir / SUMMARY_FILE)
    config = load_config(run_dir, summary)
    run = Run(run_dir, summary or {}, config, load_choices(run_dir, config), [run_dir], notes)
    if summary is None:
        notes.append(
            f"{SUMMARY_FILE} unreadable ({unreadable}): recomputed from the records"
            if unreadable
            else f"incomplete: no {SUMMARY_FILE} (killed or still running)"
        )
        run.summary = reaggregate(run, [run_dir])
    elif (summary.get("counts") or {}).get("missing"):
        notes.append(f"incomplete: {summary['counts']['missing']} episodes without a record")
    comp = run.summary.get("published_comparability") or {}
    if (
        comp.get("comparable") is False
    ):  # e.g. scored without the baseline run its published protocol needs
        notes.append(str(comp.get("note") or "not comparable with the published rows"))
    return run


def judge_for(config: dict[str, Any]) -> Any:
    """The run's judge, built from its recorded config (only to aggregate; no model is called).
    A ``_target_`` recorded by an older release is read as today's path."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from eqa_runner.registry import current_target

    node = config.get("judge")
    if not isinstance(node, dict) or "_target_" not in node:
        raise ReportError("the run's config has no judge._target_; cannot read its scores")
    node = {**node, "_target_": current_target(str(node["_target_"]))}
    return instantiate(OmegaConf.create(node))


def reaggregate(run: Run, dirs: list[Path]) -> dict[str, Any]:
    """A summary-like dict re-computed from the records of ``dirs`` with the run's judge."""
    from eqa_runner.run.summary import usage_totals
    from eqa_runner.scoring.aggregate import intervals_note
    from eqa_runner.scoring.comparability import (
        error_records_mode,
        headline_records,
        published_comparability,
    )

    final = load_records(dirs)
    rcfg = run.section("run")
    method, samples = str(rcfg.get("interval", "cluster")), int(rcfg.get("bootstrap_samples", 1000))
    judge = judge_for(run.config)
    scored, as_missing = headline_records(judge, final)  # judge.error_records
    agg = judge.aggregate(
        scored, bootstrap_samples=samples, seed=int(rcfg.get("seed", 0)), interval=method
    )
    ok = [r for r in final if r["status"] == "ok"]
    base = dict(run.summary)
    base.update(agg)
    base["intervals"] = intervals_note(method, samples)  # as the run's summary would say
    selected = None
    sums = [s for d in dirs if (s := read_summary(d / SUMMARY_FILE)[0]) is not None]
    if len(sums) == len(dirs):
        selected = sum(int(s["counts"]["selected"]) for s in sums)
    base["counts"] = {
        "selected": selected,
        "recorded": len(final),
        "missing": None if selected is None else selected - len(final),
        "ok": len(ok),
        "error": sum(1 for r in final if r["status"] == "error"),
        "judge_unparsable": sum(1 for r in ok if not r["judge_ok"]),
        "scored": sum(1 for r in ok if r["judge_ok"]),
    }
    base["published_comparability"] = published_comparability(
        agg.get("published_comparability"),
        base["counts"]["error"],
        as_missing,
        error_records_mode(judge),
    )
    base["usage"] = usage_totals(final)
    base.setdefault("task", {"name": run.section("task").get("name")})
    base.setdefault("policy", run.section("policy").get("name"))
    models = {"policy": run.section("llm").get("model"), "judge": run.section("judge").get("model")}
    base.setdefault("models", models)
    return base


# ----------------------------------------------------------------------------- shards


def merge_shards(runs: list[Run]) -> list[Run]:
    """Shards of the same config (only ``run.shard`` differs) become one re-aggregated row."""
    out: list[Run] = []
    groups: dict[str, list[Run]] = {}
    for r in runs:
        if shard_of(r) is None:
            out.append(r)
            continue
        key = config_key(r.config)
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
        index, _, count = str(shard_of(s)).partition("/")
        parsed.append((int(index), int(count), s))
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


def runs_differing_keys(runs: list[Run]) -> list[str]:
    return differing_keys([r.config for r in runs], [r.choices for r in runs])


def rejudged_runs(run: Run) -> list[Run]:
    """One row per ``summary.rejudged-<tag>.json`` of a run: the same predictions scored by
    another judge (shown beside the run's own row; ``judge.model`` differs)."""
    out = []
    for f in sorted(run.path.glob("summary.rejudged-*.json")):
        try:
            s = read_json(f)
        except (OSError, ValueError):
            run.notes.append(f"{f.name}: unreadable, skipped")
            continue
        config = json.loads(json.dumps(run.config))
        judge_model = (s.get("models") or {}).get("judge")
        if isinstance(config.get("judge"), dict) and judge_model:
            config["judge"]["model"] = judge_model
        tag = f.name[len("summary.rejudged-") : -len(".json")]
        r = Run(run.path, s, config, dict(run.choices), [run.path], [f"rejudged ({tag})"])
        r.label_suffix = f" [rejudged: {tag}]"
        r.records_file = f"episodes.rejudged-{tag}.jsonl"
        out.append(r)
    return out


def load_runs(paths: list[Path]) -> list[Run]:
    """The rows for ``paths`` (run and sweep dirs), labelled relative to their common parent;
    a rejudged summary of a run is a row right after the run's own."""
    runs = []
    for r in merge_shards([load_run(d) for d in find_run_dirs(paths)]):
        runs += [r, *(rejudged_runs(r) if len(r.dirs) == 1 else [])]
    common = common_parent([r.path for r in runs])
    for r in runs:
        try:
            r.label = (
                str(r.path.relative_to(common)) if common and r.path != common else r.path.name
            )
        except ValueError:
            r.label = str(r.path)
        if len(r.dirs) > 1:
            r.label += f" (+{len(r.dirs) - 1} shards)"
        r.label += r.label_suffix
    if len(runs) > 1:
        keys = runs_differing_keys(runs)
        for r in runs:
            flat = dict(flatten(r.config), **r.choices)
            r.short = ", ".join(f"{k}={cell(flat.get(k))}" for k in keys)
    return runs


def common_parent(paths: list[Path]) -> Path | None:
    if len(paths) < 2:
        return paths[0].parent if paths else None
    parts = [p.resolve().parts for p in paths]
    common = []
    for xs in zip(*parts, strict=False):
        if len(set(xs)) != 1:
            break
        common.append(xs[0])
    return Path(*common) if common else None


def declarations(runs: list[Run]) -> Declaration:
    """The runs' judges' declarations merged (a comparison of benchmarks holds them all)."""
    return merged(r.declaration() for r in runs)
