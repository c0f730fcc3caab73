"""The layer rule and the types are part of the suite, so `make test` (what CI runs) fails when
either breaks: import-linter's contracts (pyproject [tool.importlinter]: layers point downward,
no cycles between sibling modules; docs/architecture.md) and mypy (pyproject [tool.mypy]).

The tools run as subprocesses of the interpreter running the tests (its venv has the dev extras),
from the checkout, so they check the checkout's code rather than an installed copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the package under cwd, not an installed one
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run(["-c", LINT_IMPORTS, "--no-cache"], cwd)


def test_layer_contracts_are_kept():
    proc = _lint_imports(ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Contracts: 2 kept, 0 broken." in out


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the package and its pyproject (the contracts) to break on purpose."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "eqa_runner", tmp_path / "eqa_runner", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_an_upward_import_breaks_the_layers(package_copy: Path):
    # the simulator layer must not import the run layer above it
    _append(package_copy / "eqa_runner" / "sim" / "geometry.py", "import eqa_runner.run.context")
    proc = _lint_imports(package_copy)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Layers point downward (docs/architecture.md) BROKEN" in out
    assert "eqa_runner.sim.geometry -> eqa_runner.run.context" in out


def test_a_sibling_cycle_breaks_the_acyclic_contract(package_copy: Path):
    # inside one package (no layer crossed): mesh imports geometry; geometry importing mesh
    # closes a cycle between the two sibling modules
    _append(package_copy / "eqa_runner" / "sim" / "geometry.py", "import eqa_runner.sim.mesh")
    proc = _lint_imports(package_copy)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Layers point downward (docs/architecture.md) KEPT" in out
    assert "No import cycles between sibling modules or packages BROKEN" in out


@pytest.mark.slow  # about 20 s from a cold cache (.mypy_cache), under 1 s warm
def test_mypy_is_clean():
    proc = _run(["-m", "mypy"], ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Success: no issues found" in out


def _benchmark_words() -> list[str]:
    """Every registered benchmark's names, spelled as code and prose do (``hm-eqa``, ``A-EQA``)."""
    import re

    from eqa_runner.registry import benchmarks

    names = {n for b in benchmarks() for n in (b.name, b.cli_name)}
    return [re.sub(r"eqa", "[-_ ]?eqa", re.escape(n)) for n in sorted(names)]


def test_no_module_outside_a_benchmark_package_names_a_benchmark():
    """A benchmark is one package: shared code says what it does, not whose it is."""
    import re

    pattern = re.compile(
        "|".join(rf"(?<![a-z]){w}(?![a-z])" for w in _benchmark_words()), re.IGNORECASE
    )
    found = []
    for path in sorted((ROOT / "eqa_runner").rglob("*.py")) + sorted(
        (ROOT / "hydra_plugins").rglob("*.py")
    ):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("eqa_runner/benchmarks/"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert found == [], "\n".join(found)


def _targets(node: object) -> list[str]:
    """Every ``_target_`` in a parsed YAML option, nested ones (``proposer._target_``) included."""
    if isinstance(node, dict):
        own = [node["_target_"]] if isinstance(node.get("_target_"), str) else []
        return own + [t for v in node.values() for t in _targets(v)]
    if isinstance(node, list):
        return [t for v in node for t in _targets(v)]
    return []


def test_no_shared_config_option_builds_a_benchmark_packages_component():
    """eqa_runner/conf holds the shared options only: a YAML whose ``_target_`` is in a benchmark
    package (its task, judge, protocol, its own policies) lives in that package's conf/."""
    import yaml

    found = [
        f"{path.relative_to(ROOT).as_posix()}: {target}"
        for path in sorted((ROOT / "eqa_runner" / "conf").rglob("*.yaml"))
        for target in _targets(yaml.safe_load(path.read_text(encoding="utf-8")))
        if target.startswith("eqa_runner.benchmarks.")
    ]
    assert found == [], "\n".join(found)


def test_a_built_in_benchmark_is_registered_like_a_plugin():
    """Each built-in benchmark's descriptor names its package's conf dir and README.md, the
    registry hands that dir to Hydra's search path as it does a plugin's, and the dir's
    ``_target_``s are the package's own components or shared ones, never another benchmark's."""
    import yaml

    from eqa_runner.registry import benchmarks, config_dirs

    dirs = dict(config_dirs())
    built_in = [b for b in benchmarks() if b.task.startswith("eqa_runner.benchmarks.")]
    assert len(built_in) >= 4
    for b in built_in:
        pkg = b.task.split(".")[2]
        assert dirs[b.name] == b.conf_dir == f"pkg://eqa_runner.benchmarks.{pkg}.conf"
        assert b.docs == f"eqa_runner/benchmarks/{pkg}/README.md"
        conf = ROOT / "eqa_runner" / "benchmarks" / pkg / "conf"
        assert (conf / "task" / f"{b.name}.yaml").is_file()
        assert (conf / "judge" / f"{b.judge}.yaml").is_file()
        if b.protocol:
            assert (conf / "protocol" / f"{b.protocol}.yaml").is_file()
        for path in sorted(conf.rglob("*.yaml")):
            for target in _targets(yaml.safe_load(path.read_text(encoding="utf-8"))):
                if target.startswith("eqa_runner.benchmarks."):
                    assert target.startswith(f"eqa_runner.benchmarks.{pkg}."), f"{path}: {target}"


# the names the issue found in shared code; the test adds every declared name with a ``_``
KNOWN_KEYS = ("score_1to5", "d_T", "E_path", "llm_match", "success_weighted", "blind_run_dir")


def _judge_classes() -> list[type]:
    """Every registered benchmark's judge class (built-in and plugin), from its judge option."""
    from importlib.resources import files

    import yaml
    from hydra.utils import get_class

    from eqa_runner.registry import benchmarks

    out = []
    for b in benchmarks():
        pkg = str(b.conf_dir).removeprefix("pkg://")
        node = yaml.safe_load(files(pkg).joinpath("judge", f"{b.judge}.yaml").read_text())
        out.append(get_class(node["_target_"]))
    return out


def _metric_and_judge_keys() -> list[str]:
    """The names a benchmark owns: declared metric names and judge input keys that are words
    of their own (with a ``_``: ``accuracy`` or ``delta`` are plain English)."""
    names = set(KNOWN_KEYS)
    for cls in _judge_classes():
        d = cls.declaration()
        names |= {m.name for m in d.metrics if "_" in m.name} | {i.key for i in d.inputs}
    return sorted(names)


def _named_keys(root: Path, keys: list[str]) -> list[str]:
    """Lines of shared code (outside eqa_runner/benchmarks/) that name one of ``keys``."""
    import re

    pattern = re.compile("|".join(rf"(?<![A-Za-z0-9_]){re.escape(k)}(?![A-Za-z0-9_])"
                                  for k in keys))  # fmt: skip
    found = []
    paths = [p for d in ("eqa_runner", "hydra_plugins") for p in sorted((root / d).rglob("*"))
             if p.suffix in (".py", ".j2", ".js", ".yaml")]  # fmt: skip
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if rel.startswith("eqa_runner/benchmarks/"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{rel}:{i}: {line.strip()}")
    return found


def test_every_judge_declares_its_metrics():
    """Each judge lists its metrics (scale, direction, aggregation; its headline among them)."""
    from eqa_runner.scoring.declare import SCALES

    classes = _judge_classes()
    assert len(classes) >= 5
    for cls in classes:
        d = cls.declaration()
        names = [m.name for m in d.metrics]
        assert cls.metric_list, cls  # declared, not the fallback
        assert len(names) == len(set(names)), cls
        assert cls.headline in [m.name for m in d.headline()], cls
        assert all(m.scale in SCALES and m.aggregation == "mean" for m in d.metrics), cls
        assert set(d.per_category()) <= set(names)


def test_no_module_outside_a_benchmark_package_names_its_metrics_or_judge_keys():
    """Shared code reads the judges' declarations; it never names a metric or a judge key."""
    keys = _metric_and_judge_keys()
    assert {"C_star", "llm_match_spl", "d_min"} <= set(keys)  # declared names are collected
    found = _named_keys(ROOT, keys)
    assert found == [], "\n".join(found)


def test_a_metric_name_in_shared_code_is_found(tmp_path: Path):
    (tmp_path / "eqa_runner" / "report").mkdir(parents=True)
    (tmp_path / "eqa_runner" / "benchmarks" / "x").mkdir(parents=True)
    (tmp_path / "eqa_runner" / "report" / "a.py").write_text('k = "d_T"\nunexplored_T = 1\n')
    (tmp_path / "eqa_runner" / "benchmarks" / "x" / "j.py").write_text('k = "d_T"\n')
    assert _named_keys(tmp_path, ["d_T"]) == ['eqa_runner/report/a.py:1: k = "d_T"']
