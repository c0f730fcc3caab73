"""logger=mlflow against a real ``mlflow server`` on 127.0.0.1 (SQLite store, local artifact
store), read back through MlflowClient; then the server is killed mid-run (last test)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
mlflow = pytest.importorskip("mlflow")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """One server per module (it takes a while to start)."""
    d = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    log = (d / "server.log").open("w")  # noqa: SIM115 - the server writes it while it runs
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{d / 'mlflow.db'}",
         "--artifacts-destination", str(d / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, env=env,
        start_new_session=True,  # its own process group: the server's workers die with it
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(1)
        assert proc.poll() is None, (d / "server.log").read_text()[-2000:]
    else:
        _kill(proc)
        pytest.fail("mlflow server did not start in 300 s")
    yield url, proc
    _kill(proc, signal.SIGTERM)
    log.close()


_LEFT_OPEN: set[str] = set()


@pytest.fixture(autouse=True)
def _count_runs_left_open(request):
    """After each test on the server: its runs still RUNNING (a tracker that never closed its
    run) count into the reliability line's ``trackers left open``."""
    yield
    if "mlflow_server" not in request.fixturenames:
        return
    url, proc = request.getfixturevalue("mlflow_server")
    if proc.poll() is not None:  # the test stopped the server on purpose
        return
    from mlflow.tracking import MlflowClient

    from tests.reliability import tally

    client = MlflowClient(url)
    exps = [e.experiment_id for e in client.search_experiments()]
    running = client.search_runs(exps, "attributes.status = 'RUNNING'") if exps else []
    new = {r.info.run_id for r in running} - _LEFT_OPEN
    _LEFT_OPEN.update(new)
    tally.add("trackers left open", len(new))


def _kill(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Stop the server and its worker processes (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(30)


def _cfg(compose_cfg, data, out, url, experiment, extra=()):
    return compose_cfg(
        [f"task.data_dir={data}", "run.limit=4", "logger=mlflow", "run.workers=1",
         f"logger.mlflow.tracking_uri={url}", f"logger.mlflow.experiment_name={experiment}",
         *extra],
        out=out,
    )  # fmt: skip


def _report(d: Path) -> Path:
    from eqa_runner.__main__ import tracker_report

    p = tracker_report(d)
    assert p is not None
    return p


def test_run_logged_and_read_back(tmp_path, compose_cfg, openeqa_data, mlflow_server, monkeypatch):
    from mlflow import MlflowClient

    from eqa_runner.run.loop import run

    url, _ = mlflow_server
    monkeypatch.setenv("MY_SERVICE_TOKEN", "hunter2hunter2")
    cfg = _cfg(compose_cfg, openeqa_data, tmp_path / "r", url, "e1",
               ["judge.model=offline", "+run.extra.note=hunter2hunter2"])  # fmt: skip
    out = run(cfg, report=_report)
    assert out["counts"]["ok"] == 4
    client = MlflowClient(url)
    (r,) = client.search_runs([client.get_experiment_by_name("e1").experiment_id])
    assert r.info.status == "FINISHED" and r.info.run_name == "r"
    assert r.data.params["task.name"] == "openeqa_em" and r.data.params["policy.name"]
    assert r.data.params["run.extra.note"] == "<redacted>"
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    stamp = summary["reproducibility"]
    assert r.data.tags["eqa_runner.config_fingerprint"] == stamp["config_fingerprint"]
    assert r.data.metrics["llm_match"] == pytest.approx(summary["headline"]["llm_match"]["mean"])
    live = client.get_metric_history(r.info.run_id, "running_llm_match")
    assert sorted(m.step for m in live) == [1, 2, 3, 4]
    names = {a.path for a in client.list_artifacts(r.info.run_id)}
    assert {"summary.json", "report.html", "episodes.json", "config.yaml"} <= names
    local = client.download_artifacts(r.info.run_id, "episodes.json", str(tmp_path / "dl"))
    table = json.loads(Path(local).read_text())
    assert len(table["data"]) == 4 and "metric.score_1to5" in table["columns"]
    for name in ("summary.json", "config.yaml"):
        got = client.download_artifacts(r.info.run_id, name, str(tmp_path / "dl"))
        assert "hunter2hunter2" not in Path(got).read_text()


def _job(url, sweep, label, experiment, swept=None):
    from eqa_runner.trackers.base import RunInfo
    from eqa_runner.trackers.mlflow import MlflowTracker

    t = MlflowTracker(tracking_uri=url, experiment_name=experiment)
    t.start(RunInfo(sweep / label, label, {}, {"x": "1"}, {}, sweep.name, sweep,
                    swept or {"policy": "blind,single"}))  # fmt: skip
    return t


def test_sweep_parent_is_closed_by_the_last_job(tmp_path, mlflow_server) -> None:
    """Every job reports its headline to the parent; the last one out closes it (a job that
    starts later reopens it); a failed job leaves it FAILED, never RUNNING."""
    from mlflow import MlflowClient

    url, _ = mlflow_server
    client = MlflowClient(url)
    sweep = tmp_path / "2026-12-03_10-00-00"
    a, b = _job(url, sweep, "policy=blind", "e2"), _job(url, sweep, "policy=single", "e2")
    parent_id = client.get_run(a.run_id).data.tags["mlflow.parentRunId"]
    assert client.get_run(b.run_id).data.tags["mlflow.parentRunId"] == parent_id
    a.log_summary({"llm_match": 40.0}, "FINISHED")
    a.finish("FINISHED")
    assert client.get_run(parent_id).info.status == "RUNNING"  # b still runs
    b.log_summary({"llm_match": 55.0}, "FINISHED")
    b.finish("FINISHED")
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED" and parent.info.run_name == sweep.name
    assert parent.data.params == {"sweep.policy": "blind,single"}
    assert parent.data.tags["eqa_runner.swept_keys"] == "policy"
    assert parent.data.metrics == {"policy_blind/llm_match": 40.0, "policy_single/llm_match": 55.0}
    got = client.download_artifacts(parent_id, "sweep.json", str(tmp_path / "dl"))
    rows = json.loads(Path(got).read_text())["runs"]
    assert [(r["run"], r["status"], r["llm_match"]) for r in rows] == [
        ("policy=blind", "FINISHED", 40.0), ("policy=single", "FINISHED", 55.0)]  # fmt: skip
    c = _job(url, sweep, "policy=multiframe", "e2")  # a late job (queued, or resumed)
    assert client.get_run(parent_id).info.status == "RUNNING"
    c.finish("FAILED")
    assert client.get_run(parent_id).info.status == "FAILED"


def test_a_job_stopped_during_the_flush_closes_its_run_and_parent(tmp_path, mlflow_server):
    """A SIGTERM while the trackers flush aborts them: the run and its sweep's parent are
    KILLED, not left RUNNING."""
    from mlflow import MlflowClient

    from eqa_runner.trackers.hub import TrackerHub

    url, _ = mlflow_server
    client = MlflowClient(url)
    t = _job(url, tmp_path / "2026-12-03_11-00-00", "policy=blind", "e8")
    TrackerHub([]).abort()  # no tracker: nothing to do
    hub = TrackerHub([t])
    hub.abort("KILLED")
    parent = client.get_run(t.run_id).data.tags["mlflow.parentRunId"]
    assert client.get_run(t.run_id).info.status == "KILLED"
    assert client.get_run(parent).info.status == "KILLED"
    hub.close("KILLED")


def test_sweep_from_the_command_line(tmp_path, mlflow_server) -> None:
    """``-m policy=blind,single logger=mlflow``: children named by the swept key, no plumbing
    in names or params, the parent FINISHED with both headlines."""
    from mlflow import MlflowClient

    from tests.helpers.datasets import make_openeqa_dataset

    url, _ = mlflow_server
    data = make_openeqa_dataset(tmp_path / "d", n_questions=4, n_episodes=1, frames=3)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "SLURM_JOB_ID": "777"}
    res = subprocess.run(
        [sys.executable, "-m", "eqa_runner", "-m", "policy=blind,single", "llm=offline",
         "judge.model=offline", f"task.data_dir={data}", "logger=mlflow",
         f"logger.mlflow.tracking_uri={url}", "logger.mlflow.experiment_name=e4",
         f"hydra.sweep.dir={tmp_path / 'sweep'}", "run.progress=false"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    dirs = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert dirs == ["0_judge.model=offline,llm=offline,policy=blind",
                    "1_judge.model=offline,llm=offline,policy=single"]  # fmt: skip
    client = MlflowClient(url)
    runs = client.search_runs([client.get_experiment_by_name("e4").experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("eqa_runner.sweep_parent")]
    kids = {r.info.run_name: r for r in runs if r is not parent}
    assert set(kids) == {"policy=blind", "policy=single"}
    assert parent.info.status == "FINISHED" and parent.info.run_name == "sweep"
    assert parent.data.params == {"sweep.policy": "blind,single"}
    assert {"policy_blind/llm_match", "policy_single/llm_match"} <= set(parent.data.metrics)
    for r in kids.values():
        assert r.info.status == "FINISHED" and r.data.tags["slurm.job_id"] == "777"
        assert not [k for k in r.data.params if k.startswith(("logger", "hydra"))]
        assert "llm_match_ci95_low" in r.data.metrics


def test_a_key_mlflow_refuses_is_renamed_not_the_run_lost(tmp_path, compose_cfg, openeqa_data,
                                                           mlflow_server) -> None:  # fmt: skip
    from mlflow import MlflowClient
    from omegaconf import open_dict

    from eqa_runner.run.loop import run

    url, _ = mlflow_server
    cfg = _cfg(compose_cfg, openeqa_data, tmp_path / "r", url, "e5", ["judge.model=offline"])
    with open_dict(cfg):
        cfg.run.extra = {"notes (v2)": "second try", "plain": "kept"}
    assert run(cfg)["counts"]["ok"] == 4
    client = MlflowClient(url)
    (r,) = client.search_runs([client.get_experiment_by_name("e5").experiment_id])
    assert r.info.status == "FINISHED" and r.data.params["run.extra.plain"] == "kept"
    assert r.data.params["run.extra.notes _v2_"] == "second try"
    assert r.data.tags["eqa_runner.renamed_keys"] == "1" and "llm_match" in r.data.metrics
    got = client.download_artifacts(r.info.run_id, "renamed_keys.json", str(tmp_path / "dl"))
    assert json.loads(Path(got).read_text()) == {"run.extra.notes (v2)": "run.extra.notes _v2_"}


def test_a_run_whose_start_fails_is_closed_failed(tmp_path, mlflow_server, monkeypatch) -> None:
    from mlflow import MlflowClient

    from eqa_runner.trackers.base import RunInfo
    from eqa_runner.trackers.mlflow import MlflowTracker

    url, _ = mlflow_server
    monkeypatch.setattr(MlflowClient, "log_dict", lambda *a, **k: 1 / 0)
    t = MlflowTracker(tracking_uri=url, experiment_name="e6")
    with pytest.raises(ZeroDivisionError):
        t.start(RunInfo(tmp_path, "r", {}, {"x": "1"}, {}))
    assert MlflowClient(url).get_run(t.run_id).info.status == "FAILED"


def test_sample_rows_and_map_images(tmp_path, mlflow_server) -> None:
    from mlflow import MlflowClient
    from PIL import Image

    from eqa_runner.trackers.base import RunInfo
    from eqa_runner.trackers.mlflow import MlflowTracker

    url, _ = mlflow_server
    png = tmp_path / "maps" / "ep1.png"
    png.parent.mkdir()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(png)
    t = MlflowTracker(tracking_uri=url, experiment_name="e7")
    t.start(RunInfo(tmp_path, "r", {}, {}, {}))
    t.log_table("episodes", [{"episode_id": "ep1", "question": "Where is the sofa?",
                              "reference": "kitchen", "prediction": "the kitchen",
                              "judge_reply": "5", "map": png}])  # fmt: skip
    t.finish("FINISHED")
    client = MlflowClient(url)
    assert [a.path for a in client.list_artifacts(t.run_id, "maps")] == ["maps/ep1.png"]
    got = client.download_artifacts(t.run_id, "episodes.json", str(tmp_path / "dl"))
    table = json.loads(Path(got).read_text())
    row = dict(zip(table["columns"], table["data"][0], strict=True))
    assert row["question"] == "Where is the sofa?" and row["judge_reply"] == "5"
    assert row["map"] == "maps/ep1.png"


def test_server_killed_mid_run(tmp_path, compose_cfg, openeqa_data, mlflow_server, llm_server,
                               caplog, capsys):  # fmt: skip
    """Runs last: kills the module's server after the second record."""
    from eqa_runner.records import read_records
    from eqa_runner.run.loop import run
    from tests.conftest import server_overrides

    url, proc = mlflow_server
    llm_server.configure(latency_s=0.4, default_reply="A: a chair")
    out_dir = tmp_path / "r"
    cfg = _cfg(compose_cfg, openeqa_data, out_dir, url, "e3",
               ["run.limit=8", "policy=blind", *server_overrides(llm_server),
                "judge.model=offline"])  # fmt: skip

    def kill_after_two() -> None:
        jsonl = out_dir / "episodes.jsonl"
        while not (jsonl.exists() and len(jsonl.read_text().splitlines()) >= 2):
            time.sleep(0.05)
        _kill(proc)

    killer = threading.Thread(target=kill_after_two, daemon=True)
    killer.start()
    t0 = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        out = run(cfg, report=_report)
    elapsed = time.perf_counter() - t0
    killer.join(5)
    assert proc.poll() is not None  # the server really went away mid-run
    assert out["counts"]["ok"] == 8 and out["exit_code"] == 0
    recs = read_records(out_dir / "episodes.jsonl")
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs)
    warned = [r for r in caplog.records if r.name == "eqa_runner.trackers.hub"]
    assert len(warned) == 1 and "logger mlflow failed" in warned[0].getMessage()
    err = capsys.readouterr().err
    assert "[eqa_runner] logger mlflow:" in err and "events not logged" in err
    assert elapsed < 120
