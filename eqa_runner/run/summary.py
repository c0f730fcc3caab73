"""``summary.json``: config, counts, headline metrics, breakdowns, usage, prompts, versions."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from omegaconf import DictConfig

from eqa_runner.llm.client import endpoint_summary
from eqa_runner.llm.secrets import strip_urls
from eqa_runner.records import (
    EPISODES_FILE,
    SUMMARY_FILE,
    final_records,
    iter_records,
    write_json_atomic,
)
from eqa_runner.run.config import RunConfig
from eqa_runner.run.packed import pack
from eqa_runner.run.stamp import reproducibility_stamp, versions
from eqa_runner.scoring.aggregate import intervals_note
from eqa_runner.scoring.base import AggregateReads, Judge
from eqa_runner.scoring.comparability import error_records_mode, errors_part, headline_records
from eqa_runner.types import EpisodeRecord, UsageInfo

log = logging.getLogger(__name__)

_SECRET_KEY = re.compile(r"(api_key|token|secret|password)$", re.I)
# the summed usage counters (cost_usd, a float or None, is summed apart)
UsageCount = Literal[
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cost_unknown_calls",
    "cached_calls",
    "retries",
    "failed_calls",
    "invalid_logprobs",
]
USAGE_COUNTS: tuple[UsageCount, ...] = (
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cost_unknown_calls",
    "cached_calls",
    "retries",
    "failed_calls",
    "invalid_logprobs",
)


def prompts_note(prompts: dict[str, Any]) -> str:
    """One sentence on the prompt files: originals (by content hash), user-supplied or ours."""
    if prompts and all(p.get("benchmark_original") for p in prompts.values()):
        return "benchmark original prompt files (content hashes match the originals)"
    user = sorted(n for n, p in prompts.items() if p.get("source") == "user-supplied")
    if user:
        return (
            f"user-supplied prompt files ({', '.join(user)}: content is not a known benchmark "
            "original): numbers are not paper-comparable"
        )
    return (
        "eqa_runner's own prompt files (not the benchmark's originals): numbers are not "
        "strictly paper-comparable; use `python -m eqa_runner.data fetch` + prompts.dir"
    )


def scrub(obj: Any) -> Any:
    """Drop config values whose key looks like a secret (``api_key_env`` names are kept)."""
    if isinstance(obj, dict):
        return {
            k: ("<redacted>" if _SECRET_KEY.search(str(k)) and v else scrub(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


def usage_totals(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Token / cost / retry totals over records; calls without a known price are noted."""
    tot: dict[str, Any] = {k: 0.0 if k == "cost_usd" else 0 for k in UsageInfo.__annotations__}
    for r in records:
        u = r["usage"]
        for k in USAGE_COUNTS:  # a summary's slim record leaves out the zero counters
            tot[k] += int(u.get(k) or 0)
        if (cost := u.get("cost_usd")) is not None:
            tot["cost_usd"] += float(cost)
    if tot["cost_unknown_calls"]:
        tot["cost_note"] = (
            f"{tot['cost_unknown_calls']} calls to models without a known price "
            "are not included in cost_usd"
        )
    return tot


def policy_replies(records: Sequence[EpisodeRecord]) -> dict[str, Any] | None:
    """Counts of the policy's parsed and unparsable model replies (``trace.vlm``'s
    ``<kind>s_parsed`` / ``<kind>s_unparsable``, e.g. ``vlm_waypoint``'s waypoints) summed over
    the records, the episodes that ended on an unparsable reply, and one sentence; None when
    the policy counts none."""
    tot: dict[str, int] = {}
    stopped = 0
    for r in records:
        trace = r.get("trace")
        vlm = trace.get("vlm") if isinstance(trace, Mapping) else None
        if not isinstance(vlm, Mapping):
            continue
        for k, v in vlm.items():
            if k.endswith(("_parsed", "_unparsable")) and isinstance(v, int):
                tot[k] = tot.get(k, 0) + v
        stopped += str(trace.get("stop_reason", "")).startswith("unparsable")
    if not tot:
        return None
    kinds = sorted({k.rsplit("_", 1)[0] for k in tot})
    said = [
        f"{tot.get(f'{k}_unparsable', 0)} of "
        f"{tot.get(f'{k}_unparsable', 0) + tot.get(f'{k}_parsed', 0)} {k.removesuffix('s')} "
        "replies unparsable"
        for k in kinds
    ]
    note = ", ".join(said) + f" ({stopped} episodes stopped on one)"
    return {**dict(sorted(tot.items())), "episodes_stopped_unparsable": stopped, "note": note}


def build_summary(
    *,
    config: dict[str, Any],
    task_info: dict[str, Any],
    selected_ids: Sequence[str],
    final: dict[str, EpisodeRecord],
    aggregate: dict[str, Any],
    models: dict[str, str],
    prompts: dict[str, dict[str, object]],
    extra: dict[str, Any] | None = None,
    error_records: tuple[str, int] = ("excluded", 0),
) -> dict[str, Any]:
    """Assemble the summary from the final record of each selected episode (``error_records``:
    the judge's ``judge.error_records`` and how many error records it scored as missing)."""
    recs = [final[i] for i in selected_ids if i in final]
    ok = [r for r in recs if r["status"] == "ok"]
    offline = sorted(role for role, m in models.items() if m == "offline")
    summary: dict[str, Any] = {
        "task": task_info,
        "models": models,
        "counts": {
            "selected": len(selected_ids),
            "recorded": len(recs),
            "missing": len(selected_ids) - len(recs),
            "ok": len(ok),
            "error": sum(1 for r in recs if r["status"] == "error"),
            "judge_unparsable": sum(1 for r in ok if not r["judge_ok"]),
            "scored": sum(1 for r in ok if r["judge_ok"]),
        },
        **aggregate,
        "usage": usage_totals(recs),
        "prompts": prompts,
        "prompts_note": prompts_note(prompts),
        "versions": versions(),
        "config": strip_urls(scrub(config)),
    }
    summary.update(errors_part(recs, aggregate, error_records))
    replies = policy_replies(recs)
    if replies:
        summary["policy_replies"] = replies
    if offline:
        summary["offline_warning"] = (
            f"offline placeholder model(s) used for {', '.join(offline)}: these scores are "
            "meaningless (smoke run)"
        )
    if extra:
        summary.update(extra)
    return summary


@dataclass(frozen=True)
class SummaryInputs:
    """What :func:`write_summary` needs (a run's plan, or rejudge's, gives it)."""

    config: dict[str, Any]  # the composed config, resolved (secrets are scrubbed when written)
    run: RunConfig
    models: dict[str, str]  # the model of each role (models_of)
    task_info: dict[str, Any]  # the task's describe()
    policy_name: str
    judge: Judge
    episode_ids: list[str]  # the selected episodes, in order
    out_dir: Path
    prompts: dict[str, dict[str, object]]


def _without_steps(rec: EpisodeRecord) -> EpisodeRecord:
    """``rec`` without ``trace.steps``, the per-step log (most of a record's size; no aggregate
    reads it, judges score steps from the prediction), its keys shared with the other records
    (each JSON line decodes its own key strings: about 40 % of a kept record): what a summary
    keeps of each record for a judge that does not declare its ``aggregate_reads``."""
    trace = rec.get("trace")
    if isinstance(trace, dict) and "steps" in trace:
        kept = {k: v for k, v in trace.items() if k != "steps"}
        rec = cast(EpisodeRecord, {**rec, "trace": kept})
    return cast(EpisodeRecord, _shared_keys(rec))


def _shared_keys(obj: Any) -> Any:
    """``obj`` with every dict key interned (one string object per distinct key)."""
    if isinstance(obj, dict):
        return {sys.intern(k) if type(k) is str else k: _shared_keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shared_keys(v) for v in obj]
    return obj


# what build_summary / usage_totals / policy_replies and clusters_of read of every record
SUMMARY_FIELDS = frozenset({"episode_id", "status", "judge_ok", "scene"})
SUMMARY_TRACE = frozenset({"stop_reason"})
# the parts of a slim record packed with it (run/packed.py): the rest are values
SLIM_PARTS: dict[str, dict[str, Any]] = {
    "metrics": {},
    "usage": {},
    "error": {},
    "trace": {"vlm": {}},
}


def _pick(d: dict[str, Any], keys: frozenset[str] | None) -> dict[str, Any]:
    """The items of ``d`` named in ``keys`` (all when None): keys shared, short strings
    interned (a category, a scene, a status: one object for every record)."""
    return {sys.intern(k): _short(v) for k, v in d.items() if keys is None or k in keys}


def _short(v: Any) -> Any:
    return sys.intern(v) if type(v) is str and len(v) <= 64 else _shared_keys(v)


def _is_counter(key: str, value: Any) -> bool:
    return key.endswith(("_parsed", "_unparsable")) and isinstance(value, int)


def slim_record(rec: EpisodeRecord, reads: AggregateReads | None) -> EpisodeRecord:
    """What a summary keeps of ``rec``: the fields, metrics and trace keys the judge's
    ``aggregate`` reads (``reads``; None: the record without its steps) and those the summary
    reads itself, packed (:func:`eqa_runner.run.packed.pack`: one tuple of values, the keys
    shared), so a long run's summary holds a few hundred bytes per record. A part that is not
    a dict (``error: null``) is kept as it is."""
    if reads is None:
        return _without_steps(rec)
    full = cast(dict[str, Any], rec)
    out = _pick(full, SUMMARY_FIELDS | reads.fields)
    for part in ("metrics", "usage", "error", "trace"):
        if part in full and not isinstance(full[part], dict):
            out[part] = full[part]
    if isinstance(m := full.get("metrics"), dict):
        out["metrics"] = _pick(m, reads.metrics)
    if isinstance(u := full.get("usage"), dict):  # usage_totals sums these: zeros add nothing
        out["usage"] = {sys.intern(k): v for k, v in u.items() if v}
    if isinstance(e := full.get("error"), dict):
        out["error"] = _pick(e, frozenset({"type", "stage"}))
    if isinstance(t := full.get("trace"), dict):
        out["trace"] = _pick(t, SUMMARY_TRACE | reads.trace)
        if isinstance(vlm := t.get("vlm"), dict):  # policy_replies: the reply counters
            out["trace"]["vlm"] = {sys.intern(k): v for k, v in vlm.items() if _is_counter(k, v)}
    return cast(EpisodeRecord, pack(out, SLIM_PARTS))


def write_summary(
    inputs: SummaryInputs,
    *,
    jsonl_name: str = EPISODES_FILE,
    summary_name: str = SUMMARY_FILE,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Aggregate the final record of each selected episode into ``summary.json``."""
    run, judge, out_dir, ids = inputs.run, inputs.judge, inputs.out_dir, inputs.episode_ids
    reads = judge.aggregate_reads
    final = final_records(slim_record(r, reads) for r in iter_records(out_dir / jsonl_name))
    recs, as_missing = headline_records(judge, [final[i] for i in ids if i in final])
    method = run.interval
    agg = judge.aggregate(
        recs, bootstrap_samples=run.bootstrap_samples, seed=run.seed, interval=method
    )
    models, config = inputs.models, inputs.config
    summary = build_summary(
        config=config,
        task_info=inputs.task_info,
        selected_ids=ids,
        final=final,
        aggregate=agg,
        models=models,
        prompts=inputs.prompts,
        error_records=(error_records_mode(judge), as_missing),
        extra={
            "policy": inputs.policy_name,
            "judge": judge.name,
            "shard": run.shard,
            "run_dir": str(out_dir),
            "intervals": intervals_note(method, run.bootstrap_samples),
            "reproducibility": reproducibility_stamp(
                config=config,
                task_info=inputs.task_info,
                prompts=inputs.prompts,
                judge_model=models["judge"],
            ),
            "endpoints": endpoint_summary(),  # adaptive concurrency per model endpoint
            **(extra or {}),
        },
    )
    write_json_atomic(out_dir / summary_name, summary)
    head = {k: v.get("mean") for k, v in summary.get("headline", {}).items()}
    announce(summary, head, out_dir)
    return {"counts": summary["counts"], **head}


def models_of(cfg: DictConfig, judge: Judge) -> dict[str, str]:
    """The model of each role: the policy's, the judge's and a stop model if any."""
    models = {
        "policy": str(cfg.llm.model),
        "judge": str(judge.llm_overrides.get("model", cfg.llm.model)),
    }
    stop = cfg.policy.get("stop_model")
    if stop:
        models["stop"] = str(stop)
    return models


def announce(summary: dict[str, Any], head: dict[str, Any], out_dir: Path) -> None:
    """The closing log line and console lines: counts, unparsable policy replies, headline."""
    c = summary["counts"]
    log.info(
        "done: %d ok, %d error, %d judge-unparsable; %s",
        c["ok"],
        c["error"],
        c["judge_unparsable"],
        head,
    )
    replies = summary.get("policy_replies")
    said = f"{replies['note']}; " if replies else ""
    print(
        f"[eqa_runner] {c['ok']}/{c['selected']} ok, {c['error']} error, "
        f"{c['judge_unparsable']} unparsable; {said}"
        + ", ".join(f"{k}={'-' if v is None else f'{v:.2f}'}" for k, v in head.items())
        + f"\n[eqa_runner] results: {out_dir}"
        + (
            f"\n[eqa_runner] note: {summary['offline_warning']}"
            if "offline_warning" in summary
            else ""
        ),
        flush=True,
    )
