"""The benchmark registry: what ``data``, ``demo``, ``report``, ``--help`` and the config store
enumerate, instead of naming benchmarks.

A benchmark is one package that exposes a :class:`Benchmark` descriptor named ``BENCHMARK``:
the built-ins are the sub-packages of ``eqa_runner/benchmarks/``; an installed package adds
its own through the entry-point group :data:`ENTRY_POINT_GROUP` (the entry point names the
descriptor, ``my_pkg.bench:BENCHMARK``). The descriptor holds its schemas (cheap dataclasses)
and dotted paths for everything heavy (task class, data check, demo writer), resolved on use,
so listing benchmarks imports no numpy, simulator or model client.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from eqa_runner.errors import ConfigError

ENTRY_POINT_GROUP = "eqa_runner.benchmarks"
BUILTIN_PACKAGE = "eqa_runner.benchmarks"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: its config option, schemas and where its parts live.

    ``data`` names a module with ``add_check_args(parser)`` and ``check(args) -> int`` (and,
    when the benchmark can be downloaded, ``add_fetch_args(parser)`` and ``fetch(args) ->
    int``); ``demo`` a function ``(out_dir: Path, seed: int) -> None`` writing a valid
    ``task.data_dir``. ``cli_name`` is the benchmark's name in ``data`` and ``demo`` commands.
    """

    name: str  # the task option (``task=<name>``, conf/task/<name>.yaml)
    title: str  # one line for --help and reports
    task: str  # dotted path of the Task class
    judge: str  # the judge option the task selects
    schemas: Mapping[str, Mapping[str, type]] = field(default_factory=dict)  # group -> nodes
    protocol: str | None = None  # the exploration protocol option the task selects, if any
    data: str | None = None  # dotted module path of the data check (and fetch)
    demo: str | None = None  # dotted path of the demo writer
    docs: str | None = None  # the benchmark's docs page (repository relative)
    conf_dir: str | None = None  # a Hydra config dir of its groups (plugins); None: built in
    short: str | None = None  # the name in ``data``/``demo`` commands; default ``name``

    @property
    def cli_name(self) -> str:
        return self.short or self.name

    def resolve(self, what: str) -> Any:
        """The object one of the dotted-path fields (``task``, ``data``, ``demo``) names."""
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


@lru_cache(maxsize=1)
def benchmarks() -> tuple[Benchmark, ...]:
    """Every benchmark: the built-ins, then those of installed packages (entry points)."""
    found: dict[str, Benchmark] = {}
    pkg = importlib.import_module(BUILTIN_PACKAGE)
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.ispkg:
            _add(found, importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}").BENCHMARK)
    for ep in _entry_points():
        bench = ep.load()
        if not isinstance(bench, Benchmark):
            raise ConfigError(
                f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}) is a "
                f"{type(bench).__name__}, not an eqa_runner.registry.Benchmark"
            )
        _add(found, bench)
    return tuple(found.values())


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


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


def schemas(group: str) -> dict[str, type]:
    """The schema nodes of a config group contributed by every benchmark."""
    out: dict[str, type] = {}
    for b in benchmarks():
        out.update(b.schemas.get(group, {}))
    return out
