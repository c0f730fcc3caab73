"""``run.max_cost_usd``: stop starting episodes before the spend would pass the cap.

The spend is what the records say (every line of the run dir, earlier sessions included) plus
an estimate of the episodes in flight; an episode starts only when that plus its own estimate
stays within the cap. An episode's estimate is the larger of its dry-run estimate (every
request built, ``max_tokens`` completion tokens) and the mean cost of the episodes finished in
this session, so retries and longer explorations are covered once seen. Models without a price
need an explicit one (``llm.input_usd_per_mtok`` / ``output_usd_per_mtok``, same under
``judge.``) or ``run.allow_unpriced=true`` (their calls then count as $0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from eqa_runner.errors import ConfigError
from eqa_runner.llm import LLMClient, estimate_call, user
from eqa_runner.run.context import Components
from eqa_runner.run.plan import RunPlan
from eqa_runner.types import Episode


@dataclass
class CostCap:
    cap: float
    estimate_static: Callable[[Episode], float]
    spent: float = 0.0  # recorded spend (all sessions)
    in_flight: float = 0.0  # estimates of the episodes running now
    _done_n: int = 0
    _done_cost: float = 0.0
    _started: set[str] = field(default_factory=set)
    _left: list[Episode] = field(default_factory=list)

    @classmethod
    def from_plan(cls, plan: RunPlan, clients: tuple[LLMClient, LLMClient]) -> CostCap:
        """The cap ``run.max_cost_usd`` of a plan (every model it calls checked for a price)."""
        assert plan.run.max_cost_usd is not None
        check_priced(plan.run.allow_unpriced, clients, plan.parts)
        from eqa_runner.run.dry_run import episode_cost

        def static(ep: Episode) -> float:
            try:
                return float(episode_cost(plan, ep, clients) or 0.0)
            except Exception:  # noqa: BLE001 - no estimate: the observed mean decides
                return 0.0

        return cls(cap=plan.run.max_cost_usd, estimate_static=static)

    def estimate(self, ep: Episode) -> float:
        observed = self._done_cost / self._done_n if self._done_n else 0.0
        self._started.add(ep.episode_id)
        return max(self.estimate_static(ep), observed)

    def may_start(self, estimate: float) -> bool:
        return self.spent + self.in_flight + estimate <= self.cap + 1e-12

    def finished(self, cost: float) -> None:
        self.spent += cost
        self._done_n += 1
        self._done_cost += cost

    def remember_left(self, episodes: list[Episode]) -> None:
        self._left = list(episodes)

    def suggest(self) -> float:
        """A cap that lets the episodes not started yet finish (estimated, +10 %, cents up)."""
        observed = self._done_cost / self._done_n if self._done_n else 0.0
        rest = sum(max(self.estimate_static(e), observed) for e in self._left)
        return max(self.cap, math.ceil((self.spent + rest) * 1.1 * 100) / 100)


def check_priced(
    allow_unpriced: bool, clients: tuple[LLMClient, LLMClient], parts: Components | None = None
) -> None:
    """With a cap, every model called must have a price (known to litellm, or explicit): the
    policy's, the judge's and every other role's (a stop check's ``policy.stop_model``);
    ``run.allow_unpriced=true`` lifts it."""
    if allow_unpriced:
        return
    roles: list[tuple[LLMClient, str]] = list(zip(clients, ("llm", "judge"), strict=True))
    if parts is not None:
        for role, model_cfg in parts.policy.extra_models(clients[0].cfg).items():
            roles.append((LLMClient(model_cfg, role=role), f"policy.{role}_llm"))
    for client, key in roles:
        check_client_priced(client, key)


def check_client_priced(client: LLMClient, key: str) -> None:
    """Refuse (one line naming the keys to set) a model called under ``key`` without a price."""
    if client.offline or client.explicit_price() is not None:
        return
    _, _, cost = estimate_call(client.model, [user("x")], [], 1)
    if cost is None:
        model_key = "policy.stop_model" if key.startswith("policy.") else f"{key}.model"
        raise ConfigError(
            f"run.max_cost_usd is set but {model_key}={client.model} has no known price: "
            f"set {key}.input_usd_per_mtok and {key}.output_usd_per_mtok (USD per million "
            "tokens), or run.allow_unpriced=true to count its calls as $0."
        )
