"""The A-EQA protocol pieces: frame memory, budget, dry-run estimate, config, data check, demo."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from eqa_runner.benchmarks.aeqa.data import check_aeqa
from eqa_runner.benchmarks.aeqa.protocol import AEQAProtocol, path_len_xz
from eqa_runner.benchmarks.aeqa.task import AEQATask
from eqa_runner.data.commands import main as data_main
from eqa_runner.errors import DataError
from eqa_runner.images import decode_frame, encode_frame
from eqa_runner.policies.config import REPolicyConfig
from eqa_runner.policies.explore import ExplorePolicy
from eqa_runner.policies.frame_memory import FrameMemory
from eqa_runner.run.build import check_capabilities
from eqa_runner.run.loop import run


def _frame(v: int, size=(200, 100)) -> np.ndarray:
    return np.full((size[1], size[0], 3), v, dtype=np.uint8)


def test_frame_memory_strategies():
    last = FrameMemory(k=3, strategy="last", image_size=50)
    spread = FrameMemory(k=3, strategy="linspace", image_size=50)
    for step in range(7):
        last.add(step, _frame(step))
        spread.add(step, _frame(step))
    assert [f.step for f in last.select()] == [4, 5, 6] and len(last.frames) == 3
    assert [f.step for f in spread.select()] == [0, 3, 6] and len(spread.frames) == 7
    assert last.seen == spread.seen == 7 and spread.latest.step == 6
    assert {f.size for f in spread.select()} == {(50, 25)}  # longer side 50, aspect kept
    # fewer frames than K: all of them, once
    few = FrameMemory(k=8, image_size=None)
    few.add(0, _frame(1))
    assert [f.step for f in few.select()] == [0] and few.select()[0].size == (200, 100)
    with pytest.raises(ValueError, match="strategy"):
        FrameMemory(k=3, strategy="best")


def test_encode_frame_resizes_as_the_frames_policy(tmp_path):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(tmp_path / "f.png")
    from_disk = np.asarray(decode_frame(tmp_path / "f.png", 120))  # the multiframe path
    rendered = np.asarray(Image.open(__import__("io").BytesIO(encode_frame(rgb, 120))))
    assert rendered.shape == (90, 120, 3) and np.array_equal(rendered, from_disk)


def test_budget_and_dry_run_estimate(aeqa_demo):
    proto = AEQAProtocol(num_steps=50, memory_frames=8, image_size=360)
    pol = ExplorePolicy(REPolicyConfig(), image_size=(1280, 1280), protocol=proto)
    assert pol.budget(10.0) == pol.budget(400.0) == 50  # fixed, whatever the scene's area
    capped = ExplorePolicy(REPolicyConfig(), max_steps=20, protocol=AEQAProtocol(num_steps=50))
    assert capped.budget(400.0) == 20  # policy.max_steps still caps it
    ep = AEQATask(data_dir=str(aeqa_demo)).load_episodes()[0]
    reqs = pol.estimate_requests(ep, None, None)
    assert len(reqs) == 51
    assert all(r.image_sizes == [(360, 360)] for r in reqs[:50])
    assert reqs[-1].image_sizes == [(360, 360)] * 8
    no_stop = AEQAProtocol(stop_check=False)
    assert (
        len(ExplorePolicy(REPolicyConfig(), protocol=no_stop).estimate_requests(ep, None, None))
        == 1
    )


def test_path_len_xz():
    steps = [
        {"position": [0, 0, 0], "next_position": [3, 5, 4]},  # y ignored: 5
        {"position": [3, 0, 4], "next_position": [3, 0, 4]},  # stayed
        {"position": [3, 0, 4]},
    ]  # fmt: skip  (the stop step: no hop)
    assert path_len_xz(steps) == 5.0


def test_config_composes_the_task_preset(compose_cfg, aeqa_demo):
    cfg = compose_cfg(["task=aeqa", "policy=fbe", f"task.data_dir={aeqa_demo}"])
    assert cfg.judge._target_ == "eqa_runner.benchmarks.aeqa.judge.AEQAJudge"
    assert cfg.protocol.num_steps == 50 and cfg.protocol.memory_frames == 8
    assert (cfg.sim.width, cfg.sim.height, cfg.sim.hfov_deg, cfg.sim.tilt_deg) == (
        1280,
        1280,
        120.0,
        -30.0,
    )
    assert cfg.sim.sensor_height_m == 1.5
    cfg = compose_cfg(["task=aeqa", "sim.hfov_deg=90", "protocol.num_steps=7", "policy=re"])
    assert cfg.sim.hfov_deg == 90.0 and cfg.policy.protocol.num_steps == 7
    blind = compose_cfg(["experiment=aeqa_blind", "llm=offline"])
    assert blind.policy.name == "blind"
    check_capabilities(blind)  # the blind baseline fits the task (a question) and its judge


def test_dry_run_prints_the_estimate(compose_cfg, aeqa_demo, capsys):
    out = run(compose_cfg(["experiment=aeqa_fbe", f"task.data_dir={aeqa_demo}",
                           "run.dry_run=true"]))  # fmt: skip
    assert out["episodes"] == 13 and out["problems"] == []
    est = out["estimate"]["policy"]
    assert est["requests"] == 13 * 51 and est["images"] == 13 * (50 + 8)
    assert est["cost_usd"] > 0 and "est. cost $" in capsys.readouterr().out


def test_data_check(aeqa_demo, tmp_path, capsys):
    assert check_aeqa(aeqa_demo).ok
    broken = tmp_path / "broken"
    shutil.copytree(aeqa_demo, broken)
    shutil.rmtree(broken / "scenes" / "val" / "00811-AEQAApt1")
    lengths = json.loads((broken / "gt_path_length.json").read_text())
    del lengths["demo-aeqa-000-01"]
    (broken / "gt_path_length.json").write_text(json.dumps(lengths))
    poses = json.loads((broken / "aeqa_questions-184.json").read_text())
    poses = [p for p in poses if p["question_id"] != "demo-aeqa-000-02"]
    (broken / "aeqa_questions-184.json").write_text(json.dumps(poses))
    ids = broken / "open-eqa-v0-184-questions.json"
    rep = check_aeqa(broken, ids)
    assert rep.questions == 13 and not rep.ok
    assert any("demo-aeqa-000-02: no start pose" in m for m in rep.missing)
    assert any("demo-aeqa-000-01: no reference path length" in m for m in rep.missing)
    assert any(
        m.startswith("scene 00811-AEQAApt1: no scene file for sim=mesh at") for m in rep.missing
    )
    assert data_main(["check", "aeqa", "--data-dir", str(broken), "--questions-file",
                      str(ids)]) == 1  # fmt: skip
    assert "To stage the scenes" in capsys.readouterr().out
    # a run refuses the question without a pose (the loader is strict)
    with pytest.raises(DataError, match="no start pose for question demo-aeqa-000-02"):
        AEQATask(data_dir=str(broken), questions_file=str(ids)).load_episodes()


def test_demo_writes_both_question_shapes(aeqa_demo):
    by_pose = {e.episode_id: e for e in AEQATask(data_dir=str(aeqa_demo)).load_episodes()}
    ids = aeqa_demo / "open-eqa-v0-184-questions.json"
    by_ids = {
        e.episode_id: e
        for e in AEQATask(data_dir=str(aeqa_demo), questions_file=str(ids)).load_episodes()
    }
    assert by_pose.keys() == by_ids.keys() and len(by_pose) == 13
    for q, e in by_pose.items():
        assert by_ids[q].meta["start_position"] == e.meta["start_position"]
        assert e.meta["reference_path_length"] > 5.0
    assert len({e.category for e in by_pose.values()}) == 7
