"""Docs that cannot drift: every config key README.md and docs/*.md name exists in the composed
config, and every ``python -m eqa_runner …`` / ``eqa-runner …`` example there composes.

Keys are read from backtick spans and code blocks (``run.limit``, ``policy.proposer.planner``);
module paths (``sim.geometry``, ``llm.client.endpoint_stats``) and file names (``run.log``) are
told apart by the files that exist. A key exists when some composition has it: the union over
every option of every group (a task's keys with that task, a launcher's with that launcher).
An example composes (Hydra's compose API, in process) with its overrides, and passes the one
schema checker (:func:`eqa_runner.schema.check_config`); a documented error example (a ``$``
line followed by ``error:``) must fail.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Iterator
from functools import cache

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, ListConfig

from eqa_runner.__main__ import expand_num_shards
from tests.conftest import CONF, ROOT, option_names

PACKAGE = ROOT / "eqa_runner"
# the plugins' pages too, where the plugin is installed (CI installs them: scripts/setup.sh)
PLUGIN_DOCS = [
    p
    for p in sorted((ROOT / "plugins").glob("*/README.md"))
    if importlib.util.find_spec(p.parent.name.replace("-", "_")) is not None
]
# each built-in benchmark's page is its package's README.md
BENCHMARK_DOCS = sorted((ROOT / "eqa_runner" / "benchmarks").glob("*/README.md"))
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *BENCHMARK_DOCS, *PLUGIN_DOCS]
GROUPS = ("run", "task", "policy", "llm", "judge", "sim", "protocol", "prompts", "hydra")
_KEY = re.compile(
    r"(?<![\w./$-])(?:" + "|".join(GROUPS) + r")\.[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?![\w(/-])"
)
_FILE_SUFFIXES = {"py", "sh", "yaml", "yml", "md", "log", "json", "jsonl", "txt", "html", "csv"}
# keys the docs name on purpose although no config has them (each with its reason)
NOT_KEYS = {
    "run.limt": "docs/config.md shows the error for a misspelt key",
    "llm.temprature": "docs/config.md shows the error for a misspelt key in a user's file",
    "sim.widht": "docs/reliability.md: a misspelt `+` key is refused",
    "judge.foo": "docs/reliability.md: an added key no schema has is refused",
    "policy.foo": "docs/reliability.md: an added key no schema has is refused",
    "task.foo": "docs/reliability.md: an added key no schema has is refused",
    "hydra.job.env_set.X": "docs/reliability.md: any name under a free-form map (screened)",
}
# examples that need files outside the checkout (a user's config dir)
# and docs/extending.md's example packages, installed by the page's `pip install -e` line
# (tests/test_extending.py builds each package from the page and runs these commands)
NEEDS_USER_FILES = ("--config-dir", "hydra.searchpath", "policy=first_last", "task=my_bench")


# ---------------------------------------------------------------- reading the docs
def _code_blocks(text: str) -> list[str]:
    """Fenced blocks and indented (4-space) blocks of a Markdown page."""
    blocks = re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", text, flags=re.S | re.M)
    indented, current = [], []
    for line in re.sub(r"^\s*```[^\n]*\n.*?^\s*```", "", text, flags=re.S | re.M).splitlines():
        if line.startswith("    ") or (current and not line.strip()):
            current.append(line[4:])
        elif current:
            indented.append("\n".join(current))
            current = []
    return blocks + indented + (["\n".join(current)] if current else [])


def _spans(text: str) -> list[str]:
    """Backtick spans and code blocks: where the docs name keys and commands."""
    blocks = _code_blocks(text)
    prose = re.sub(r"^\s*```[^\n]*\n.*?^\s*```", "", text, flags=re.S | re.M)
    return re.findall(r"`([^`\n]+)`", prose) + blocks


def _is_module_or_file(token: str) -> bool:
    parts = token.split(".")
    if parts[-1] in _FILE_SUFFIXES:
        return True
    if parts[0] == "hydra":
        return parts[1] in ("utils", "core", "main", "compose", "experimental", "errors")
    for n in range(2, len(parts) + 1):
        p = PACKAGE.joinpath(*parts[:n])
        if p.is_dir() or p.with_suffix(".py").is_file():
            return True
    return False


def named_keys() -> dict[str, set[str]]:
    """Config key -> the doc pages naming it."""
    out: dict[str, set[str]] = {}
    for page in DOCS:
        for span in _spans(page.read_text(encoding="utf-8")):
            for key in _KEY.findall(span):
                if not _is_module_or_file(key):
                    out.setdefault(key, set()).add(page.relative_to(ROOT).as_posix())
    return out


def _commands(block: str) -> Iterator[tuple[str, bool]]:
    """(command, documented as an error) for every example line of a code block."""
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        cmd = line[2:] if line.startswith("$ ") else line
        if not re.match(r"(python -m eqa_runner|eqa-runner)(\s|$)", cmd):
            continue
        while cmd.endswith("\\") and i < len(lines):
            cmd = cmd[:-1] + " " + lines[i].strip()
            i += 1
        is_error = line.startswith("$ ") and i < len(lines) and lines[i].startswith("error:")
        yield cmd, is_error


def examples() -> list[tuple[str, str, bool]]:
    """(page, command, expected to fail) for every run example in the docs."""
    out = []
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        prose = re.sub(r"^\s*```[^\n]*\n.*?^\s*```", "", text, flags=re.S | re.M)
        inline = [s for s in re.findall(r"`([^`\n]+)`", prose)]
        for block in [*_code_blocks(text), *inline]:
            for cmd, err in _commands(block):
                out.append((page.relative_to(ROOT).as_posix(), cmd, err))
    return out


# ---------------------------------------------------------------- composing
def _compose(overrides: list[str]) -> DictConfig:
    return _compose_cached(tuple(overrides))


@cache
def _compose_cached(overrides: tuple[str, ...]) -> DictConfig:
    from eqa_runner.run.configstore import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose("config", overrides=list(overrides), return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()


def _paths(node: object, prefix: str = "") -> Iterator[str]:
    if isinstance(node, DictConfig):
        for k in node:
            key = f"{prefix}{k}"
            yield key
            yield from _paths(node._get_node(k), key + ".")  # type: ignore[arg-type]
    elif isinstance(node, ListConfig):
        return


def _options(group: str) -> list[str]:
    """A group's options in eqa_runner's tree and in the installed plugins' config dirs, at any
    depth (the package's walk, :func:`eqa_runner.registry.walk_options`)."""
    from eqa_runner.registry import walk_options

    found = {
        f.relative_to(root / group).with_suffix("").as_posix()
        for _, root, f in walk_options()
        if root / group in f.parents
    }
    return sorted(found)


@cache
def composed_keys() -> frozenset[str]:
    """Every key path of every composition: each option of each group that brings keys of its
    own, with an exploration task for exploration policies (they read its protocol)."""
    runs: list[list[str]] = [[]]
    runs += [[f"task={t}"] for t in _options("task")]
    runs += [[f"policy={p}", "task=express"] for p in _options("policy")]
    for group in ("sim", "judge", "hydra/launcher"):  # (llm presets and experiments add no keys)
        runs += [[f"{group}={o}"] for o in _options(group)]
    keys: set[str] = set()
    for overrides in runs:
        keys.update(_paths(_compose(overrides)))
    return frozenset(keys)


def _variants(args: list[str]) -> list[list[str]]:
    """The overrides of one example as Hydra would run them: a sweep (``a,b``) and the docs'
    alternatives (``re|fbe``) give one composition per value (not their product)."""
    parser = OverridesParser.create()
    choices: list[list[str]] = []
    for arg in args:
        key, _, value = arg.partition("=")
        if "|" in value and not value.startswith(("'", '"', "[")):
            choices.append([f"{key}={v}" for v in value.split("|")])
            continue
        (ov,) = parser.parse_overrides([arg])
        if ov.is_sweep_override():
            choices.append([f"{key}={v}" for v in ov.sweep_string_iterator()])
        else:
            choices.append([arg])
    first = [c[0] for c in choices]
    out = [first]
    for i, c in enumerate(choices):
        out += [first[:i] + [v] + first[i + 1 :] for v in c[1:]]
    return out


def overrides_of(cmd: str) -> list[str] | None:
    """The overrides of an example command (placeholders filled), or None when it needs a
    user's own files."""
    if any(s in cmd for s in NEEDS_USER_FILES):
        return None
    cmd = re.sub(r"\s#.*$", "", cmd)
    cmd = re.sub(r"<[^<>]*>", "X", cmd).replace("…", "X")
    words = shlex.split(cmd)[3 if cmd.startswith("python") else 1 :]
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w in ("--cfg", "-c", "--package", "-p", "--info", "-i"):
            skip = True
        elif w.startswith("-") or w in ("...", "X") or "=" not in w:
            continue
        elif w.split("=", 1)[1] == "X" and "." not in w.split("=", 1)[0]:
            continue  # a placeholder for a group's option (llm=<preset>)
        else:
            out.append(w)
    return [a for a in expand_num_shards(out) if a != "-m"]


def compose_example(overrides: list[str]) -> None:
    """Compose, then the checks a run makes before it writes anything: the schema rules and
    whether task, policy and judge fit (capabilities)."""
    from eqa_runner.run.build import check_capabilities
    from eqa_runner.schema import check_config

    for variant in _variants(overrides):
        cfg = _compose(variant)
        check_config(cfg)  # the checker skips the hydra node
        check_capabilities(cfg)


# ---------------------------------------------------------------- the tests
def test_the_docs_name_keys_and_examples() -> None:
    """The readers above find what they should (else the tests below would pass vacuously)."""
    keys, exs = named_keys(), examples()
    assert {"run.limit", "task.data_dir", "policy.proposer.look_around_deg"} <= keys.keys()
    assert "sim.geometry" not in keys and "run.log" not in keys
    assert len(exs) > 30 and any(err for _, _, err in exs)


@pytest.mark.slow
def test_every_config_key_the_docs_name_exists() -> None:
    known = composed_keys()
    named = named_keys()
    missing = {k: sorted(p) for k, p in named.items() if k not in known and k not in NOT_KEYS}
    assert not missing, f"keys named in the docs but in no composed config: {missing}"
    for k in NOT_KEYS:  # the deliberate non-keys stay non-keys
        assert k not in known, f"{k} is a key now; drop it from NOT_KEYS"


@pytest.mark.parametrize(
    ("page", "cmd", "is_error"),
    [pytest.param(*e, id=f"{e[0]}:{i}") for i, e in enumerate(examples())],
)
def test_every_run_example_composes(page: str, cmd: str, is_error: bool) -> None:
    overrides = overrides_of(cmd)
    if overrides is None:
        pytest.skip(f"needs a user's own config dir: {cmd}")
    if is_error:
        with pytest.raises(Exception):  # noqa: B017 - any composition or checker error
            compose_example(overrides)
        return
    try:
        compose_example(overrides)
    except Exception as e:  # noqa: BLE001 - reported with the page and the command
        pytest.fail(f"{page}: `{cmd}` does not compose: {type(e).__name__}: {e}")


# ---------------------------------------------------------------- files and claims
_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.*<>-]+)+\.(?:py|yaml|md|txt|j2|toml|sh))`")
_ROOTS = ("eqa_runner", "tests", "bench", "scripts", "docs", "hydra_plugins", "plugins")
_PACKAGE_DIRS = tuple(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")


def named_paths() -> dict[str, set[str]]:
    """Project file paths (``eqa_runner/run/config.py``, ``run/build.py``) the docs name."""
    out: dict[str, set[str]] = {}
    for page in DOCS:
        for path in _PATH.findall(page.read_text(encoding="utf-8")):
            if "<" in path or "*" in path or path.split("/")[0] not in (*_ROOTS, *_PACKAGE_DIRS):
                continue  # a pattern, or another project's file (habitat/…, cfg/…)
            if "conf/local/" in path and not path.endswith("README.md"):
                continue  # a machine's own settings file (git-ignored), described by the docs
            out.setdefault(path, set()).add(page.relative_to(ROOT).as_posix())
    return out


def test_every_benchmarks_docs_page_is_checked() -> None:
    """Each registered benchmark names its docs page, the page exists, and this module reads it
    (keys, run examples, file names): a built-in's is its package's README.md."""
    from eqa_runner.registry import benchmarks

    for b in benchmarks():
        assert b.docs, f"benchmark {b.name} names no docs page"
        assert ROOT / b.docs in DOCS, f"{b.name}: {b.docs} is not among the checked pages"
        if b.task.startswith("eqa_runner."):
            assert b.docs == f"eqa_runner/benchmarks/{b.task.split('.')[2]}/README.md"


def test_every_project_file_the_docs_name_exists() -> None:
    plugins = sorted((ROOT / "plugins").glob("*"))
    bases = [ROOT, PACKAGE, *plugins, *(d for p in plugins for d in p.glob("*/conf/.."))]

    def exists(path: str, pages: set[str]) -> bool:
        # a benchmark package's README may name its own files (`conf/task/<name>.yaml`)
        own = [(ROOT / page).parent for page in pages if page.startswith("eqa_runner/benchmarks/")]
        return any((b / path).exists() for b in [*bases, *own])

    assert "eqa_runner/run/config.py" in named_paths()
    pages = {page for named_in in named_paths().values() for page in named_in}
    assert any(page.startswith("eqa_runner/benchmarks/") for page in pages)
    missing = {p: sorted(pages) for p, pages in named_paths().items() if not exists(p, pages)}
    assert not missing, f"files named in the docs that do not exist: {missing}"


def _imports(pkg: str) -> set[str]:
    """The eqa_runner modules the files of package ``pkg`` import (``from a import b``: both)."""
    import ast

    out: set[str] = set()
    for py in (PACKAGE / pkg).rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
    return out


def test_the_layer_tables_uses_claims_hold() -> None:
    """docs/architecture.md: a layer row saying it "uses `pkg.mod`" imports it."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for row in (ln for ln in text.splitlines() if ln.startswith("|") and "uses `" in ln):
        pkgs = re.findall(r"`([a-z_]+)/`", row.split("|")[2])
        for used in re.findall(r"uses `([a-z_.]+)`", row):
            imported = set().union(*(_imports(p) for p in pkgs))
            assert f"eqa_runner.{used}" in imported, f"{pkgs} do not import {used}: {row}"


def test_config_yaml_option_comments_name_real_options() -> None:
    """conf/config.yaml: a defaults line whose comment lists options (``a | b``) lists every
    built-in option of that group (eqa_runner/conf's and the built-in benchmarks'), and nothing
    else."""
    checked = 0
    for line in (CONF / "config.yaml").read_text().splitlines():
        m = re.match(r"\s*- (?:optional )?([a-z/]+): \S+\s+#(.*)", line)
        if not m or "|" not in m.group(2):
            continue
        listed = re.findall(r"(?:^|\|)\s*([a-z0-9_]+)", m.group(2).split(":")[-1])
        builtin = option_names(m.group(1))
        assert sorted(listed) == builtin, f"{line.strip()!r}: the options are {builtin}"
        checked += 1
    assert checked, "no defaults line lists its options (the test would check nothing)"
