"""``run.profile=true`` and ``bench/step_profile.py``: every exploration step's parts are reported
and add up to the step; the default record has no profile (no wall time is asserted)."""

from __future__ import annotations

import pytest

from bench.step_profile import GROUPS, episode_table, step_table
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from eqa_runner.timing import OFF, PartTimes

# per step: the forward render, its PNG and the stop check's prompt and model call; the steps
# that move also fuse (the stop check only sees non-black frames) and plan
ALWAYS = {"render", "encode", "prompt", "model"}
MOVING = ALWAYS | {"fuse", "plan", "hop"}


def _records(compose_cfg, demo, tmp_path, policy: str, *extra: str) -> list[dict]:
    over = ["task=express", f"policy={policy}", f"task.data_dir={demo}", "llm=offline",
            "judge.model=offline", "run.limit=2", "run.workers=1", "sim.width=64",
            "sim.height=64", "policy.max_steps=3", "run.cache=false",
            "run.bootstrap_samples=0", "run.trajectory_maps=false", *extra]  # fmt: skip
    out = run(compose_cfg(over, out=tmp_path / policy))
    assert out["counts"]["ok"] == 2
    return read_records(tmp_path / policy / "episodes.jsonl")


@pytest.mark.parametrize("policy", ["fbe", "vlm_explore"])
@pytest.mark.slow
def test_profile_reports_the_parts_of_every_step(compose_cfg, express_demo, tmp_path, policy):
    recs = _records(compose_cfg, express_demo, tmp_path, policy, "run.profile=true")
    steps = [s for r in recs for s in r["trace"]["steps"]]
    assert steps and all(set(s["profile"]) == {"wall", "cpu"} for s in steps)
    for s in steps:
        wall = s["profile"]["wall"]
        assert (MOVING if "next_position" in s else ALWAYS) <= set(wall), wall
        if policy == "vlm_explore" and "next_position" in s and s["vlm"].get("points"):
            assert {"points", "semantic"} <= set(wall)
        for clock in ("wall", "cpu"):  # the parts fit in the step (10 µs rounding each)
            part = s["profile"][clock]
            assert all(v >= 0 for v in part.values())
            assert sum(v for k, v in part.items() if k != "step") <= part["step"] + 1e-4 * len(part)
        # look-around: 1 + 2 renders per moving step, timed inside the step
        assert wall["render"] > 0
    zero = dict.fromkeys(("load", "render", "model", "write"), 0.0)
    rows = [{"steps": [s["profile"] for s in r["trace"]["steps"]], "total": 1.0, "status": "ok",
             "wall": zero} for r in recs]  # fmt: skip
    for clock in ("wall", "cpu"):
        table = dict(step_table([{**r, "cpu": r["wall"]} for r in rows], clock))
        assert set(GROUPS) | {"other", "step", "overhead"} == set(table)
    # the bench's rows: the groups and "other" add up to each step's total
    for s in steps:
        part = s["profile"]["wall"]
        grouped = sum(part.get(p, 0.0) for ps in GROUPS.values() for p in ps)
        other = part["step"] - grouped
        assert grouped + other == pytest.approx(part["step"]) and other >= -1e-3
    ep = episode_table(rows, "wall")
    assert {"steps", "episode", "render", "model", "write", "overhead"} <= set(ep)
    assert all("profile" in r["trace"] for r in recs)  # the answer step's parts


@pytest.mark.slow
def test_default_records_carry_no_profile(compose_cfg, express_demo, tmp_path):
    recs = _records(compose_cfg, express_demo, tmp_path, "fbe")
    assert "profile" not in recs[0]["trace"]
    assert all("profile" not in s for r in recs for s in r["trace"]["steps"])


def test_span_is_its_wall_time_minus_the_parts_inside(monkeypatch):
    clock = iter([0.0, 1.0, 3.0, 10.0, 0.0, 0.5, 1.5, 4.0])  # span start, part start/end, end
    monkeypatch.setattr("eqa_runner.timing.time.perf_counter", lambda: next(clock))
    monkeypatch.setattr("eqa_runner.timing.time.process_time", lambda: 0.0)
    t = PartTimes(True)
    with t.span("model"), t.part("prompt"):
        pass
    assert t.wall == {"prompt": 2.0, "model": 8.0}  # 10 s span minus the 2 s prompt inside
    with t.span("model"), t.span("model"):  # nested: the outer's time minus the other parts
        pass
    assert t.take()["wall"] == {"prompt": 2.0, "model": 8.0 + 4.0}
    assert t.wall == {} and t.cpu == {}


def test_disabled_times_record_nothing():
    with OFF.part("render"), OFF.span("model"):
        OFF.add("fuse", 1.0)
    assert OFF.take() == {"wall": {}, "cpu": {}}
