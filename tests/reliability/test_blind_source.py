"""Issue 25, defect 13: A-EQA's blind source and errors in the headline.

``judge.blind_run_dir`` is accepted only as a finished A-EQA ``policy=blind`` run over the same
question file (its ``provenance.json`` and ``summary.json`` say so); anything else is refused in
one line naming the dir and what is wrong, before a run dir exists. And an error record is never
a number in any headline, under any scoring rule of any judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.reliability import tally
from tests.reliability.conftest import run_cli

OFFLINE = ["llm=offline", "judge.model=offline", "run.progress=false"]


@pytest.fixture(scope="module")
def aeqa_data(tmp_path_factory, aeqa_demo) -> Path:
    """A copy of the session's A-EQA demo (tests/conftest.py), this module's to change."""
    return Path(shutil.copytree(aeqa_demo, tmp_path_factory.mktemp("blind_src") / "aeqa"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, aeqa_data) -> dict[str, Path]:
    """Real runs to offer as blind sources: an A-EQA blind run, an A-EQA fbe run, an OpenEQA
    blind run and an unfinished A-EQA blind run (its summary says 1 of 13 recorded)."""
    from eqa_runner.benchmarks.openeqa_em.demo import write_openeqa_demo

    base = tmp_path_factory.mktemp("sources")
    write_openeqa_demo(base / "openeqa", seed=0)
    out = {k: base / k for k in ("blind", "fbe", "openeqa", "partial")}
    jobs = {
        "blind": ["task=aeqa", "policy=blind", f"task.data_dir={aeqa_data}"],
        "fbe": ["task=aeqa", "policy=fbe", f"task.data_dir={aeqa_data}", "run.limit=1",
                "protocol.num_steps=2", "sim.width=48", "sim.height=48"],
        "openeqa": ["task=openeqa_em", "policy=blind", f"task.data_dir={base / 'openeqa'}"],
    }  # fmt: skip
    for name, args in jobs.items():
        res = run_cli([*args, *OFFLINE, f"hydra.run.dir={out[name]}"])
        assert res.returncode == 0, res.stderr[-2000:]
    shutil.copytree(out["blind"], out["partial"])
    s = json.loads((out["partial"] / "summary.json").read_text())
    s["counts"].update(recorded=1, missing=12)
    (out["partial"] / "summary.json").write_text(json.dumps(s))
    return out


def _scored(tmp_path: Path, data: Path, source: Path, *extra: str):
    run_dir = tmp_path / "scored"
    args = ["task=aeqa", "policy=blind", f"task.data_dir={data}", *OFFLINE]
    res = run_cli([*args, f"judge.blind_run_dir={source}", f"hydra.run.dir={run_dir}", *extra])
    return res, run_dir


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("fbe", "a policy=fbe run, not policy=blind"),
        ("openeqa", "a task=openeqa_em run, not task=aeqa"),
        ("partial", "the blind run did not finish (1 of 13 episodes recorded)"),
        ("no_provenance", "no readable provenance.json"),
    ],
)
@pytest.mark.slow
def test_a_blind_source_that_is_not_a_finished_aeqa_blind_run_is_refused(
    tmp_path, aeqa_data, runs, source, needle
):
    tally.add("bad inputs tried")
    src = runs.get(source)
    if source == "no_provenance":
        src = tmp_path / "copied"
        shutil.copytree(runs["blind"], src)
        (src / "provenance.json").unlink()
    res, run_dir = _scored(tmp_path, aeqa_data, src)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"error: judge.blind_run_dir={src}: ")
    assert needle in lines[0], lines[0]
    assert not run_dir.exists()


@pytest.mark.slow
def test_a_blind_run_over_another_question_file_is_refused(tmp_path, aeqa_data, runs):
    tally.add("bad inputs tried")
    data = tmp_path / "data"
    shutil.copytree(aeqa_data, data)
    f = data / "aeqa_questions-184.json"
    qs = json.loads(f.read_text())
    qs[0]["question"] = "What is the blue object in the bedroom?"
    f.write_text(json.dumps(qs))
    res, run_dir = _scored(tmp_path, data, runs["blind"])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr[-2000:]
    assert "its question file is another one (questions_sha256" in lines[0]
    assert not run_dir.exists()


@pytest.mark.slow
def test_a_finished_blind_run_over_the_same_questions_is_accepted(tmp_path, aeqa_data, runs):
    res, run_dir = _scored(tmp_path, aeqa_data, runs["blind"], "run.limit=2")
    assert res.returncode == 0, res.stderr[-2000:]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["missing_prediction_applied"] == "blind_fallback"
    assert s["blind_fallback"]["questions"] == 13


# --- errors are never a number in a headline ------------------------------------------------


def _error_record(eid: str, stage: str, etype: str) -> dict:
    return {"episode_id": eid, "status": "error", "question": "q?", "answer": "a",
            "category": "object recognition", "subset": None, "scene": "s", "prediction": None,
            "judge_raw": None, "judge_ok": False, "metrics": {}, "trace": {},
            "error": {"type": etype, "message": "boom", "stage": stage},
            "timings": {}, "usage": {}}  # fmt: skip


@pytest.mark.parametrize(
    "etype", ["DataError", "SceneError", "LLMError", "TimeoutError", "FrameError"]
)
def test_an_error_record_is_never_a_number_in_the_headline(tmp_path, etype):
    """One error record (a data, simulator, endpoint or timeout error of the policy stage):
    under open-eqa's ``zero`` rule it used to enter the headline as 0 (n=1, scored=0)."""
    from eqa_runner.benchmarks.aeqa.config import AEQA_MISSING_RULES
    from eqa_runner.benchmarks.aeqa.judge import AEQAJudge

    tally.add("bad inputs tried")
    recs = [_error_record("q1", "policy", etype)]
    for rule in AEQA_MISSING_RULES:
        kw = {}
        if rule == "blind_fallback":  # a blind run that scored q1
            (tmp_path / "b").mkdir(exist_ok=True)
            line = {**_error_record("q1", "policy", etype), "status": "ok", "judge_ok": True,
                    "metrics": {"score_1to5": 5.0, "llm_match": 1.0}, "error": None}  # fmt: skip
            (tmp_path / "b" / "episodes.jsonl").write_text(json.dumps(line) + "\n")
            kw["blind_run_dir"] = str(tmp_path / "b")
        out = AEQAJudge(model="offline", missing_prediction=rule, **kw).aggregate(
            recs, bootstrap_samples=10
        )
        for metric, h in out["headline"].items():
            assert h["n"] == 0 and h["mean"] is None, (rule, metric, h)
        assert out["counts_aeqa"]["errors_excluded"] == 1


@pytest.mark.slow
def test_the_summary_states_how_errors_are_treated(tmp_path, aeqa_data):
    """A run whose only episode fails: the headline is empty and the summary says once, in
    ``errors_note``, that an error is never scored under any rule."""
    data = tmp_path / "data"
    shutil.copytree(aeqa_data, data)
    shutil.rmtree(data / "scenes")  # every scene missing: a data error per episode
    run_dir = tmp_path / "r"
    res = run_cli(["task=aeqa", "policy=fbe", f"task.data_dir={data}", "task.check_data=false",
                   "judge.missing_prediction=zero", "run.limit=1", *OFFLINE,
                   f"hydra.run.dir={run_dir}"])  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["counts"]["error"] == 1 and s["counts"]["scored"] == 0
    assert all(h["n"] == 0 for h in s["headline"].values()), s["headline"]
    assert "never scored, under any scoring rule" in s["errors_note"]
    assert s["counts_aeqa"]["errors_excluded"] == 1
