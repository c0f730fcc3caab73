"""MT-HM3D end to end on the demo (apartments + the two-storey house) against the local model
server: the stop at the first confident step, the last answer, MemoryEQA's metrics; the export
read by the reference metrics and imported back; the dry run on a file of the real size."""

from __future__ import annotations

import json

import pytest

from eqa_runner.benchmarks.mt_hm3d.protocol import last_letter, step_letter
from eqa_runner.benchmarks.mt_hm3d.scoring import episode_metrics, reference_printout
from eqa_runner.records import read_records
from eqa_runner.report.cli import main as report_main
from eqa_runner.run.loop import run
from tests.conftest import server_overrides

KEY = r'([^\n"]*\?)'
RULES = [  # steps 0, 1, 2: answers B, A, A; confident at step 2 (stop there)
    {"pattern": "Reply with the letter", "key": KEY, "reply": ["B", "A", "A"]},
    {"pattern": "Reply with Yes or No", "key": KEY, "reply": ["No", "No", "Yes"]},
]


def _overrides(demo, srv, policy="fbe", *extra):
    return ["task=mt_hm3d", f"policy={policy}", f"task.data_dir={demo}", "policy.max_steps=5",
            "sim.width=96", "sim.height=72", "run.workers=4", "run.cache=false",
            "run.bootstrap_samples=50", *server_overrides(srv), *extra]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["fbe", "vlm_explore"])
def test_stop_when_confident_answer_last(tmp_path, compose_cfg, llm_server, mt_demo, policy):
    llm_server.configure(rules=RULES, logprobs=False)
    out = tmp_path / "run"
    run(compose_cfg(_overrides(mt_demo, llm_server, policy), out=out))
    recs = read_records(out / "episodes.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert len(recs) == 12 and all(r["status"] == "ok" for r in recs)
    for r in recs:
        t, m = r["trace"], r["metrics"]
        letters = [step_letter(x) for x in t["steps"] if "answer_probs" in x]
        assert t["answer_rule"] == "last" and r["prediction"] == last_letter(t["steps"])[0]
        assert m == {**episode_metrics(letters, r["prediction"], r["answer"], t["num_steps"]),
                     "unparsable": 0.0}  # fmt: skip
        if policy == "fbe":  # one stop question per step: confident at step 2
            assert t["stop_reason"] == "view_suffices" and letters == ["B", "A", "A"]
            assert m["early_success"] == float(r["answer"] in "AB")
    rate = 100.0 * sum(r["metrics"]["success"] for r in recs) / 12
    assert summary["headline"]["success_rate"]["mean"] == pytest.approx(rate)
    assert {r["scene"] for r in recs} >= {"00003-DemoHouse2F"}


def test_export_is_memoryeqa_results_and_roundtrips(tmp_path, compose_cfg, llm_server, mt_demo):
    llm_server.configure(rules=RULES, logprobs=False)
    src = tmp_path / "run"
    run(compose_cfg(_overrides(mt_demo, llm_server, "fbe", "policy.max_steps=3",
                               "task.scenes=[00001-DemoApt0]"), out=src))  # fmt: skip
    exp = tmp_path / "export"
    assert report_main([str(src), "--export", "mt_hm3d", "--out", str(exp)]) == 0
    items = json.loads((exp / "results.json").read_text())
    assert len(items) == 4 and set(items[0]) == {"meta", "step", "summary"}
    assert {"answer", "max_steps", "question_ind"} <= set(items[0]["meta"])
    assert [s["smx_vlm_pred"] for s in items[0]["step"]] == ["B", "A", "A"]
    printed = reference_printout(items)  # what MemoryEQA's script would print for it
    final = sum(it["summary"]["smx_vlm_pred"] == it["meta"]["answer"] for it in items)
    assert printed is None or printed["success_rate"] == final / 4  # upper-case steps never count
    out = tmp_path / "imported"
    code = report_main(["--import", str(exp / "results.json"), "--format", "mt_hm3d",
                        "--out", str(out), "task=mt_hm3d", f"task.data_dir={mt_demo}",
                        "task.scenes=[00001-DemoApt0]", "run.progress=false",
                        f"run.cache_dir={tmp_path / 'cache'}"])  # fmt: skip
    assert code == 0
    a = json.loads((src / "summary.json").read_text())["headline"]
    b = json.loads((out / "summary.json").read_text())["headline"]
    assert {k: v["mean"] for k, v in a.items()} == {k: v["mean"] for k, v in b.items()}


def test_dry_run_on_a_file_of_the_real_size(tmp_path, compose_cfg, capsys) -> None:
    """1,587 questions on HM3D scenes, none staged: named, with how to stage them."""
    scenes = [f"{800 + i:05d}-Scene{i:03d}xyzAB" for i in range(41)]
    rows = ["scene,floor,question,choices,answer,label"]
    for i in range(1587):
        yn = i % 3 == 0
        choices = "\"['Yes', 'No']\"" if yn else "\"['a', 'b', 'c', 'd']\""
        rows.append(f"{scenes[i % 41]},0,Question {i}?,{choices},{'A' if yn else 'C'},x")
    (tmp_path / "MT-HM3D-filtered-new.csv").write_text("\n".join(rows) + "\n")
    poses = ["scene_floor,init_x,init_y,init_z,init_angle"] + [f"{s}_0,0,0,0,0" for s in scenes]
    (tmp_path / "scene_init_poses_all.csv").write_text("\n".join(poses) + "\n")
    cfg = compose_cfg(["task=mt_hm3d", "policy=fbe", f"task.data_dir={tmp_path}", "llm=offline",
                       "run.dry_run=true"], out=tmp_path / "run")  # fmt: skip
    out = run(cfg)
    printed = capsys.readouterr().out
    assert out["episodes"] == 1587 and out["missing_data"] == 1587
    assert "(41 scenes or frame folders missing)" in printed
    assert "Matterport" in printed
