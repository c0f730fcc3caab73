"""Issue 33, item 6: a plugin cannot shadow. A plugin's schema node or option file that a
built-in (or another plugin) already has is refused at start in one line naming both (a plugin
replaced ``policy=fbe``'s schema silently and the results were still labelled ``policy=fbe``);
a broken plugin is one line for every command, ``--help`` included; ``doctor`` lists plugins
with their status."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from eqa_runner import registry
from eqa_runner.doctor import check_plugins
from eqa_runner.errors import ConfigError
from eqa_runner.policies.config import SCHEMAS as POLICY_SCHEMAS
from eqa_runner.run.configstore import register_configs, schemas
from eqa_runner.schema import bounded
from tests.reliability import tally
from tests.reliability.conftest import run_cli
from tests.test_plugins import FakeEntryPoint, installed  # noqa: F401 - the fixture

FBE_NODE = next(n for n in POLICY_SCHEMAS if "fbe" in n)


@dataclass
class StepRatioHalf(POLICY_SCHEMAS[FBE_NODE]):  # type: ignore[misc,valid-type]
    step_ratio: float = bounded(0.5, gt=0)


def _plugin(name: str, tmp_path: Path, option: str | None = None, schemas=None) -> registry.Plugin:
    pkg = tmp_path / name
    (pkg / "conf" / "policy").mkdir(parents=True)
    if option:
        (pkg / "conf" / "policy" / f"{option}.yaml").write_text("_target_: x.Y\n")
    return registry.Plugin(name=name, conf_dir=f"file://{pkg / 'conf'}", schemas=schemas or {})


def test_a_plugin_schema_node_shadowing_a_builtin_is_refused_naming_both(installed, tmp_path):  # noqa: F811 - the fixture
    p = _plugin("lab", tmp_path, schemas={"policy": {FBE_NODE: StepRatioHalf}})
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("lab", "lab:P", p)]})
    tally.add("bad inputs tried")
    with pytest.raises(ConfigError) as e:
        schemas()
    msg = str(e.value)
    tally.add("runs mislabelled", int("shadows" not in msg))
    assert "\n" not in msg and f"plugin lab: its schema node policy/{FBE_NODE}" in msg
    assert "shadows eqa_runner's" in msg


def test_two_plugins_with_one_schema_node_are_refused_naming_both(installed, tmp_path):  # noqa: F811 - the fixture
    @dataclass
    class A:
        x: int = 1

    @dataclass
    class B:
        x: int = 2

    a = _plugin("lab_a", tmp_path, schemas={"policy": {"base_shared": A}})
    b = _plugin("lab_b", tmp_path, schemas={"policy": {"base_shared": B}})
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("lab_a", "a:P", a),
                                                   FakeEntryPoint("lab_b", "b:P", b)]})  # fmt: skip
    with pytest.raises(ConfigError, match="plugin lab_b: its schema node policy/base_shared "
                                          "shadows lab_a's"):  # fmt: skip
        schemas()


def test_a_plugin_option_file_shadowing_a_builtin_is_refused_at_start(installed, tmp_path):  # noqa: F811 - the fixture
    p = _plugin("lab", tmp_path, option="fbe")
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("lab", "lab:P", p)]})
    tally.add("bad inputs tried")
    with pytest.raises(ConfigError) as e:
        register_configs()
    assert "plugin lab: its option file policy/fbe.yaml" in str(e.value)
    assert "shadows eqa_runner's" in str(e.value)
    lines, ok = check_plugins()
    assert not ok and any("lab = lab:P" in ln and ln.endswith(": OK") for ln in lines)
    assert any("policy/fbe.yaml" in ln for ln in lines)


def test_a_plugin_adding_options_is_not_a_conflict(installed, tmp_path):  # noqa: F811 - the fixture
    p = _plugin("lab", tmp_path, option="my_new_policy")
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [FakeEntryPoint("lab", "lab:P", p)]})
    assert registry.plugin_conflicts() == []
    lines, ok = check_plugins()
    assert ok and lines == ["lab = lab:P (eqa_runner.plugins, from lab-dist): OK"]


def test_doctor_lists_a_broken_plugin_as_broken(installed):  # noqa: F811 - the fixture
    bad = FakeEntryPoint("broken", "broken_mod:PLUGIN", error=ImportError("no torch_scatter"))
    installed({registry.PLUGIN_ENTRY_POINT_GROUP: [bad]})
    lines, ok = check_plugins()
    assert not ok
    assert lines == ["broken = broken_mod:PLUGIN (eqa_runner.plugins, from broken-dist): BROKEN: "
                     "ImportError: no torch_scatter"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--help"], ["--cfg", "job"], ["llm=offline"]])
def test_a_broken_plugin_is_one_line_for_every_command(tmp_path, args):
    """A broken entry point was a traceback for the run command and ``--help``."""
    dist = tmp_path / "broken_plug-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[eqa_runner.plugins]\nbroken = broken_plug_mod:P\n")
    (tmp_path / "broken_plug_mod.py").write_text("raise ImportError('no module torch_scatter')\n")
    from tests.reliability.conftest import cli_env

    env = cli_env(PYTHONPATH=str(tmp_path))
    res = run_cli(args, env=env, timeout=60)
    tally.add("bad inputs tried")
    assert res.returncode == 2, res.stderr[-1500:]
    assert res.stderr.startswith("error: entry point broken = broken_plug_mod:P")
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert sys.executable  # the project's interpreter ran it
