"""Replay the Fine-EQA golden fixture (tests/golden/fine_eqa/) through the project's rules.

The fixture holds scripted episodes (candidate cells, letter scores, the region reply) and what
upstream EXPRESS-Bench's ``TSDFPlanner`` region state machine made of them, step by step; see
its README. :func:`replay` feeds the same inputs to :func:`~eqa_runner.mapping.regions.
parse_regions`, the planner's semantic map (``integrate_semantic``) and
:class:`~eqa_runner.mapping.regions.RegionMap`, and counts the steps on which each output differs.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.mapping.config import FrontierPlannerConfig
from eqa_runner.mapping.regions import UNKNOWN, RegionMap, parse_regions
from eqa_runner.mapping.semantic import SemanticMaps
from eqa_runner.mapping.tsdf import TSDFVolume

GOLDEN = Path(__file__).parents[1] / "golden" / "fine_eqa"
KINDS = ("parse", "values", "semantic", "regions", "state", "move", "target", "goals", "visited")
MOVE = {"fbe": "fbe", "goe_hop": "goe", "goe_turn": "goe_turn"}


def load(golden: Path = GOLDEN) -> tuple[list, list, dict]:
    inputs = json.loads((golden / "inputs.json").read_text())
    upstream = json.loads((golden / "upstream.json").read_text())
    with np.load(golden / "upstream_maps.npz") as z:
        maps = dict(z)
    return inputs, upstream, maps


def point_values(lsv: list[float], p_yes: float, gsv_T: float = 0.5, gsv_F: float = 3.0):
    """Fine-EQA's (and vlm_explore's) value of each lettered point: the direction
    distribution x n / 3, times exp(P(Yes) / gsv_T) / gsv_F."""
    n = len(lsv)
    gsv = math.exp(p_yes / gsv_T) / gsv_F
    return [p * (n / 3) * gsv for p in lsv]


def replay(
    golden: Path = GOLDEN,
    values: Callable[..., list[float]] = point_values,
    parse: Callable[[str], list[int]] = parse_regions,
    region_map: Callable[..., Any] = RegionMap,
) -> tuple[Counter, int, list[str]]:
    """(mismatching steps per kind, steps compared, first mismatch descriptions)."""
    inputs, upstream, maps = load(golden)
    bad: Counter = Counter()
    notes: list[str] = []
    n = 0
    for inp, up in zip(inputs, upstream, strict=True):
        s = int(inp["seed"])
        rel = parse(inp["reply"])
        if rel != up["regs_list"]:
            bad["parse"] += 1
            notes.append(f"seed {s}: parse {inp['reply']!r} -> {rel}, upstream {up['regs_list']}")
        vol = TSDFVolume(np.array(inp["vol_bnds"]), 0.1)
        dims = (int(vol.dims[0]), int(vol.dims[1]))
        sem = SemanticMaps(FrontierPlannerConfig(semantic=True))
        sem.volume = vol
        sem.sem_value, sem.sem_count = np.zeros(dims), np.zeros(dims, dtype=np.int32)
        rm = region_map(dims, 0.1, rel, rand=random.Random(s))
        for t, (st, ref) in enumerate(zip(inp["steps"], up["steps"], strict=True)):
            n += 1
            got = _step(st, rm, sem, vol, values)
            diffs = _compare(got, ref, rm, sem, maps[f"region_{s}"][t], maps[f"value_{s}"][t])
            for kind in diffs:
                bad[kind] += 1
                if len(notes) < 12:
                    notes.append(f"seed {s} step {t}: {kind}")
    return bad, n, notes


def _step(st: dict, rm: Any, sem: SemanticMaps, vol: TSDFVolume, values) -> dict:
    """One step of FineEQAProposer.propose_async on recorded scores (the same calls)."""
    out: dict[str, Any] = {"sv": []}
    cells = np.asarray(st["cells"], dtype=float).reshape(-1, 2)
    if not st["black"] and len(cells) >= 2:
        sv = values(st["lsv"], st["gsv"][0])
        out["sv"] = sv
        sem.integrate_semantic(vol.grid_to_world(cells), np.asarray(sv))
        region = int(np.argmax(st["reg"]))
        if region != UNKNOWN:
            rm.integrate(cells[int(np.argmax(st["pt"]))].astype(int), region)
        rm.mark_unknown()
    out["move"], out["cell"], _ = rm.move(sem.sem_value)
    return out


def _compare(got: dict, ref: dict, rm: Any, sem, ref_regions, ref_values) -> list[str]:
    out = []
    if not np.allclose(got["sv"], ref["sv"], rtol=1e-12, atol=0):
        out.append("values")
    if not np.allclose(sem.sem_value, ref_values, rtol=2e-6, atol=1e-7):
        out.append("semantic")
    if not np.array_equal(rm.grid, ref_regions):
        out.append("regions")
    if (rm.fbe if rm.goals else True) != ref["state_fbe"]:
        out.append("state")
    if got["move"] != MOVE[ref["branch"]]:
        out.append("move")
    if (None if got["cell"] is None else list(got["cell"])) != ref["target"]:
        out.append("target")
    goals = [{"count": g.count, "dir": g.dir, "points": [list(p) for p in g.points]}
             for g in rm.goals]  # fmt: skip
    if goals != ref["exp_after"]:
        out.append("goals")
    if [list(v) for v in rm.visited] != ref["exped"]:
        out.append("visited")
    return out
