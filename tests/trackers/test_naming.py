"""What every tracker is sent, in-process: one naming rule, no plumbing keys, the SLURM job,
per-sample texts and maps (confined to the run dir), intervals and categories; a missing
tracker package refused at start; SIGTERM during the flush ends with the run's line."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from eqa_runner.trackers import naming
from eqa_runner.trackers.base import RunInfo, Tracker
from eqa_runner.trackers.hub import TrackerHub
from tests.conftest import CONF


def test_params_leave_out_plumbing_roots_and_nulls() -> None:
    flat = {"task.name": "x", "logger.mlflow.tracking_uri": "http://h", "logger": "csv",
            "hydra.job.name": "eqa", "llm.seed": None, "run.limit": 4}  # fmt: skip
    assert naming.params(flat) == {"task.name": "x", "run.limit": "4"}


def test_one_run_name_rule_without_plumbing() -> None:
    swept = naming.swept(["policy=re,fbe", "logger=csv,mlflow", "task=express",
                          "run.limit=5,10", "llm=glob(*)"], exclude=["run.limit"])  # fmt: skip
    assert swept == {"policy": "re,fbe", "llm": "glob(*)"}
    job = ["policy=fbe", "logger=mlflow", "task=express", "llm=gpt-4o", "run.limit=5"]
    assert naming.run_name("0_policy=fbe", job, list(swept)) == "policy=fbe,llm=gpt-4o"
    assert naming.run_name("2026-12-03_express_fbe", [], []) == "2026-12-03_express_fbe"


def test_logger_is_not_in_sweep_dir_names() -> None:
    """A re-run of a sweep that adds a logger must find the same job dirs."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from eqa_runner.run.configstore import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    from eqa_runner.run.configstore import slug

    logged = ["logger=[csv,mlflow]", "logger.mlflow.tracking_uri=http://127.0.0.1:5000",
              "+logger.wandb.entity=lab"]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        a = compose("config", ["policy=blind", *logged], return_hydra_config=True)
        b = compose("config", ["policy=blind"], return_hydra_config=True)
    assert slug(a.hydra.job.override_dirname) == slug(b.hydra.job.override_dirname)
    assert slug(a.hydra.job.override_dirname) == "policy=blind"


def test_keys_mlflow_refuses_become_accepted_keys() -> None:
    from mlflow.utils.validation import validate_param_and_metric_name

    for k in ("notes (v2)", "a//b", "../x", "by_category/object (small)", "k=v,w", "é ok"):
        s = naming.safe_key(k)
        assert validate_param_and_metric_name(s) and s and ".." not in s.split("/")
    assert naming.safe_key("run.limit") == "run.limit"


def test_slurm_ids_are_tags_and_in_the_stamp(monkeypatch, tmp_path, compose_cfg) -> None:
    from eqa_runner.run.stamp import reproducibility_stamp
    from eqa_runner.run.tracking import run_info

    env = {"SLURM_JOB_ID": "4242", "SLURM_ARRAY_JOB_ID": "4240", "SLURM_ARRAY_TASK_ID": "2"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    stamp = reproducibility_stamp(config={}, task_info={}, prompts={}, judge_model="m")
    assert stamp["slurm"] == {"job_id": "4242", "array_job_id": "4240", "array_task_id": "2"}
    cfg = compose_cfg(["logger=mlflow"], out=tmp_path / "r")
    info = run_info(cfg, tmp_path / "r", stamp)
    assert info.tags["slurm.job_id"] == "4242" and info.tags["slurm.array_task_id"] == "2"
    assert not [k for k in info.params if k.startswith(("logger", "hydra"))]
    assert "None" not in info.params.values() and "null" not in info.params.values()
    assert info.name == "r" and "logger" not in info.config


def _record(eid: str, trace: dict) -> dict:
    return {"episode_id": eid, "status": "ok", "category": "c", "judge_ok": True,
            "question": "What colour is the sofa?", "answer": "red",
            "prediction": "red, key sk-" + "a" * 30, "judge_raw": "5", "metrics": {"m": 1.0},
            "timings": {"total_s": 1.0}, "trace": trace}  # fmt: skip


def test_episode_rows_carry_texts_and_maps_inside_the_run_dir(tmp_path) -> None:
    from eqa_runner.run.tracking import episode_rows

    run_dir = tmp_path / "run"
    (run_dir / "maps").mkdir(parents=True)
    (run_dir / "maps" / "e1.png").write_bytes(b"\x89PNG")
    (tmp_path / "secret.png").write_bytes(b"x")
    (run_dir / "maps" / "link.png").symlink_to(tmp_path / "secret.png")
    recs = [
        _record("e1", {"trajectory_map": "maps/e1.png"}),
        _record("e2", {"trajectory_map": "../secret.png"}),
        _record("e3", {"trajectory_map": "maps/link.png"}),
        _record("e4", {"trajectory_map": str(tmp_path / "secret.png")}),
        _record("e5", {}),
    ]
    rows = episode_rows(recs, run_dir)  # fmt: skip
    assert rows[0]["question"] == "What colour is the sofa?" and rows[0]["reference"] == "red"
    assert rows[0]["judge_reply"] == "5" and "sk-aaaa" not in rows[0]["prediction"]
    assert rows[0]["map"] == (run_dir / "maps" / "e1.png").resolve()
    assert [r["map"] for r in rows[1:]] == [None] * 4


def test_logger_csv_logs_texts_intervals_and_categories(tmp_path, compose_cfg, openeqa_data):
    from eqa_runner.run.loop import run

    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "judge.model=offline", "run.limit=4",
                       "logger=csv"], out=tmp_path / "r")  # fmt: skip
    run(cfg)
    d = tmp_path / "r" / "logs" / "csv"
    table = (d / "episodes.csv").read_text().splitlines()
    assert table[0].split(",")[:8] == [
        "episode_id",
        "status",
        "category",
        "judge_ok",
        "question",
        "reference",
        "prediction",
        "judge_reply",
    ]
    names = {ln.split(",")[2] for ln in (d / "metrics.csv").read_text().splitlines()[1:]}
    assert {"llm_match_ci95_low", "llm_match_ci95_high", "llm_match_n"} <= names
    assert any(n.startswith("by_category/") and n.endswith("_ci95_low") for n in names)
    params = json.loads((d / "params.json").read_text())
    assert not [k for k in params if k.startswith(("logger", "hydra"))]


def test_missing_tracker_package_is_refused_at_start(tmp_path, compose_cfg, openeqa_data,
                                                     monkeypatch) -> None:  # fmt: skip
    from eqa_runner.errors import UserError
    from eqa_runner.run.loop import run

    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    cfg = compose_cfg([f"task.data_dir={openeqa_data}", "logger=mlflow"], out=tmp_path / "r")
    with pytest.raises(UserError) as e:
        run(cfg)
    assert e.value.exit_code == 2 and "pip install 'eqa_runner[trackers]'" in str(e.value)
    assert "logger=mlflow" in str(e.value) and not (tmp_path / "r").exists()


class _Rec(Tracker):
    name = "rec"

    def __init__(self, fail_at: str = "", delay_s: float = 0.0) -> None:
        self.events: list[str] = []
        self.fail_at, self.delay_s = fail_at, delay_s

    def _ev(self, name: str) -> None:
        time.sleep(self.delay_s)
        if name == self.fail_at:
            raise ConnectionError("down")
        self.events.append(name)

    def start(self, info):
        self._ev("start")

    def log_metrics(self, metrics, step):
        self._ev("metrics")

    def log_table(self, name, rows):
        self._ev("table")

    def log_artifact(self, path):
        self._ev("artifact")

    def finish(self, status):
        self.events.append(f"finish {status}")

    def abort(self, status):
        self.events.append(f"abort {status}")


def test_a_failed_tracker_still_closes_its_run(tmp_path) -> None:
    t = _Rec(fail_at="metrics")
    hub = TrackerHub([t])
    hub.start(RunInfo(tmp_path, "r", {}, {}, {}))
    hub.log_metrics({"m": 1.0}, 1)
    hub.close("FINISHED")
    assert t.events == ["start", "finish FINISHED"]


@pytest.mark.parametrize("slow", ["tracker", "report"])
def test_sigterm_during_the_flush_prints_the_runs_line(tmp_path, capsys, slow) -> None:
    """Whether the trackers are still busy or the report for them is being written."""
    from eqa_runner.run.tracking import finish

    rec = _Rec(delay_s=3.0 if slow == "tracker" else 0.0)
    hub = TrackerHub([rec], flush_timeout_s=30)
    hub.start(RunInfo(tmp_path, "r", {}, {}, {}))

    def report(d: Path) -> Path:
        time.sleep(5.0)
        return d / "report.html"

    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as e:
        finish(hub, tmp_path, {"counts": {"ok": 1}, "exit_code": 0}, [], "FINISHED",
               report if slow == "report" else None)  # fmt: skip
    assert e.value.code == 143 and time.monotonic() - t0 < 4.5
    err = capsys.readouterr().err
    assert "SIGTERM while the trackers (rec) were flushing" in err and str(tmp_path) in err
    assert "abort KILLED" in rec.events  # the tracker's run is closed, not left open
