"""Issue 25, the papercuts: a sweep re-run with a larger ``run.limit`` continues its dirs,
``--compare`` across tasks says the Δ is not paired, an ids file with a BOM is read, the stamp
counts an untracked module as dirty, ``doctor`` lists every benchmark's data, the HTML report
shows the fbe top-down maps, and ``run.resume=true`` on a dir without records says so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from eqa_runner.records import read_records
from tests.reliability import tally
from tests.reliability.conftest import run_cli
from tests.reliability.test_trust import OFFLINE, small_data  # noqa: F401 - fixture


@pytest.mark.slow
def test_a_sweep_rerun_with_a_larger_limit_continues_its_dirs(tmp_path, small_data):  # noqa: F811
    sweep = tmp_path / "sweep"
    base = ["-m", f"task.data_dir={small_data}", *OFFLINE, "policy=blind,multiframe",
            f"hydra.sweep.dir={sweep}"]  # fmt: skip
    res = run_cli([*base, "run.limit=2"])
    assert res.returncode == 0, res.stderr[-2000:]
    first = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert len(first) == 2
    res = run_cli([*base, "run.limit=4", "run.resume=true"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == first  # no new dirs
    for name in first:
        recs = read_records(sweep / name / "episodes.jsonl")
        assert len(recs) == 4 and len({r["episode_id"] for r in recs}) == 4, name


@pytest.mark.slow
def test_run_resume_on_a_dir_without_records_says_so(tmp_path, small_data):  # noqa: F811
    run_dir = tmp_path / "typo"
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, "run.limit=1", "run.resume=true",
                   f"hydra.run.dir={run_dir}"])  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    said = [ln for ln in (res.stdout + res.stderr).splitlines() if "holds no records yet" in ln]
    assert len(said) == 1 and str(run_dir) in said[0] and "fresh run" in said[0]


def test_an_ids_file_with_a_utf8_bom_is_read(tmp_path):
    from eqa_runner.run.selection import _read_ids

    tally.add("bad inputs tried")
    txt, js = tmp_path / "ids.txt", tmp_path / "ids.json"
    txt.write_bytes("\ufeffq0001\nq0003\n".encode())
    js.write_bytes('\ufeff["q0001", "q0003"]'.encode())
    assert _read_ids(str(txt)) == ["q0001", "q0003"]
    assert _read_ids(str(js)) == ["q0001", "q0003"]


def test_an_ids_file_that_is_not_json_is_one_line(tmp_path):
    from eqa_runner.errors import DataError
    from eqa_runner.run.selection import _read_ids

    tally.add("bad inputs tried")
    bad = tmp_path / "ids.json"
    bad.write_text('["q0001", ')
    with pytest.raises(DataError, match=rf"run.episodes={bad}: not valid JSON"):
        _read_ids(str(bad))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.slow
def test_an_untracked_module_in_the_package_makes_the_stamp_dirty(tmp_path):
    from eqa_runner.run.stamp import git_state

    repo = tmp_path / "checkout"
    (repo / "eqa_runner").mkdir(parents=True)
    (repo / "eqa_runner" / "__init__.py").write_text("")
    (repo / ".gitignore").write_text("__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (repo / "notes.txt").write_text("scratch outside the package")
    (repo / "eqa_runner" / "__pycache__").mkdir()
    (repo / "eqa_runner" / "__pycache__" / "x.pyc").write_bytes(b"")
    git_state.cache_clear()
    assert git_state(repo)["dirty"] is False  # not the package's code, or ignored
    (repo / "eqa_runner" / "my_policy.py").write_text("X = 1\n")
    git_state.cache_clear()
    assert git_state(repo)["dirty"] is True
    git_state.cache_clear()


def test_doctor_reports_every_benchmarks_data(tmp_path, monkeypatch, capsys):
    from eqa_runner.doctor import data_dirs

    (tmp_path / "aeqa").mkdir()
    monkeypatch.setenv("AEQA_DATA_DIR", str(tmp_path / "aeqa"))
    monkeypatch.setenv("HMEQA_DATA_DIR", str(tmp_path / "no-hmeqa"))
    lines = {ln.split(":", 1)[0]: ln for ln in data_dirs(tmp_path)}
    assert {"aeqa", "hmeqa", "express", "openeqa"} <= set(lines)
    assert lines["aeqa"].endswith("($AEQA_DATA_DIR) found")
    assert lines["hmeqa"].endswith("($HMEQA_DATA_DIR) MISSING")


@pytest.mark.slow
def test_the_html_report_shows_the_fbe_top_down_maps(tmp_path, compose_cfg, express_demo):
    from eqa_runner.report.html import write_reports
    from eqa_runner.report.runs import load_runs
    from eqa_runner.run.loop import run

    out = tmp_path / "r"
    run(compose_cfg([
        "task=express", "policy=fbe", f"task.data_dir={express_demo}", "llm=offline",
        "judge.model=offline", "run.limit=1", "sim.width=64", "sim.height=64",
        "policy.max_steps=2", "run.save_artifacts=true", "run.trajectory_maps=false",
    ], out=out))  # fmt: skip
    (rec,) = read_records(out / "episodes.jsonl")
    maps = rec["trace"]["topdown_maps"]
    assert len(maps) == 2
    html = write_reports(load_runs([out]), compare=False)[0].read_text()
    assert html.count('class="td"') == 2  # one per planned step
    assert all(f'title="{m}"' in html for m in maps)
    assert 'class="map"' in html  # the last one stands in for the (switched off) trajectory map


def test_compare_across_tasks_says_the_delta_is_not_paired(tmp_path):
    from eqa_runner.report.compare import paired_differences
    from eqa_runner.report.runs import Run

    judge = {"_target_": "eqa_runner.benchmarks.openeqa_em.llm_match.LLMMatchJudge",
             "name": "llm_match", "model": "offline"}  # fmt: skip

    def run_of(name: str, task: str, marks: list[int]) -> Run:
        d = tmp_path / name
        d.mkdir()
        recs = [{"episode_id": str(i), "status": "ok", "judge_ok": True, "scene": "s",
                 "category": "c", "metrics": {"score_1to5": float(m),
                                              "llm_match": (m - 1) / 4}}
                for i, m in enumerate(marks)]  # fmt: skip
        (d / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        summary = {"task": {"name": task}, "headline": {"llm_match": {"mean": 50.0}},
                   "counts": {"scored": len(marks)}}  # fmt: skip
        return Run(d, summary, {"task": {"name": task}, "judge": judge})

    a, b = run_of("a", "express", [5, 1, 5, 1]), run_of("b", "hmeqa", [1, 5, 1, 5])
    same = paired_differences([a, run_of("c", "express", [1, 5, 1, 5])], 0, samples=50)
    assert same.diffs[1]["llm_match"].n == 4  # the same task: paired on its 4 episodes
    paired = paired_differences([a, b], 0, samples=50)
    assert paired.diffs[1] == {}  # no Δ paired on episode ids that are other questions
    (note,) = [n for n in paired.notes if "another task" in n]
    assert "hmeqa" in note and "express" in note and "not paired" in note


def test_a_long_episode_shows_a_bounded_number_of_top_down_maps(tmp_path):
    from PIL import Image

    from eqa_runner.records import artifact_name
    from eqa_runner.report.figures import Thumbs
    from eqa_runner.report.media import MAX_TOPDOWN, episode_media

    art = tmp_path / "artifacts" / artifact_name("ep 1")
    art.mkdir(parents=True)
    names = [f"topdown_{i:03d}.png" for i in range(40)]
    for n in names:
        Image.new("RGB", (8, 8)).save(art / n)
    media = episode_media({"topdown_maps": names}, tmp_path, Thumbs(), "ep 1")
    shown = [im.title for im in media["topdown"]]
    assert len(shown) == MAX_TOPDOWN < len(names)
    assert shown[0] == names[0] and shown[-1] == names[-1]  # the first and the final map
    assert media["map"].title == names[-1]
