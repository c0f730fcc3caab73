"""The overrides of ``python -m eqa_runner.rejudge``: parsed by Hydra's grammar, checked against
the run's recorded config and the typed ``run`` block (:mod:`eqa_runner.rejudge`)."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError


def check_run_values(run_overrides: list[tuple[str, Any]]) -> None:
    """``run.workers=0`` and the like: refused as the run's command line refuses them."""
    if not run_overrides:
        return
    from omegaconf.errors import OmegaConfBaseException

    from eqa_runner.run.config import RunConfig
    from eqa_runner.schema import check_node

    node = OmegaConf.structured(RunConfig)
    for key, value in run_overrides:
        try:
            OmegaConf.update(node, key.removeprefix("run."), value)
        except OmegaConfBaseException as e:
            raise ConfigError(f"{key}={value}: {str(e).splitlines()[0]}") from None
    check_node(node, "run")


def parsed_overrides(overrides: list[str]) -> list[tuple[str, Any]]:
    """(key, value) of each override, read by Hydra's own grammar as the run's command line
    reads it (``judge.model=`` is an empty string, ``judge.temperature=null`` is null)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser, out = OverridesParser.create(), []
    for text in overrides:
        try:
            o = parser.parse_override(text)
        except HydraException:  # its message quotes the value: name the key only
            key = text.split("=", 1)[0]
            raise ConfigError(
                f"{key}=…: the value does not parse as an override (Hydra's grammar); quote it, "
                f"e.g. '{key}=\"…\"'"
            ) from None
        if o.is_sweep_override():
            raise ConfigError(f"{text}: rejudge takes one value per key (rejudge once per value)")
        out.append((o.key_or_group, o.value()))
    return out


def unknown_key(cfg: DictConfig, key: str, *, adds: bool) -> str | None:
    """The refusal for an override of a key the run's judge does not have; ``+`` may add a key
    to a free-form map inside the judge (``+judge.extra_params.user=…``), never to the judge's
    own options (``+judge.foo=1``: nothing would read it, and the judge refuses it)."""
    import difflib

    parent, _, name = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if not OmegaConf.is_dict(node):
        return f"{key}: the run's config has no {parent or key} (its .hydra/config.yaml)"
    known = [str(k) for k in node]
    if name in known or (adds and parent != "judge" and OmegaConf.is_dict(node)):
        return None
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {parent}.{close[0]}?" if close else ""
    if adds:
        return f"+{key}: {parent} has no key {name}{hint} (the run's .hydra/config.yaml lists them)"
    return f"{key}: unknown key in the run's config{hint}"
