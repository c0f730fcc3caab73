"""Typed schemas of the ``sim`` config group (registered in Hydra's ConfigStore)."""

from __future__ import annotations

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore


@dataclass
class SimConfig:
    """Keys shared by every backend (sensor and agent body). The defaults are one set for both
    backends, those of upstream EXPRESS-Bench (habitat-sim's default agent: height 1.5 m,
    radius 0.1 m; camera 512x512, HFOV 90 deg, 1.5 m high, no tilt)."""

    _target_: str = "eqa_runner.sim.mesh.MeshSimulator"
    width: int = 512
    height: int = 512
    hfov_deg: float = 90.0
    sensor_height_m: float = 1.5
    tilt_deg: float = 0.0
    agent_radius: float = 0.1
    agent_height: float = 1.5
    agent_max_climb: float = 0.2
    seed: int = 0


@dataclass
class MeshSimConfig(SimConfig):
    """open3d raycasting backend (``sim=mesh``)."""

    cell_size: float = 0.05  # navigable grid resolution (m)
    snap_max_dist: float = 2.0  # snap_point gives NaN beyond this horizontal distance (m)
    up_axis: str = "auto"  # auto: .glb/.gltf z up (HM3D, as habitat-sim), others y | y | z
    cull_back_faces: bool = True  # single-sided triangles, as habitat-sim renders them
    interpolate_colors: bool = True  # barycentric vertex colours (else flat face colours)
    shading_kernel: str = "numba"  # numba: one compiled pass per frame | numpy (same frames)


@dataclass
class HabitatSimConfig(SimConfig):
    """habitat-sim backend (``sim=habitat``; 0.3.x and 0.2.x)."""

    _target_: str = "eqa_runner.sim.habitat.HabitatSimulator"
    gpu_device_id: int = 0
    scene_dataset_config: str | None = None  # default: *.scene_dataset_config.json near scenes
    enable_physics: bool = False
    max_tries: int = 100  # get_random_navigable_point_near attempts
    scene_lighting: str = "auto"  # auto: glTF unlit (HM3D), .ply lit | none | default


def register_sim_configs() -> None:
    """Make ``sim/base_sim``, ``sim/base_mesh`` and ``sim/base_habitat`` available."""
    cs = ConfigStore.instance()
    cs.store(group="sim", name="base_sim", node=SimConfig)
    cs.store(group="sim", name="base_mesh", node=MeshSimConfig)
    cs.store(group="sim", name="base_habitat", node=HabitatSimConfig)
