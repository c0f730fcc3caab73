"""conf/sim/*.yaml compose with the typed schema and instantiate cheaply."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate

from eqa_runner.run.configstore import register_configs as register_sim_configs

CONF = Path(__file__).resolve().parents[2] / "eqa_runner" / "conf"


@pytest.mark.parametrize("name", ["mesh", "habitat"])
def test_sim_yaml_instantiates(name, tmp_path):
    register_sim_configs()
    GlobalHydra.instance().clear()
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / f"{name}.yaml").write_text((CONF / "sim" / f"{name}.yaml").read_text())
    (tmp_path / "config.yaml").write_text(
        f"defaults:\n  - sim: {name}\n  - _self_\nrun:\n  seed: 7\n"
    )
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["sim.width=320"])
    sim = instantiate(cfg.sim)
    assert sim.sensor.width == 320 and sim.sensor.height == 512
    assert sim.sensor.hfov_deg == 90.0 and sim.sensor.sensor_height_m == 1.5
    assert sim.config.seed == 7
    assert type(sim).__name__ == {"mesh": "MeshSimulator", "habitat": "HabitatSimulator"}[name]
    sim.close()
    GlobalHydra.instance().clear()
