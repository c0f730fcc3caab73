"""Plugins through entry points: an installed package adds benchmarks and components (with their
config groups) that compose, list and check like the built-ins; a broken one is one line."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin

from eqa_runner import registry
from eqa_runner.cli_help import group_options, render_help
from eqa_runner.errors import ConfigError
from eqa_runner.policies.config import PolicyConfig
from eqa_runner.schema import bounded
from tests.conftest import ROOT

# the registry's scan order
BUILTIN_BENCHMARKS = ("aeqa", "express", "hmeqa", "mt_hm3d", "openeqa_em", "vsibench")


@dataclass
class EchoPolicyConfig(PolicyConfig):
    name: str = "echo"
    repeat: int = bounded(1, ge=1)


class FakeEntryPoint:
    def __init__(self, name: str, value: str, obj=None, error: Exception | None = None) -> None:
        self.name, self.value, self.obj, self.error = name, value, obj, error
        self.dist = type("Dist", (), {"name": f"{name}-dist"})()

    def load(self):
        if self.error is not None:
            raise self.error
        return self.obj


@pytest.fixture
def installed(monkeypatch):
    """Pretend entry points are installed: ``installed({group: [FakeEntryPoint, ...]})``."""

    def install(points: dict[str, list[FakeEntryPoint]]) -> None:
        monkeypatch.setattr(registry, "_entry_points", lambda group=registry.ENTRY_POINT_GROUP:
                            list(points.get(group, [])))  # fmt: skip
        registry.benchmarks.cache_clear()
        registry.plugins.cache_clear()

    yield install
    registry.benchmarks.cache_clear()
    registry.plugins.cache_clear()


def _lab_package(tmp_path: Path) -> Path:
    """A component package on sys.path: a policy module and its conf dir."""
    pkg = tmp_path / "echo_lab"
    (pkg / "conf" / "policy").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "conf" / "__init__.py").write_text("")
    (pkg / "echo.py").write_text(
        textwrap.dedent("""
        from eqa_runner.policies.base import Policy
        from eqa_runner.types import Prediction

        class Echo(Policy):
            def __init__(self, name="echo", repeat=1):
                self.name, self.repeat = name, repeat

            async def predict(self, episode, ctx):
                return Prediction(answer=" ".join([episode.question] * self.repeat))
    """)
    )
    (pkg / "conf" / "policy" / "echo.yaml").write_text(
        "defaults:\n  - base_echo\n  - _self_\n\n_target_: echo_lab.echo.Echo\n"
    )
    return pkg


def test_a_plugin_adds_a_policy_option_with_its_schema(installed, compose_cfg, tmp_path,
                                                       monkeypatch):  # fmt: skip
    _lab_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = registry.Plugin(
        name="echo_lab",
        conf_dir="pkg://echo_lab.conf",
        schemas={"policy": {"base_echo": EchoPolicyConfig}},
    )
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("echo_lab", "x:P", plugin)]})
    from eqa_runner.run.configstore import register_configs

    register_configs()  # as at start-up, with the entry point installed
    assert ("echo_lab", "pkg://echo_lab.conf") in registry.config_dirs()
    # after the built-in benchmarks' own conf dirs, found the same way
    builtin = [ROOT / "eqa_runner" / "benchmarks" / b / "conf" for b in BUILTIN_BENCHMARKS]
    assert registry.config_paths() == [*builtin, tmp_path / "echo_lab" / "conf"]
    assert "echo" in group_options("policy") and "policy: blind, echo," in render_help()
    cfg = compose_cfg(["policy=echo", "policy.repeat=2"])
    assert cfg.policy._target_ == "echo_lab.echo.Echo" and cfg.policy.repeat == 2
    with pytest.raises(Exception, match="repeat"):  # typed: its schema is in the ConfigStore
        compose_cfg(["policy=echo", "policy.repeats=2"])


def test_a_broken_plugin_is_one_line_naming_it(installed):
    bad = FakeEntryPoint("broken", "broken_pkg:BENCHMARK", error=ImportError("no numpy 3"))
    installed({registry.ENTRY_POINT_GROUP: [bad]})
    with pytest.raises(ConfigError) as e:
        registry.benchmarks()
    msg = str(e.value)
    assert "\n" not in msg and "broken = broken_pkg:BENCHMARK" in msg and "broken-dist" in msg
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("odd", "odd:P", obj=42)]})
    with pytest.raises(ConfigError, match="is a int, not an eqa_runner.registry.Plugin"):
        registry.plugins()


def _search_path_plugin() -> SearchPathPlugin:
    (cls,) = [c for c in Plugins.instance().discover(SearchPathPlugin)
              if c.__module__.startswith("hydra_plugins.eqa_runner_plugins")]  # fmt: skip
    return cls()


def test_the_search_path_plugin_is_found_and_leaves_other_apps_alone(installed):
    from hydra._internal.config_search_path_impl import ConfigSearchPathImpl

    plugin = registry.Plugin(name="lab", conf_dir="pkg://lab_conf_pkg.conf")
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("lab", "lab:P", plugin)]})
    sp_plugin = _search_path_plugin()

    def paths(main: str) -> list[str]:
        sp: ConfigSearchPath = ConfigSearchPathImpl()
        sp.append("main", main)
        sp_plugin.manipulate_search_path(sp)
        return [e.path for e in sp.get_path()]

    assert paths("file:///some/other/app/conf") == ["file:///some/other/app/conf"]
    ours = f"file://{ROOT / 'eqa_runner' / 'conf'}"
    builtin = [f"pkg://eqa_runner.benchmarks.{b}.conf" for b in BUILTIN_BENCHMARKS]
    assert paths(ours) == [ours, *builtin, "pkg://lab_conf_pkg.conf"]
    assert paths("pkg://eqa_runner.conf")[-1] == "pkg://lab_conf_pkg.conf"


def test_the_core_names_no_plugin():
    """The MP3D-EQA plugin lives in plugins/: no line of the core package or its Hydra plugins
    names it (the registry finds it through its entry point)."""
    offenders = [
        f"{p.relative_to(ROOT)}:{i}"
        for base in ("eqa_runner", "hydra_plugins")
        for p in sorted((ROOT / base).rglob("*"))
        if p.is_file() and p.suffix in (".py", ".yaml", ".txt", ".j2", ".md")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "mp3d" in line.lower()
    ]
    assert not offenders, offenders
