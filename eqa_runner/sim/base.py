"""The simulator interface shared by all backends (no heavy imports here)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from eqa_runner.configured import Configured
from eqa_runner.sim.config import SimConfig

# a start (or a goal on the floor) farther than this from the navigable floor is an episode error
OFF_FLOOR_M = 0.5


@dataclass(frozen=True)
class SensorSpec:
    """One RGB-D camera mounted on the agent (defaults: the ``sim`` schema's)."""

    width: int = SimConfig.width
    height: int = SimConfig.height
    hfov_deg: float = SimConfig.hfov_deg
    sensor_height_m: float = SimConfig.sensor_height_m
    tilt_deg: float = SimConfig.tilt_deg
    forward_m: float = SimConfig.sensor_forward_m  # camera ahead of the agent base


@dataclass(frozen=True)
class Observation:
    """An RGB-D frame.

    ``rgb`` (H, W, 3) uint8; ``depth`` (H, W) float32 metres along the optical axis, 0 where
    nothing was hit; ``cam_to_world`` 4x4 in the habitat frame with the habitat/OpenGL camera
    convention (looks along -z, y up); ``intrinsics`` 3x3.
    """

    rgb: np.ndarray
    depth: np.ndarray
    cam_to_world: np.ndarray
    intrinsics: np.ndarray


@dataclass(frozen=True)
class SceneSpec:
    """Where a scene's files are."""

    scene_id: str
    mesh_path: Path
    navmesh_path: Path | None = None
    dataset_config: Path | None = None


@dataclass(frozen=True)
class NavigableMap:
    """A top-down navigability raster of one floor: ``navigable[i, j]`` is the cell with
    x in ``[x0 + i*c, x0 + (i+1)*c)`` and z in ``[z0 + j*c, z0 + (j+1)*c)`` (habitat frame)."""

    navigable: np.ndarray  # (nx, nz) bool
    origin_xz: tuple[float, float]
    cell_m: float
    floor_y: float


class Simulator(Configured, ABC):
    """A scene plus one agent with one RGB-D sensor; all positions in the habitat frame.

    Built as ``Cls(config=None, **overrides)`` (:mod:`eqa_runner.configured`): ``config_class``
    names the backend's schema (a :class:`~eqa_runner.sim.config.SimConfig`)."""

    config_class: ClassVar[type[Any]] = SimConfig
    config_key: ClassVar[str] = "sim"
    config: SimConfig
    sensor: SensorSpec

    def _init_body(self, c: SimConfig) -> None:
        """Sensor, agent-body and navmesh settings shared by every backend, from its config."""
        from eqa_runner.sim.recast import NavSettings

        self.sensor = SensorSpec(
            c.width,
            c.height,
            float(c.hfov_deg),
            float(c.sensor_height_m),
            float(c.tilt_deg),
            float(c.sensor_forward_m),
        )
        self.nav = NavSettings(
            agent_radius=float(c.agent_radius),
            agent_height=float(c.agent_height),
            agent_max_climb=float(c.agent_max_climb),
            agent_max_slope=float(c.agent_max_slope),
            cell_size=float(c.cell_size),
            cell_height=float(c.cell_height),
            region_min_size=float(c.region_min_size),
        )

    @abstractmethod
    def load_scene(self, scene: SceneSpec, *, start_position=None) -> None:
        """Load ``scene`` (no-op when already loaded); ``start_position`` picks the floor."""

    @abstractmethod
    def set_agent_pose(self, position, rotation_wxyz) -> None:
        """Place the agent base (on the floor) with a (w, x, y, z) quaternion."""

    @abstractmethod
    def agent_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(position (3,), rotation (w, x, y, z))."""

    @abstractmethod
    def observe(self) -> Observation:
        """Render the sensor at the current agent pose."""

    @abstractmethod
    def snap_point(self, p) -> np.ndarray:
        """Closest navigable point; a NaN vector when nothing navigable is near."""

    @abstractmethod
    def random_navigable_point_near(self, p, radius: float, rng: np.random.Generator):
        """A navigable point within ``radius`` of ``p`` reachable from it (NaN on failure)."""

    @abstractmethod
    def geodesic_distance(self, a, b) -> float:
        """Shortest navigable path length; ``inf`` when unreachable."""

    def geodesic_path(self, a, b) -> tuple[float, list[np.ndarray]]:
        """The shortest navigable path from ``a`` to ``b``: its length (``geodesic_distance``'s
        number) and its points, ``a`` … ``b`` (``(inf, [])`` when unreachable), so a map draws
        a hop where the agent went. Default, for a backend that cannot list them: the two ends."""
        d = float(self.geodesic_distance(a, b))
        ends = [np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)]
        return d, ends if np.isfinite(d) else []

    @abstractmethod
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Navmesh bounds (lower, upper) in the habitat frame."""

    @abstractmethod
    def is_navigable(self, p) -> bool:
        """Whether ``p`` lies on the navigable surface."""

    def navigable_area(self, floor_y: float | None = None, band: float | None = None) -> float:
        """Area (m^2) of the navigable surface within ``band`` of ``floor_y`` (default: the
        agent's floor; diagnostics, parity)."""
        raise NotImplementedError(f"{type(self).__name__} does not report its navigable area")

    def check_start(self, p) -> None:
        """:class:`SceneError` naming the scene unless ``p`` stands on an island: its nearest
        navigable point (``snap_point``, on the agent's island when it stands on one) is within
        ``OFF_FLOOR_M``. A run calls it once the agent is placed at an episode's start."""
        from eqa_runner.errors import SceneError
        from eqa_runner.sim.recast import start_off_island

        p = as_vec3(p)
        q = np.asarray(self.snap_point(p), dtype=float)
        if not (np.all(np.isfinite(q)) and float(np.linalg.norm(q - p)) <= OFF_FLOOR_M):
            raise SceneError(start_off_island(getattr(self, "scene", None), p, q, OFF_FLOOR_M))

    def navigable_map(self, floor_y: float, cell_m: float = 0.1) -> NavigableMap:
        """The navigable cells of the floor at ``floor_y`` inside the navmesh bounds, sampled
        with :meth:`is_navigable` (backends override it with their own raster)."""
        lo, hi = self.bounds()
        nx = max(int(np.ceil((hi[0] - lo[0]) / cell_m)), 1)
        nz = max(int(np.ceil((hi[2] - lo[2]) / cell_m)), 1)
        nav = np.zeros((nx, nz), dtype=bool)
        for i in range(nx):
            for j in range(nz):
                p = (lo[0] + (i + 0.5) * cell_m, floor_y, lo[2] + (j + 0.5) * cell_m)
                nav[i, j] = self.is_navigable(p)
        return NavigableMap(nav, (float(lo[0]), float(lo[2])), float(cell_m), float(floor_y))

    def scene_area(self) -> float:
        """x-z area of the navmesh bounds (an exploration budget: int(sqrt(area) * 3))."""
        lo, hi = self.bounds()
        return float(abs((hi[0] - lo[0]) * (hi[2] - lo[2])))

    @abstractmethod
    def resolve_scene(self, scenes_dir: Path, scene_id: str) -> SceneSpec:
        """Find a scene's files; raises FileNotFoundError naming the paths tried."""

    @abstractmethod
    def close(self) -> None:
        """Release resources."""

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------- scene lookup

_SCENE_DIR_RE = re.compile(r"^(\d{5})-([A-Za-z0-9_]+)$")
SPLITS = ("val", "train", "minival", "test")


def parse_scene_id(scene_id: str) -> tuple[str | None, str, str]:
    """Split an HM3D-style id into (split or None, 'NNNNN-hash' directory, 'hash').

    Accepts ``hm3d/val/00800-TEEsavR23oF``, ``val/00800-TEEsavR23oF``, ``00800-TEEsavR23oF``
    (a trailing file name such as ``TEEsavR23oF.basis.glb`` is ignored).
    """
    parts = [p for p in str(scene_id).replace("\\", "/").split("/") if p]
    idx = next((i for i in range(len(parts) - 1, -1, -1) if _SCENE_DIR_RE.match(parts[i])), None)
    if idx is None:
        raise ValueError(f"not an HM3D-style scene id (expected NNNNN-<hash>): {scene_id!r}")
    dirname = parts[idx]
    split = parts[idx - 1] if idx >= 1 and parts[idx - 1] in SPLITS else None
    m = _SCENE_DIR_RE.match(dirname)
    assert m is not None  # idx was picked by this match
    return split, dirname, m.group(2)


def scene_candidates(scenes_dir: Path, scene_id: str, suffixes: Iterable[str]) -> list[Path]:
    """Candidate files of a scene, in lookup order (split layout, flat pool, hm3d/ subdir)."""
    scenes_dir = Path(scenes_dir)
    split, dirname, hash_ = parse_scene_id(scene_id)
    splits = [split] if split else list(SPLITS)
    roots = [scenes_dir, scenes_dir / "hm3d"]
    dirs: list[Path] = []
    for root in roots:
        dirs += [root / s / dirname for s in splits]
        dirs.append(root / dirname)
    out: list[Path] = []
    for d in dirs:
        for suf in suffixes:
            out.append(d / f"{hash_}{suf}")
    return out


def find_scene_file(scenes_dir: Path, scene_id: str, suffixes: Iterable[str]) -> Path:
    """The first existing candidate; FileNotFoundError naming every path tried otherwise."""
    direct = Path(scene_id)
    if direct.suffix and direct.is_file():
        return direct
    if direct.suffix and (Path(scenes_dir) / direct).is_file():
        return Path(scenes_dir) / direct
    try:
        tried = scene_candidates(scenes_dir, scene_id, suffixes)
    except ValueError:
        if not direct.suffix:
            raise
        tried = [Path(scenes_dir) / direct]  # a file path under scenes_dir (<dir>/<name>.glb)
    for p in tried:
        if p.is_file():
            return p
    listing = "\n  ".join(str(p) for p in tried)
    raise FileNotFoundError(f"scene {scene_id!r} not found under {scenes_dir}; tried:\n  {listing}")


def as_vec3(p) -> np.ndarray:
    """A float64 (3,) copy of ``p``."""
    a = np.asarray(p, dtype=np.float64).reshape(-1)
    if a.shape != (3,):
        raise ValueError(f"expected a 3-vector, got shape {a.shape}")
    return a.copy()


NAN3 = np.full(3, np.nan)
