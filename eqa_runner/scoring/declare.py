"""What a judge declares about its numbers and its inputs, for everything that reads them.

A judge class lists its :class:`Metric` s (``Judge.metric_list``) and the config keys that
name other runs it reads (``Judge.run_inputs``). The report, compare, agreement, power and the
provenance read these instead of knowing a benchmark's metric names (in the spirit of
lm-evaluation-harness's ``metric_list`` with ``aggregation`` and ``higher_is_better``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqa_runner.records import EPISODES_FILE

PERCENT, METRES, MARK, RATE = "percent", "metres", "mark", "rate"
SCALES = (PERCENT, METRES, MARK, RATE)


@dataclass(frozen=True)
class Metric:
    """One number a judge produces.

    ``headline``: a summary metric (``summary["headline"][name]``: mean and interval over the
    episodes, ``aggregation`` says how); otherwise a per-episode value of the records'
    ``metrics`` (``row``: shown as the episode's score in the report; ``levels``: the ordered
    values of a mark, for the judges' weighted κ). ``per_category``: the summary's
    ``by_category`` holds it (the report charts it). ``scale``: ``percent`` (0-100),
    ``metres``, ``mark`` (an ordinal per-episode value) or ``rate`` (0-1)."""

    name: str
    scale: str = PERCENT
    higher_is_better: bool = True
    aggregation: str = "mean"
    headline: bool = True
    per_category: bool = False
    row: bool = False
    levels: tuple[float, ...] = ()
    label: str = ""  # shown name when it differs from ``name`` (σ, δ)

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"Metric {self.name}: scale must be one of {SCALES}")

    @property
    def digits(self) -> int:
        """Decimals shown for a difference: percentages 1, distances 2."""
        return 2 if self.scale == METRES else 1


@dataclass(frozen=True)
class RunInput:
    """A judge config key naming another run the judge reads (``file`` in that dir): its
    content hash is an input of the scored run, and its path is not part of the result
    config (moving the other run changes no number)."""

    key: str
    file: str = EPISODES_FILE
    note: str = ""


@dataclass(frozen=True)
class Declaration:
    """A judge's metrics and inputs, with the questions shared code asks of them."""

    metrics: tuple[Metric, ...] = ()
    inputs: tuple[RunInput, ...] = ()
    category_label: str = "category"

    def headline(self) -> list[Metric]:
        return [m for m in self.metrics if m.headline]

    def per_category(self) -> list[str]:
        return [m.name for m in self.metrics if m.headline and m.per_category]

    def row_metrics(self) -> list[str]:
        return [m.name for m in self.metrics if m.row]

    def marks(self) -> dict[str, tuple[str, tuple[float, ...]]]:
        """``name -> (label, levels)`` of the per-episode marks (weighted κ)."""
        return {m.name: (m.label or m.name, m.levels) for m in self.metrics if m.levels}

    def get(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)

    def input_files(self, judge_cfg: Mapping[str, Any]) -> list[Path]:
        """The files the judge reads besides the records, from its config's input keys."""
        return [Path(str(v)) / i.file for i in self.inputs if (v := judge_cfg.get(i.key))]

    def input_keys(self) -> list[str]:
        return [f"judge.{i.key}" for i in self.inputs]


def declaration_of(judge_cls: Any) -> Declaration:
    """A judge class's declaration; a judge declaring no metrics has its ``headline`` only."""
    metrics = tuple(getattr(judge_cls, "metric_list", ()) or ())
    if not metrics:
        metrics = (Metric(str(getattr(judge_cls, "headline", "score"))),)
    return Declaration(
        metrics,
        tuple(getattr(judge_cls, "run_inputs", ()) or ()),
        str(getattr(judge_cls, "category_label", "category")),
    )


@functools.cache
def declared(target: str) -> Declaration:
    """The declaration of the judge class ``target`` (a ``_target_``; an older release's path
    is read as today's)."""
    from hydra.utils import get_class

    from eqa_runner.registry import current_target

    return declaration_of(get_class(current_target(target)))


def declaration_for(config: Mapping[str, Any] | None) -> Declaration | None:
    """The declaration of a run config's judge (None without a ``judge._target_`` or when the
    class cannot be imported, e.g. a plugin not installed here)."""
    node = (config or {}).get("judge")
    if not isinstance(node, Mapping) or not isinstance(node.get("_target_"), str):
        return None
    try:
        return declared(str(node["_target_"]))
    except Exception:  # an unknown class: the readers fall back to the summary's names
        return None


def merged(decls: Iterable[Declaration | None]) -> Declaration:
    """One declaration over several runs' (the first declaration of a name wins)."""
    seen: dict[str, Metric] = {}
    inputs: dict[str, RunInput] = {}
    label = "category"
    for d in decls:
        if d is None:
            continue
        for m in d.metrics:
            seen.setdefault(m.name, m)
        for i in d.inputs:
            inputs.setdefault(i.key, i)
        label = d.category_label if label == "category" else label
    return Declaration(tuple(seen.values()), tuple(inputs.values()), label)
