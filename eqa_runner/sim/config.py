"""Typed schemas of the ``sim`` config group (registered in Hydra's ConfigStore).

The simulator constructors take their defaults from here; nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import MISSING as DC_MISSING
from dataclasses import dataclass, fields
from typing import Any

from omegaconf import MISSING

from eqa_runner.schema import bounded, one_of

UP_AXES = ("auto", "y", "z")
SCENE_LIGHTING = ("auto", "none", "default")


@dataclass
class SimConfig:
    """Keys shared by every backend (sensor and agent body). The defaults are one set for both
    backends, upstream's (habitat-sim's default agent: height 1.5 m,
    radius 0.1 m; camera 512x512, HFOV 90 deg, 1.5 m high, no tilt)."""

    _target_: str = MISSING
    width: int = bounded(512, ge=1)  # pixels
    height: int = bounded(512, ge=1)  # pixels
    hfov_deg: float = bounded(90.0, gt=0, lt=180)
    sensor_height_m: float = bounded(1.5, gt=0)  # camera above the agent base
    tilt_deg: float = bounded(0.0, ge=-90, le=90)  # camera pitch, negative looks down
    # camera ahead of the agent base along its heading, metres (explore-eqa: 0.75, where
    # explore-eqa's pitched body carries the sensor)
    sensor_forward_m: float = bounded(0.0, ge=-5, le=5)
    agent_radius: float = bounded(0.1, gt=0)
    agent_height: float = bounded(1.5, gt=0)
    agent_max_climb: float = bounded(0.2, ge=0)
    # navigable area, Recast's settings as habitat-sim's NavMeshSettings names them (both
    # backends; habitat-sim's defaults except the 5 cm voxel height, so floors are not lifted)
    agent_max_slope: float = bounded(45.0, ge=0, lt=90)  # degrees
    cell_size: float = bounded(0.05, gt=0)  # m, navmesh voxel / navigable grid cell
    cell_height: float = bounded(0.05, gt=0)  # m, navmesh voxel height
    region_min_size: float = bounded(20.0, ge=0)  # cells; smaller islands (its square) dropped
    seed: int = 0
    # simulators per process, each on its own thread with its own scene lease (SimSession);
    # not a constructor argument: run/build.py builds this many (a SimulatorPool)
    instances: int = bounded(1, ge=1)


@dataclass
class MeshSimConfig(SimConfig):
    """open3d raycasting backend (``sim=mesh``)."""

    snap_max_dist: float = bounded(2.0, gt=0)  # snap_point gives NaN beyond this (m)
    # auto: .glb/.gltf z up (HM3D, as habitat-sim reads them), other formats y up; "z" for
    # z-up meshes (ScanNet); everything is converted to habitat's y-up frame
    up_axis: str = one_of("auto", UP_AXES)
    cull_back_faces: bool = True  # single-sided triangles, as habitat-sim's rasteriser draws them
    interpolate_colors: bool = True  # barycentric vertex colours (else flat face colours)


@dataclass
class HabitatSimConfig(SimConfig):
    """habitat-sim backend (``sim=habitat``; 0.3.x and 0.2.x)."""

    gpu_device_id: int = bounded(0, ge=0)
    scene_dataset_config: str | None = None  # default: *.scene_dataset_config.json near scenes
    enable_physics: bool = False
    max_tries: int = bounded(100, ge=1)  # get_random_navigable_point_near attempts
    # auto: glTF scenes unlit (HM3D textures carry their shading), .ply lit | none | default
    scene_lighting: str = one_of("auto", SCENE_LIGHTING)


SCHEMAS = {"base_sim": SimConfig, "base_mesh": MeshSimConfig, "base_habitat": HabitatSimConfig}


# what ``${sim.*}`` resolves to for a component built without Hydra (eqa_runner.configured):
# the default backend, ``sim=mesh``, with its schema's defaults
STANDALONE_SIM: dict[str, Any] = {
    **{f.name: f.default for f in fields(MeshSimConfig) if f.default is not DC_MISSING},
    "_target_": "eqa_runner.sim.mesh.MeshSimulator",
}
