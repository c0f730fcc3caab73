"""The package installs and runs without the checkout (issue 12, deliverable 1).

``pip wheel . --no-deps``, a fresh venv with ``pip install <wheel>`` (dependencies pinned by
constraints.txt, from pip's cache after the first time), then from an unrelated directory:
``eqa-runner --help``, ``eqa-runner --cfg job task=express policy=fbe``, the offline OpenEQA demo
and a two-job local sweep (the launcher plugin found in the installed ``hydra_plugins``).
Slow (about a minute with a warm pip cache; the first run downloads the dependencies).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# top-level entries of a checkout that are not source (venv, outputs, local data, artifacts)
_TOP_JUNK = {".git", ".venv", "build", "dist", "outputs", "multirun", "data", "test-artifacts"}


def _not_source(directory: str, names: list[str]) -> list[str]:
    top = Path(directory) == REPO
    return [
        n
        for n in names
        if (top and n in _TOP_JUNK) or n == "__pycache__" or n.endswith((".egg-info", "_cache"))
    ]


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} -> {proc.returncode}\n{out[-4000:]}"
    return out


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_wheel_installs_and_runs_from_an_unrelated_directory(tmp_path: Path) -> None:
    t0 = time.monotonic()
    # The environment of a user: no checkout on sys.path, no project venv.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONDONTWRITEBYTECODE="1")

    # Build from a copy: setuptools leaves build/ in the source tree, and a stale build/lib
    # (files deleted since) would end up in the wheel.
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=_not_source)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "wheel", str(src), "--no-deps", "-q", "-w", str(wheels)],
         cwd=tmp_path, env=env, timeout=300)  # fmt: skip
    (wheel,) = wheels.glob("eqa_runner-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in (
        "eqa_runner/conf/config.yaml",
        "eqa_runner/conf/llm/offline.yaml",
        "eqa_runner/conf/hydra/launcher/slurm.yaml",
        "eqa_runner/benchmarks/openeqa_em/prompts/gpt4v.txt",
        "eqa_runner/prompts/vlm/worth.txt",
        "eqa_runner/report/templates/report.html.j2",
        "eqa_runner/py.typed",
        "hydra_plugins/eqa_runner_launcher/launcher.py",
        "hydra_plugins/eqa_runner_plugins/search_path.py",
        # each built-in benchmark's own options and docs page, in its package
        *(
            f"eqa_runner/benchmarks/{b}/{f}"
            for b in ("aeqa", "express", "hmeqa", "mt_hm3d", "openeqa_em", "vsibench")
            for f in ("README.md", "conf/__init__.py", f"conf/task/{b}.yaml")
        ),
        "eqa_runner/benchmarks/aeqa/conf/sim/camera/aeqa.yaml",
        "eqa_runner/benchmarks/openeqa_em/conf/policy/multiframe.yaml",
    ):
        assert f in names, f"{f} missing from {wheel.name}"
    assert "hydra_plugins/__init__.py" not in names  # a namespace shared with other plugins
    assert not any(n.startswith("tests/") for n in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py, exe = env_dir / "bin" / "python", env_dir / "bin" / "eqa-runner"
    constraints = ["-c", str(REPO / "constraints.txt")]
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *constraints,
          str(wheel)], cwd=tmp_path, env=env, timeout=1200)  # fmt: skip
    t_install = time.monotonic() - t0

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run([str(py), "-c", "import eqa_runner; print(eqa_runner.__file__)"],
                 cwd=elsewhere, env=env, timeout=60)  # fmt: skip
    assert str(env_dir) in where and str(REPO) not in where

    out = _run([str(exe), "--help"], cwd=elsewhere, env=env, timeout=60)
    assert "llm: " in out and "offline" in out and "hydra/launcher: local, slurm" in out
    assert "task: aeqa, express, hmeqa, mt_hm3d, openeqa_em, vsibench\n" in out  # their packages
    assert "mp3d_eqa" not in out  # the plugin below is not installed yet

    out = _run([str(exe), "--cfg", "job", "task=express", "policy=fbe"],
               cwd=elsewhere, env=env, timeout=120)  # fmt: skip
    assert "_target_: eqa_runner.policies" in out and "name: express" in out

    demo = tmp_path / "demo"
    _run([str(py), "-m", "eqa_runner.demo", str(demo), "--only", "openeqa"],
         cwd=elsewhere, env=env, timeout=300)  # fmt: skip
    run_dir = tmp_path / "run"
    out = _run([str(exe), "task=openeqa_em", "policy=multiframe", "llm=offline",
                "judge.model=offline", f"task.data_dir={demo / 'openeqa'}",
                f"hydra.run.dir={run_dir}", "run.progress=false"],
               cwd=elsewhere, env=env, timeout=600)  # fmt: skip
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["ok"] == summary["counts"]["selected"] > 0
    assert summary["counts"]["error"] == 0

    sweep = tmp_path / "sweep"
    out = _run([str(exe), "-m", "hydra/launcher=local", "policy=blind,single", "llm=offline",
                "judge.model=offline", f"task.data_dir={demo / 'openeqa'}", "run.limit=2",
                f"hydra.sweep.dir={sweep}", "run.progress=false"],
               cwd=elsewhere, env=env, timeout=600)  # fmt: skip
    assert "Submitit 'local' sweep output dir" in out
    assert len(list(sweep.glob("*/summary.json"))) == 2
    t_plugin = time.monotonic()
    _plugin_wheel_installs_and_runs(src, wheels, py, exe, elsewhere, tmp_path, env)
    print(f"\ninstall test: install {t_install:.0f}s, plugin {time.monotonic() - t_plugin:.0f}s, "
          f"total {time.monotonic() - t0:.0f}s")  # fmt: skip


def _plugin_wheel_installs_and_runs(
    src: Path, wheels: Path, py: Path, exe: Path, elsewhere: Path, tmp_path: Path, env: dict
) -> None:
    """The MP3D-EQA plugin as a wheel next to the core's (same venv): found through its entry
    point from an unrelated directory, listed by --help, and a tiny offline demo run of it."""
    plugin = src / "plugins" / "eqa-runner-mp3d-eqa"
    _run([sys.executable, "-m", "pip", "wheel", str(plugin), "--no-deps", "-q", "-w", str(wheels)],
         cwd=tmp_path, env=env, timeout=300)  # fmt: skip
    (wheel,) = wheels.glob("eqa_runner_mp3d_eqa-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("conf/task/mp3d_eqa.yaml", "prompts/answer.txt", "py.typed"):
        assert f"eqa_runner_mp3d_eqa/{f}" in names, f"{f} missing from {wheel.name}"
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "mp3d_eqa = eqa_runner_mp3d_eqa:BENCHMARK" in zipfile.ZipFile(wheel).read(meta).decode()
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
          str(wheel)], cwd=tmp_path, env=env, timeout=300)  # fmt: skip
    out = _run([str(exe), "--help"], cwd=elsewhere, env=env, timeout=60)
    task_line = next(ln for ln in out.splitlines() if ln.startswith("task: "))
    assert "mp3d_eqa" in task_line, task_line
    print("\n" + "\n".join(ln for ln in out.splitlines() if "mp3d_eqa" in ln))
    demo = tmp_path / "demo"
    _run([str(py), "-m", "eqa_runner.demo", str(demo), "--only", "mp3d_eqa"],
         cwd=elsewhere, env=env, timeout=300)  # fmt: skip
    out = _run([str(exe), "task=mp3d_eqa", "policy=re", "llm=offline", "judge.model=offline",
                f"task.data_dir={demo / 'mp3d_eqa'}", "run.limit=2", "sim.width=64",
                "sim.height=64", "policy.max_steps=3", f"hydra.run.dir={tmp_path / 'mp3d_run'}",
                "run.progress=false"], cwd=elsewhere, env=env, timeout=300)  # fmt: skip
    line = next(ln for ln in out.splitlines() if ln.startswith("[eqa_runner] 2/2 ok"))
    assert "accuracy=" in line and "d_T=" in line and "d_min=" in line, line
    print(line)
