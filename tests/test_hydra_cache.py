"""The suite's Hydra cache (tests/helpers/hydra_cache.py) changes no composed config: the same
result with and without it, a changed file read anew, the ConfigStore left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from tests.helpers import hydra_cache

CASES = [[], ["task=express", "policy=fbe"], ["experiment=hmeqa_fbe", "llm=offline"]]


def test_installed_for_this_hydra() -> None:
    assert hydra_cache.install(), "Hydra's compose changed: update tests/helpers/hydra_cache.py"


@pytest.mark.parametrize("overrides", CASES, ids=lambda o: " ".join(o) or "defaults")
def test_a_compose_is_the_same_with_and_without(compose_cfg, overrides) -> None:
    cached = OmegaConf.to_yaml(compose_cfg(overrides))
    store = OmegaConf.to_yaml(ConfigStore.instance().load("run/schema.yaml").node)
    try:
        hydra_cache.uninstall()
        plain = OmegaConf.to_yaml(compose_cfg(overrides))
    finally:
        hydra_cache.install()
    assert cached == plain
    assert OmegaConf.to_yaml(ConfigStore.instance().load("run/schema.yaml").node) == store


def _compose(conf: Path):
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
            return compose("app", overrides=["+extra=1"])
    finally:
        GlobalHydra.instance().clear()


def test_a_changed_file_is_read_again_and_a_load_is_a_copy(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text("a: 1\nnested: {b: [1, 2]}\n")
    parsed = len(hydra_cache._PARSED)
    first = _compose(tmp_path)
    assert len(hydra_cache._PARSED) == parsed + 1  # parsed through the cache
    first.nested.b.append(3)  # a caller's change does not reach the next compose
    again = OmegaConf.to_container(_compose(tmp_path))
    assert again == {"a": 1, "nested": {"b": [1, 2]}, "extra": 1}
    assert len(hydra_cache._PARSED) == parsed + 1  # the same text: not parsed again
    (tmp_path / "app.yaml").write_text("a: 2\nnested: {b: [1, 2]}\n")
    assert _compose(tmp_path).a == 2
