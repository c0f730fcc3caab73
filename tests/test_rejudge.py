"""``python -m eqa_runner.rejudge``: re-score a finished run with another judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eqa_runner.records import read_records
from tests.conftest import ROOT
from tests.helpers.datasets import make_openeqa_dataset

RULES = [
    {"pattern": "Your mark", "model": "judge-a", "reply": "Your mark: 5"},
    {"pattern": "Your mark", "model": "judge-b", "reply": "Your mark: 2"},
    {"pattern": r"\nQ: ", "reply": "A: a sofa"},
]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip


@pytest.mark.slow
def test_rejudge_rescores_without_recomputing_predictions(tmp_path: Path, llm_server) -> None:
    data = make_openeqa_dataset(tmp_path / "d", n_questions=6, n_episodes=2, frames=4)
    llm_server.configure(rules=RULES)
    run_dir = tmp_path / "run"
    api = f"{llm_server.url}"
    proc = _cli(
        "eqa_runner", f"task.data_dir={data}", "policy=blind", "llm.model=openai/test-model",
        f"llm.api_base={api}", "judge.model=openai/judge-a", f"judge.api_base={api}",
        f"hydra.run.dir={run_dir}", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    original = (run_dir / "episodes.jsonl").read_bytes()
    assert json.loads((run_dir / "summary.json").read_text())["headline"]["llm_match"][
        "mean"
    ] == pytest.approx(100.0)

    llm_server.reset()
    proc = _cli("eqa_runner.rejudge", str(run_dir), "judge.model=openai/judge-b")
    assert proc.returncode == 0, proc.stderr[-3000:]
    models = {r["model"] for r in llm_server.requests}
    assert models == {"judge-b"}, "only the new judge is called; predictions are not recomputed"
    assert (run_dir / "episodes.jsonl").read_bytes() == original, "the original is untouched"

    recs = read_records(run_dir / "episodes.rejudged-openai_judge-b.jsonl")
    assert len(recs) == 6 and all(r["prediction"] == "a sofa" for r in recs)
    assert all(r["rejudged_from"]["judge_raw"] == "Your mark: 5" for r in recs)
    assert all(r["rejudged_from"]["metrics"]["llm_match"] == 1.0 for r in recs)
    assert all(r["judge_ok"] and r["metrics"]["llm_match"] == 0.25 for r in recs)  # (2-1)/4
    summary = json.loads((run_dir / "summary.rejudged-openai_judge-b.json").read_text())
    assert summary["models"]["judge"] == "openai/judge-b"
    assert summary["headline"]["llm_match"]["mean"] == pytest.approx(25.0)
    assert summary["counts"]["ok"] == 6 and summary["counts"]["judge_unparsable"] == 0
    assert summary["rejudged_from"] == "episodes.jsonl"

    # the same command again resumes: episodes already re-judged (status ok) are not asked again
    llm_server.reset()
    proc = _cli("eqa_runner.rejudge", str(run_dir), "judge.model=openai/judge-b")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert llm_server.stats()["requests"] == 0
    assert len(read_records(run_dir / "episodes.rejudged-openai_judge-b.jsonl")) == 6
