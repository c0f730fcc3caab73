"""Field helpers for the typed config schemas, and the one validator that reads them.

A schema field says what it allows in its metadata: bounds (``ge``, ``gt``, ``le``, ``lt``),
``choices``, or ``named`` (a string that must not be blank). :func:`check_config` walks a
composed config beside its dataclass types and raises a one-line
:class:`~eqa_runner.errors.ConfigError` naming the key, the value and what is allowed
(``run.workers=0: must be >= 1``). Types and unknown keys are OmegaConf's part: they fail while
the config is composed. Nothing heavy is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, Node, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from eqa_runner.errors import ConfigError

_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def bounded(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> Any:
    """A field whose value (each element, for a list) must lie within the given bounds."""
    meta = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt)) if v is not None}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def one_of(default: Any, choices: Iterable[Any]) -> Any:
    """A field whose value must be one of ``choices`` (null too when the field is optional)."""
    return dataclasses.field(default=default, metadata={"choices": tuple(choices)})


def named(default: Any, what: str) -> Any:
    """A string field that must not be blank; ``what`` says, in words, what it names."""
    return dataclasses.field(default=default, metadata={"named": what})


def describe_rule(meta: Mapping[str, Any], optional: bool) -> str:
    """What a field allows, in words: ``>= 1 (or null)``, ``one of thread, async``."""
    if "named" in meta:
        text = str(meta["named"])
    elif "choices" in meta:
        text = "one of " + ", ".join(str(c) for c in meta["choices"])
    else:
        text = " and ".join(f"{_BOUNDS[k]} {meta[k]}" for k in _BOUNDS if k in meta)
    return f"{text} (or null)" if optional and text else text


def violates(value: Any, meta: Mapping[str, Any]) -> bool:
    """Whether ``value`` (or any element of a list value) breaks the field's rule."""
    if value is None:
        return False  # the field's type decides whether null is allowed
    if isinstance(value, (list, tuple)):
        return any(violates(v, meta) for v in value)
    if "named" in meta:
        return not str(value).strip()
    if "choices" in meta and value not in meta["choices"]:
        return True
    checks = {
        "ge": lambda b: value >= b,
        "gt": lambda b: value > b,
        "le": lambda b: value <= b,
        "lt": lambda b: value < b,
    }
    try:
        return not all(checks[k](meta[k]) for k in _BOUNDS if k in meta)
    except TypeError:  # not a number: the field's type reports it
        return False


def check_config(cfg: DictConfig) -> None:
    """Check every schema field with a rule in ``cfg`` (``hydra`` excluded); raise the first.

    Values typed directly are checked before values that come from an interpolation, so
    ``sim.width=-1`` is reported as itself, not as the ``${sim.width}`` that copies it.
    """
    _raise_first(
        [p for key in cfg if key != "hydra" for p in _problems(cfg._get_node(key), str(key))]
    )


def check_node(node: DictConfig, path: str) -> None:
    """:func:`check_config` for one node (a component's config), its keys named ``path.key``."""
    _raise_first(_problems(node, path))


def _raise_first(found: list[tuple[bool, str]]) -> None:
    found.sort(key=lambda p: p[0])  # stable: direct values first, in config order
    if found:
        raise ConfigError(found[0][1])


def _problems(node: Any, path: str) -> list[tuple[bool, str]]:
    """(comes from an interpolation, message) for each value that breaks its field's rule."""
    if not isinstance(node, DictConfig):
        return []
    typ = OmegaConf.get_type(node)
    rules = {f.name: f for f in dataclasses.fields(typ)} if dataclasses.is_dataclass(typ) else {}
    out: list[tuple[bool, str]] = []
    for key in node:
        child = node._get_node(key)
        where = f"{path}.{key!s}"
        if isinstance(child, DictConfig):
            out += _problems(child, where)
            continue
        f = rules.get(str(key))
        if f is None or not f.metadata or child is None:
            continue
        try:
            value = (
                OmegaConf.to_container(child, resolve=True)
                if isinstance(child, ListConfig)
                else node[key]
            )
        except OmegaConfBaseException:
            continue  # an interpolation only the job can resolve: checked where it is used
        if violates(value, f.metadata):
            rule = describe_rule(f.metadata, bool(child._is_optional()))
            out.append((_copied(child), f"{where}={_show(value)}: must be {rule}"))
    return out


def _copied(node: Any) -> bool:
    """Whether the value (or an element of a list value) is an interpolation."""
    if isinstance(node, ListConfig):
        items = (node._get_node(i) for i in range(len(node)))
        return any(isinstance(item, Node) and item._is_interpolation() for item in items)
    return bool(node._is_interpolation())


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return "null" if value is None else str(value)
