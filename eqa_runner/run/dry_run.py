"""``run.dry_run=true``: build every request, count tokens and estimate cost; call nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig

from eqa_runner.llm import estimate_call
from eqa_runner.run.context import Components
from eqa_runner.types import Episode


def dry_run(cfg: DictConfig, parts: Components, episodes: Sequence[Episode]) -> dict[str, Any]:
    """Build every request, count tokens (images included) and estimate cost; call nothing."""
    task, policy, judge = parts.task, parts.policy, parts.judge
    models = {"policy": str(cfg.llm.model), "judge": str(judge.llm_overrides.get("model"))}
    max_tokens = {
        "policy": cfg.llm.get("max_tokens"),
        "judge": judge.llm_overrides.get("max_tokens"),
    }
    totals: dict[str, dict[str, Any]] = {
        role: {
            "model": m,
            "requests": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "images": 0,
        }
        for role, m in models.items()
    }
    problems: list[str] = []
    for ep in episodes:
        try:
            reqs = policy.estimate_requests(ep, task, cfg.prompts.dir)
        except Exception as e:  # noqa: BLE001 - reported, the estimate goes on
            problems.append(f"{ep.episode_id}: {e}")
            reqs = []
        reqs += judge.estimate_requests(ep, cfg.prompts.dir)
        for r in reqs:
            t = totals[r.role]
            p, c, cost = estimate_call(t["model"], r.messages, r.image_sizes, max_tokens[r.role])
            t["requests"] += 1
            t["prompt_tokens"] += p
            t["completion_tokens"] += c
            t["images"] += len(r.image_sizes)
            t["cost_usd"] = None if cost is None or t["cost_usd"] is None else t["cost_usd"] + cost
    lines = [
        f"dry run: {len(episodes)} episodes selected (task={task.name}, "
        f"policy={policy.name}); no model was called"
    ]
    for ep in episodes[:5]:
        lines.append(f"  {ep.episode_id} [{ep.category}] {ep.question[:70]}")
    if len(episodes) > 5:
        lines.append(f"  … and {len(episodes) - 5} more")
    for role, t in totals.items():
        cost_text = (
            "unknown (no price for this model)"
            if t["cost_usd"] is None
            else f"${t['cost_usd']:.2f}"
        )
        lines.append(
            f"  {role:6s} {t['model']}: {t['requests']} requests, "
            f"{t['prompt_tokens']:,} prompt tokens ({t['images']} images), "
            f"≤{t['completion_tokens']:,} completion tokens, est. cost {cost_text}"
        )
    if problems:
        lines.append(f"  {len(problems)} episode(s) could not be estimated, e.g. {problems[0]}")
    print("\n".join(lines), flush=True)
    return {"dry_run": True, "episodes": len(episodes), "estimate": totals, "problems": problems}
