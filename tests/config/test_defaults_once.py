"""Every default is written once: in its group's schema. A YAML option holds its ``_target_`` and
only what differs from its schema; an experiment preset only what differs from the options it
picks. Constructors read ``self.config`` (eqa_runner/configured.py): none has keyword defaults
of its own to drift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf

from eqa_runner.registry import option_files
from eqa_runner.run.configstore import schemas
from eqa_runner.schema import check_config
from tests.conftest import CONF

SCHEMAS = schemas()

GROUPS = ("task", "policy", "judge", "llm", "sim")


def _options(group: str) -> list[Path]:
    return option_files(group, builtin_only=True)


def _schema_of(group: str, raw: dict[str, Any]) -> type:
    names = [d for d in raw.get("defaults", []) if isinstance(d, str) and d in SCHEMAS[group]]
    assert len(names) == 1, f"{group} option must name one schema node of {sorted(SCHEMAS[group])}"
    return SCHEMAS[group][names[0]]


def _repeats(raw: Any, default: Any, path: str) -> list[str]:
    """Keys of ``raw`` (a YAML mapping) whose value equals the schema's ``default`` there."""
    if isinstance(raw, dict) and isinstance(default, dict):
        return [
            r
            for k, v in raw.items()
            if k not in ("defaults", "_target_") and k in default
            for r in _repeats(v, default[k], f"{path}.{k}")
        ]
    return [f"{path}={raw!r}"] if raw == default else []


OPTIONS = [(g, p) for g in GROUPS for p in _options(g)]


@pytest.mark.parametrize("group, path", OPTIONS, ids=[f"{g}/{p.stem}" for g, p in OPTIONS])
def test_no_option_repeats_its_schema_default(group, path):
    raw = yaml.safe_load(path.read_text()) or {}
    schema = _schema_of(group, raw)
    default = OmegaConf.to_container(OmegaConf.structured(schema), resolve=False)
    if group != "llm":  # model presets are settings, not objects to build
        assert "_target_" in raw, f"{group}/{path.stem}: name the _target_ in the YAML"
    assert _repeats(raw, default, group) == [], f"{group}/{path.stem} repeats its schema's default"


EXPERIMENTS = _options("experiment")


def _leaves(raw: Any, path: str = "") -> list[str]:
    if isinstance(raw, dict):
        return [leaf for k, v in raw.items() for leaf in _leaves(v, f"{path}.{k}".lstrip("."))]
    return [path]


@pytest.mark.parametrize("path", EXPERIMENTS, ids=[p.stem for p in EXPERIMENTS])
def test_no_preset_repeats_what_its_options_give(compose_cfg, path):
    raw = yaml.safe_load(path.read_text()) or {}
    picks = [
        f"{group.split(' ')[-1].lstrip('/')}={choice}"
        for entry in raw.get("defaults", [])
        if isinstance(entry, dict)
        for group, choice in entry.items()
    ]
    with_preset = compose_cfg([f"experiment={path.stem}"])
    without = compose_cfg(picks)
    check_config(with_preset)
    # hydra.* (a preset's run dir) is overridden by compose_cfg itself: not comparable here
    keys = _leaves({k: v for k, v in raw.items() if k not in ("defaults", "hydra")})
    same = [k for k in keys if OmegaConf.select(without, k) == OmegaConf.select(with_preset, k)]
    assert same == [], f"experiment={path.stem} repeats what {picks} already give"


def test_config_yaml_sets_no_group_values():
    raw = yaml.safe_load((CONF / "config.yaml").read_text())
    assert not set(raw) & {*GROUPS, "run"}, "group values belong in the schemas / options"
