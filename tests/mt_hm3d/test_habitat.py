"""MT-HM3D on the real habitat-sim (marker ``habitat``; CI runs it in the habitat-cpu chroot):
the demo apartments and the two-storey house, frontier and VLM exploration, through the run loop
with ``sim=habitat``: every episode ok, the protocol's stop and last answer, the metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.sim.conftest import require_habitat

pytestmark = pytest.mark.habitat


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    require_habitat()
    from eqa_runner.benchmarks.mt_hm3d.demo import write_mt_hm3d_demo

    out = tmp_path_factory.mktemp("hab_mt") / "mt_hm3d"
    write_mt_hm3d_demo(out, seed=0)
    return out


@pytest.mark.parametrize(
    ("policy", "scene"), [("fbe", "00001-DemoApt0"), ("vlm_explore", "00003-DemoHouse2F")]
)
def test_mt_hm3d_on_real_habitat(compose_cfg, tmp_path, demo, policy, scene) -> None:
    out = tmp_path / policy
    cfg = compose_cfg(["task=mt_hm3d", f"policy={policy}", "sim=habitat", "sim.width=128",
                       "sim.height=128", f"task.data_dir={demo}", f"task.scenes=[{scene}]",
                       "llm=offline", "judge.model=offline", "policy.max_steps=4",
                       "run.cache=false"], out=out)  # fmt: skip
    run(cfg)
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for r in recs:
        t = r["trace"]
        assert t["answer_rule"] == "last" and t["steps_taken"] >= 1
        assert set(r["metrics"]) >= {"success", "early_success", "last_step_success"}
        assert r["prediction"] in ("A", "B", "C", "D")
