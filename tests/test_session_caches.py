"""The suite's session caches change no result: the Hydra cache (tests/helpers/hydra_cache.py)
composes the same config as Hydra, reads a changed file anew and leaves the ConfigStore as it
was; the navmesh cache (tests/helpers/navmesh_cache.py) gives each caller its own copy of the
span field Recast builds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from eqa_runner.demo.mesh_builder import MeshBuilder
from eqa_runner.sim import mesh, recast
from tests.helpers import hydra_cache, navmesh_cache

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


def test_a_span_field_is_built_once_and_each_caller_gets_its_own_copy() -> None:
    assert mesh.build_spans is navmesh_cache.build_spans_once
    mb = MeshBuilder()
    mb.box((0.0, -0.1, 0.0), (3.0, 0.0, 2.0), (0.6, 0.6, 0.6))
    v, f, _, _ = mb.arrays()
    s = recast.NavSettings()
    built = len(navmesh_cache._BUILT)
    first = navmesh_cache.build_spans_once(v, f, s)
    first.walkable[:] = False  # a caller's change does not reach the next one
    second = navmesh_cache.build_spans_once(v, f, s)
    assert len(navmesh_cache._BUILT) == built + 1
    fresh = recast.build_spans(v, f, s)
    for name in ("floor", "ceil", "walkable", "links"):
        assert np.array_equal(
            getattr(second, name), getattr(fresh, name), equal_nan=name != "walkable"
        )
    assert second.walkable.any()
    navmesh_cache.build_spans_once(v + 1.0, f, s)  # another mesh: built
    assert len(navmesh_cache._BUILT) == built + 2
