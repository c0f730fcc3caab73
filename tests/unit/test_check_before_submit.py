"""The start checks a sweep's launcher runs on its first job before submitting (in-process)."""

from __future__ import annotations

import pytest

from eqa_runner.errors import ConfigError, DataError
from eqa_runner.run.start import BEFORE_SUBMIT, START, check_before_submit


def test_before_submit_is_the_start_without_the_run_dir_and_trackers():
    names = [c.name for c in START]
    assert list(BEFORE_SUBMIT) == [n for n in names if n in BEFORE_SUBMIT]  # in START's order
    assert set(BEFORE_SUBMIT) <= set(names)
    for writes in ("run dir", "cache dir", "trackers", "same config", "existing records"):
        assert writes not in BEFORE_SUBMIT
    assert "data" in BEFORE_SUBMIT and "secrets" in BEFORE_SUBMIT


def test_missing_data_or_a_bad_value_is_refused_and_nothing_written(compose_cfg, tmp_path):
    out = tmp_path / "run"
    base = ["llm=offline", "judge.model=offline", "policy=blind"]
    with pytest.raises(DataError, match="question file not found"):
        check_before_submit(compose_cfg([*base, f"task.data_dir={tmp_path / 'none'}"], out=out))
    with pytest.raises(ConfigError):
        check_before_submit(compose_cfg([*base, "run.workers=0"], out=out))
    assert not out.exists()


def test_a_job_that_can_start_passes_and_writes_nothing(compose_cfg, tmp_path, openeqa_data):
    out = tmp_path / "run"
    cfg = compose_cfg(["llm=offline", "judge.model=offline", "policy=blind",
                       f"task.data_dir={openeqa_data}"], out=out)  # fmt: skip
    check_before_submit(cfg)
    assert not out.exists()
