"""One walk over the config trees and one over the extensions' schema nodes (issue 32, item 4):
``option_files``, ``plugin_conflicts`` and the tests' option lists come from
``registry.walk_options``; ``registry.schemas`` and ``run.configstore.schemas`` from
``registry.schema_nodes``."""

from __future__ import annotations

from eqa_runner import registry
from eqa_runner.run import configstore
from tests.conftest import CONF, option_names


def test_option_files_of_a_group_are_the_walks_files_in_it() -> None:
    every = list(registry.walk_options())
    assert every[0][0] == "eqa_runner" and every[0][1] == CONF  # eqa_runner's own tree first
    groups = {f.parent.relative_to(root).as_posix() for _, root, f in every}
    assert {"policy", "task", "experiment", "hydra/launcher"} <= groups
    for group in groups:
        in_group = [f for _, root, f in every if f.parent == root / group]
        assert registry.option_files(group) == in_group, group


def test_builtin_only_leaves_out_installed_packages_and_the_tests_use_it() -> None:
    outside = registry.third_party()
    every = list(registry.walk_options())
    builtin = list(registry.walk_options(builtin_only=True))
    assert builtin == [w for w in every if w[0] not in outside]
    for group in ("task", "policy", "experiment"):
        files = registry.option_files(group, builtin_only=True)
        assert option_names(group) == sorted(f.stem for f in files)
        assert all(registry.CONF_DIR in f.parents or "benchmarks" in f.parts for f in files)


def test_both_schema_tables_come_from_the_one_walk() -> None:
    walked: dict[str, dict[str, type]] = {}
    for ext, group, nodes in registry.schema_nodes():
        assert ext in registry.extensions()
        walked.setdefault(group, {}).update(nodes)
    every = configstore.schemas()
    for group, nodes in walked.items():
        assert registry.schemas(group) == nodes
        assert every[group].items() >= nodes.items()
    for group, nodes in configstore.SCHEMAS.items():
        assert every[group].items() >= nodes.items()
