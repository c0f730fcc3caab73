"""The benchmark registry: what ``data``, ``demo``, ``report``, ``--help`` and the config store
enumerate, instead of naming benchmarks.

A benchmark is one package that exposes a :class:`Benchmark` descriptor named ``BENCHMARK``:
the built-ins are the sub-packages of ``eqa_runner/benchmarks/``; an installed package adds
its own through the entry-point group :data:`ENTRY_POINT_GROUP` (the entry point names the
descriptor, ``my_pkg.bench:BENCHMARK``). The descriptor holds its schemas (cheap dataclasses),
its config dir and dotted paths for everything heavy (task class, data check, demo writer),
resolved on use, so listing benchmarks imports no numpy, simulator or model client. Built-ins
and installed benchmarks are found and put on Hydra's search path the same way: a built-in's
options live in its own package (``eqa_runner/benchmarks/<name>/conf/``), not in
``eqa_runner/conf``, which keeps the shared ones (policies, models, simulators, loggers).

A package that adds components without a benchmark (policies, judges, simulator backends)
names a :class:`Plugin` (its config dir and schemas) in :data:`PLUGIN_ENTRY_POINT_GROUP`.
Both kinds of config dir go on Hydra's search path (:func:`config_dirs`), their schemas into the
ConfigStore (:func:`schemas`); docs/extending.md says how to write one.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from eqa_runner.errors import ConfigError

ENTRY_POINT_GROUP = "eqa_runner.benchmarks"
BUILTIN_PACKAGE = "eqa_runner.benchmarks"
CONF_DIR = Path(__file__).resolve().parent / "conf"  # eqa_runner's own config tree


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: its config option, schemas and where its parts live.

    ``data`` names a module with ``add_check_args(parser)`` and ``check(args) -> int`` (and,
    when the benchmark can be downloaded, ``add_fetch_args(parser)`` and ``fetch(args) ->
    int``; a ``DataError`` they raise is printed in the command's option names); ``demo`` a
    function ``(out_dir: Path, seed: int) -> None`` writing a valid
    ``task.data_dir``. ``cli_name`` is the benchmark's name in ``data`` and ``demo`` commands.
    """

    name: str  # the task option (``task=<name>``, <conf_dir>/task/<name>.yaml)
    title: str  # one line for --help and reports
    task: str  # dotted path of the Task class
    judge: str  # the judge option the task selects
    schemas: Mapping[str, Mapping[str, type]] = field(default_factory=dict)  # group -> nodes
    protocol: str | None = None  # the exploration protocol option the task selects, if any
    data: str | None = None  # dotted module path of the data check (and fetch)
    demo: str | None = None  # dotted path of the demo writer
    docs: str | None = None  # the benchmark's docs page (repository relative): its README.md
    # the Hydra config dir of its own options (task, judge, protocol, camera, experiment
    # presets), laid out like eqa_runner/conf: ``pkg://<its package>.conf``, built-ins included
    conf_dir: str | None = None
    short: str | None = None  # the name in ``data``/``demo`` commands; default ``name``
    # dotted path of its upstream result format (an eqa_runner.scoring.upstream.UpstreamFormat
    # class): ``report --export <cli_name>`` / ``report --import FILE --format <cli_name>``
    upstream: str | None = None
    # SHA-256 of the benchmark's original prompt files (stripped UTF-8 text) -> their source
    original_prompts: Mapping[str, str] = field(default_factory=dict)
    # ``_target_`` paths its components had in older releases -> today's (to read older runs)
    moved: Mapping[str, str] = field(default_factory=dict)

    @property
    def cli_name(self) -> str:
        return self.short or self.name

    def resolve(self, what: str) -> Any:
        """The object one of the dotted-path fields (``task``, ``data``, ``demo``, ``upstream``)
        names."""
        path = getattr(self, what)
        if path is None:
            raise ConfigError(f"benchmark {self.name} has no {what}")
        return resolve(path)


def resolve(path: str) -> Any:
    """Import ``pkg.module`` or ``pkg.module.attr`` (also ``pkg.module:attr``)."""
    mod, sep, attr = path.partition(":")
    if not sep:
        try:
            return importlib.import_module(path)
        except ModuleNotFoundError as e:
            if e.name != path:
                raise
            mod, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


@dataclass(frozen=True)
class Plugin:
    """An installed package's components without a benchmark of their own: policies, judges,
    simulator backends (or presets) as options of its config dir, and their schemas.

    The entry point of group :data:`PLUGIN_ENTRY_POINT_GROUP` names it (``my_lab:PLUGIN``).
    """

    name: str
    conf_dir: str  # a Hydra config dir laid out like eqa_runner/conf (``pkg://my_lab.conf``)
    schemas: Mapping[str, Mapping[str, type]] = field(default_factory=dict)  # group -> nodes
    title: str = ""


PLUGIN_ENTRY_POINT_GROUP = "eqa_runner.plugins"


@lru_cache(maxsize=1)
def benchmarks() -> tuple[Benchmark, ...]:
    """Every benchmark: the built-ins, then those of installed packages (entry points)."""
    found: dict[str, Benchmark] = {}
    pkg = importlib.import_module(BUILTIN_PACKAGE)
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.ispkg:
            _add(found, importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}").BENCHMARK)
    for bench in _load_entry_points(ENTRY_POINT_GROUP, Benchmark):
        _add(found, bench)
    return tuple(found.values())


@lru_cache(maxsize=1)
def plugins() -> tuple[Plugin, ...]:
    """The component plugins of installed packages (entry points), by name."""
    found: dict[str, Plugin] = {}
    for plugin in _load_entry_points(PLUGIN_ENTRY_POINT_GROUP, Plugin):
        clash = [b for b in benchmarks() if plugin.name in (b.name, b.cli_name)]
        taken = [f"benchmark {b.name} ({b.task})" for b in clash]
        if plugin.name in found or plugin.name == "eqa_runner":
            taken.append("another plugin" if plugin.name in found else "eqa_runner itself")
        if taken:
            raise ConfigError(
                f"plugin {plugin.name} ({plugin.conf_dir}): the name is taken by {taken[0]}; "
                "rename the plugin"
            )
        found[plugin.name] = plugin
    return tuple(found.values())


def _load_entry_points(group: str, kind: type[Any]) -> list[Any]:
    """The objects the entry points of ``group`` name, each checked to be a ``kind``; a broken
    plugin is one line naming its entry point and distribution."""
    out = []
    for ep in _entry_points(group):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "its package"
        try:
            obj = ep.load()
        except Exception as e:  # noqa: BLE001 - any import error of a third-party package
            raise ConfigError(
                f"entry point {ep.name} = {ep.value} (group {group}, from {dist}) cannot be "
                f"loaded: {type(e).__name__}: {e}; reinstall or uninstall {dist}"
            ) from e
        if not isinstance(obj, kind):
            raise ConfigError(
                f"entry point {ep.name} = {ep.value} (group {group}) is a "
                f"{type(obj).__name__}, not an eqa_runner.registry.{kind.__name__}"
            )
        out.append(obj)
    return out


def installed_entry_points(group: str) -> list[Any]:
    """The installed entry points of ``group`` (for ``doctor``'s listing), by name."""
    return _entry_points(group)


def _entry_points(group: str = ENTRY_POINT_GROUP) -> list[Any]:
    from importlib.metadata import entry_points

    return sorted(entry_points(group=group), key=lambda ep: ep.name)


def _add(found: dict[str, Benchmark], bench: Benchmark) -> None:
    for other in found.values():
        if bench.name in (other.name, other.cli_name) or bench.cli_name == other.cli_name:
            raise ConfigError(f"benchmark {bench.name}: the name is taken by {other.task}")
    found[bench.name] = bench


def get(name: str) -> Benchmark:
    """The benchmark called ``name`` (its task option or its ``data``/``demo`` name)."""
    for b in benchmarks():
        if name in (b.name, b.cli_name):
            return b
    known = ", ".join(b.cli_name for b in benchmarks())
    raise ConfigError(f"no benchmark {name!r}; known: {known}")


def current_target(path: str) -> str:
    """Today's dotted path of a component recorded as ``path`` by an older release."""
    for b in benchmarks():
        if path in b.moved:
            return b.moved[path]
    return path


def extensions() -> tuple[Benchmark | Plugin, ...]:
    """Every benchmark, then every plugin: what adds schema nodes and config dirs."""
    return (*benchmarks(), *plugins())


def schema_nodes() -> Iterator[tuple[Benchmark | Plugin, str, Mapping[str, type]]]:
    """(extension, group, its schema nodes there) of every benchmark and plugin, in order: the
    one walk behind :func:`schemas` and ``run.configstore.schemas()``."""
    for ext in extensions():
        for group, nodes in ext.schemas.items():
            yield ext, group, nodes


def schemas(group: str) -> dict[str, type]:
    """The schema nodes of a config group contributed by every benchmark and plugin."""
    out: dict[str, type] = {}
    for _, g, nodes in schema_nodes():
        if g == group:
            out.update(nodes)
    return out


def config_dirs() -> list[tuple[str, str]]:
    """(name, Hydra config dir) of every benchmark and plugin that ships its own config groups;
    Hydra's search path gets them after eqa_runner's own tree
    (``hydra_plugins/eqa_runner_plugins``)."""
    return [(e.name, e.conf_dir) for e in extensions() if e.conf_dir]


def config_paths() -> list[Path]:
    """The config dirs of :func:`config_dirs` on the file system (``pkg://a.b`` is the
    directory of package ``a.b``; ``file://`` is stripped), for listings such as ``--help``."""
    return [path for _, path in named_config_paths()]


def named_config_paths() -> list[tuple[str, Path]]:
    """(owner name, directory) of :func:`config_dirs` on the file system."""
    out = []
    for name, d in config_dirs():
        if d.startswith("pkg://"):
            mod = d[len("pkg://") :].replace("/", ".").strip(".")
            spec = importlib.util.find_spec(mod)
            locations = list(spec.submodule_search_locations or []) if spec else []
            out += [(name, Path(p)) for p in locations[:1]]
        else:
            out.append((name, Path(d.removeprefix("file://"))))
    return out


def plugin_conflicts(nodes: Mapping[str, Mapping[str, type]] | None = None) -> list[str]:
    """One line per option file of a plugin that eqa_runner, a benchmark or an earlier plugin
    already has (``policy/fbe.yaml``): Hydra would use one of the two silently; and per option
    of a plugin whose component names itself as another's (its results would carry that
    label). ``nodes``: every group's schema nodes (``run.configstore.schemas()``)."""
    outside = third_party()
    owner: dict[str, str] = {}
    labels: dict[tuple[str, str], tuple[str, str]] = {}  # (group, name) -> (owner, option file)
    out = []
    for name, root, f in walk_options():
        rel = f.relative_to(root).as_posix()
        group = rel.rpartition("/")[0]
        if rel in owner and name in outside and owner[rel] != name:
            out.append(
                f"{outside.get(name)} {name}: its option file {rel} ({f}) shadows "
                f"{owner[rel]}'s; rename it in the plugin (a plugin adds options, it never "
                "replaces one)"
            )
        known = (nodes or {}).get(group) or schemas(group)
        label = component_name(f, known) if name in outside else None
        prev = labels.get((group, label or ""))
        if label and prev and prev[0] != name:
            out.append(
                f"{outside.get(name)} {name}: its option {rel} ({f}) names its component "
                f"{label}, the name of {prev[0]}'s {prev[1]}: its results would be labelled "
                f"as that one's; set name: {f.stem} in it"
            )
        owner.setdefault(rel, name)
        for n in {f.stem, label} - {None}:
            labels.setdefault((group, str(n)), (name, rel))
    return out


def third_party() -> dict[str, str]:
    """``name -> "plugin" / "benchmark"`` of every installed package's extension (entry points):
    what may add schema nodes, options and names, never replace one."""
    out = {
        b.name: "benchmark" for b in benchmarks() if not b.task.startswith(f"{BUILTIN_PACKAGE}.")
    }
    out.update({p.name: "plugin" for p in plugins()})
    return out


def component_name(option_file: Path, nodes: Mapping[str, type]) -> str | None:
    """The ``name`` a component built from ``option_file`` records (its results' label): the
    file's ``name:``, else the default of a schema node in its ``defaults`` (``base_fbe`` → fbe)."""
    import yaml

    try:
        data = yaml.safe_load(option_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # Hydra names a bad option file when it is used
    if not isinstance(data, dict) or "@package _global_" in option_file.read_text("utf-8"):
        return None  # a preset, not a component
    name = data.get("name")
    if isinstance(name, str):
        return None if "${" in name else name
    for entry in data.get("defaults") or []:
        node = nodes.get(entry) if isinstance(entry, str) else None
        default = getattr(getattr(node, "__dataclass_fields__", {}).get("name"), "default", None)
        if isinstance(default, str):
            return default
    return None


def walk_options(
    group: str | None = None, *, builtin_only: bool = False
) -> Iterator[tuple[str, Path, Path]]:
    """(owner, config tree, option file) of every option file: of one ``group`` (its
    ``*.yaml``), or of every group at any depth (``hydra/launcher/*.yaml``); eqa_runner's own
    ``conf/`` first, then every benchmark's and plugin's config dir (:func:`config_dirs`),
    sorted within each. ``builtin_only``: without installed packages' (:func:`third_party`).
    The one walk behind :func:`option_files`, :func:`plugin_conflicts` and the tests."""
    outside = third_party() if builtin_only else {}
    for owner, root in [("eqa_runner", CONF_DIR), *named_config_paths()]:
        if owner not in outside:
            files = (root / group).glob("*.yaml") if group else root.glob("*/**/*.yaml")
            yield from ((owner, root, f) for f in sorted(files))


def option_files(group: str, *, builtin_only: bool = False) -> list[Path]:
    """The option files of a config group (``policy`` → ``…/policy/*.yaml``): eqa_runner's own
    ``conf/`` and every benchmark's and plugin's config dir, in that order
    (:func:`walk_options`)."""
    return [f for _, _, f in walk_options(group, builtin_only=builtin_only)]
