"""The headline use on the real habitat-sim (marker ``habitat``; CI runs these in the habitat-cpu
chroot): every exploration task's demo, end to end through the run loop, with ``sim=habitat``.

Offline placeholder models (no network); what is checked is the simulator side: every episode
ok, a first frame that is not black, hops that stay inside the apartment, and (EXPRESS) a finite
final distance to a reachable goal.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.sim.conftest import require_habitat, short_fbe_express

pytestmark = pytest.mark.habitat


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    require_habitat()
    from eqa_runner.demo.cli import write_demo

    return write_demo(
        tmp_path_factory.mktemp("hab_demo"), seed=0, only=["express", "hmeqa", "aeqa"]
    )["express"].parent


def _run(compose_cfg, tmp_path: Path, demo: Path, task: str, policy: str) -> list:
    out = tmp_path / f"{task}_{policy}"
    cfg = compose_cfg(
        [
            f"task={task}",
            f"policy={policy}",
            "sim=habitat",
            "sim.width=128",
            "sim.height=128",
            f"task.data_dir={demo / task}",
            "llm=offline",
            "judge.model=offline",
            "policy.max_steps=4",
            "run.limit=4",
            "run.save_artifacts=true",
            "run.cache=false",
        ],
        out=out,
    )
    run(cfg)
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    firsts = sorted((out / "artifacts").glob("*/step_000.png"))
    assert len(firsts) == len(recs)  # one first frame per episode
    for first in firsts:
        rgb = np.asarray(Image.open(first).convert("RGB"))
        assert (rgb.sum(axis=-1) == 0).mean() < 0.05 and rgb.mean() > 40, first  # lit, not black
    return recs


@pytest.mark.parametrize("policy", ["re", "fbe"])
def test_express_demo_on_real_habitat(compose_cfg, tmp_path, demo, policy):
    recs = _run(compose_cfg, tmp_path, demo, "express", policy)
    for r in recs:
        t = r["trace"]
        assert t["d_t_valid"] and math.isfinite(t["d_t"])  # the goal is reachable
        assert t["path_len"] > 0
        for s in t["steps"]:
            if "next_position" in s:  # hops stay on the apartment's floor (y = 0), not outside
                assert abs(s["next_position"][1]) < 0.3


@pytest.mark.parametrize("task", ["aeqa", "hmeqa"])
def test_other_exploration_tasks_on_real_habitat(compose_cfg, tmp_path, demo, task):
    recs = _run(compose_cfg, tmp_path, demo, task, "fbe")
    assert all(r["trace"]["steps_taken"] >= 1 for r in recs)


@pytest.mark.parametrize("backend", ["mesh", "habitat"])
def test_two_storey_house_fbe_on_both_backends(compose_cfg, tmp_path, demo, backend):
    """The house's EXPRESS episodes (three start upstairs with the goal downstairs): a short
    fbe run has a finite d_T on every episode in both backends."""
    express = demo / "express"
    house = express / "express-bench-house.json"
    data = (f"task.data_dir={express}", f"task.questions_file={house}")
    recs = short_fbe_express(compose_cfg, tmp_path / backend, backend, *data)
    assert len(recs) == 4


def test_two_storey_house_aeqa_starts_upstairs_on_habitat(compose_cfg, tmp_path, demo):
    """The house's A-EQA questions (three asked from the upper floor about the ground floor):
    every episode runs on the real simulator, from the floor its pose file names."""
    from eqa_runner.benchmarks.aeqa.demo import HOUSE_FILE
    from eqa_runner.demo.house import STOREY_H

    out = tmp_path / "aeqa_house"
    cfg = compose_cfg(
        [
            "task=aeqa",
            "policy=fbe",
            "sim=habitat",
            "sim.width=128",
            "sim.height=128",
            f"task.data_dir={demo / 'aeqa'}",
            f"task.questions_file={demo / 'aeqa' / HOUSE_FILE}",
            "llm=offline",
            "judge.model=offline",
            "protocol.num_steps=4",
            "run.cache=false",
        ],
        out=out,
    )
    run(cfg)
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    starts = sorted(r["trace"]["steps"][0]["position"][1] > STOREY_H - 0.5 for r in recs)
    assert starts == [False, True, True, True]
    assert all(r["metrics"]["reference_path_length"] > STOREY_H for r in recs)
