"""The dry run's estimate is pinned: the same requests, tokens and cost before and after the
speed work (golden file recorded with the code before it; regenerate only on purpose with
``EQA_REGEN_PINNED=1 pytest tests/speed/test_dry_run_pinned.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.speed.pinned_cases import CASES

pytestmark = pytest.mark.slow  # the module's data: every benchmark's demo, written once

GOLDEN = Path(__file__).with_name("dry_run_estimates.json")


def write_data(root: Path) -> dict[str, Path]:
    """The small fixed inputs: the procedural demos (EXPRESS, HM-EQA, A-EQA) and a synthetic
    OpenEQA set (20 questions, 12 frames per episode)."""
    from eqa_runner.benchmarks.aeqa.demo import write_aeqa_demo
    from eqa_runner.benchmarks.express.demo import write_express_demo
    from eqa_runner.benchmarks.hmeqa.demo import write_hmeqa_demo
    from tests.helpers.datasets import make_openeqa_dataset

    write_express_demo(root / "express", seed=0)
    write_hmeqa_demo(root / "hmeqa", seed=0)
    write_aeqa_demo(root / "aeqa", seed=0)
    make_openeqa_dataset(root / "openeqa", n_questions=20)
    return {k: root / k for k in ("express", "hmeqa", "aeqa", "openeqa")}


def estimate(compose, data: dict[str, Path], name: str, capsys) -> dict:
    from eqa_runner.run.loop import run

    kind, overrides = CASES[name]
    cfg = compose([*overrides, f"task.data_dir={data[kind]}", "run.dry_run=true"])
    capsys.readouterr()
    out = run(cfg)
    printed = capsys.readouterr().out
    lines = [ln for ln in printed.splitlines() if "requests" in ln or "selected" in ln]
    return {"estimate": out["estimate"], "problems": out["problems"], "lines": lines}


@pytest.fixture(scope="module")
def pinned_data(tmp_path_factory) -> dict[str, Path]:
    return write_data(tmp_path_factory.mktemp("pinned"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_dry_run_estimate_is_pinned(name, pinned_data, compose_cfg, capsys):
    got = estimate(compose_cfg, pinned_data, name, capsys)
    if os.environ.get("EQA_REGEN_PINNED"):
        old = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        GOLDEN.write_text(json.dumps({**old, name: got}, indent=1, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())[name]
    assert got["lines"] == want["lines"]
    assert got["problems"] == want["problems"]
    for role, w in want["estimate"].items():
        g = got["estimate"][role]
        assert {k: v for k, v in g.items() if k != "cost_usd"} == {
            k: v for k, v in w.items() if k != "cost_usd"
        }
        if w["cost_usd"] is None:  # a model without a price stays unpriced
            assert g["cost_usd"] is None
        else:
            assert g["cost_usd"] == pytest.approx(w["cost_usd"], rel=1e-12)


def test_vlm_explore_dry_run_builds_one_proposer_for_every_estimate(
    pinned_data, compose_cfg, capsys, monkeypatch
):
    """Building a proposer types its config (~15 ms); an A-EQA dry run estimated 184 episodes
    with a new one each (2.3 s of a 3 s budget)."""
    from eqa_runner.policies.vlm_explore import VLMExploreProposer

    built = []
    init = VLMExploreProposer.__init__

    def counting(self, *a, **kw):
        built.append(1)
        init(self, *a, **kw)

    monkeypatch.setattr(VLMExploreProposer, "__init__", counting)
    got = estimate(compose_cfg, pinned_data, "aeqa-vlm_explore-gpt4o", capsys)
    assert got["lines"] == json.loads(GOLDEN.read_text())["aeqa-vlm_explore-gpt4o"]["lines"]
    episodes = got["estimate"]["judge"]["requests"]
    assert episodes >= 3 and len(built) <= 2  # estimates share one; prompts() builds its own
