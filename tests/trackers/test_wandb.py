"""logger=wandb in offline mode: the offline run directory read back (its record log)."""

from __future__ import annotations

import json
import struct
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
    recs = read_wandb_log(next(d.glob("run-*.wandb")))
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
    recs = read_wandb_log(next(_run_dir(sweep / "0_x").glob("run-*.wandb")))
    (r,) = [x.run for x in recs if x.WhichOneof("record_type") == "run"]
    assert r.run_group == str(sweep)
