"""Secrets: keys from the environment never reach any file a run writes; keys in configs are
refused before anything is written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability.conftest import SECRETS, cli_env, run_cli

RULES = [
    {"pattern": r"object 3\?", "reply": "x", "fault": "500"},  # q0003 fails for good
    {"pattern": "Your mark", "reply": "Your mark: 4"},
    {"pattern": "User Query", "reply": "It is a chair."},
]


def _leaks(paths: list[Path], texts: list[str] = ()) -> list[str]:
    """Where any secret (or its distinctive middle part) occurs."""
    needles = [*SECRETS.values(), *(re.search(r"SECRET\d+", v).group(0) for v in SECRETS.values())]
    found = []
    for p in paths:
        data = p.read_bytes()
        found += [f"{p}: {n}" for n in needles if n.encode() in data]
    for i, t in enumerate(texts):
        found += [f"output {i}: {n}" for n in needles if n in t]
    return found


def _files(*roots: Path) -> list[Path]:
    return [p for r in roots if r.exists() for p in r.rglob("*") if p.is_file()]


@pytest.mark.slow
def test_keys_from_the_environment_never_reach_any_output(tmp_path, llm_server):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=8, n_episodes=2, frames=3)
    llm_server.configure(rules=RULES, fault_rate=0.2, faults=["500", "429"], retry_after_s=0.1)
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    res = run_cli(
        [
            f"task.data_dir={data}",
            "policy=multiframe",
            "policy.num_frames=3",
            f"run.cache_dir={cache}",
            "run.progress=false",
            "run.save_artifacts=true",
            f"hydra.run.dir={run_dir}",
            *server_overrides(llm_server),
            "llm.api_key_env=MY_KEY",
            "llm.max_retries=2",
        ],
        env=cli_env(**SECRETS),
    )
    assert res.returncode == 1, res.stderr[-2000:]  # q0003 failed for good: exit code 1
    files = _files(run_dir, cache)
    names = {p.relative_to(run_dir).as_posix() for p in files if run_dir in p.parents}
    assert {"episodes.jsonl", "summary.json", "run.log", ".hydra/config.yaml"} <= names
    assert any(cache in p.parents for p in files), "the cache was written"
    assert "q0003" in (run_dir / "episodes.jsonl").read_text()
    assert _leaks(files, [res.stdout, res.stderr]) == []
    # the variable's NAME is recorded (it is not a secret), its value is not
    assert "MY_KEY" in (run_dir / "summary.json").read_text()


@pytest.mark.parametrize(
    "override",
    [
        "llm.api_key=sk-test-SECRET999-in-config",
        "judge.api_key=sk-test-SECRET999-in-config",
        "+judge.api_key=sk-test-SECRET999-in-config",
        "++llm.api_key=sk-test-SECRET999-in-config",
    ],
)
@pytest.mark.slow
def test_key_as_a_config_value_is_refused_before_anything_is_written(tmp_path, override):
    run_dir = tmp_path / "run"
    res = run_cli(
        ["llm=offline", "judge.model=offline", f"hydra.run.dir={run_dir}", override],
        timeout=60,
    )
    assert res.returncode == 2
    assert "api_key_env" in res.stderr and "error:" in res.stderr
    assert "SECRET999" not in res.stderr + res.stdout
    assert not run_dir.exists(), "Hydra wrote nothing: the key never reached .hydra/"


@pytest.mark.slow
def test_null_api_key_override_is_allowed(tmp_path):
    res = run_cli(
        ["llm=offline", "judge.model=offline", "llm.api_key=null", "run.dry_run=true",
         f"hydra.run.dir={tmp_path / 'run'}", "task.data_dir=/nonexistent"],
        timeout=60,
    )  # fmt: skip
    assert "api_key" not in res.stderr, res.stderr


@pytest.mark.slow
def test_key_in_a_config_file_is_refused_before_the_run_dir_is_made(tmp_path):
    conf = tmp_path / "conf" / "local"
    conf.mkdir(parents=True)
    (conf / "default.yaml").write_text(
        "# @package _global_\njudge:\n  api_key: sk-test-SECRET999-in-file\n"
    )
    data = make_openeqa_dataset(tmp_path / "d", n_questions=2, n_episodes=1, frames=2)
    run_dir = tmp_path / "run"
    res = run_cli(
        [
            f"--config-dir={tmp_path / 'conf'}",
            "llm=offline",
            "judge.model=offline",
            f"task.data_dir={data}",
            f"hydra.run.dir={run_dir}",
        ],
        timeout=60,
    )
    assert res.returncode == 2, res.stderr
    assert "api_key_env" in res.stderr
    # refused before Hydra made the run dir: no copy of the key to blank
    assert not run_dir.exists()
    assert "SECRET999" not in res.stderr + res.stdout
