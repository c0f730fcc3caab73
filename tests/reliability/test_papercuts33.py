"""Issue 33, the papercuts: rejudge honours ``run.max_cost_usd``; an interrupted ``report
--import`` prints a resume command that runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from eqa_runner.records import read_records
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability.test_trust import OFFLINE
from tests.test_plugins import installed  # noqa: F401 - the fixture

# $1 per token: one judge call costs about $200 (its estimate, with max_tokens, more)
PRICED = ["judge.input_usd_per_mtok=1000000", "judge.output_usd_per_mtok=1000000"]


@pytest.fixture
def offline_run(tmp_path, compose_cfg) -> Path:
    """A finished offline run of 6 episodes (in-process), with its .hydra/config.yaml."""
    from eqa_runner.run.loop import run

    data = make_openeqa_dataset(tmp_path / "d", n_questions=6, n_episodes=1, frames=2)
    cfg = compose_cfg([f"task.data_dir={data}", "policy=blind", *OFFLINE])
    assert run(cfg)["exit_code"] == 0
    run_dir = tmp_path / "run"
    (run_dir / ".hydra").mkdir(exist_ok=True)
    OmegaConf.save(cfg, run_dir / ".hydra" / "config.yaml")
    return run_dir


def _rejudge(run_dir: Path, args: list[str], capsys) -> tuple[int, str]:
    from eqa_runner.rejudge import main

    with pytest.raises(SystemExit) as e:
        main([str(run_dir), *args])
    return int(e.value.code or 0), capsys.readouterr().err


def test_rejudge_stops_at_the_cost_cap_keeps_what_was_judged_and_resumes(
    offline_run, llm_server, capsys, tmp_path
):
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 3"}])
    judge = ["judge.model=openai/judge-b", f"judge.api_base={llm_server.url}",
             f"run.cache_dir={tmp_path / 'c'}", "run.workers=1", *PRICED]  # fmt: skip
    out = offline_run / "episodes.rejudged-openai_judge-b.jsonl"
    code, err = _rejudge(offline_run, [*judge, "run.max_cost_usd=1", "--tag", "probe"], capsys)
    assert code == 3 and "stopped at the cost cap run.max_cost_usd" in err, err
    assert not read_records(offline_run / "episodes.rejudged-probe.jsonl"), "nothing fits $1"

    llm_server.reset()
    code, err = _rejudge(offline_run, [*judge, "run.max_cost_usd=700"], capsys)
    assert code == 3, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("[eqa_runner] stopped at the cost cap run.max_cost_usd (spent $")
    recs = read_records(out)
    judged = [r for r in recs if r["status"] == "ok"]
    assert 0 < len(judged) < 6 and llm_server.stats()["requests"] == len(judged)
    spent = sum(r["usage"]["cost_usd"] for r in recs)
    assert spent <= 700
    assert f"{len(judged)} of 6 episodes re-judged" in line
    summary = json.loads((offline_run / "summary.rejudged-openai_judge-b.json").read_text())
    assert summary["counts"]["ok"] == len(judged), "the summary of what was judged is written"

    # the printed command resumes with a cap that lets the rest finish
    cmd = line.split("resume with: ", 1)[1].split()
    assert cmd[:4] == ["python", "-m", "eqa_runner.rejudge", str(offline_run)]
    new_cap = [a for a in cmd if a.startswith("run.max_cost_usd=")]
    assert len(new_cap) == 1 and float(new_cap[0].split("=")[1]) > 700
    code, err = _rejudge(offline_run, cmd[4:], capsys)
    assert code == 0, err
    final = {r["episode_id"]: r for r in read_records(out)}
    assert len(final) == 6 and all(r["status"] == "ok" for r in final.values())
    assert llm_server.stats()["requests"] == 6, "episodes judged before the stop are not re-asked"


def test_rejudge_with_a_cap_refuses_an_unpriced_judge_unless_allowed(offline_run, llm_server,
                                                                     capsys, tmp_path):  # fmt: skip
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 3"}])
    judge = ["judge.model=openai/no-such-priced-model", f"judge.api_base={llm_server.url}",
             f"run.cache_dir={tmp_path / 'c'}", "run.max_cost_usd=5"]  # fmt: skip
    code, err = _rejudge(offline_run, judge, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "judge.model=openai/no-such-priced-model has no known price" in err
    assert "judge.input_usd_per_mtok" in err and "run.allow_unpriced=true" in err
    assert not list(offline_run.glob("episodes.rejudged-*")), "refused before anything is written"
    code, err = _rejudge(offline_run, [*judge, "run.allow_unpriced=true"], capsys)
    assert code == 0, err


@pytest.mark.slow
def test_an_interrupted_import_prints_a_resume_command_that_runs(tmp_path, llm_server):
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT, server_overrides
    from tests.reliability.conftest import cli_env

    data = make_openeqa_dataset(tmp_path / "d", n_questions=6, n_episodes=1, frames=2)
    questions = json.loads((data / "open-eqa-v0.json").read_text())
    f = tmp_path / "baseline predictions.json"  # a space: the command must quote it
    f.write_text(json.dumps([{"question_id": q["question_id"], "answer": "a sofa"}
                             for q in questions]))  # fmt: skip
    llm_server.configure(default_reply="4", latency_s=0.4)
    judge = [o for o in server_overrides(llm_server) if o.startswith("judge.")]
    out = tmp_path / "imported"
    cmd = [sys.executable, "-m", "eqa_runner.report", "--import", str(f), "--format", "openeqa",
           "--out", str(out), f"task.data_dir={data}", "run.progress=false", "run.workers=1",
           f"run.cache_dir={tmp_path / 'c'}", *judge]  # fmt: skip
    env = cli_env()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    jsonl = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (jsonl.is_file() and jsonl.read_text().strip()):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    line = [ln for ln in err.splitlines() if "resume with: " in ln][-1]
    resume = line.split("resume with: ", 1)[1]
    assert 0 < len(read_records(jsonl)) < 6
    argv = shlex.split(resume)
    assert argv[:3] == ["python", "-m", "eqa_runner.report"], resume
    llm_server.configure(default_reply="4", latency_s=0.0)
    res = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=180)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    final = {r["episode_id"]: r for r in read_records(jsonl)}
    assert len(final) == 6 and all(r["status"] == "ok" for r in final.values())
    assert os.path.isfile(out / "summary.json")


# --- item 6: component names cannot shadow ------------------------------------------------------


def _plugin_with(tmp_path: Path, name: str, files: dict[str, str]):
    from eqa_runner import registry

    for rel, text in files.items():
        (tmp_path / name / "conf" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / "conf" / rel).write_text(text)
    return registry.Plugin(name=name, conf_dir=f"file://{tmp_path / name / 'conf'}")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("name: fbe\n_target_: lab.Fbe\n", "fbe"),  # a name of its own, a built-in option's
        ("defaults:\n  - base_fbe\n  - _self_\nstep_ratio: 0.5\n", "fbe"),  # the schema's name
    ],
)
def test_a_plugin_component_named_as_a_builtin_is_refused_naming_both(
    installed,  # noqa: F811 - the fixture
    tmp_path,
    text,
    label,
):
    from eqa_runner import registry
    from eqa_runner.errors import ConfigError
    from eqa_runner.run.configstore import register_configs
    from tests.test_plugins import FakeEntryPoint

    p = _plugin_with(tmp_path, "lab", {"policy/lab_fbe.yaml": text})
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("lab", "lab:P", p)]})
    with pytest.raises(ConfigError) as e:
        register_configs()
    msg = str(e.value)
    assert "\n" not in msg
    assert "plugin lab: its option policy/lab_fbe.yaml" in msg
    assert f"names its component {label}, the name of eqa_runner's policy/fbe.yaml" in msg
    assert "set name: lab_fbe in it" in msg


def test_two_plugins_naming_one_component_are_refused_and_own_names_pass(installed, tmp_path):  # noqa: F811 - the fixture
    from eqa_runner import registry
    from tests.test_plugins import FakeEntryPoint

    a = _plugin_with(tmp_path, "lab_a", {"judge/strict.yaml": "_target_: a.J\n"})
    b = _plugin_with(tmp_path, "lab_b", {"judge/mine.yaml": "name: strict\n_target_: b.J\n"})
    ok = _plugin_with(tmp_path, "lab_c", {"policy/lab_fbe.yaml":
                                         "defaults:\n  - base_fbe\nname: lab_fbe\n"})  # fmt: skip
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [
        FakeEntryPoint("lab_a", "a:P", a), FakeEntryPoint("lab_b", "b:P", b),
        FakeEntryPoint("lab_c", "c:P", ok)]})  # fmt: skip
    lines = registry.plugin_conflicts()
    assert len(lines) == 1, lines
    assert lines[0].startswith("plugin lab_b: its option judge/mine.yaml")
    assert "names its component strict, the name of lab_a's judge/strict.yaml" in lines[0]


def test_a_plugin_named_as_a_benchmark_is_refused_naming_both(installed, tmp_path):  # noqa: F811 - the fixture
    from eqa_runner import registry
    from eqa_runner.errors import ConfigError
    from tests.test_plugins import FakeEntryPoint

    bench = registry.benchmarks()[0]
    p = _plugin_with(tmp_path, bench.cli_name, {})
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint(bench.cli_name, "x:P", p)]})
    with pytest.raises(ConfigError) as e:
        registry.plugins()
    assert f"plugin {bench.cli_name} (" in str(e.value)
    assert f"is taken by benchmark {bench.name} ({bench.task})" in str(e.value)


def test_an_installed_benchmark_cannot_shadow_a_schema_node_or_a_component(installed, tmp_path):  # noqa: F811 - the fixture
    """Only plugins were checked: an installed benchmark's package replaced ``base_fbe``."""
    from dataclasses import dataclass

    from eqa_runner import registry
    from eqa_runner.errors import ConfigError
    from eqa_runner.run.configstore import schemas

    @dataclass
    class Other:
        name: str = "fbe"

    conf = tmp_path / "lab_bench" / "conf"
    (conf / "policy").mkdir(parents=True)
    bench = registry.Benchmark(name="lab_bench", title="t", task="lab_bench.task.T",
                               judge="x", schemas={"policy": {"base_fbe": Other}},
                               conf_dir=f"file://{conf}")  # fmt: skip
    from tests.test_plugins import FakeEntryPoint

    installed({registry.ENTRY_POINT_GROUP: [FakeEntryPoint("lab_bench", "lab_bench:B", bench)]})
    with pytest.raises(ConfigError) as e:
        schemas()
    assert "benchmark lab_bench: its schema node policy/base_fbe shadows eqa_runner's" in str(
        e.value
    )

    (conf / "policy" / "mine.yaml").write_text("name: fbe\n_target_: lab_bench.P\n")
    bench = registry.Benchmark(name="lab_bench", title="t", task="lab_bench.task.T", judge="x",
                               conf_dir=f"file://{conf}")  # fmt: skip
    installed({registry.ENTRY_POINT_GROUP: [FakeEntryPoint("lab_bench", "lab_bench:B", bench)]})
    lines = registry.plugin_conflicts(schemas())
    assert lines and lines[0].startswith("benchmark lab_bench: its option policy/mine.yaml")
