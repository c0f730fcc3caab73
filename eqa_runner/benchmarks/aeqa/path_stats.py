"""A-EQA's ``path_stats`` summary block: the explored paths' lengths, weights and steps."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from eqa_runner.benchmarks.aeqa.blind import number_or_none as _num
from eqa_runner.types import EpisodeRecord


def path_stats(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Path lengths (m), weights and steps of the ok records that explored."""
    ms = [r["metrics"] for r in records if r["status"] == "ok" and r["metrics"].get("has_path")]

    def summary(key: str) -> dict[str, Any]:
        xs = [v for m in ms if (v := _num(m.get(key))) is not None and math.isfinite(v)]
        if not xs:
            return {"mean": None, "median": None, "min": None, "max": None, "n": 0}
        return {
            "mean": statistics.fmean(xs),
            "median": statistics.median(xs),
            "min": min(xs),
            "max": max(xs),
            "n": len(xs),
        }

    return {
        "episodes": len(ms),
        "path_len": summary("path_len"),
        "path_len_geodesic": summary("path_len_geodesic"),
        "path_len_xz": summary("path_len_xz"),
        "reference_path_length": summary("reference_path_length"),
        "weight": summary("weight"),
        "steps_taken": summary("steps_taken"),
        "infinite_paths": sum(1 for m in ms if m.get("path_infinite")),
        "zero_paths": sum(1 for m in ms if _num(m.get("path_len")) == 0.0),
        "stopped_early": sum(1 for m in ms if m.get("stopped_early")),
    }
