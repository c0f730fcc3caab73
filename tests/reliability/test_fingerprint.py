"""Issue 25, item 2: one fingerprint of what produced the records (config values that change
results + content hashes of the question file, prompt files and judge inputs), checked on resume
and rejudge; plumbing never blocks a resume; a rejudged row's figures come from its records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eqa_runner.benchmarks.openeqa_em import llm_match
from eqa_runner.errors import RunDirError
from eqa_runner.prompts import load_prompt, shipped_dir
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import run_cli
from tests.reliability.test_trust import OFFLINE, snapshot

SHIPPED = shipped_dir(llm_match.__file__)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_openeqa_dataset(
        tmp_path_factory.mktemp("fp") / "d", n_questions=3, n_episodes=1, frames=2
    )


@pytest.fixture
def done(tmp_path, data) -> Path:
    run_dir = tmp_path / "run"
    res = run_cli([f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}"])
    assert res.returncode == 0, res.stderr[-2000:]
    return run_dir


def _refused(res, run_dir: Path, before: dict[str, str], *needles: str) -> None:
    tally.add("bad inputs tried")
    mislabelled = res.returncode == 0
    tally.add("runs mislabelled", int(mislabelled))
    assert res.returncode == 2, res.stdout[-1500:] + res.stderr[-1500:]
    for n in needles:
        assert n in res.stderr, res.stderr
    assert snapshot(run_dir) == before, "the run dir is unchanged"


@pytest.mark.slow
def test_resume_with_another_questions_file_is_refused_naming_it(tmp_path, data, done):
    other = tmp_path / "other"
    shutil.copytree(data, other)
    qfile = next(p for p in other.glob("*.json"))
    qs = json.loads(qfile.read_text())
    qs[0]["answer"] = "a different reference answer"
    qfile.write_text(json.dumps(qs))
    before = snapshot(done)
    res = run_cli([f"task.data_dir={other}", *OFFLINE, f"hydra.run.dir={done}", "run.resume=true"])
    _refused(res, done, before, "questions_sha256", "another config")


@pytest.mark.slow
def test_moved_data_with_the_same_content_and_plumbing_never_block_a_resume(tmp_path, data, done):
    moved = tmp_path / "moved"
    shutil.copytree(data, moved)
    res = run_cli(
        [f"task.data_dir={moved}", *OFFLINE, f"hydra.run.dir={done}", "run.resume=true",
         "llm.direct_http=false", "llm.concurrency=fixed",
         "run.interval=iid"]
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]


def _prompts_dir(tmp_path: Path, change: bool) -> Path:
    d = tmp_path / ("prompts_changed" if change else "prompts_same")
    shutil.copytree(SHIPPED, d)
    if change:
        p = d / "mmbench.txt"
        p.write_text(p.read_text() + "\nBe generous.\n")
    return d


@pytest.mark.slow
def test_resume_with_another_prompts_dir_content_is_refused(tmp_path, data, done):
    before = snapshot(done)
    pdir = _prompts_dir(tmp_path, change=True)
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={done}", "run.resume=true",
         f"prompts.dir={pdir}"]
    )  # fmt: skip
    _refused(res, done, before, "prompts mmbench")


def test_prompt_files_are_original_only_by_content_hash(tmp_path):
    same = _prompts_dir(tmp_path, change=False)
    p = load_prompt(SHIPPED, "mmbench", str(same))
    assert not p.original and p.record()["source"] == "user-supplied"
    assert load_prompt(SHIPPED, "mmbench").record()["source"] == "eqa_runner"


@pytest.mark.slow
def test_prompts_dir_run_is_labelled_user_supplied(tmp_path, data):
    run_dir = tmp_path / "run"
    pdir = _prompts_dir(tmp_path, change=True)
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}", f"prompts.dir={pdir}"]
    )
    assert res.returncode == 0, res.stderr[-2000:]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["prompts_note"].startswith("user-supplied")
    assert all(not p["benchmark_original"] for p in s["prompts"].values())


@pytest.mark.slow
def test_records_without_provenance_need_an_explicit_adopt(data, done):
    (done / "provenance.json").unlink()
    before = snapshot(done)
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={done}", "run.resume=true",
         "policy.num_frames=1"]
    )  # fmt: skip
    _refused(res, done, before, "run.adopt=true", "no provenance.json")
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={done}", "run.resume=true",
         "run.adopt=true"]
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    prov = json.loads((done / "provenance.json").read_text())
    assert prov["adopted"] is True and prov["inputs"]["data"]


@pytest.mark.slow
def test_provenance_is_written_before_the_first_record_with_input_hashes(done):
    prov = json.loads((done / "provenance.json").read_text())
    assert set(prov["inputs"]) == {"data", "prompts", "judge", "files", "scenes"}
    assert "questions_sha256" in prov["inputs"]["data"] and prov["inputs"]["prompts"]


# --- rejudge and report -----------------------------------------------------------------------


def _judged_run(tmp_path: Path, data: Path, srv) -> Path:
    srv.configure(
        rules=[
            {"pattern": "Your mark", "model": "judge-b", "reply": "Your mark: 5"},
            {"pattern": "Your mark", "reply": "Your mark: 3"},
        ]
    )
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"task.data_dir={data}", "llm=offline", "run.progress=false",
         "judge.model=openai/judge-a", f"judge.api_base={srv.url}", f"hydra.run.dir={run_dir}",
         f"run.cache_dir={tmp_path / 'c'}"]
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return run_dir


@pytest.mark.slow
def test_another_judge_under_the_same_tag_is_refused(tmp_path, data, llm_server):
    from eqa_runner.rejudge import rejudge

    run_dir = _judged_run(tmp_path, data, llm_server)
    base = [f"judge.api_base={llm_server.url}", f"run.cache_dir={tmp_path / 'c'}"]
    rejudge(run_dir, ["judge.model=openai/judge-b", *base], tag="t")
    rejudge(run_dir, ["judge.model=openai/judge-b", *base], tag="t")  # the same judge resumes
    before = snapshot(run_dir)
    tally.add("bad inputs tried")
    with pytest.raises(
        RunDirError, match=r"another judge \(judge\.model: .*judge-b.* -> .*judge-a"
    ):
        rejudge(run_dir, ["judge.model=openai/judge-a", *base], tag="t")
    assert snapshot(run_dir) == before
    rejudge(run_dir, ["judge.model=openai/judge-a", *base], tag="t2")  # its own files
    assert (run_dir / "provenance.rejudged-t2.json").is_file()


@pytest.mark.slow
def test_paired_delta_of_a_rejudged_row_comes_from_its_records(tmp_path, data, llm_server):
    from eqa_runner.rejudge import rejudge
    from eqa_runner.report.compare import paired_differences
    from eqa_runner.report.runs import load_runs

    run_dir = _judged_run(tmp_path, data, llm_server)
    rejudge(run_dir, ["judge.model=openai/judge-b", f"judge.api_base={llm_server.url}",
                      f"run.cache_dir={tmp_path / 'c'}"])  # fmt: skip
    runs = load_runs([run_dir])
    assert len(runs) == 2 and "rejudged" in runs[1].label
    d = paired_differences(runs).diffs[1]
    metric = next(iter(d))
    tally.add("runs mislabelled", int(abs(d[metric].delta - 50.0) > 1e-6))
    assert d[metric].delta == pytest.approx(50.0)  # 50 -> 100 on every episode
