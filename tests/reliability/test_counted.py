"""Issue 25, item 5: nothing is silently ignored: a ``+`` override adding a key no schema has is
refused with "did you mean" (defect 15); out-of-range report arguments are refused (17)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from eqa_runner.run.configstore import register_configs
from eqa_runner.run.loop import run
from tests.conftest import CONF
from tests.reliability import tally
from tests.reliability.conftest import run_cli
from tests.reliability.test_trust import OFFLINE, small_data  # noqa: F401 - fixtures


@pytest.fixture(scope="module")
def done_run(tmp_path_factory, small_data) -> Path:  # noqa: F811
    """A finished offline run (4 episodes), run in-process, used read-only."""
    run_dir = tmp_path_factory.mktemp("done") / "run"
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            overrides = [f"task.data_dir={small_data}", *OFFLINE, f"run.output_dir={run_dir}"]
            cache = f"run.cache_dir={run_dir.parent / 'cache'}"
            cfg = compose("config", overrides=[*overrides, cache, "run.progress=false"])
    finally:
        GlobalHydra.instance().clear()
    assert run(cfg)["exit_code"] == 0
    return run_dir


@pytest.mark.parametrize(
    ("override", "hint"),
    [
        ("+llm.temprature=0", "did you mean llm.temperature"),
        ("+sim.widht=32", "did you mean sim.width"),
        ("+judge.foo=1", "judge has no key foo"),
        ("+policy.foo=1", "policy has no key foo"),
        ("+task.foo=1", "task has no key foo"),
    ],
)
@pytest.mark.slow
def test_an_added_key_no_schema_has_is_refused_with_a_hint(tmp_path, small_data, override, hint):  # noqa: F811
    tally.add("bad inputs tried")
    run_dir = tmp_path / "run"
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={run_dir}", override])
    assert res.returncode == 2, res.stderr[-1500:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and hint in lines[0], res.stderr[-1500:]
    assert not run_dir.exists()


@pytest.mark.slow
def test_free_form_maps_still_take_any_added_key(tmp_path, small_data):  # noqa: F811
    res = run_cli([f"task.data_dir={small_data}", *OFFLINE, f"hydra.run.dir={tmp_path / 'r'}",
                   "+llm.extra_params.user=team-a", "run.limit=1"])  # fmt: skip
    assert res.returncode == 0, res.stderr[-1500:]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--power", "--delta", "500"], "--delta 500"),
        (["--power", "--delta", "inf"], "--delta inf"),
        (["--power", "--delta", "-3"], "--delta -3"),
        (["--power", "--delta", "5", "--correlation", "-3"], "--correlation -3"),
        (["--power", "--delta", "5", "--correlation", "5"], "--correlation 5"),
    ],
)
def test_out_of_range_report_arguments_are_refused(done_run, capsys, args, needle):
    from eqa_runner.report.cli import main

    tally.add("bad inputs tried")
    assert main([str(done_run), *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.startswith("error:") and len(err.strip().splitlines()) == 1
