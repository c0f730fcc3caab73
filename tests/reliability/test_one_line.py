"""Issue 25, defect 20: the inputs that still ended in a traceback end in one ``error:`` line
naming the file, key or directory and the fix, before anything is written; a waypoint no scene
holds is an unparsable waypoint and the run goes on; Ctrl-C or SIGTERM during a rejudge keeps
what was judged, prints where and the resume command, and that command resumes."""

from __future__ import annotations

import csv
import json
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eqa_runner.errors import DataError
from eqa_runner.records import read_records
from tests.conftest import ROOT, server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import cli_env, run_cli
from tests.reliability.readonly import read_only
from tests.reliability.test_trust import OFFLINE, done_run, small_data, snapshot  # noqa: F401


def _one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-2000:]
    return lines[0]


@pytest.fixture(scope="module")
def aeqa_data(tmp_path_factory, aeqa_demo) -> Path:
    """A copy of the session's A-EQA demo (tests/conftest.py), this module's to change."""
    return Path(shutil.copytree(aeqa_demo, tmp_path_factory.mktemp("aeqa") / "aeqa"))


@pytest.mark.slow
def test_blind_fallback_without_the_blind_run_is_one_line(tmp_path, aeqa_data):
    tally.add("bad inputs tried")
    run_dir = tmp_path / "run"
    res = run_cli(["task=aeqa", "policy=blind", f"task.data_dir={aeqa_data}", *OFFLINE,
                   "judge.missing_prediction=blind_fallback",
                   f"judge.blind_run_dir={tmp_path / 'no-blind-run'}",
                   f"hydra.run.dir={run_dir}"])  # fmt: skip
    line = _one_error_line(res)
    assert f"judge.blind_run_dir={tmp_path / 'no-blind-run'}" in line
    assert "experiment=aeqa_blind" in line  # the fix
    assert not run_dir.exists()


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("+judge.foo=1", "+judge.foo: judge has no key foo"),
        ("+judge.modle=x", "did you mean judge.model?"),
        ("+judge.temprature=0", "did you mean judge.temperature?"),
        ("+judge.extra_params.user=a", "the run's config has no judge.extra_params"),
    ],
)
@pytest.mark.slow
def test_rejudge_refuses_an_added_judge_key_with_a_hint(done_run, override, needle):  # noqa: F811
    tally.add("bad inputs tried")
    before = snapshot(done_run)
    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner.rejudge", str(done_run), "judge.model=offline",
         override, "--tag", "added"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert needle in _one_error_line(res)
    assert snapshot(done_run) == before


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("judge.model=", "judge.model=: must be a model: offline, or a litellm model string"),
        ("judge.max_tokens=0", "judge.max_tokens=0: must be >= 1 (or null)"),
        ("run.workers=0", "run.workers=0: must be >= 1"),
        ("run.bootstrap_samples=abc", "run.bootstrap_samples=abc: Value 'abc' of type 'str'"),
        ("judge.model=a,b", "judge.model=a,b: rejudge takes one value per key"),
        ("judge.model=[1", "judge.model=…: the value does not parse as an override"),
    ],
)
@pytest.mark.slow
def test_rejudge_reads_and_checks_values_as_the_run_command_does(done_run, override, line):  # noqa: F811
    """Hydra's grammar (``judge.model=`` is empty, not null), the schemas' rules (the run
    command refuses ``run.workers=0`` too), one line, nothing written."""
    tally.add("bad inputs tried")
    before = snapshot(done_run)
    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner.rejudge", str(done_run), override, "--tag", "bad"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert _one_error_line(res).startswith(f"error: {line}")
    assert snapshot(done_run) == before


@pytest.mark.parametrize("override", ["llm.api_key=hunter2-LEAKME", "+llm.token=hunter2-LEAKME"])
@pytest.mark.slow
def test_rejudge_never_echoes_a_credential_in_a_refused_override(done_run, override):  # noqa: F811
    """The secret check runs before any refusal that quotes an override: a non-judge key was
    refused with its value printed (the console's redaction only knows key-shaped values)."""
    tally.add("bad inputs tried")
    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner.rejudge", str(done_run), override, "--tag", "s"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    _one_error_line(res)
    assert "LEAKME" not in res.stderr + res.stdout


@pytest.mark.slow
def test_demo_into_a_place_it_cannot_write_is_one_line(tmp_path):
    tally.add("bad inputs tried")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner.demo", str(blocker / "demo"), "--only", "openeqa"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    line = _one_error_line(res)
    assert line.startswith(f"error: {blocker}") and "writable directory" in line
    assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize("flag", ["--csv", "--out"])
@pytest.mark.slow
def test_report_output_where_it_cannot_write_is_one_line(done_run, tmp_path, flag):  # noqa: F811
    tally.add("bad inputs tried")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    target = blocker / ("t.csv" if flag == "--csv" else "export")
    args = [str(done_run), flag, str(target)] + (["--export", "openeqa"] if flag == "--out" else [])
    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner.report", *args],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    line = _one_error_line(res)
    assert line.startswith(f"error: {blocker}") and "check the path" in line


@pytest.mark.slow
def test_a_waypoint_no_scene_holds_is_unparsable_and_the_run_goes_on(
    compose_cfg, llm_server, express_demo, tmp_path
):
    from eqa_runner.policies.vlm_waypoint import UNPARSABLE
    from eqa_runner.run.loop import run

    tally.add("bad inputs tried")
    llm_server.configure(rules=[
        {"pattern": "Your mark", "reply": "Your mark: 1, 3"},
        {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: It is open."},
        {"pattern": "position_normal",
         "reply": ['{"position_normal": [1.0, 1.0], "angle": 0}',
                   '{"position_normal": [1e308, -1e308], "angle": 1e308}']},
        {"pattern": r"QUESTION: ", "reply": "no"},
    ])  # fmt: skip
    out = run(compose_cfg([
        "task=express", "policy=vlm_waypoint", f"task.data_dir={express_demo}",
        "run.episodes=[0]", "policy.max_steps=3", "sim.width=64", "sim.height=64",
        "run.cache=false", "run.bootstrap_samples=20", *server_overrides(llm_server),
    ], out=tmp_path / "wp"))  # fmt: skip
    assert out["counts"]["ok"] == 1 and out["counts"]["error"] == 0
    for r in read_records(tmp_path / "wp" / "episodes.jsonl"):
        t = r["trace"]
        assert t["stop_reason"] == UNPARSABLE and t["steps_taken"] == 2, t["stop_reason"]
        assert t["vlm"] == {"waypoints_parsed": 1, "waypoints_unparsable": 1}
        assert "m from the origin" in t["steps"][-1]["stop_detail"]


@pytest.fixture
def deep_choices(tmp_path, hmeqa_demo) -> Path:
    data = shutil.copytree(hmeqa_demo, tmp_path / "hmeqa")
    path = data / "questions.csv"
    rows = list(csv.reader(path.open(newline="")))
    rows[2][rows[0].index("choices")] = "[" * 30_000 + "]" * 30_000
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return data


@pytest.mark.slow
def test_choices_nested_30000_deep_is_a_data_error_naming_file_and_line(tmp_path, deep_choices):
    from eqa_runner.benchmarks.hmeqa.task import load_poses, load_questions

    tally.add("bad inputs tried")
    q = deep_choices / "questions.csv"
    with pytest.raises(DataError, match=rf"{q}: line 3: field choices is not a list literal"):
        poses = deep_choices / "scene_init_poses.csv"
        load_questions(q, load_poses(poses), poses)
    run_dir = tmp_path / "run"
    res = run_cli(["task=hmeqa", "policy=fbe", f"task.data_dir={deep_choices}", *OFFLINE,
                   f"hydra.run.dir={run_dir}"])  # fmt: skip
    assert f"{q}: line 3: field choices" in _one_error_line(res)
    assert not run_dir.exists()
    check = subprocess.run(
        [sys.executable, "-m", "eqa_runner.data", "check", "hmeqa", "--data-dir",
         str(deep_choices)],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert check.returncode != 0 and "Traceback" not in check.stderr + check.stdout
    assert f"{q}: line 3: field choices is not a list literal" in check.stdout + check.stderr


@pytest.mark.slow
def test_rejudge_and_report_on_a_read_only_run_dir_are_one_line(tmp_path, done_run):  # noqa: F811
    tally.add("bad inputs tried")
    with read_only(tmp_path / "ro", done_run) as run_dir:
        before = snapshot(run_dir)
        res = subprocess.run(
            [sys.executable, "-m", "eqa_runner.rejudge", str(run_dir), "judge.model=offline",
             "--tag", "ro"],
            cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        line = _one_error_line(res)
        assert str(run_dir) in line and "cp -r" in line and "rejudge the copy" in line
        res = subprocess.run(
            [sys.executable, "-m", "eqa_runner.report", str(run_dir), "--html"],
            cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        line = _one_error_line(res)
        assert str(run_dir / "report.html") in line and "--html-out" in line
        assert snapshot(run_dir) == before
    out = tmp_path / "elsewhere.html"
    with read_only(tmp_path / "ro2", done_run) as run_dir:
        res = subprocess.run(
            [sys.executable, "-m", "eqa_runner.report", str(run_dir), "--html", "--html-out",
             str(out)],
            cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert res.returncode == 0 and out.is_file(), res.stderr[-2000:]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])  # fmt: skip
@pytest.mark.slow
def test_a_signalled_rejudge_keeps_what_was_judged_and_resumes(tmp_path, llm_server, sig, code):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=10, n_episodes=1, frames=2)
    run_dir = tmp_path / "run"
    res = run_cli([f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}"])
    assert res.returncode == 0, res.stderr[-2000:]
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 4"}],
                         latency_s=0.4)  # fmt: skip
    args = ["judge.model=openai/judge-x", f"judge.api_base={llm_server.url}", "run.workers=1",
            f"run.cache_dir={tmp_path / 'c'}"]  # fmt: skip
    out = run_dir / "episodes.rejudged-x.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "eqa_runner.rejudge", str(run_dir), *args, "--tag", "x"],
        cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:
        if out.is_file() and out.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "rejudge finished before it was interrupted"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    kept, kept_bytes = read_records(out), out.read_bytes()
    assert 2 <= len(kept) < 10 and all(r["status"] == "ok" for r in kept)
    (line,) = [ln for ln in stderr.splitlines() if "rejudge interrupted" in ln]
    assert line.startswith(f"[eqa_runner] rejudge interrupted ({sig.name}): "), line
    assert f"{len(kept)} of 10 episodes re-judged" in line and out.name in line
    resume = shlex.split(line.split("resume with: ", 1)[1])
    assert resume[:3] == ["python", "-m", "eqa_runner.rejudge"]
    llm_server.configure(latency_s=0.0)
    calls_before = len(llm_server.requests)
    done = subprocess.run([sys.executable, *resume[1:]], cwd=ROOT, env=cli_env(),
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    final = {r["episode_id"]: r for r in read_records(out)}
    assert len(final) == 10 and all(r["status"] == "ok" for r in final.values())
    assert out.read_bytes().startswith(kept_bytes), "the kept judgements stay as they were"
    assert len(llm_server.requests) - calls_before == 10 - len(kept)  # the kept ones not again
    summary = json.loads((run_dir / "summary.rejudged-x.json").read_text())
    assert summary["counts"]["ok"] == 10
    shutil.rmtree(tmp_path / "c", ignore_errors=True)
