"""docs/extending.md's one-file policy is real: its module and its YAML, read from the page,
compose from a user's config dir and run offline; on a task without frames it is refused in one
line naming the missing capability."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eqa_runner.errors import ConfigError
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "extending.md"


def _block(first_line: str) -> str:
    """The code block of the page whose first line is ``first_line``."""
    for body in re.findall(r"```\w*\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S):
        if body.splitlines()[0].strip() == first_line:
            return body
    raise AssertionError(f"docs/extending.md has no code block starting {first_line!r}")


@pytest.fixture
def lab(tmp_path: Path, monkeypatch) -> Path:
    """The page's two files, where the page puts them: my_lab/first_last.py and
    lab_conf/policy/first_last.yaml."""
    root = tmp_path / "lab"
    (root / "my_lab").mkdir(parents=True)  # a namespace package: no __init__.py needed
    (root / "my_lab" / "first_last.py").write_text(_block("# my_lab/first_last.py"))
    (root / "lab_conf" / "policy").mkdir(parents=True)
    yaml = _block("# lab_conf/policy/first_last.yaml")
    (root / "lab_conf" / "policy" / "first_last.yaml").write_text(yaml)
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("my_lab.first_last", None)
    sys.modules.pop("my_lab", None)


def test_the_example_policy_is_two_files_and_runs(lab, compose_cfg, openeqa_data, tmp_path):
    files = sorted(p.relative_to(lab).as_posix() for p in lab.rglob("*") if p.is_file())
    assert files == ["lab_conf/policy/first_last.yaml", "my_lab/first_last.py"]
    out = tmp_path / "run"
    cfg = compose_cfg(
        [f"hydra.searchpath=[file://{lab / 'lab_conf'}]", "policy=first_last",
         "task=openeqa_em", f"task.data_dir={openeqa_data}", "llm=offline",
         "judge.model=offline", "run.limit=3"],
        out=out,
    )  # fmt: skip
    run(cfg)
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for r in recs:
        first, last = r["trace"]["frames"]
        assert first < last and first.endswith("-rgb.png")


def test_the_example_policy_is_refused_where_there_are_no_frames(lab, compose_cfg, tmp_path):
    cfg = compose_cfg([f"hydra.searchpath=[file://{lab / 'lab_conf'}]", "policy=first_last",
                       "task=express", f"task.data_dir={tmp_path}"])  # fmt: skip
    with pytest.raises(ConfigError) as e:
        run(cfg)
    msg = str(e.value)
    assert "\n" not in msg and "policy=first_last needs an episode's recorded frames" in msg


def test_the_example_policy_takes_its_typed_config(lab, compose_cfg, tmp_path):
    """The page's policy follows the constructor contract: a run hands it its schema's object,
    and the one checker refuses a value out of the schema's range in the usual line."""
    from eqa_runner.policies.base import Policy
    from eqa_runner.run.build import build

    searchpath = f"hydra.searchpath=[file://{lab / 'lab_conf'}]"
    cfg = compose_cfg([searchpath, "policy=first_last", "task=openeqa_em", "policy.image_size=96"])
    policy = build(cfg.policy, Policy, "policy")
    assert type(policy.config).__name__ == "FirstLastConfig"
    assert (policy.config.image_size, policy.name) == (96, "first_last")
    bad = compose_cfg([searchpath, "policy=first_last", "task=openeqa_em", "policy.image_size=0"])
    with pytest.raises(ConfigError, match=r"^policy.image_size=0: must be > 0$"):
        build(bad.policy, Policy, "policy")
    with pytest.raises(ConfigError, match=r"^policy.image_sise: not a key of FirstLastFrames"):
        type(policy)(image_sise=96)


def build_package(root: Path, project: str) -> Path:
    """Write every code block of the page whose first line is ``# <project>/…`` to that path
    under ``root``, and register the distribution's entry points as pip would (a
    ``.dist-info`` beside the package, read from the page's pyproject.toml): ``root/<project>``
    then goes on ``PYTHONPATH``."""
    import tomllib

    blocks = re.findall(r"```\w*\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    written = []
    for body in blocks:
        first = body.splitlines()[0].strip()
        parts = first[2:].split("/")  # <project>/pyproject.toml or <project>/<project>/...
        if (
            first.startswith("# ")
            and parts[0] == project
            and parts[1] in (project, "pyproject.toml")
        ):
            path = root / first[2:]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
            written.append(path)
    meta = tomllib.loads((root / project / "pyproject.toml").read_text())["project"]
    info = root / project / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\n"
                                   f"Version: {meta['version']}\n")  # fmt: skip
    lines = []
    for group, eps in meta["entry-points"].items():
        lines += [f"[{group}]", *(f"{k} = {v}" for k, v in eps.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    return root / project


def _cli(pythonpath: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-m", "eqa_runner", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.slow
def test_the_plugin_package_example_installs_and_types_its_policy(tmp_path):
    """The page's Plugin package: its files as the page shows them (the policy module from the
    one-file example), its entry point; --help lists the policy, its schema checks values when
    the config is composed."""
    project = build_package(tmp_path, "my_lab")
    (project / "my_lab" / "first_last.py").write_text(_block("# my_lab/first_last.py"))
    files = sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file())
    assert [f for f in files if ".dist-info" not in f] == [
        "my_lab/__init__.py", "my_lab/conf/policy/first_last.yaml", "my_lab/first_last.py",
        "pyproject.toml"]  # fmt: skip
    helped = _cli(project, "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "Traceback" not in helped.stderr, helped.stderr
    policy_line = next(ln for ln in helped.stdout.splitlines() if ln.startswith("policy:"))
    assert "first_last" in policy_line
    cfg = _cli(project, "policy=first_last", "--cfg", "job", cwd=tmp_path)
    assert cfg.returncode == 0 and "image_size: 512" in cfg.stdout, cfg.stderr
    run_dir = tmp_path / "run"
    bad = _cli(project, "policy=first_last", "policy.image_size=0", f"hydra.run.dir={run_dir}",
               cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "error: policy.image_size=0: must be > 0" in bad.stderr and not run_dir.exists()


@pytest.mark.slow
def test_the_minimal_benchmark_skeleton_runs(tmp_path):
    """The page's skeleton: six files, found by its entry point, runs offline end to end and
    scores by exact match without any judge.model."""
    project = build_package(tmp_path, "my_bench")
    files = sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file())
    assert len([f for f in files if ".dist-info" not in f]) == 7  # six files + pyproject.toml
    data = tmp_path / "my_data"
    data.mkdir()
    questions = [{"id": f"q{i}", "question": f"What is {i}?", "answer": str(i),
                  "category": "numbers" if i % 2 else "words"} for i in range(4)]  # fmt: skip
    (data / "questions.json").write_text(json.dumps(questions))
    helped = _cli(project, "--help", cwd=tmp_path)
    assert "task=my_bench: My benchmark" in helped.stdout, helped.stderr
    run_dir = tmp_path / "run"
    done = _cli(project, "task=my_bench", "policy=blind", "llm=offline",
                f"task.data_dir={data}", f"hydra.run.dir={run_dir}", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["ok"] == 4
    assert summary["headline"]["exact_match"]["mean"] == 0.0  # offline placeholders
    assert set(summary["by_category"]) == {"numbers", "words"}
    records = read_records(run_dir / "episodes.jsonl")
    assert [r["metrics"]["exact_match"] for r in records] == [0.0] * 4
