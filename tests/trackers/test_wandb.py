"""logger=wandb in offline mode: the offline run directory read back (its record log)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
wandb = pytest.importorskip("wandb")

BLOCK = 32768
HEADER = 7  # ":W&B" + magic (2 bytes) + version (1 byte)


def read_wandb_log(path: Path) -> list:
    """The protobuf records of a ``run-*.wandb`` file (a LevelDB-style record log)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    out, pos, buf = [], HEADER, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 2):  # FULL, FIRST
            buf = chunk
        else:  # MIDDLE, LAST
            buf += chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            out.append(rec)
    return out


@pytest.fixture(autouse=True)
def _fresh_wandb():
    """Each test starts with no W&B service left from an earlier run in this process."""
    wandb.teardown()
    yield
    wandb.teardown()


def _records(d: Path, wait_s: float = 15.0) -> list:
    """The run's records once its log is complete (W&B's service may still be writing it
    when ``finish()`` returns on a loaded machine)."""
    deadline = time.monotonic() + wait_s
    while True:
        recs = read_wandb_log(next(d.glob("run-*.wandb")))
        if any(r.WhichOneof("record_type") == "exit" for r in recs) or time.monotonic() > deadline:
            return recs
        time.sleep(0.2)


def _run_dir(root: Path) -> Path:
    (d,) = (root / "wandb").glob("offline-run-*")
    return d


def test_offline_run_read_back(tmp_path, compose_cfg, openeqa_data, monkeypatch) -> None:
    from eqa_runner.__main__ import tracker_report
    from eqa_runner.run.loop import run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=4", "logger=wandb",
                       "judge.model=offline", "run.workers=1"], out=tmp_path / "r")  # fmt: skip
    assert run(cfg, report=tracker_report)["counts"]["ok"] == 4
    d = _run_dir(tmp_path / "r")
    recs = _records(d)
    (r,) = [x.run for x in recs if x.WhichOneof("record_type") == "run"]
    assert r.display_name == "r" and r.run_group == ""
    config = {i.key: json.loads(i.value_json) for i in r.config.update}
    assert config["task"]["name"] == "openeqa_em"
    assert any(t.startswith("eqa_runner.config_fingerprint=") for t in r.tags)
    hist = [{i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in x.history.item}
            for x in recs if x.WhichOneof("record_type") == "history"]  # fmt: skip
    live = [h["running_llm_match"] for h in hist if "running_llm_match" in h]
    assert len(live) == 4
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert any(h.get("llm_match") == pytest.approx(summary["headline"]["llm_match"]["mean"])
               for h in hist)  # fmt: skip
    assert (d / "files" / "summary.json").is_file() and (d / "files" / "report.html").is_file()
    (table,) = (d / "files" / "media" / "table").glob("episodes_*.table.json")
    assert len(json.loads(table.read_text())["data"]) == 4


def test_sweep_jobs_share_a_group(tmp_path, monkeypatch) -> None:
    from eqa_runner.trackers.base import RunInfo
    from eqa_runner.trackers.wandb import WandbTracker

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    sweep = tmp_path / "sweep"
    t = WandbTracker()
    t.start(RunInfo(sweep / "0_x", "0_x", {"a": 1}, {}, {}, str(sweep), sweep))
    t.finish("FINISHED")
    recs = _records(_run_dir(sweep / "0_x"))
    (r,) = [x.run for x in recs if x.WhichOneof("record_type") == "run"]
    assert r.run_group == str(sweep)


def test_quiet_and_sample_rows_with_map_images(tmp_path, monkeypatch, capfd) -> None:
    """No W&B banner or history around the run's own lines; a Path cell is a wandb.Image."""
    from PIL import Image

    from eqa_runner.trackers.base import RunInfo
    from eqa_runner.trackers.wandb import WandbTracker

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_SILENT", raising=False)
    png = tmp_path / "maps" / "ep1.png"
    png.parent.mkdir()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(png)
    t = WandbTracker()
    t.start(RunInfo(tmp_path / "r", "r", {"a": 1}, {}, {}))
    t.log_metrics({"llm_match": 50.0}, 1)
    row = {
        "episode_id": "ep1",
        "question": "Where is the sofa?",
        "prediction": "kitchen",
        "judge_reply": "5",
        "map": png,
    }
    t.log_table("episodes", [row])
    t.log_summary({"llm_match": 50.0}, "FINISHED")
    t.finish("FINISHED")
    out, err = capfd.readouterr()
    assert "wandb" not in (out + err).lower(), out + err
    # a table with media is logged as a run_table artifact: the image is one of its files
    recs = _records(_run_dir(tmp_path / "r"))
    (art,) = [r.artifact for r in recs if r.WhichOneof("record_type") == "artifact"]
    files = {c.path: c.local_path for c in art.manifest.contents}
    assert art.type == "run_table" and [p for p in files if p.endswith("/ep1.png")]
    data = json.loads(Path(files["episodes.table.json"]).read_text())
    row = dict(zip(data["columns"], data["data"][0], strict=True))
    assert row["question"] == "Where is the sofa?" and row["judge_reply"] == "5"
    assert row["map"]["_type"] == "image-file" and row["map"]["path"] in files


def _blackhole() -> tuple[socket.socket, int]:
    """A local server that accepts connections and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    conns: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conns.append(s.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return s, int(s.getsockname()[1])


def test_an_unresponsive_server_costs_at_most_the_hubs_promise(tmp_path) -> None:
    """logger=wandb online against a socket that never answers: the process ends within the
    hub's 30 s after the run's result line (W&B's own waits kept it alive ~100 s)."""
    from tests.helpers.datasets import make_openeqa_dataset

    data = make_openeqa_dataset(tmp_path / "d", n_questions=4, n_episodes=1, frames=3)
    srv, port = _blackhole()
    env = {**os.environ, "WANDB_MODE": "online", "WANDB_BASE_URL": f"http://127.0.0.1:{port}",
           "WANDB_API_KEY": "a" * 40, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "eqa_runner", "llm=offline", "judge.model=offline",
         f"task.data_dir={data}", "logger=wandb", f"hydra.run.dir={tmp_path / 'r'}",
         "run.progress=false"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    seen: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("[eqa_runner] results:"):
            seen["results"] = time.monotonic()
        if "logger wandb:" in line:
            seen["closing"] = time.monotonic()
    proc.wait(120)
    end = time.monotonic()
    srv.close()
    assert proc.returncode == 0 and "results" in seen and "closing" in seen
    assert end - seen["results"] < 35, end - seen["results"]
