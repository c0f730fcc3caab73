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


def test_sweep_runs_share_one_parent_run(tmp_path, mlflow_server) -> None:
    from mlflow import MlflowClient

    from eqa_runner.trackers.base import RunInfo
    from eqa_runner.trackers.mlflow import MlflowTracker

    url, _ = mlflow_server
    sweep = tmp_path / "sweep"
    ids = []
    for job in ("0_policy=blind", "1_policy=single"):
        t = MlflowTracker(tracking_uri=url, experiment_name="e2")
        t.start(RunInfo(sweep / job, job, {}, {"x": "1"}, {}, str(sweep), sweep))
        t.finish("FINISHED")
        ids.append(t.run_id)
    client = MlflowClient(url)
    parents = {client.get_run(i).data.tags["mlflow.parentRunId"] for i in ids}
    assert len(parents) == 1
    parent = client.get_run(parents.pop())
    assert parent.info.run_name == "sweep" and parent.data.tags["eqa_runner.sweep"] == str(sweep)


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
