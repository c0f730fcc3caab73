"""Several simulators of one run (``sim.instances=N``), handed over as one :class:`Simulator`.

Used as a plain simulator, a :class:`SimulatorPool` is its first instance (every method is
delegated to it); :class:`eqa_runner.policies.sim_session.SimSession` recognises a pool and
runs each instance on its own thread with its own scene lease. Closing the pool closes all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.sim.base import NavigableMap, Observation, SceneSpec, Simulator


class SimulatorPool(Simulator):
    """N independent simulators built from the same ``sim`` config."""

    def __init__(self, instances: Sequence[Simulator]) -> None:
        if not instances:
            raise ValueError("a simulator pool needs at least one instance")
        self.instances = list(instances)
        if hasattr(self.instances[0], "sensor"):
            self.sensor = self.instances[0].sensor

    def __len__(self) -> int:
        return len(self.instances)

    # a pool used as one simulator is its first instance
    def load_scene(self, scene: SceneSpec, *, start_position: Any = None) -> None:
        self.instances[0].load_scene(scene, start_position=start_position)

    def set_agent_pose(self, position: Any, rotation_wxyz: Any) -> None:
        self.instances[0].set_agent_pose(position, rotation_wxyz)

    def agent_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self.instances[0].agent_pose()

    def observe(self) -> Observation:
        return self.instances[0].observe()

    def snap_point(self, p: Any) -> np.ndarray:
        return self.instances[0].snap_point(p)

    def random_navigable_point_near(self, p: Any, radius: float, rng: np.random.Generator) -> Any:
        return self.instances[0].random_navigable_point_near(p, radius, rng)

    def geodesic_distance(self, a: Any, b: Any) -> float:
        return self.instances[0].geodesic_distance(a, b)

    def geodesic_path(self, a: Any, b: Any) -> tuple[float, list[np.ndarray]]:
        return self.instances[0].geodesic_path(a, b)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.instances[0].bounds()

    def is_navigable(self, p: Any) -> bool:
        return self.instances[0].is_navigable(p)

    def navigable_area(self, floor_y: float | None = None, band: float | None = None) -> float:
        return self.instances[0].navigable_area(floor_y, band)

    def check_start(self, p: Any) -> None:
        self.instances[0].check_start(p)

    def navigable_map(self, floor_y: float, cell_m: float = 0.1) -> NavigableMap:
        return self.instances[0].navigable_map(floor_y, cell_m)

    def resolve_scene(self, scenes_dir: Path, scene_id: str) -> SceneSpec:
        return self.instances[0].resolve_scene(scenes_dir, scene_id)

    def close(self) -> None:
        errors = []
        for sim in self.instances:
            try:
                sim.close()
            except Exception as e:  # noqa: BLE001 - close the others, then raise the first
                errors.append(e)
        if errors:
            raise errors[0]


def instances_of(sim: Simulator) -> list[Simulator]:
    """The simulators behind ``sim``: a pool's instances, else ``[sim]``."""
    return list(sim.instances) if isinstance(sim, SimulatorPool) else [sim]
