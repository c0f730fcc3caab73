"""``run.max_cost_usd`` for a rejudge: the run's :class:`~eqa_runner.run.cost_cap.CostCap`, over
the judge's calls only (the predictions are never recomputed).

The spend is what ``episodes.rejudged-<tag>.jsonl`` says (earlier sessions included) plus the
estimates of the episodes being judged; an episode is judged only when that plus its own
estimate stays within the cap. Its estimate is the larger of the judge's dry-run estimate and
the mean cost of the episodes judged in this session.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eqa_runner.llm import LLMClient
from eqa_runner.records import iter_records
from eqa_runner.run.cost_cap import CostCap, check_client_priced
from eqa_runner.run.plan import RunPlan
from eqa_runner.run.stop import EXIT_COST_CAP
from eqa_runner.types import Episode, EpisodeRecord

CAP_KEYS = ("run.max_cost_usd", "run.allow_unpriced")  # the rejudge overrides of the cap


def rejudge_cap(plan: RunPlan, judge_llm: LLMClient, out: Path) -> CostCap | None:
    """The cap of a rejudge (None without ``run.max_cost_usd``): the judge's model checked for
    a price as the run checks it, the spend of ``out``'s records counted."""
    cap_usd = plan.run.max_cost_usd
    if cap_usd is None:
        return None
    if not plan.run.allow_unpriced:
        check_client_priced(judge_llm, "judge")
    from eqa_runner.run.dry_run import CallEstimates

    assert plan.judge is not None
    judge = plan.judge
    models = {"judge": judge_llm.model}
    max_tokens = {"judge": judge_llm.cfg.max_tokens}
    calls = CallEstimates(models, max_tokens, {"judge": judge_llm.explicit_price()})

    def static(ep: Episode) -> float:
        try:
            reqs = judge.estimate_requests(ep, plan.prompts_dir)
            return float(sum(calls(r)[2] or 0.0 for r in reqs))
        except Exception:  # noqa: BLE001 - no estimate: the observed mean decides
            return 0.0

    cap = CostCap(cap=cap_usd, estimate_static=static)
    if out.is_file():
        cap.spent = sum(
            float((r.get("usage") or {}).get("cost_usd") or 0.0) for r in iter_records(out)
        )
    return cap


async def judge_all(
    todo: Iterator[EpisodeRecord],
    one: Callable[[EpisodeRecord], Awaitable[float]],
    workers: int,
    cap: CostCap | None,
    to_episode: Callable[[EpisodeRecord], Episode],
) -> bool:
    """``one`` (which returns its cost) on every record of ``todo`` by ``workers`` workers; with a
    cap, an ok record is judged only while the spend stays within it. True: stopped at the cap
    (the records not judged are left for a resume)."""
    at_cap: list[bool] = []

    async def worker() -> None:
        for rec in todo:  # shared: each record goes to the next free worker
            if cap is None or rec["status"] != "ok":  # an error record is copied, not judged
                await one(rec)
                continue
            ep = to_episode(rec)
            estimate = cap.estimate(ep)
            if at_cap or not cap.may_start(estimate):
                at_cap.append(True)
                cap.remember_left([ep, *(to_episode(r) for r in todo if r["status"] == "ok")])
                return
            cap.in_flight += estimate
            cost = await one(rec)
            cap.in_flight -= estimate
            cap.finished(cost)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return bool(at_cap)


@dataclass(eq=False)
class RejudgeAtCap(Exception):
    """The rejudge stopped judging at ``run.max_cost_usd``; what was judged is kept and the
    summary written."""

    run_dir: Path
    tag: str
    cap: CostCap
    judged: int
    total: int
    exit_code: int = EXIT_COST_CAP

    def line(self, overrides: Iterable[str]) -> str:
        """How far it got, and the command that resumes with a cap that lets the rest finish."""
        new_cap = f"run.max_cost_usd={self.cap.suggest():.2f}"
        keep = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") != "run.max_cost_usd"]
        cmd = [
            "python",
            "-m",
            "eqa_runner.rejudge",
            str(self.run_dir),
            *keep,
            new_cap,
            "--tag",
            self.tag,
        ]
        return (
            f"[eqa_runner] stopped at the cost cap run.max_cost_usd (spent "
            f"${self.cap.spent:.4f} of ${self.cap.cap:.2f}): {self.judged} of {self.total} "
            f"episodes re-judged, kept in episodes.rejudged-{self.tag}.jsonl; "
            f"resume with: {shlex.join(cmd)}"
        )
