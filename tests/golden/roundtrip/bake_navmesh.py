"""Bakes `<scene>/<name>.basis.navmesh` beside each `<name>.basis.glb` under a scenes dir with
habitat-sim (the file EXPRESS-Bench's main.py and explore-eqa's run_vlm_exp.py load; HM3D ships
one per scene), for an agent of radius 0.1 m, height 1.5 m, climb 0.2 m (the project's sim
defaults). Used by the genuine files of express/genuine_mainpy/ and hmeqa/genuine/:

    python bake_navmesh.py <scenes dir>
"""

import sys
from pathlib import Path

import habitat_sim

for glb in sorted(Path(sys.argv[1]).rglob("*.basis.glb")):
    sim_cfg = habitat_sim.SimulatorConfiguration()
    sim_cfg.scene_id = str(glb)
    agent = habitat_sim.agent.AgentConfiguration()
    spec = habitat_sim.CameraSensorSpec()
    spec.uuid, spec.resolution = "color_sensor", [32, 32]
    agent.sensor_specifications = [spec]
    sim = habitat_sim.Simulator(habitat_sim.Configuration(sim_cfg, [agent]))
    settings = habitat_sim.NavMeshSettings()
    settings.set_defaults()
    settings.agent_radius, settings.agent_height, settings.agent_max_climb = 0.1, 1.5, 0.2
    assert sim.recompute_navmesh(sim.pathfinder, settings)
    out = glb.with_name(glb.name.replace(".glb", ".navmesh"))
    assert sim.pathfinder.save_nav_mesh(str(out))
    print(out.name, "navigable area", round(sim.pathfinder.navigable_area, 2), "m2")
    sim.close()
