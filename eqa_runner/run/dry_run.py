"""``run.dry_run=true``: build every request, count tokens and estimate cost; call nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eqa_runner.llm import LLMClient, estimate_call
from eqa_runner.llm.estimate import RequestEstimate
from eqa_runner.llm.letters import expand_estimates
from eqa_runner.llm.messages import message_text
from eqa_runner.run.context import Components
from eqa_runner.run.plan import RunPlan
from eqa_runner.types import Episode

Estimate = tuple[int, int, float | None]  # prompt tokens, completion tokens, USD (or None)


class CallEstimates:
    """:func:`estimate_call` per request, computed once per distinct request.

    An exploration episode repeats one stop-check request every step and many episodes share
    prompts: counting tokens (litellm's tokenizer, about 1 ms a call) once per distinct
    (role, texts, image sizes) gives the same numbers as counting every request."""

    def __init__(
        self,
        models: dict[str, str],
        max_tokens: dict[str, Any],
        prices: dict[str, tuple[float, float] | None],
    ) -> None:
        self.models, self.max_tokens, self.prices = models, max_tokens, prices
        self._memo: dict[tuple[Any, ...], Estimate] = {}
        self._last: tuple[RequestEstimate | None, Estimate] = (None, (0, 0, None))

    def __call__(self, r: RequestEstimate) -> Estimate:
        if r is self._last[0]:  # a step's request repeated (``[stop] * steps``)
            return self._last[1]
        key = (
            r.role,
            tuple((m["role"], message_text([m])) for m in r.messages),
            tuple(r.image_sizes),
            r.max_tokens,
        )
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = estimate_call(
                self.models[r.role],
                r.messages,
                r.image_sizes,
                r.max_tokens or self.max_tokens[r.role],
                self.prices[r.role],
            )
        self._last = (r, hit)
        return hit


def _prices(clients: tuple[LLMClient, LLMClient]) -> dict[str, tuple[float, float] | None]:
    """The explicit price (USD per million tokens) per role, as the run's clients see it."""
    return {"policy": clients[0].explicit_price(), "judge": clients[1].explicit_price()}


def _unchecked_clients(plan: RunPlan) -> tuple[LLMClient, LLMClient]:
    """The run's model clients without the credentials check (a dry run calls no model)."""
    from eqa_runner.run.build import llm_clients

    return llm_clients(plan.cfg, plan.parts.judge, {}, check=False)


def _roles(plan: RunPlan) -> tuple[dict[str, str], dict[str, Any]]:
    judge = plan.parts.judge
    models = {"policy": plan.llm.model, "judge": str(judge.llm_overrides.get("model"))}
    max_tokens = {"policy": plan.llm.max_tokens, "judge": judge.llm_overrides.get("max_tokens")}
    return models, max_tokens


def episode_cost(plan: RunPlan, ep: Episode, clients: tuple[LLMClient, LLMClient]) -> float | None:
    """Estimated USD of one episode's requests (None when a model has no price)."""
    parts = plan.parts
    models, max_tokens = _roles(plan)
    prices = _prices(clients)
    reqs = parts.policy.estimate_requests(ep, parts.task, plan.prompts_dir)
    reqs = expand_estimates(reqs, plan.llm.letter_scoring)
    reqs += parts.judge.estimate_requests(ep, plan.prompts_dir)
    total: float | None = 0.0
    calls = CallEstimates(models, max_tokens, prices)
    for r in reqs:
        _, _, cost = calls(r)
        total = None if cost is None or total is None else total + cost
    return total


def data_lines(
    parts: Components, episodes: Sequence[Episode]
) -> tuple[list[Episode], list[str], dict[str, str]]:
    """The episodes whose data is present (the task's presence check, the one ``data check``
    makes), what to print about the others, and ``episode_id -> problem``."""
    if not parts.task.config.check_data:
        return list(episodes), ["  data: not checked (task.check_data=false)"], {}
    missing = parts.task.missing(episodes)
    if not missing:
        return list(episodes), [f"  data: all {len(episodes)} episodes have their scene/frames"], {}
    problems = sorted(set(missing.values()))
    runnable = [e for e in episodes if e.episode_id not in missing]
    lines = [
        f"  data: {len(missing)} of {len(episodes)} episodes lack their scene or frames "
        f"({len(problems)} scenes or frame folders missing), e.g. {problems[0]}",
        f"  `python -m eqa_runner.data check {_bench(parts)}{_sim_arg(parts)}` lists them; the "
        f"estimate below covers the {len(runnable)} episodes that can run",
    ]
    return runnable, lines, missing


def _sim_arg(parts: Components) -> str:
    """`` --sim habitat`` when the task looks scenes up through a backend other than the data
    check's default (so the listing is the one this run's backend makes)."""
    from eqa_runner.data.checks import SIMULATORS

    by_class = {cls: name for name, cls in SIMULATORS.items()}
    name = by_class.get(str(getattr(parts.task, "simulator", "")))
    return f" --sim {name}" if name and name != "mesh" else ""


def _bench(parts: Components) -> str:
    from eqa_runner.errors import ConfigError
    from eqa_runner.registry import get

    name = str(getattr(parts.task, "name", "") or "")
    try:
        return get(name).cli_name
    except ConfigError:  # a task outside the registry: its own name
        return name


def dry_run(plan: RunPlan) -> dict[str, Any]:
    """Check the data, then build every request of the episodes that can run, count tokens
    (images included) and estimate cost; call nothing."""
    parts = plan.parts
    task, policy, judge = parts.task, parts.policy, parts.judge
    selected = list(plan.episodes)
    episodes, data_text, missing = data_lines(parts, selected)
    models, max_tokens = _roles(plan)
    calls = CallEstimates(models, max_tokens, _prices(_unchecked_clients(plan)))
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
            reqs = policy.estimate_requests(ep, task, plan.prompts_dir)
            reqs = expand_estimates(reqs, plan.llm.letter_scoring)
        except Exception as e:  # noqa: BLE001 - reported, the estimate goes on
            problems.append(f"{ep.episode_id}: {e}")
            reqs = []
        reqs += judge.estimate_requests(ep, plan.prompts_dir)
        for r in reqs:
            t = totals[r.role]
            p, c, cost = calls(r)
            t["requests"] += 1
            t["prompt_tokens"] += p
            t["completion_tokens"] += c
            t["images"] += len(r.image_sizes)
            t["cost_usd"] = None if cost is None or t["cost_usd"] is None else t["cost_usd"] + cost
    lines = _report_lines(plan, selected, episodes, data_text, totals, problems)
    print("\n".join(lines), flush=True)
    return {
        "dry_run": True,
        "episodes": len(selected),
        "runnable": len(episodes),
        "missing_data": len(missing),
        "estimate": totals,
        "problems": problems,
    }


def _report_lines(
    plan: RunPlan,
    selected: Sequence[Episode],
    episodes: Sequence[Episode],
    data_text: list[str],
    totals: dict[str, dict[str, Any]],
    problems: list[str],
) -> list[str]:
    """The dry run's printout: the selection, the data, per-role totals, the cost cap."""
    task, policy = plan.parts.task, plan.parts.policy
    lines = [
        f"dry run: {len(selected)} episodes selected (task={task.name}, "
        f"policy={policy.name}); no model was called"
    ]
    for ep in selected[:5]:
        lines.append(f"  {ep.episode_id} [{ep.category}] {ep.question[:70]}")
    if len(selected) > 5:
        lines.append(f"  … and {len(selected) - 5} more")
    lines += data_text
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
    cap = plan.run.max_cost_usd
    if cap:
        known = [t["cost_usd"] for t in totals.values() if t["cost_usd"] is not None]
        unknown = [r for r, t in totals.items() if t["cost_usd"] is None]
        projected = sum(known)
        n = len(episodes)
        verdict = (
            "within the cap"
            if projected <= cap
            else f"over the cap: the run will stop after about {int(n * cap / projected)} of {n}"
            " episodes"
        )
        note = f" (+ unpriced {', '.join(unknown)} calls)" if unknown else ""
        lines.append(
            f"  projected cost ${projected:.4f}{note} against run.max_cost_usd=${cap:.2f}: "
            + verdict
        )
    if problems:
        lines.append(f"  {len(problems)} episode(s) could not be estimated, e.g. {problems[0]}")
    return lines
