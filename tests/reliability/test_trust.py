"""Issue 14, one class a section: runs a researcher can trust (provenance, secrets, validation,
data, records, cache, exit codes and signals, rejudge/report, newcomer papercuts)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from eqa_runner.records import artifact_name, read_records
from tests.conftest import server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import cli_env, run_cli

OFFLINE = ["llm=offline", "judge.model=offline", "run.progress=false"]


def snapshot(d: Path) -> dict[str, str]:
    """Every file under ``d`` with its content hash (byte-for-byte comparison)."""
    return {
        p.relative_to(d).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> Path:
    return make_openeqa_dataset(
        tmp_path_factory.mktemp("trust") / "d", n_questions=4, n_episodes=1, frames=2
    )


@pytest.fixture(scope="module")
def done_run(tmp_path_factory, small_data) -> Path:
    """A finished offline run (4 episodes) used read-only by several tests."""
    run_dir = tmp_path_factory.mktemp("done") / "run"
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={run_dir}"])
    assert res.returncode == 0, res.stderr[-2000:]
    return run_dir


# --- 1. provenance ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        (["run.resume=true", "policy.num_frames=1"], "policy.num_frames"),
        (["run.resume=true", "judge.temperature=0.9"], "judge.temperature"),
        (["run.resume=true", "run.seed=7"], "run.seed"),
    ],
)
@pytest.mark.slow
def test_resume_with_another_config_is_refused_and_leaves_the_dir_as_it_was(
    done_run, small_data, extra, key
):
    tally.add("bad inputs tried")
    before = snapshot(done_run)
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={done_run}", *extra])
    assert res.returncode == 2, res.stderr
    assert "produced by another config" in res.stderr and key in res.stderr
    assert "Traceback" not in res.stderr
    assert snapshot(done_run) == before, "a refused start changed the run dir"
    tally.add("runs mislabelled", int(snapshot(done_run) != before))


@pytest.mark.slow
def test_run_dir_records_its_fingerprint_and_plumbing_may_change_on_resume(done_run, small_data):
    prov = json.loads((done_run / "provenance.json").read_text())
    assert len(prov["fingerprint"]) == 64 and "run.workers" not in prov["config"]
    assert (done_run / ".hydra" / "config.yaml").is_file()
    res = run_cli(
        [f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={done_run}",
         "run.resume=true", "run.workers=2"]
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]


def test_default_run_dirs_are_claimed_uniquely(tmp_path):
    from eqa_runner.run.configstore import claim_unique_dir

    base = tmp_path / "2025-01-01_00-00-00_openeqa_em_multiframe"
    dirs = {claim_unique_dir(base) for _ in range(3)}
    assert len(dirs) == 3 and all(d.is_dir() for d in dirs)


# --- 2. secrets -------------------------------------------------------------------------------

SECRET = "sk-proj-SECRET314abcdefghijklmnopqrstu"


@pytest.mark.parametrize(
    "override",
    [
        f"+llm.extra_params.api_key={SECRET}",
        f"+llm.extra_params.headers.Authorization=Bearer{SECRET}",
        f"+llm.extra_params.note={SECRET}",
        "llm.api_base=https://user:SECRET314pw@example.org/v1",
        "llm.api_base=https://example.org/v1?api_key=SECRET314",
        f"llm.api_key_env={SECRET}",
        f"judge.api_key_env={SECRET}",
    ],
)
@pytest.mark.slow
def test_credentials_in_any_value_are_refused_before_anything_is_written(
    tmp_path, small_data, override
):
    tally.add("bad inputs tried")
    run_dir = tmp_path / "run"
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={run_dir}", override])
    assert res.returncode == 2, res.stderr
    assert "error:" in res.stderr and override.split("=")[0].lstrip("+") in res.stderr
    leaked = "SECRET314" in res.stderr + res.stdout or run_dir.exists()
    tally.add("keys leaked", int(leaked))
    assert "SECRET314" not in res.stderr + res.stdout, "the value is masked"
    assert not run_dir.exists(), "nothing was written"


@pytest.mark.slow
def test_key_in_a_config_file_is_refused_before_the_run_dir_is_made(tmp_path, small_data):
    conf = tmp_path / "conf" / "local"
    conf.mkdir(parents=True)
    (conf / "default.yaml").write_text(
        f"# @package _global_\nllm:\n  extra_params:\n    token: {SECRET}\n"
    )
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"--config-dir={tmp_path / 'conf'}", f"task.data_dir={small_data}", *OFFLINE,
         f"hydra.run.dir={run_dir}"]
    )  # fmt: skip
    tally.add("bad inputs tried")
    assert res.returncode == 2 and "llm.extra_params.token" in res.stderr
    assert "SECRET314" not in res.stderr + res.stdout and not run_dir.exists()


def test_urls_are_written_without_userinfo():
    from eqa_runner.llm.secrets import strip_urls

    assert strip_urls({"a": ["http://bob@h:8/v1"]}) == {"a": ["http://h:8/v1"]}


# --- 3. nonsense values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("run.limit=-1", "run.limit=-1"),
        ("run.limit=0", "run.limit=0"),
        ("policy.image_size=-5", "policy.image_size=-5"),
        ("policy.image_size=0", "policy.image_size=0"),
        ("llm.timeout_s=0", "llm.timeout_s=0"),
        ("run.episode_timeout_s=0", "run.episode_timeout_s=0"),
        ("run.episodes=[]", "empty episode list"),
        ("task.categories=[no_such_category]", "task.categories"),
        ("run.shard=3/2", "run.shard"),
        ("judge=eac", "judge=eac reads the frame the answer was given from"),
        ("judge.model=openai/gpt-4o", "pin a dated snapshot"),
    ],
)
@pytest.mark.slow
def test_nonsense_values_are_refused_up_front(tmp_path, small_data, override, needle):
    tally.add("bad inputs tried")
    run_dir = tmp_path / "run"
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={run_dir}", override])
    assert res.returncode == 2, res.stdout[-1000:] + res.stderr
    assert needle in res.stderr and "Traceback" not in res.stderr
    assert not run_dir.exists(), "a refused start leaves no run dir"


# --- 4. data the run cannot see correctly ------------------------------------------------------


def test_artifact_names_are_unique_per_episode():
    tally.add("bad inputs tried")
    ids = ["scene/ep:1", "scene_ep_1", "scene:ep/1", "ep 1", "ep?1", "..", "x" * 200]
    names = [artifact_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert all("/" not in n and n not in (".", "..") and len(n) <= 120 for n in names)


@pytest.mark.slow
def test_start_on_no_island_is_an_error_record_naming_the_scene(
    tmp_path, compose_cfg, express_demo
):
    import shutil

    from eqa_runner.run.loop import run

    tally.add("bad inputs tried")
    demo = Path(shutil.copytree(express_demo, tmp_path / "express"))
    qfile = demo / "express-bench.json"  # the demo also writes the two-storey house file
    recs = json.loads(qfile.read_text())
    key = "start_position" if "start_position" in recs[0] else "position"
    recs[0][key] = [recs[0][key][0], recs[0][key][1] + 25.0, recs[0][key][2]]
    qfile.write_text(json.dumps(recs))
    eid = str(recs[0].get("question_id") or recs[0].get("id"))
    out = run(compose_cfg(["task=express", "policy=re", *OFFLINE, f"task.data_dir={demo}",
                           "run.limit=2"]))  # fmt: skip
    by_id = {r["episode_id"]: r for r in read_records(tmp_path / "run" / "episodes.jsonl")}
    bad = by_id[eid] if eid in by_id else next(iter(by_id.values()))
    assert bad["status"] == "error" and bad["error"]["type"] == "SceneError"
    name = recs[0]["scene_id"].split("/")[-1]  # the scene's directory, e.g. 00800-DemoApt0
    assert re.match(rf"scene \S*{name}: start \[", bad["error"]["message"])
    assert "is on no island (nothing navigable within 2 m)" in bad["error"]["message"]
    assert out["exit_code"] == 1


# --- 5. records -------------------------------------------------------------------------------


def test_incomplete_line_never_replaces_a_complete_record(tmp_path, caplog):
    from eqa_runner.records import RecordWriter, final_records

    tally.add("bad inputs tried", 3)
    path = tmp_path / "episodes.jsonl"
    good = {"episode_id": "a", "status": "ok", "question": "q", "metrics": {"llm_match": 1.0}}
    lines = [good, {"episode_id": "a", "status": "ok"}, [1, 2], "text", {"episode_id": "b"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    recs = final_records(read_records(path))
    assert recs["a"]["metrics"] == {"llm_match": 1.0} and set(recs) == {"a"}
    assert "line 2 skipped" in caplog.text and str(path) in caplog.text
    with RecordWriter(path) as w:
        assert w.quarantined == 4
    assert len(path.read_text().splitlines()) == 1
    assert len((tmp_path / "episodes.jsonl.quarantine").read_text().splitlines()) == 4


# --- 6. cache ---------------------------------------------------------------------------------


def test_corrupt_cache_entry_is_named_dropped_and_recomputed(tmp_path, caplog):
    from eqa_runner.llm.cache import DiskCache

    tally.add("bad inputs tried", 2)
    cache = DiskCache(tmp_path)
    key = "ab" + "0" * 62
    cache.put(key, {"text": "hi", "model": "m"})
    assert cache.get(key)["text"] == "hi"
    for bad in ('{"text": "hi", "mod', '{"unexpected": 1, "text": "x"}'):
        cache._path(key).write_text(bad)
        assert cache.get(key) is None
        assert str(cache._path(key)) in caplog.text and not cache._path(key).exists()


def test_failing_cache_write_warns_once_and_keeps_going(tmp_path, caplog):
    from eqa_runner.llm.cache import DiskCache

    tally.add("bad inputs tried")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = DiskCache(blocker)  # its root is under a file: every write fails
    for i in range(3):
        cache.put(f"ab{i}" + "0" * 61, {"text": "hi"})  # never raises
    assert caplog.text.count("model cache: cannot write") == 1


@pytest.mark.slow
def test_unusable_cache_dir_is_refused_at_start(tmp_path, small_data):
    tally.add("bad inputs tried")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = run_cli(
        [f"task.data_dir={small_data}", "llm.model=openai/m", "llm.api_base=http://127.0.0.1:9",
         "judge.model=offline", "run.progress=false", f"run.cache_dir={blocker / 'c'}",
         f"hydra.run.dir={tmp_path / 'run'}"]
    )  # fmt: skip
    assert res.returncode == 2 and "run.cache_dir" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists()


# --- 7. exit codes, filesystem errors ---------------------------------------------------------


@pytest.mark.slow
def test_every_episode_failed_exits_1(tmp_path, small_data, llm_server):
    llm_server.configure(rules=[{"pattern": ".", "reply": "x", "fault": "500"}])
    res = run_cli(
        [f"task.data_dir={small_data}", "policy=blind", "run.progress=false",
         f"run.cache_dir={tmp_path / 'c'}", f"hydra.run.dir={tmp_path / 'run'}",
         *server_overrides(llm_server), "llm.max_retries=0"]
    )  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]


@pytest.mark.parametrize("case", ["file", "readonly", "prompts", "transport"])
@pytest.mark.slow
def test_environment_errors_are_one_line_naming_the_path(tmp_path, small_data, case):
    tally.add("bad inputs tried")
    run_dir = tmp_path / "run"
    extra = {
        "file": [f"hydra.run.dir={tmp_path / 'f'}"],
        "readonly": ["hydra.run.dir=/sys/eqa_runner_test/run"],
        "prompts": [f"hydra.run.dir={run_dir}", f"prompts.dir={tmp_path / 'nope'}"],
        "transport": [f"hydra.run.dir={run_dir}", "llm.transport=carrier_pigeon"],
    }[case]
    (tmp_path / "f").write_text("x")
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, *extra])
    assert res.returncode == 2, res.stderr
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), res.stderr
    want = {"file": str(tmp_path / "f"), "readonly": "/sys", "prompts": "prompts.dir",
            "transport": "llm.transport"}[case]  # fmt: skip
    assert want in err[0]


@pytest.mark.slow
def test_full_disk_mid_run_is_one_line_and_keeps_what_was_written(tmp_path, small_data):
    """A write that fails mid-run (here: a 7 kB file-size limit, the same OSError path as a
    full disk) stops the run with one line; the records written before it stay."""
    import resource
    import subprocess
    import sys

    from tests.conftest import ROOT

    tally.add("bad inputs tried")
    run_dir = tmp_path / "run"
    small_data = make_openeqa_dataset(tmp_path / "d", n_questions=16, n_episodes=1, frames=2)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (7000, 7000))

    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner", f"task.data_dir={small_data}", *OFFLINE,
         "run.workers=1", f"hydra.run.dir={run_dir}"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=180, preexec_fn=limit,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    err = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "episodes.jsonl" in err[0] and "file too large" in err[0]
    assert "Traceback" not in res.stderr and "resume with:" in res.stderr
    kept = read_records(run_dir / "episodes.jsonl")
    assert 1 <= len(kept) < 16 and all(r["status"] == "ok" for r in kept)


# --- 8. rejudge and report --------------------------------------------------------------------


@pytest.mark.slow
def test_rejudge_refuses_bad_overrides_and_tags_with_one_line(done_run):
    from eqa_runner.rejudge import main

    before = snapshot(done_run)
    for argv in (
        [str(done_run), "policy=blind"],
        [str(done_run), "judge.modle=offline"],
        [str(done_run), "judge.model=offline", "--tag", "../../escape"],
    ):
        tally.add("bad inputs tried")
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    assert snapshot(done_run) == before


@pytest.mark.slow
def test_rejudge_asks_only_for_the_judge_key_and_report_shows_both_judges(
    tmp_path, small_data, llm_server
):
    from eqa_runner.rejudge import rejudge
    from eqa_runner.report.cli import main as report_main

    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 3"}])
    run_dir = tmp_path / "run"
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={run_dir}"])
    assert res.returncode == 0
    # the policy's model needs a key it does not have; rejudge never calls it
    os.environ.pop("OPENAI_API_KEY", None)
    rejudge(
        run_dir,
        ["judge.model=openai/judge-b", f"judge.api_base={llm_server.url}",
         f"run.cache_dir={tmp_path / 'c'}"],
    )  # fmt: skip
    assert (run_dir / "summary.rejudged-openai_judge-b.json").is_file()
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert report_main([str(run_dir), "--compare"]) == 0
    out = buf.getvalue()
    assert "rejudged: openai_judge-b" in out and "| n " in out.replace("|  n", "| n")
    assert "nan" not in out


def test_report_tables_show_no_nan_and_whole_counts():
    from eqa_runner.report.runs import Run
    from eqa_runner.report.tables import display_runs, headline_metrics, runs_table

    a = Run(Path("a"), {"headline": {"llm_match": {"mean": 50.0, "ci95": [40, 60]}},
                        "counts": {"scored": 21, "selected": 21, "error": 0},
                        "usage": {"cost_usd": None, "cost_unknown_calls": 33}}, {})  # fmt: skip
    b = Run(Path("b"), {"headline": {"C": {"mean": 30.0, "ci95": [20, 40]}},
                        "counts": {"scored": 3}}, {})  # fmt: skip
    df = runs_table([a, b])
    shown = display_runs(df, headline_metrics([a, b])).to_string()
    assert "nan" not in shown and "21.00" not in shown and "21.0" not in shown
    assert "unknown (33 unpriced calls)" in shown


# --- 9. newcomer papercuts --------------------------------------------------------------------


@pytest.mark.slow
def test_offline_run_says_its_scores_are_meaningless_and_dry_run_leaves_no_dir(
    tmp_path, small_data, done_run
):
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={tmp_path / 'r'}",
                   "run.dry_run=true"])  # fmt: skip
    assert res.returncode == 0 and not (tmp_path / "r").exists()
    s = json.loads((done_run / "summary.json").read_text())
    assert "meaningless" in s["offline_warning"]
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={tmp_path / 'r2'}"])
    last = res.stdout.strip().splitlines()[-1]
    assert "meaningless" in last


@pytest.mark.slow
def test_local_preset_needs_no_key_variable(tmp_path, small_data, llm_server):
    llm_server.configure(rules=[{"pattern": ".", "reply": "Your mark: 4"}])
    res = run_cli(
        [f"task.data_dir={small_data}", "llm=local", f"llm.api_base={llm_server.url}",
         "llm.model=openai/local", "judge.model=offline", "policy=blind", "run.progress=false",
         f"run.cache_dir={tmp_path / 'c'}", f"hydra.run.dir={tmp_path / 'run'}"],
        env=cli_env(),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
