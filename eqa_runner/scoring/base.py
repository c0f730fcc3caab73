"""The small base class every judge implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from eqa_runner import capabilities as cap
from eqa_runner.configured import Configured
from eqa_runner.llm import LLMClient, Message, RequestEstimate, user
from eqa_runner.llm.config import LLMConfig
from eqa_runner.scoring.config import JudgeConfig
from eqa_runner.scoring.declare import Declaration, Metric, RunInput, declaration_of
from eqa_runner.sim.config import STANDALONE_SIM
from eqa_runner.types import Episode, EpisodeRecord, Prediction, Score

T = TypeVar("T")

# the judge's model keys, written once in the schema: the JudgeConfig fields that override
# the policy's ``llm`` settings of the same name
JUDGE_LLM_KEYS = tuple(
    f.name for f in fields(JudgeConfig) if f.name in {g.name for g in fields(LLMConfig)}
)


NO_MODEL = "none"  # the judge model of a judge that calls none


@dataclass(frozen=True)
class AggregateReads:
    """What a judge's :meth:`Judge.aggregate` (and what it calls: ``episode_values``,
    ``progress_value``...) reads of a record, beyond what every summary reads itself
    (``episode_id``, ``status``, ``judge_ok``, ``scene``, ``error``'s ``type`` / ``stage``,
    ``usage``, ``trace.vlm`` / ``trace.stop_reason``): the top-level ``fields``, the
    ``metrics`` (None: every metric) and the ``trace`` keys. ``summary.json`` aggregates a
    slim record of just these (eqa_runner/run/summary.py), so a long run's summary holds a
    few hundred bytes per record."""

    fields: frozenset[str] = frozenset()
    metrics: frozenset[str] | None = None
    trace: frozenset[str] = frozenset()


class Judge(Configured, ABC):
    """Scores a prediction; its LLM settings (``judge.model`` ...) are kept in ``llm_overrides``.

    Built as ``Cls(config=None, **overrides)`` (:mod:`eqa_runner.configured`): ``config_class``
    names the judge's schema (a :class:`~eqa_runner.scoring.config.JudgeConfig`)."""

    config_class: ClassVar[type[Any]] = JudgeConfig
    config_key: ClassVar[str] = "judge"
    config_context: ClassVar[dict[str, Any]] = {"sim": STANDALONE_SIM}
    config: JudgeConfig
    headline: str = "score"
    needs_model: bool = True  # False: scores without a model (no client, no credentials checked)
    reads: ClassVar[frozenset[str]] = frozenset({cap.QUESTION})  # of the task's and policy's
    # what aggregate() reads of a record; None: the whole record (but the per-step log)
    aggregate_reads: ClassVar[AggregateReads | None] = None
    # the numbers it produces and the other runs it reads (eqa_runner/scoring/declare.py):
    # shared code (report, compare, agreement, power, provenance) reads these, never a name
    metric_list: ClassVar[tuple[Metric, ...]] = ()
    run_inputs: ClassVar[tuple[RunInput, ...]] = ()
    category_label: ClassVar[str] = "category"  # what the records' ``category`` holds

    @classmethod
    def declaration(cls) -> Declaration:
        return declaration_of(cls)

    def __init__(self, config: Any = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.llm_overrides = {k: getattr(self.config, k) for k in JUDGE_LLM_KEYS}
        if not self.needs_model:
            self.llm_overrides["model"] = NO_MODEL  # whatever judge.model says: none is called

    @abstractmethod
    async def score(
        self,
        episode: Episode,
        prediction: Prediction,
        llm: LLMClient,
        prompts_dir: str | None = None,
    ) -> Score:
        """Judge one prediction. An unparsable reply is ``Score(ok=False)``, never a number."""

    @abstractmethod
    def aggregate(
        self,
        records: Sequence[EpisodeRecord],
        *,
        bootstrap_samples: int = 1000,
        seed: int = 0,
        interval: str = "cluster",
    ) -> dict[str, Any]:
        """Headline metrics, breakdowns and intervals from final per-episode records.

        ``interval``: ``"cluster"`` (resample scenes where there are several) or ``"iid"``.
        """

    def episode_values(self, records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Each headline metric's per-episode values (``episode_id -> value``, in the
        metric's unit): the mean of each is the headline, and paired comparisons, judge
        agreement and power use them. Default: the headline metric, ``progress_value`` in %."""
        out: dict[str, float] = {}
        for r in records:
            if r["status"] == "ok" and r["judge_ok"]:
                v = self.progress_value({k: v for k, v in r["metrics"].items() if v is not None})
                if v is not None:
                    out[str(r["episode_id"])] = 100.0 * v
        return {self.headline: out}

    def progress_value(self, metrics: Mapping[str, float | None]) -> float | None:
        """One episode's contribution (0..1) to the progress-bar metric; None to skip it."""
        return metrics.get(self.headline)

    def running_metric(self, metrics: Sequence[Mapping[str, float | None]]) -> float | None:
        """The headline metric so far, in percent (the run loop keeps it incrementally)."""
        vals = [v for m in metrics if (v := self.progress_value(m)) is not None]
        return 100.0 * sum(vals) / len(vals) if vals else None

    def missing_record(self, record: EpisodeRecord) -> EpisodeRecord | None:
        """``judge.error_records=missing``: the error ``record`` as the benchmark's own scorer
        scores a question without a prediction, an ``ok`` record for :meth:`aggregate` (built
        by :func:`eqa_runner.scoring.comparability.as_missing`); None (the default) when the
        benchmark's scorer has no such rule, so the record stays out of the headline."""
        return None

    def check_inputs(self, task_name: str | None, data: Mapping[str, Any]) -> None:
        """Refuse (a ``UserError``, before anything is written) inputs the judge reads besides
        the records, e.g. another run, that do not fit the scored run: task ``task_name`` with
        the data hashes ``data`` (its task's ``describe()``). Default: nothing to check."""
        return None

    def estimate_requests(self, episode: Episode, prompts_dir: str | None) -> list[RequestEstimate]:
        return []

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {}

    async def ask_and_parse(
        self,
        llm: LLMClient,
        messages: list[Message],
        parse: Callable[[str], T | None],
        *,
        offline_reply: str,
        reask: str | None,
    ) -> tuple[str, T | None]:
        """Ask the judge; if ``parse`` finds nothing and ``reask`` is given, ask once more.

        Returns the raw reply text (both replies joined by ``---`` when re-asked) and the parsed
        value, or None when the reply stays unparsable.
        """
        c = await llm.acomplete(messages, offline_reply=offline_reply)
        parsed = parse(c.text)
        if parsed is not None or not reask:
            return c.text, parsed
        follow = [*messages, {"role": "assistant", "content": c.text}, user(reask)]
        c2 = await llm.acomplete(follow, offline_reply=offline_reply)
        return f"{c.text}\n---\n{c2.text}", parse(c2.text)
