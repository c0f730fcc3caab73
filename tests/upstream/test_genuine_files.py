"""Genuine upstream-written files (tests/golden/roundtrip/<benchmark>/genuine/, each with a
README naming the upstream repository, commit and command): each is imported by
``report --import`` and scored by the task's own judge to the numbers the upstream scorer
printed on the same file (upstream.txt beside it; the judge is the test server with the rules
the upstream scorer ran against, llm-server.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.records import read_records
from eqa_runner.report.cli import main as report_main
from eqa_runner.run.loop import run
from eqa_runner.scoring.upstream import load_pickle
from tests.conftest import server_overrides
from tests.helpers.datasets import make_openeqa_dataset

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "roundtrip"


def _printed(text: str, label: str) -> float:
    """The number upstream printed after ``label:`` (its own rounding)."""
    (m,) = re.findall(rf"^{re.escape(label)}: (-?\d+\.\d+)$", text, re.M)
    return float(m)


def _marks(text: str) -> dict[str, int]:
    """The per-question marks of upstream's metrics file (the ``(metrics: …)`` line)."""
    (m,) = re.findall(r"^\(metrics: (\{.*\})\)$", text, re.M)
    return json.loads(m)


def _import(
    srv, tmp_path: Path, fmt: str, file: Path, data: Path, extra: tuple[str, ...] = ()
) -> tuple[dict, dict]:
    """``report --import`` with the judge on the test server: (headline means, records by id)."""
    srv.configure(**json.loads((file.parent / "llm-server.json").read_text()))
    judge = [o for o in server_overrides(srv) if o.startswith("judge.")]
    out = tmp_path / "imported"
    code = report_main(["--import", str(file), "--format", fmt, "--out", str(out),
                        f"task.data_dir={data}", "run.progress=false", "run.cache=false",
                        "llm.backoff_base_s=0.05", *judge, *extra])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    recs = {r["episode_id"]: r for r in read_records(out / "episodes.jsonl")}
    return {k: v["mean"] for k, v in summary["headline"].items()}, recs


@pytest.mark.parametrize(
    ("sub", "name", "score"),
    [("", "open-eqa-v0-gpt-4-0613-1234.json", 50.0),
     ("gpt4v", "open-eqa-v0-gpt-4-vision-preview-1234.json", 66.7)],
)  # fmt: skip
def test_openeqa_baseline_predictions_import_to_upstreams_score(
    tmp_path, llm_server, sub, name, score
):
    """open-eqa's own baselines wrote these files: the blind LLM (gpt4.py --force: a reply
    without "A:" became a null answer) and the frame-reading GPT-4V (gpt4v.py: raw replies, one
    whose text after its last period would change the judge's mark were it not trimmed)."""
    d = GOLDEN / "openeqa" / "genuine"
    data = make_openeqa_dataset(tmp_path / "data", n_questions=6)  # the dataset (and frames)
    assert json.loads((data / "open-eqa-v0.json").read_text()) == json.loads(
        (d / "open-eqa-v0.json").read_text()
    )
    file = d / sub / name
    answers = [it["answer"] for it in json.loads(file.read_text())]
    assert (None in answers) is (sub == "")  # the blind baseline's unparsed reply
    headline, recs = _import(llm_server, tmp_path, "openeqa", file, data)
    upstream = (file.parent / "upstream.txt").read_text()
    assert round(headline["llm_match"], 1) == _printed(upstream, "final score") == score
    marks = _marks(upstream)  # upstream: a null answer is mark 0, clipped to 1 (0 %)
    assert {k: int(r["metrics"]["score_1to5"]) for k, r in recs.items()} == {
        k: int(np.clip(v, 1, 5)) for k, v in marks.items()
    }


def test_aeqa_3dmem_logger_files_import_to_upstreams_scores(tmp_path, llm_server, aeqa_demo):
    """3D-Mem's Logger wrote gpt_answer.json and path_length_list.pkl (np.float64 lengths);
    3D-Mem-AEQA-Eval's evaluate-predictions.py + get-scores.py printed per category and in total
    the score and the SPL."""
    d = GOLDEN / "aeqa" / "genuine"
    lengths = load_pickle(d / "path_length_list.pkl")
    assert {type(v) for v in lengths.values()} == {np.float64}
    headline, recs = _import(llm_server, tmp_path, "aeqa", d / "gpt_answer.json", aeqa_demo)
    upstream = (d / "upstream.txt").read_text()
    by_cat = json.loads((tmp_path / "imported" / "summary.json").read_text())["by_category"]
    assert len(by_cat) == 7
    for cat, m in by_cat.items():
        assert round(m["llm_match"]["mean"], 2) == _printed(upstream, cat)
        assert round(m["llm_match_spl"]["mean"], 2) == _printed(upstream, f"{cat} SPL")
    assert round(headline["llm_match"], 2) == _printed(upstream, "Total") == 53.85
    assert round(headline["llm_match_spl"], 2) == _printed(upstream, "Total SPL") == 49.84
    assert {k: int(r["metrics"]["score_1to5"]) for k, r in recs.items()} == _marks(upstream)
    for qid, r in recs.items():
        assert r["metrics"]["path_len"] == lengths[qid]


def test_aeqa_a_failed_question_scored_as_get_scores_with_the_blind_run(
    tmp_path, llm_server, aeqa_demo, compose_cfg
):
    """3D-Mem's Logger leaves a failed question out of both files (with_failure/); get-scores.py
    scores it with the blind mark at p = inf. Imported with ``judge.blind_run_dir`` (a blind
    run whose marks are the blind-metrics.json it read), the headline is upstream's."""
    llm_server.configure(rules=[{"pattern": "zqx", "reply": "2"}], default_reply="zqx guess.")
    blind = tmp_path / "blind"
    run(compose_cfg(["experiment=aeqa_blind", f"task.data_dir={aeqa_demo}", "run.workers=1",
                     *server_overrides(llm_server)], out=blind))  # fmt: skip
    marks = {r["episode_id"]: int(r["metrics"]["score_1to5"])
             for r in read_records(blind / "episodes.jsonl")}  # fmt: skip
    assert marks == json.loads((GOLDEN / "aeqa" / "blind-metrics.json").read_text())
    d = GOLDEN / "aeqa" / "genuine" / "with_failure"
    assert "demo-aeqa-000-00" not in load_pickle(d / "path_length_list.pkl")
    headline, recs = _import(llm_server, tmp_path, "aeqa", d / "gpt_answer.json", aeqa_demo,
                             (f"judge.blind_run_dir={blind}",))  # fmt: skip
    upstream = (d / "upstream.txt").read_text()
    assert round(headline["llm_match"], 2) == _printed(upstream, "Total") == 48.08
    assert round(headline["llm_match_spl"], 2) == _printed(upstream, "Total SPL") == 42.15
    assert len(recs) == 12


def _explore_eqa_printed(log: str) -> dict[int, tuple[bool, bool]]:
    """Per question the (weighted, max) success run_vlm_exp.py logged in its end-of-question
    block (``Index: <question_ind> …`` then ``Success (weighted): …``, ``Success (max): …``)."""
    found = re.findall(
        r"^Index: (\d+) .*?^Success \(weighted\): (True|False)\n^Success \(max\): (True|False)$",
        log,
        re.M | re.S,
    )
    return {int(i): (w == "True", m == "True") for i, w, m in found}


def test_hmeqa_run_vlm_exp_results_pkl_imports_to_its_own_success(tmp_path, hmeqa_demo):
    """explore-eqa's run_vlm_exp.py in habitat-sim 0.2.2 wrote this results.pkl (the VLM
    class a scripted stand-in): the import's success_weighted / success_max per question and
    in the headline are what its own end-of-question block logged on the same run."""
    d = GOLDEN / "hmeqa" / "genuine"
    rows = (d / "questions.csv").read_text().splitlines()
    assert rows == (hmeqa_demo / "questions.csv").read_text().splitlines()[: len(rows)]
    printed = _explore_eqa_printed((d / "upstream.txt").read_text())
    out = tmp_path / "imported"
    code = report_main(["--import", str(d / "results.pkl"), "--format", "hmeqa", "--out",
                        str(out), f"task.data_dir={hmeqa_demo}", "run.progress=false",
                        "run.cache=false"])  # fmt: skip
    assert code == 0
    recs = {int(r["episode_id"]): r["metrics"] for r in read_records(out / "episodes.jsonl")}
    assert {i: (m["success_weighted"] == 1.0, m["success_max"] == 1.0)
            for i, m in recs.items()} == printed  # fmt: skip
    headline = json.loads((out / "summary.json").read_text())["headline"]
    for rule, k in (("success_weighted", 0), ("success_max", 1)):
        want = 100.0 * sum(p[k] for p in printed.values()) / len(printed)
        assert headline[rule]["mean"] == want
    assert (headline["success_weighted"]["mean"], headline["success_max"]["mean"]) == (75.0, 50.0)
