"""``summary.json``: config, counts, headline metrics, breakdowns, usage, prompts, versions."""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from eqa_runner import __version__

_SECRET_KEY = re.compile(r"(api_key|token|secret|password)$", re.I)
PACKAGES = (
    "hydra-core",
    "omegaconf",
    "litellm",
    "numpy",
    "pillow",
    "open3d",
    "scikit-image",
    "pandas",
    "submitit",
    "habitat-sim",
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


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version(), "eqa_runner": __version__}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def usage_totals(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    tot: dict[str, Any] = {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "cost_unknown_calls": 0,
        "cached_calls": 0,
        "retries": 0,
        "failed_calls": 0,
    }
    for r in records:
        u = r.get("usage") or {}
        for k in (
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "cached_calls",
            "retries",
            "cost_unknown_calls",
            "failed_calls",
        ):
            tot[k] += int(u.get(k) or 0)
        if u.get("cost_usd") is not None:
            tot["cost_usd"] += float(u["cost_usd"])
    if tot["cost_unknown_calls"]:
        tot["cost_note"] = (
            f"{tot['cost_unknown_calls']} calls to models without a known price "
            "are not included in cost_usd"
        )
    return tot


def build_summary(
    *,
    config: dict[str, Any],
    task_info: dict[str, Any],
    selected_ids: Sequence[str],
    final: dict[str, dict[str, Any]],
    aggregate: dict[str, Any],
    models: dict[str, str],
    prompts: dict[str, dict[str, object]],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the summary from the final record of each selected episode."""
    recs = [final[i] for i in selected_ids if i in final]
    ok = [r for r in recs if r.get("status") == "ok"]
    offline = sorted(role for role, m in models.items() if m == "offline")
    summary: dict[str, Any] = {
        "task": task_info,
        "models": models,
        "counts": {
            "selected": len(selected_ids),
            "recorded": len(recs),
            "missing": len(selected_ids) - len(recs),
            "ok": len(ok),
            "error": sum(1 for r in recs if r.get("status") == "error"),
            "judge_unparsable": sum(1 for r in ok if not r.get("judge_ok")),
            "scored": sum(1 for r in ok if r.get("judge_ok")),
        },
        **aggregate,
        "usage": usage_totals(recs),
        "prompts": prompts,
        "prompts_note": (
            "benchmark original prompt files"
            if prompts and all(p.get("benchmark_original") for p in prompts.values())
            else "eqa_runner's own prompt files (not the benchmark's originals): numbers are not "
            "strictly paper-comparable; use `python -m eqa_runner.data fetch` + prompts.dir"
        ),
        "versions": versions(),
        "config": scrub(config),
    }
    errors: dict[str, int] = {}
    for r in recs:
        if r.get("status") == "error":
            t = (r.get("error") or {}).get("type", "Error")
            errors[t] = errors.get(t, 0) + 1
    summary["errors_by_type"] = errors
    if offline:
        summary["offline_warning"] = (
            f"offline placeholder model(s) used for {', '.join(offline)}: these scores are "
            "meaningless (smoke run)"
        )
    if extra:
        summary.update(extra)
    return summary
