"""``report --export`` per benchmark (checked field by field against what the upstream reader
uses), the round trip export → import → same headline numbers, and upstream files written by
hand from the upstream readers' field lists, imported and scored by our judges."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.records import read_records
from eqa_runner.report.cli import main as report_main
from eqa_runner.run.loop import run
from tests.conftest import server_overrides

OFFLINE = ["llm=offline", "judge.model=offline", "run.workers=2"]


def _headline(run_dir: Path) -> dict[str, float]:
    s = json.loads((run_dir / "summary.json").read_text())
    return {k: v["mean"] for k, v in s["headline"].items()}


def _roundtrip(tmp_path: Path, run_dir: Path, fmt: str, data: Path, extra=()) -> Path:
    exp = tmp_path / "export"
    assert report_main([str(run_dir), "--export", fmt, "--out", str(exp)]) == 0
    main_file = {"openeqa": "predictions.json", "aeqa": "gpt_answer.json"}.get(fmt, "results.pkl")
    out = tmp_path / "imported"
    code = report_main(["--import", str(exp / main_file), "--format", fmt, "--out", str(out),
                        f"task.data_dir={data}", "run.progress=false",
                        f"run.cache_dir={tmp_path / 'cache'}", *extra])  # fmt: skip
    assert code == 0
    return out


# ----------------------------------------------------------------------------- OpenEQA


def test_openeqa_export_fields_and_roundtrip(tmp_path, compose_cfg, openeqa_data) -> None:
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=5", *OFFLINE],
                    out=tmp_path / "r"))  # fmt: skip
    recs = read_records(tmp_path / "r" / "episodes.jsonl")
    out = _roundtrip(tmp_path, tmp_path / "r", "openeqa", openeqa_data, ["judge.model=offline"])
    items = json.loads((tmp_path / "export" / "predictions.json").read_text())
    # evaluate-predictions.py: a list; per item question_id (matched to the dataset) and answer
    assert isinstance(items, list) and len(items) == 5
    assert all(set(it) == {"question_id", "answer"} for it in items)
    assert {it["question_id"] for it in items} == {r["episode_id"] for r in recs}
    assert all(isinstance(it["answer"], str) for it in items)
    assert _headline(out) == _headline(tmp_path / "r")
    back = {r["episode_id"]: r["prediction"] for r in read_records(out / "episodes.jsonl")}
    assert back == {r["episode_id"]: r["prediction"] for r in recs}


def test_openeqa_hand_written_predictions_scored_by_our_judge(
    tmp_path, openeqa_data, llm_server
) -> None:
    """A file as another system writes it for open-eqa's scorer, judged by our LLM-Match."""
    questions = json.loads((openeqa_data / "open-eqa-v0.json").read_text())[:3]
    f = tmp_path / "baseline-predictions.json"
    f.write_text(json.dumps([{"question_id": q["question_id"], "answer": a}
                             for q, a in zip(questions, ["a red sofa", "two", None],
                                             strict=True)]))  # fmt: skip
    llm_server.configure(rules=[{"pattern": "red sofa", "reply": "5"}], default_reply="1")
    srv = server_overrides(llm_server)
    judge = [o for o in srv if o.startswith("judge.")] + ["llm.backoff_base_s=0.05"]
    code = report_main(["--import", str(f), "--format", "openeqa", "--out", str(tmp_path / "i"),
                        f"task.data_dir={openeqa_data}", "run.progress=false",
                        f"run.cache_dir={tmp_path / 'c'}", *judge])  # fmt: skip
    assert code == 0
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "i" / "episodes.jsonl")}
    assert recs[questions[0]["question_id"]]["metrics"]["score_1to5"] == 5
    assert recs[questions[1]["question_id"]]["metrics"]["score_1to5"] == 1
    assert len(recs) == 3


def test_an_import_with_error_records_exits_1_as_a_run_does(
    tmp_path, openeqa_data, llm_server
) -> None:
    """README "Exit codes": 1 when some episodes are error records; an import exited 0."""
    questions = json.loads((openeqa_data / "open-eqa-v0.json").read_text())[:2]
    f = tmp_path / "p.json"
    answers = zip(questions, ["a red sofa", "two"], strict=True)
    f.write_text(json.dumps([{"question_id": q["question_id"], "answer": a} for q, a in answers]))
    # the judge fails for good on the second answer ("two"): that episode is an error record
    llm_server.configure(
        rules=[{"pattern": "two", "reply": "x", "fault": "500"}], default_reply="5"
    )
    srv = server_overrides(llm_server)
    judge = [o for o in srv if o.startswith("judge.")] + [
        "llm.backoff_base_s=0.01",
        "llm.max_retries=1",
    ]
    code = report_main(["--import", str(f), "--format", "openeqa", "--out", str(tmp_path / "i"),
                        f"task.data_dir={openeqa_data}", "run.progress=false",
                        f"run.cache_dir={tmp_path / 'c'}", *judge])  # fmt: skip
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "i" / "episodes.jsonl")}
    assert [recs[q["question_id"]]["status"] for q in questions] == ["ok", "error"]
    assert code == 1


def test_unknown_question_id_is_one_line(tmp_path, openeqa_data, capsys) -> None:
    f = tmp_path / "p.json"
    f.write_text(json.dumps([{"question_id": "no-such-id", "answer": "x"}]))
    code = report_main(["--import", str(f), "--format", "openeqa", "--out", str(tmp_path / "i"),
                        f"task.data_dir={openeqa_data}"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "not in the task's episodes" in err and "'no-such-id'" in err


# ----------------------------------------------------------------------------- EXPRESS


def _upstream_express_score(results: list[dict]) -> tuple[float, float, float, float]:
    """What EXPRESS-Bench's evaluation.score computes from each item's EAC, path_len,
    geodesic_distance and goal_dis (written here from its field list)."""
    c, cs, w, dt = [], [], [], []
    for r in results:
        if r["path_len"] != math.inf:
            g, a = r["EAC"].replace("Your mark:", "").strip().split(",")
            c.append(float(g) * int(a))
            cs.append(int(a))
            w.append(r["geodesic_distance"] / max(r["path_len"], r["geodesic_distance"]))
        if r["goal_dis"] != math.inf:
            dt.append(r["goal_dis"])
    cc = np.clip(c, 0, 5) / 5 * 100
    return (float(np.mean(cc)), float(np.mean(np.clip(cs, 0, 5) / 5 * 100)),
            float(np.mean(cc * np.asarray(w))), float(np.mean(dt)))  # fmt: skip


@pytest.mark.slow
def test_express_export_is_what_its_scorer_reads_and_roundtrips(
    tmp_path, compose_cfg, express_demo
) -> None:
    cfg = [f"task.data_dir={express_demo}", "task=express", "policy=re", "run.limit=4",
           "policy.max_steps=3", "sim.width=32", "sim.height=32", *OFFLINE]  # fmt: skip
    run(compose_cfg(cfg, out=tmp_path / "r"))
    out = _roundtrip(tmp_path, tmp_path / "r", "express", express_demo, ["judge.model=offline"])
    results = pickle.loads((tmp_path / "export" / "results.pkl").read_bytes())
    dataset = json.loads((express_demo / "express-bench.json").read_text())
    for r in results:  # question_ind indexes the dataset JSON, as main.py's loop does
        assert dataset[r["question_ind"]]["question"] == r["question"]
    ours = _headline(tmp_path / "r")
    up = _upstream_express_score(results)
    assert up == pytest.approx((ours["C"], ours["C_star"], ours["E_path"], ours["d_T"]))
    assert _headline(out) == pytest.approx(ours)


def test_express_hand_written_results_imported_and_scored(tmp_path, express_demo) -> None:
    """results.pkl as EXPRESS-Bench's main.py writes it (two questions), re-judged by ours."""
    dataset = json.loads((express_demo / "express-bench.json").read_text())
    rows = []
    for i, (path_len, goal) in enumerate([(4.0, 1.5), (math.inf, math.inf)]):
        q = dataset[i]
        rows.append({"question_ind": i, "scene": q["scene_id"], "type": q["type"],
                     "question": q["question"], "answer": q["answer"],
                     "geodesic_distance": q["geodesic_distance"], "cnt_step": 3,
                     "gen_answer": "the kitchen", "EAC": "Your mark: 1, 4",
                     "end_pts": np.array([1.0, 0.0, 2.0]), "goal_dis": goal,
                     "path_len": path_len, "regs_list": [], "path": {}})  # fmt: skip
    f = tmp_path / "results.pkl"
    f.write_bytes(pickle.dumps(rows))
    code = report_main(["--import", str(f), "--format", "express", "--out", str(tmp_path / "i"),
                        f"task.data_dir={express_demo}", "judge.model=offline",
                        "run.progress=false", f"run.cache_dir={tmp_path / 'c'}"])  # fmt: skip
    assert code == 0
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "i" / "episodes.jsonl")}
    a, b = recs[dataset[0]["episode_id"]], recs[dataset[1]["episode_id"]]
    assert a["prediction"] == "the kitchen" and a["trace"]["upstream_eac"] == "Your mark: 1, 4"
    assert a["metrics"]["path_len"] == 4.0 and a["metrics"]["d_t"] == 1.5
    assert b["metrics"]["path_len"] is None  # an unreachable path: E_path weight 0
    s = json.loads((tmp_path / "i" / "summary.json").read_text())
    assert s["headline"]["d_T"]["mean"] == pytest.approx(1.5)  # the inf goal_dis is excluded


def test_a_pickle_that_would_run_code_is_refused(tmp_path, express_demo, capsys) -> None:
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    f = tmp_path / "results.pkl"
    f.write_bytes(pickle.dumps([Evil()]))
    code = report_main(["--import", str(f), "--format", "express", f"task.data_dir={express_demo}",
                        "--out", str(tmp_path / "i")])  # fmt: skip
    out = capsys.readouterr()
    assert code == 2 and "not plain data" in out.err and "pwned" not in out.out


# ----------------------------------------------------------------------------- HM-EQA

KEY = r'([^\n"]*\?)'
HM_RULES = [
    {"pattern": "Reply with the letter", "key": KEY, "reply": ["A", "C", "A"],
     "token_probs": [{"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1},
                     {"C": 0.45, "B": 0.4, "A": 0.1, "D": 0.05},
                     {"A": 0.9, "B": 0.05, "C": 0.03, "D": 0.02}]},
    {"pattern": "Reply with Yes or No", "key": KEY, "reply": ["No", "Yes", "Yes"],
     "token_probs": [{"No": 0.8, "Yes": 0.2}, {"Yes": 0.9, "No": 0.1},
                     {"Yes": 0.85, "No": 0.15}]},
]  # fmt: skip


@pytest.mark.slow
def test_hmeqa_export_is_explore_eqa_results_and_roundtrips(
    tmp_path, compose_cfg, hmeqa_demo, llm_server
) -> None:
    llm_server.configure(rules=HM_RULES)
    cfg = ["task=hmeqa", "policy=fbe", f"task.data_dir={hmeqa_demo}", "policy.max_steps=3",
           "sim.width=48", "sim.height=36", "run.limit=4", "run.cache=false",
           *server_overrides(llm_server)]  # fmt: skip
    run(compose_cfg(cfg, out=tmp_path / "r"))
    out = _roundtrip(tmp_path, tmp_path / "r", "hmeqa", hmeqa_demo)
    results = pickle.loads((tmp_path / "export" / "results.pkl").read_bytes())
    r0 = results[0]
    assert set(r0) == {"question_ind", "step_0", "step_1", "step_2"}
    s = r0["step_1"]
    assert isinstance(s["smx_vlm_pred"], np.ndarray) and s["smx_vlm_pred"].shape == (4,)
    assert isinstance(s["smx_vlm_rel"], np.ndarray) and s["smx_vlm_rel"][0] == pytest.approx(0.9)
    assert len(s["pts"]) == 3 and isinstance(s["angle"], float)
    # run_vlm_exp.py's own end-of-question rules on the exported arrays
    for r, rec in zip(results, read_records(tmp_path / "r" / "episodes.jsonl"), strict=True):
        steps = [r[f"step_{t}"] for t in range(3)]
        weighted = np.stack([st["smx_vlm_rel"][0] * st["smx_vlm_pred"] for st in steps])
        letter = "ABCD"[int(np.argmax(weighted.max(axis=0)))]
        answer = rec["answer"]
        assert float(letter == answer) == rec["metrics"]["success_weighted"]
    assert _headline(out) == pytest.approx(_headline(tmp_path / "r"))


def test_hmeqa_hand_written_results_imported_and_scored(tmp_path, hmeqa_demo) -> None:
    """results.pkl as run_vlm_exp.py writes it, one question, exact-match judge."""
    import csv

    rows = list(csv.DictReader((hmeqa_demo / "questions.csv").open()))
    truth = rows[0]["answer"]
    k = "ABCD".index(truth)
    pred = np.full(4, 0.1)
    pred[k] = 0.7
    res = {"question_ind": 0,
           "step_0": {"pts": [0.0, 0.0, 0.0], "angle": 0.0, "smx_vlm_pred": np.ones(4) / 4,
                      "smx_vlm_rel": np.array([0.01, 0.99])},
           "step_1": {"pts": [1.0, 0.0, 0.0], "angle": 1.0, "smx_vlm_pred": pred,
                      "smx_vlm_rel": np.array([0.9, 0.1])}}  # fmt: skip
    f = tmp_path / "results.pkl"
    f.write_bytes(pickle.dumps([res]))
    code = report_main(["--import", str(f), "--format", "hmeqa", "--out", str(tmp_path / "i"),
                        f"task.data_dir={hmeqa_demo}", "run.progress=false",
                        f"run.cache_dir={tmp_path / 'c'}"])  # fmt: skip
    assert code == 0
    (rec,) = read_records(tmp_path / "i" / "episodes.jsonl")
    assert rec["episode_id"] == "0" and rec["prediction"] == truth
    assert rec["metrics"]["accuracy"] == 1.0 and rec["metrics"]["success_weighted"] == 1.0


# ----------------------------------------------------------------------------- A-EQA


@pytest.mark.slow
def test_aeqa_export_for_3d_mem_eval_and_roundtrip(tmp_path, compose_cfg, aeqa_demo) -> None:
    cfg = ["task=aeqa", "policy=re", f"task.data_dir={aeqa_demo}", "policy.max_steps=3",
           "sim.width=32", "sim.height=32", "run.limit=4", *OFFLINE]  # fmt: skip
    run(compose_cfg(cfg, out=tmp_path / "r"))
    out = _roundtrip(tmp_path, tmp_path / "r", "aeqa", aeqa_demo, ["judge.model=offline"])
    items = json.loads((tmp_path / "export" / "gpt_answer.json").read_text())  # get-scores.py's
    lengths = pickle.loads((tmp_path / "export" / "path_length_list.pkl").read_bytes())
    recs = read_records(tmp_path / "r" / "episodes.jsonl")
    assert all(set(it) == {"question_id", "answer"} for it in items) and len(items) == 4
    # get-scores-grounded.py: path_length_map[question_id] for l / max(l, p)
    for r in recs:
        assert lengths[r["episode_id"]] == pytest.approx(r["metrics"]["path_len"])
    assert _headline(out) == pytest.approx(_headline(tmp_path / "r"))


def test_aeqa_hand_written_files_imported_and_scored(tmp_path, aeqa_demo) -> None:
    questions = json.loads((aeqa_demo / "aeqa_questions-184.json").read_text())[:2]
    (tmp_path / "predictions.json").write_text(json.dumps(
        [{"question_id": q["question_id"], "answer": "a lamp"} for q in questions]))  # fmt: skip
    ref = json.loads((aeqa_demo / "gt_path_length.json").read_text())[questions[0]["question_id"]]
    with (tmp_path / "path_length_list.pkl").open("wb") as fh:
        pickle.dump({questions[0]["question_id"]: 2 * ref}, fh)  # the second: no length = inf
    code = report_main(["--import", str(tmp_path / "predictions.json"), "--format", "aeqa",
                        "--out", str(tmp_path / "i"), f"task.data_dir={aeqa_demo}",
                        "judge.model=offline", "run.progress=false",
                        f"run.cache_dir={tmp_path / 'c'}"])  # fmt: skip
    assert code == 0
    recs = {r["episode_id"]: r for r in read_records(tmp_path / "i" / "episodes.jsonl")}
    a = recs[questions[0]["question_id"]]["metrics"]
    assert a["path_len"] == pytest.approx(2 * ref) and a["has_path"] == 1.0
    assert recs[questions[1]["question_id"]]["metrics"]["has_path"] == 0.0
