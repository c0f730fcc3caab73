"""Fine-EQA's region rules against upstream EXPRESS-Bench's, step for step (tests/golden/fine_eqa).

The project's defaults must reproduce every step; each upstream rule changed on purpose (the
region parse, the exploration state, the turn-around, the value weighting) must show up as
mismatches on the same inputs, so the fixture can tell the rules apart.
"""

from __future__ import annotations

import functools
import json
import math

import pytest

from eqa_runner.mapping import regions as R
from eqa_runner.mapping.regions import RegionMap, parse_regions

from .golden_replay import GOLDEN, KINDS, load, point_values, replay


def test_fixture_covers_present_absent_unknown_and_both_moves() -> None:
    inputs, upstream, _ = load()
    assert len(inputs) >= 20 and all(len(i["steps"]) >= 30 for i in inputs)
    kinds = {i["kind"] for i in inputs}
    assert {"present", "absent", "unknown", "late"} <= kinds
    branches = {s["branch"] for u in upstream for s in u["steps"]}
    assert branches == {"fbe", "goe_hop", "goe_turn"}
    assert any(len(u["regs_list"]) == 2 for u in upstream)  # the second region's branch
    assert any(s["target"] and not s["exp"][0]["points"] for u in upstream for s in u["steps"])
    meta = (GOLDEN / "README.md").read_text()
    assert "e8789dadfbd51af6850dc4d2b0526ca0ee78386a" in meta


def test_defaults_reproduce_every_step() -> None:
    bad, n, notes = replay()
    assert n == 720
    assert not bad, f"{dict(bad)} of {n} steps differ: {notes}"


def _differs(**kw) -> set[str]:
    bad, _, _ = replay(**kw)
    return {k for k in KINDS if bad[k]}


def test_region_parse_rule_is_pinned() -> None:
    lenient = functools.partial(parse_regions, rule="lenient")
    assert "parse" in _differs(parse=lenient)
    assert parse_regions("bedroom, hallway") == [1]
    assert parse_regions("Kitchen,dining room") == [2]
    assert lenient("bedroom, hallway") == [1, 10]


class _NoTurn(RegionMap):
    """A round without the turn-around steps (a hop every step)."""

    def _advance(self, i: int) -> None:
        g = self.goals[i]
        g.count, g.dir = g.count + 1, 0


class _FirstRegionOnly(RegionMap):
    """The second relevant region never explored."""

    def _has_points(self, i: int) -> bool:
        return i == 0 and super()._has_points(i)


@pytest.mark.slow
def test_exp_state_and_turn_around_rules_are_pinned() -> None:
    assert {"move", "goals"} <= _differs(region_map=functools.partial(RegionMap, max_exp=2))
    assert {"move", "goals"} <= _differs(region_map=_NoTurn)
    assert {"move", "state"} <= _differs(region_map=_FirstRegionOnly)


@pytest.mark.slow
def test_value_weighting_is_pinned() -> None:
    def hotter(lsv, p_yes):
        return point_values(lsv, p_yes, gsv_T=1.0)

    assert {"values", "semantic"} <= _differs(values=hotter)
    smoother = functools.partial(RegionMap, smooth_sigma=3.0)
    assert "target" in _differs(region_map=smoother)


@pytest.mark.slow
def test_unknown_fill_and_merge_rules_are_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RegionMap, "mark_unknown", lambda self: None)
    assert "regions" in _differs()
    monkeypatch.undo()
    monkeypatch.setattr(RegionMap, "_join", lambda self, a, b, v: None)
    assert "regions" in _differs()


def test_readme_and_inputs_agree() -> None:
    inputs = json.loads((GOLDEN / "inputs.json").read_text())
    assert all(math.isclose(sum(st["reg"]), 1.0) for i in inputs for st in i["steps"])
    assert R.REGION_NAMES[R.UNKNOWN] == "unknown" and len(R.REGION_NAMES) == 20
