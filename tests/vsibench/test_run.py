"""VSI-Bench end to end against the local model server: multiframe, single and blind runs
scored by lmms-eval's rules; the dry run on a question file of the real size; the lmms-eval
samples file exported and imported back."""

from __future__ import annotations

import json

import pytest

from eqa_runner.benchmarks.vsibench import scoring as S
from eqa_runner.records import read_records
from eqa_runner.report.cli import main as report_main
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.vsibench.conftest import records

RULES = [
    {"pattern": "Reply with the letter", "reply": "B. the chair"},
    {"pattern": "Reply with one number", "reply": "3 of them"},
]


def _expected() -> float:
    rows = [(r["question_type"], S.score_reply(r["question_type"],
             "B. the chair" if r["options"] else "3 of them", r["ground_truth"]))
            for r in records()]  # fmt: skip
    return 100.0 * S.overall(S.type_means(rows))


@pytest.mark.parametrize(
    "policy",
    ["multiframe", pytest.param("single", marks=pytest.mark.slow),
     pytest.param("blind", marks=pytest.mark.slow)],
)  # fmt: skip
def test_runs_scored_as_lmms_eval(tmp_path, compose_cfg, llm_server, vsi_data, policy) -> None:
    rules = RULES if policy != "blind" else [{**r, "reply": "A: " + r["reply"]} for r in RULES]
    llm_server.configure(rules=rules)
    out = tmp_path / "run"
    cfg = compose_cfg(["task=vsibench", f"policy={policy}", f"task.data_dir={vsi_data}",
                       f"task.frames_dir={tmp_path / 'frames'}", "task.num_frames=6",
                       "run.workers=2", "run.cache=false", "run.bootstrap_samples=50",
                       *server_overrides(llm_server)], out=out)  # fmt: skip
    run(cfg)
    summary = json.loads((out / "summary.json").read_text())
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 10 and all(r["status"] == "ok" for r in recs)
    assert summary["headline"]["overall"]["mean"] == pytest.approx(_expected())
    assert summary["type_scores"]["object_rel_direction"] == 100.0
    assert (
        summary["type_scores"]["object_size_estimation"] == 60.0
    )  # 3 vs 2.5: 0.2 <= 1 - θ for θ .50-.75 (1 - .80 is 0.19999…)
    assert summary["task"]["num_frames"] == 6
    if policy == "multiframe":
        first = next(r for r in recs if r["episode_id"] == "0")  # records come in any order
        assert first["trace"]["frames"][0] == "arkitscenes/scene0/uniform-6/frame_000000.png"
        assert len(first["trace"]["frames"]) == 6
        prompt = json.dumps(llm_server.requests[0])
        assert "Options:" in prompt or "Reply with one number" in prompt


def test_export_import_roundtrip(tmp_path, compose_cfg, llm_server, vsi_data) -> None:
    llm_server.configure(rules=RULES)
    src = tmp_path / "run"
    run(compose_cfg(["task=vsibench", "policy=multiframe", f"task.data_dir={vsi_data}",
                     f"task.frames_dir={tmp_path / 'frames'}", "task.num_frames=4",
                     "run.cache=false", *server_overrides(llm_server)], out=src))  # fmt: skip
    exp = tmp_path / "export"
    assert report_main([str(src), "--export", "vsibench", "--out", str(exp)]) == 0
    lines = [json.loads(x) for x in (exp / "samples_vsibench.jsonl").read_text().splitlines()]
    assert len(lines) == 10
    first = lines[0]
    assert set(first["doc"]) == {"id", "dataset", "scene_name", "question_type", "question",
                                 "options", "ground_truth"}  # fmt: skip
    assert first["filtered_resps"] == [first["resps"][0][0]]
    assert {x["doc"]["question"] for x in lines} == {r["question"] for r in records()}
    out = tmp_path / "imported"
    code = report_main(["--import", str(exp / "samples_vsibench.jsonl"), "--format", "vsibench",
                        "--out", str(out), "task=vsibench", f"task.data_dir={vsi_data}",
                        "run.progress=false", f"run.cache_dir={tmp_path / 'cache'}"])  # fmt: skip
    assert code == 0
    a = json.loads((src / "summary.json").read_text())["headline"]["overall"]["mean"]
    b = json.loads((out / "summary.json").read_text())["headline"]["overall"]["mean"]
    assert a == b == pytest.approx(_expected())


def test_dry_run_on_a_file_of_the_real_size(tmp_path, compose_cfg, capsys) -> None:
    """5,130 questions on 288 videos, none staged: the dry run names them and how to stage."""
    types = S.QUESTION_TYPES
    mca = [types[i % 10] in S.MCA_TYPES for i in range(5130)]
    recs = [{"id": i, "dataset": ("arkitscenes", "scannet", "scannetpp")[i % 288 % 3],
             "scene_name": f"scene{i % 288:03d}", "question_type": types[i % 10],
             "question": "Q?", "options": ["A. a", "B. b"] if mca[i] else None,
             "ground_truth": "A" if mca[i] else "2"} for i in range(5130)]  # fmt: skip
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    cfg = compose_cfg(["experiment=vsibench_multiframe", f"task.data_dir={tmp_path}",
                       "llm=offline", "run.dry_run=true"], out=tmp_path / "run")  # fmt: skip
    out = run(cfg)
    printed = capsys.readouterr().out
    assert out["episodes"] == 5130 and out["missing_data"] == 5130
    assert "(288 scenes or frame folders missing)" in printed
    assert "nyu-visionx/VSI-Bench" in printed and "scannetpp.zip" in printed
