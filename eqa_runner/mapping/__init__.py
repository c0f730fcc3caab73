"""TSDF fusion and frontier-based exploration planning (used by the ``fbe`` policy).

The names below are imported on first use, so the light schema module
(:mod:`eqa_runner.mapping.config`) can be imported without scipy / scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "FrontierPlanner": "frontier",
    "FrontierPlannerConfig": "config",
    "PlannerMaps": "frontier",
    "Waypoint": "frontier",
    "FuseStats": "tsdf",
    "TSDFVolume": "tsdf",
    "tsdf_bounds": "tsdf",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
