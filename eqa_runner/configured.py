"""The constructor contract of a configured component: ``Cls(config=None, **overrides)``.

A task, judge, protocol (and every other class that mixes in :class:`Configured`) names its
schema dataclass in ``config_class`` and receives one object of it as ``self.config``:

* from a run, :func:`eqa_runner.run.build.build` hands it the composed config node (``cfg.task``);
* from a test or a library user, ``config`` is a schema object or None (the schema's defaults),
  and ``overrides`` are schema field names (``AEQATask(data_dir="d", split="all")``).

Either way the result is checked by the one checker (:func:`eqa_runner.schema.check_node`), so a
value out of its range, a wrong type, a missing mandatory key or an unknown override name is the
usual one-line :class:`~eqa_runner.errors.ConfigError` (``task.split=val: must be one of all``).
A constructor reads ``self.config`` and checks nothing the schema declares. Nothing heavy is
imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from eqa_runner.errors import ConfigError
from eqa_runner.schema import check_node


class Configured:
    """Mixin of every component built from a typed schema (see the module docstring); a
    schema with a ``name`` key names the component (``self.name``).

    A base class sets ``config_key`` (where its keys sit in the composed config: ``task``,
    ``judge`` ...) and ``config_context`` (what the schema's interpolations outside its own node,
    ``${sim._target_}`` or ``${sim.width}``, resolve to when it is built without Hydra)."""

    config_class: ClassVar[type[Any]]
    # schema keys whose node is another component's config (an exploration policy's
    # ``protocol``): the run builds each (eqa_runner.run.build) and passes the object as that
    # keyword-only argument; the constructor takes it beside ``config``
    components: ClassVar[dict[str, type]] = {}
    config: Any
    name: str

    def __init__(self, config: Any = None, **overrides: Any) -> None:
        self.config = typed_config(type(self), config, overrides)
        if hasattr(self.config, "name"):  # the record's and the summary's name of it
            self.name = str(self.config.name)


def typed_config(cls: type, config: Any, overrides: Mapping[str, Any]) -> Any:
    """``cls.config_class``'s object from ``config`` (None, a schema object, or a config node)
    and ``overrides`` (schema field names), checked by the one checker. A config of a subclass
    of the schema (an object, or a node typed with it) keeps its type and its extra keys."""
    key: str = getattr(cls, "config_key", "component")
    schema = _schema_of(cls.config_class, config)  # type: ignore[attr-defined]
    names = {f.name for f in dataclasses.fields(schema)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        known = ", ".join(sorted(names - {"_target_", "_partial_"}))
        raise ConfigError(f"{key}.{unknown[0]}: not a key of {cls.__name__} (its keys: {known})")
    node = _merged(_node(schema, config, key), overrides, key)
    if "_target_" in names and OmegaConf.is_missing(node, "_target_"):
        node._target_ = f"{cls.__module__}.{cls.__qualname__}"
    context = dict(getattr(cls, "config_context", {}))
    head, *rest = key.split(".")  # a nested component: policy.proposer
    tree: Any = node
    for part in reversed(rest):
        tree = {part: tree}
    root = OmegaConf.create({**{k: v for k, v in context.items() if k != head}, head: tree})
    sub = OmegaConf.select(root, key)
    check_node(sub, key)
    try:
        return OmegaConf.to_object(sub)
    except MissingMandatoryValue as e:
        raise ConfigError(
            f"{key}.{e.key}: not set; give it in the config or as {cls.__name__}({e.key}=...)"
        ) from None
    except OmegaConfBaseException as e:
        raise ConfigError(_one_line(key, e)) from None


def _schema_of(schema: type, config: Any) -> type:
    """``schema``, or the subclass of it that ``config`` (an object or a typed node) is of."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        typ: Any = type(config)
    else:
        typ = OmegaConf.get_type(config) if isinstance(config, DictConfig) else None
    return typ if isinstance(typ, type) and issubclass(typ, schema) else schema


def _node(schema: type, config: Any, key: str) -> DictConfig:
    """A structured node of ``schema`` (or of the subclass the config node is typed with)."""
    if config is None:
        return OmegaConf.structured(schema)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        if not isinstance(config, schema):
            raise ConfigError(f"{key}: a {type(config).__name__} is not a {schema.__name__}")
        return OmegaConf.structured(config)
    try:
        data = (
            OmegaConf.to_container(config, resolve=True)
            if isinstance(config, DictConfig)
            else dict(config)
        )
    except OmegaConfBaseException as e:
        raise ConfigError(_one_line(key, e)) from None
    return _merged(OmegaConf.structured(schema), data, key)


def _merged(node: DictConfig, values: Any, key: str) -> DictConfig:
    if not values:
        return node
    try:
        merged = OmegaConf.merge(node, values)
    except OmegaConfBaseException as e:
        raise ConfigError(_one_line(key, e)) from None
    assert isinstance(merged, DictConfig)
    return merged


def _one_line(key: str, e: OmegaConfBaseException) -> str:
    where = f"{key}.{e.full_key}" if getattr(e, "full_key", None) else key
    return f"{where}: {str(e).splitlines()[0]}"
