"""The tracker hub: never blocks, survives a failing or slow tracker, says what it missed;
``logger=csv`` end to end; nothing secret reaches a tracker."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from eqa_runner.trackers.base import RunInfo, Tracker
from eqa_runner.trackers.hub import TrackerHub
from eqa_runner.trackers.redact import REDACTED, redact


class Recorder(Tracker):
    name = "rec"

    def __init__(self, fail_at: str | None = None, delay_s: float = 0.0) -> None:
        self.events: list[tuple] = []
        self.fail_at, self.delay_s = fail_at, delay_s

    def _ev(self, *ev) -> None:
        time.sleep(self.delay_s)
        if ev[0] == self.fail_at:
            raise ConnectionError("server down")
        self.events.append(ev)

    def start(self, info):
        self._ev("start", info.name)

    def log_metrics(self, metrics, step):
        self._ev("metrics", dict(metrics), step)

    def log_table(self, name, rows):
        self._ev("table", name, len(rows))

    def log_artifact(self, path):
        self._ev("artifact", Path(path).read_text())

    def finish(self, status):
        self._ev("finish", status)


def _info(tmp_path: Path) -> RunInfo:
    return RunInfo(tmp_path, "r", {}, {}, {})


def test_every_event_reaches_every_tracker_in_order(tmp_path, capsys) -> None:
    a, b = Recorder(), Recorder()
    hub = TrackerHub([a, b])
    hub.start(_info(tmp_path))
    for i in range(5):
        hub.log_metrics({"m": i}, step=i)
    hub.log_table("episodes", [{"x": 1}])
    rep = hub.close("FINISHED")
    assert a.events == b.events and len(a.events) == 8
    assert a.events[0] == ("start", "r") and a.events[-1] == ("finish", "FINISHED")
    assert rep.lines == [] and "not logged" not in capsys.readouterr().err


def test_a_failing_tracker_is_one_warning_and_a_closing_line(tmp_path, caplog, capsys) -> None:
    bad, good = Recorder(fail_at="metrics"), Recorder()
    hub = TrackerHub([bad, good])
    hub.start(_info(tmp_path))
    with caplog.at_level(logging.WARNING, logger="eqa_runner.trackers.hub"):
        for i in range(10):
            hub.log_metrics({"m": i}, step=i)
        rep = hub.close()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "server down" in warnings[0].getMessage()
    assert len(good.events) == 12  # the other tracker got everything
    assert rep.lines == ["logger rec: 11 of 12 events not logged (ConnectionError: server down)"]
    assert "[eqa_runner] logger rec: 11 of 12 events not logged" in capsys.readouterr().err


def test_a_slow_tracker_never_slows_the_run_and_close_is_bounded(tmp_path, capsys) -> None:
    slow = Recorder(delay_s=0.5)
    threads_before = threading.active_count()
    hub = TrackerHub([slow], queue_size=4, flush_timeout_s=1.0)
    t0 = time.perf_counter()
    hub.start(_info(tmp_path))
    for i in range(50):
        hub.log_metrics({"m": i}, step=i)
    # a blocking hub would take 50 x 0.5 s = 25 s here; generous bounds (a loaded machine)
    assert time.perf_counter() - t0 < 5.0  # enqueueing never waits for the tracker
    t1 = time.perf_counter()
    rep = hub.close()
    assert time.perf_counter() - t1 < 10.0  # bounded by flush_timeout_s, not by the backlog
    assert rep.dropped > 0 and len(rep.lines) == 1
    assert "events not logged" in rep.lines[0] and "still busy" in rep.lines[0]
    assert threading.active_count() - threads_before <= 1  # at most the one busy worker


def test_redact_masks_credential_fields_shapes_and_environment_secrets(monkeypatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "hunter2hunter2")
    cfg = {
        "llm": {"model": "openai/gpt-4o", "extra_params": {"headers": {"api_key": "abc123"}}},
        "note": "the token is hunter2hunter2 here",
        "url": "http://user:pw@host:5000/x",
        "key_like": "sk-" + "a" * 30,
    }
    out = redact(cfg)
    assert out["llm"]["model"] == "openai/gpt-4o"
    assert out["llm"]["extra_params"]["headers"]["api_key"] == REDACTED
    assert out["note"] == f"the token is {REDACTED} here"
    assert "pw" not in out["url"] and out["key_like"] == REDACTED


def test_text_artifacts_are_screened_before_a_tracker_sees_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OTHER_API_KEY", "zzz-secret-value-9")
    f = tmp_path / "summary.json"
    f.write_text(json.dumps({"note": "zzz-secret-value-9"}))
    rec = Recorder()
    hub = TrackerHub([rec])
    hub.log_artifact(f)
    hub.close()
    (ev,) = [e for e in rec.events if e[0] == "artifact"]
    assert "zzz-secret-value-9" not in ev[1] and REDACTED in ev[1]
    assert "zzz-secret-value-9" in f.read_text()  # the run's own file is left as it was


def test_logger_csv_end_to_end(tmp_path, compose_cfg, openeqa_data, monkeypatch) -> None:
    from eqa_runner.run.loop import run

    monkeypatch.setenv("MY_SERVICE_TOKEN", "hunter2hunter2")
    overrides = [f"task.data_dir={openeqa_data}", "judge.model=offline", "run.limit=4",
                 "logger=csv", "+run.extra.note=hunter2hunter2"]  # fmt: skip
    cfg = compose_cfg(overrides, out=tmp_path / "r")
    out = run(cfg, report=lambda d: (d / "report.html").write_text("<html>") and d / "report.html")
    d = tmp_path / "r" / "logs" / "csv"
    params = json.loads((d / "params.json").read_text())
    assert params["task.name"] == "openeqa_em" and params["run.extra.note"] == REDACTED
    tags = json.loads((d / "tags.json").read_text())
    assert tags["eqa_runner.config_fingerprint"] and "eqa_runner.eqa_runner" in tags
    lines = (d / "metrics.csv").read_text().splitlines()
    live = [ln for ln in lines if ",episodes_ok," in ln]
    assert [ln.split(",")[1] for ln in live] == ["1", "2", "3", "4"]  # one per record
    assert any(",llm_match,50.0" in ln for ln in lines) and any(",count_ok,4" in ln for ln in lines)
    assert (d / "episodes.csv").read_text().count("\n") == 5  # header + 4 episodes
    assert {p.name for p in (d / "artifacts").iterdir()} == {"summary.json", "report.html"}
    assert (d / "status").read_text().strip() == "FINISHED" and out["counts"]["ok"] == 4
    for p in d.rglob("*"):
        assert p.is_dir() or "hunter2hunter2" not in p.read_text()


def test_bad_logger_option_is_one_line_before_the_run_dir(tmp_path, compose_cfg, openeqa_data):
    from eqa_runner.errors import ConfigError
    from eqa_runner.run.loop import run

    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "logger=csv", "+logger.csv.colour=red"],
                      out=tmp_path / "r")  # fmt: skip
    with pytest.raises(ConfigError, match=r"^logger\.csv: .*colour"):
        run(cfg)
    assert not (tmp_path / "r").exists()
