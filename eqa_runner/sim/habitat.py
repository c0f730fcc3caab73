"""``sim=habitat``: habitat-sim (0.3.x and 0.2.x) behind the :class:`Simulator` interface.

Tested against the real habitat-sim 0.2.2 (CPU, software EGL; ``tests/sim``, marker
``habitat``); written to the 0.3 API too, version-gated where the two differ (the
``include_static_objects`` navmesh switch moved from ``recompute_navmesh`` into
``NavMeshSettings``).

Scenes: ``.basis.glb``/``.glb`` are taken as z up (HM3D convention; habitat-sim rotates them
into its y-up frame), ``.ply`` as is. A scene without a ``.navmesh`` beside it gets one baked
at load for this agent body. Lighting (``scene_lighting``): ``auto`` leaves glTF scenes unlit
(habitat's default, right for HM3D's textures with baked lighting) and lights ``.ply`` scenes
(vertex colours, e.g. ScanNet) with habitat's default light setup.

habitat-sim is imported lazily (it is a conda package, not on PyPI). One ``habitat_sim.Simulator``
per process is reused across episodes and reconfigured only when the scene changes. Every call
into habitat-sim runs on one dedicated thread owned by this object (the GL context and the
pathfinder are not thread-safe), so the public methods may be called from any thread.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.errors import SceneError
from eqa_runner.sim import geometry as geo
from eqa_runner.sim.base import (
    NAN3,
    NavigableMap,
    Observation,
    SceneSpec,
    Simulator,
    as_vec3,
    find_scene_file,
)
from eqa_runner.sim.config import HabitatSimConfig

INSTALL_HINT = "conda install habitat-sim=0.3 withbullet headless -c conda-forge -c aihabitat"
HABITAT_SUFFIXES = (".basis.glb", ".glb", ".ply")


def import_habitat_sim():
    """``import habitat_sim`` or one clear error with the install line."""
    try:
        import habitat_sim
    except ImportError as exc:
        raise ImportError(
            f"sim=habitat needs habitat-sim (0.3.x or 0.2.x), which is not importable ({exc}). "
            f"It is not on PyPI; install it with conda:\n  {INSTALL_HINT}\nor use sim=mesh."
        ) from exc
    return habitat_sim


class HabitatSimulator(Simulator):
    """habitat-sim backend (COLOR + DEPTH camera sensors, navmesh pathfinder)."""

    config_class = HabitatSimConfig
    config: HabitatSimConfig

    def __init__(self, config: HabitatSimConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self._init_body(self.config)
        self._islands: Any = None  # NavmeshIslands of the loaded navmesh, built on first use
        self.scene: SceneSpec | None = None
        # habitat_sim ships no type information: its Simulator, Agent and module are Any
        self._sim: Any = None
        self._agent: Any = None
        self._hs: Any = None
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ threading
    def _call(self, fn, *args, **kwargs):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="habitat-sim")
        return self._pool.submit(fn, *args, **kwargs).result()

    def _hsim(self):
        if self._hs is None:
            self._hs = import_habitat_sim()
        return self._hs

    # ------------------------------------------------------------------ configuration
    def make_config(self, scene: SceneSpec):
        """The ``habitat_sim.Configuration`` for ``scene`` (COLOR + DEPTH sensors only)."""
        hs = self._hsim()
        sim_cfg = hs.SimulatorConfiguration()
        sim_cfg.scene_id = str(scene.mesh_path)
        dataset = scene.dataset_config or self.config.scene_dataset_config
        if dataset:
            sim_cfg.scene_dataset_config_file = str(dataset)
        sim_cfg.gpu_device_id = self.config.gpu_device_id
        sim_cfg.random_seed = self.config.seed
        sim_cfg.enable_physics = self.config.enable_physics
        if self.lighting_for(scene.mesh_path) == "default":
            sim_cfg.scene_light_setup = hs.gfx.DEFAULT_LIGHTING_KEY
            sim_cfg.override_scene_light_defaults = True
        s = self.sensor
        specs = []
        for uuid, kind in (
            ("color_sensor", hs.SensorType.COLOR),
            ("depth_sensor", hs.SensorType.DEPTH),
        ):
            spec = hs.CameraSensorSpec()
            spec.uuid = uuid
            spec.sensor_type = kind
            spec.resolution = [s.height, s.width]
            spec.hfov = s.hfov_deg
            spec.position = [0.0, s.sensor_height_m, -s.forward_m]  # habitat looks along -z
            spec.orientation = [math.radians(s.tilt_deg), 0.0, 0.0]
            specs.append(spec)
        agent_cfg = hs.agent.AgentConfiguration()
        agent_cfg.height = self.config.agent_height
        agent_cfg.radius = self.config.agent_radius
        agent_cfg.sensor_specifications = specs
        return hs.Configuration(sim_cfg, [agent_cfg])

    def lighting_for(self, mesh_path) -> str:
        """``none`` (habitat's unlit default) or ``default`` (its default light setup)."""
        if self.config.scene_lighting != "auto":
            return self.config.scene_lighting
        return "default" if Path(mesh_path).suffix.lower() == ".ply" else "none"

    def resolve_scene(self, scenes_dir: Path, scene_id: str) -> SceneSpec:
        mesh = find_scene_file(Path(scenes_dir), scene_id, HABITAT_SUFFIXES)
        name = mesh.name
        stem = name[: -len(".basis.glb")] if name.endswith(".basis.glb") else mesh.stem
        navmesh = None
        for cand in (mesh.with_name(f"{stem}.basis.navmesh"), mesh.with_name(f"{stem}.navmesh")):
            if cand.is_file():
                navmesh = cand
                break
        dataset = None
        if self.config.scene_dataset_config:
            dataset = Path(self.config.scene_dataset_config)
        else:
            for root in (Path(scenes_dir), Path(scenes_dir) / "hm3d", Path(scenes_dir).parent):
                found = sorted(root.glob("*.scene_dataset_config.json")) if root.is_dir() else []
                if found:
                    dataset = found[0]
                    break
        return SceneSpec(
            scene_id=scene_id, mesh_path=mesh, navmesh_path=navmesh, dataset_config=dataset
        )

    # ------------------------------------------------------------------ scene / agent
    def load_scene(self, scene: SceneSpec, *, start_position=None) -> None:
        self._call(self._load_scene, scene)
        if start_position is not None:
            self.set_agent_pose(start_position, [1.0, 0.0, 0.0, 0.0])

    def _load_scene(self, scene: SceneSpec) -> None:
        if (
            self._sim is not None
            and self.scene is not None
            and (Path(self.scene.mesh_path) == Path(scene.mesh_path))
        ):
            self.scene = scene
            return
        hs = self._hsim()
        cfg = self.make_config(scene)
        if self._sim is None:
            self._sim = hs.Simulator(cfg)
        else:
            self._sim.reconfigure(cfg)
        self._agent = self._sim.initialize_agent(0)
        pf = self._sim.pathfinder
        if scene.navmesh_path is not None and not pf.load_nav_mesh(str(scene.navmesh_path)):
            raise RuntimeError(f"habitat-sim could not load navmesh {scene.navmesh_path}")
        # no .navmesh file: bake one for this agent body (habitat-sim itself bakes one with its
        # own settings when it finds no navmesh; that one is replaced)
        if scene.navmesh_path is None and not self._sim.recompute_navmesh(
            pf, self.navmesh_settings()
        ):
            raise SceneError(
                f"scene {scene.scene_id}: no navigable area (habitat-sim baked no navmesh: "
                "no upward-facing floor, flipped normals, or a wrong scale or up axis)"
            )
        soup = getattr(pf, "build_navmesh_vertices", None)
        if soup is not None and len(soup()) == 0:
            raise SceneError(f"scene {scene.scene_id}: no navigable area (empty navmesh)")
        pf.seed(self.config.seed)
        self._islands = None
        self.scene = scene

    def navmesh_settings(self):
        """``NavMeshSettings`` for this agent body (0.2.x and 0.3.x)."""
        hs = self._hsim()
        settings = hs.NavMeshSettings()
        settings.set_defaults()
        n = self.nav  # the settings the mesh backend's spans use too
        settings.agent_radius = n.agent_radius
        settings.agent_height = n.agent_height
        settings.agent_max_climb = n.agent_max_climb
        settings.agent_max_slope = n.agent_max_slope
        settings.cell_size = n.cell_size
        # finer than habitat's 0.2 m voxel height, so the navmesh lies on the floor (within a
        # few cm) instead of up to 0.2 m above it, and the camera is sensor_height_m above it
        settings.cell_height = n.cell_height
        settings.region_min_size = n.region_min_size
        if hasattr(settings, "include_static_objects"):  # 0.3.x; 0.2.x: recompute argument
            settings.include_static_objects = False
        return settings

    def _require(self) -> None:
        if self._sim is None:
            raise RuntimeError("no scene loaded: call load_scene() first")

    def set_agent_pose(self, position, rotation_wxyz) -> None:
        pos = as_vec3(position)
        rot = geo.quat_normalize(rotation_wxyz)
        self._call(self._set_pose, pos, rot)

    def _set_pose(self, pos: np.ndarray, rot: np.ndarray) -> None:
        self._require()
        hs = self._hsim()
        from habitat_sim.utils.common import quat_from_coeffs

        state = hs.AgentState()
        state.position = pos.astype(np.float32)
        state.rotation = quat_from_coeffs(geo.quat_wxyz_to_xyzw(rot))  # coeffs are x, y, z, w
        self._agent.set_state(state)

    def agent_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self._call(self._agent_pose)

    def _agent_pose(self):
        self._require()
        from habitat_sim.utils.common import quat_to_coeffs

        st = self._agent.get_state()
        return (
            np.asarray(st.position, dtype=np.float64),
            geo.quat_xyzw_to_wxyz(quat_to_coeffs(st.rotation)),
        )

    def observe(self) -> Observation:
        return self._call(self._observe)

    def _observe(self) -> Observation:
        self._require()
        from habitat_sim.utils.common import quat_to_coeffs

        obs = self._sim.get_sensor_observations()
        rgb = np.asarray(obs["color_sensor"])[..., :3].astype(np.uint8, copy=True)
        depth = np.asarray(obs["depth_sensor"], dtype=np.float32).copy()
        st = self._agent.get_state().sensor_states["depth_sensor"]
        cam = np.eye(4)
        cam[:3, :3] = geo.quat_to_matrix(geo.quat_xyzw_to_wxyz(quat_to_coeffs(st.rotation)))
        cam[:3, 3] = np.asarray(st.position, dtype=np.float64)
        s = self.sensor
        k = geo.intrinsics_from_hfov(s.hfov_deg, s.width, s.height)
        return Observation(rgb=rgb, depth=depth, cam_to_world=cam, intrinsics=k)

    # ------------------------------------------------------------------ navigation
    def _pf(self):
        self._require()
        return self._sim.pathfinder

    def snap_point(self, p) -> np.ndarray:
        """Nearest navmesh point on the agent's island (habitat-sim 0.2.x snaps onto any
        island: its answer is kept when it is on the agent's, else the nearest point of the
        agent's island triangles in the same search box); NaN when there is none."""
        p = as_vec3(p)
        return self._call(self._snap_on_island, p)

    def _snap_on_island(self, p: np.ndarray) -> np.ndarray:
        from eqa_runner.sim.navmesh_islands import NavmeshIslands

        pf = self._pf()
        q = np.asarray(pf.snap_point(p), dtype=np.float64)
        if not hasattr(pf, "build_navmesh_vertices"):  # a pathfinder without the triangles
            return q
        if self._islands is None:
            soup = np.asarray(pf.build_navmesh_vertices(), dtype=np.float64)
            self._islands = NavmeshIslands(soup, self.config.agent_max_climb)
        st = self._agent.get_state()
        home = self._islands.island_of(np.asarray(st.position, dtype=np.float64), tol=0.3)
        if home is None or (np.all(np.isfinite(q)) and self._islands.island_of(q, 0.05) == home):
            return q
        return self._islands.snap(p, home)

    def random_navigable_point_near(self, p, radius: float, rng: np.random.Generator):
        p = as_vec3(p)
        seed = int(rng.integers(0, 2**31 - 1))

        def run():
            pf = self._pf()
            pf.seed(seed)
            q = pf.get_random_navigable_point_near(
                circle_center=p, radius=float(radius), max_tries=self.config.max_tries
            )
            q = np.asarray(q, dtype=np.float64)
            return q if np.all(np.isfinite(q)) else NAN3.copy()

        return self._call(run)

    def geodesic_distance(self, a, b) -> float:
        return self.geodesic_path(a, b)[0]

    def geodesic_path(self, a, b) -> tuple[float, list[np.ndarray]]:
        a, b = as_vec3(a), as_vec3(b)

        def run():
            hs = self._hsim()
            path = hs.ShortestPath()
            path.requested_start = a
            path.requested_end = b
            found = self._pf().find_path(path)
            d = float(path.geodesic_distance)
            if not (found and math.isfinite(d)):
                return float("inf"), []
            points = [np.asarray(p, dtype=np.float64) for p in path.points]
            return d, points if len(points) >= 2 else [a, b]

        return self._call(run)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        def run():
            lo, hi = self._pf().get_bounds()
            return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)

        return self._call(run)

    def is_navigable(self, p) -> bool:
        p = as_vec3(p)
        if not np.all(np.isfinite(p)):
            return False
        return bool(self._call(lambda: self._pf().is_navigable(p)))

    def navigable_map(self, floor_y: float, cell_m: float = 0.1) -> NavigableMap:
        """habitat-sim's top-down navigability raster of the floor at ``floor_y``."""

        def run():
            pf = self._pf()
            lo, _ = pf.get_bounds()
            view = np.asarray(pf.get_topdown_view(float(cell_m), float(floor_y)), dtype=bool)
            return NavigableMap(
                view.T.copy(), (float(lo[0]), float(lo[2])), float(cell_m), float(floor_y)
            )

        return self._call(run)

    def navigable_area(self, floor_y: float | None = None, band: float | None = None) -> float:
        """Area (m^2) of the navmesh triangles within ``band`` (default ``agent_max_climb`` +
        5 cm) of ``floor_y`` (default: the agent's floor), i.e. without furniture tops or
        other levels."""
        if floor_y is None:
            floor_y = float(self.agent_pose()[0][1])
        lim = self.config.agent_max_climb + 0.05 if band is None else float(band)

        def run():
            v = np.asarray(self._pf().build_navmesh_vertices(), dtype=np.float64).reshape(-1, 3, 3)
            on = np.all(np.abs(v[:, :, 1] - floor_y) <= lim, axis=1)
            t = v[on]
            return float(
                0.5 * np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1).sum()
            )

        return self._call(run)

    def close(self) -> None:
        if self._pool is not None:
            if self._sim is not None:
                self._pool.submit(self._sim.close).result()
            self._pool.shutdown(wait=True)
        self._sim = None
        self._agent = None
        self._pool = None
        self.scene = None


def egl_devices() -> list[str]:
    """Render nodes habitat-sim's EGL backend can use (``/dev/dri/renderD*``)."""
    d = Path("/dev/dri")
    return sorted(str(p) for p in d.glob("renderD*")) if d.is_dir() else []


def cuda_visible_devices() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def habitat_info(render_scene: Path | None = None, *, gpu_device_id: int = 0) -> dict[str, Any]:
    """What ``doctor`` reports: habitat-sim's version, CUDA build flag, EGL render nodes and,
    given a scene, whether one 64x64 RGB-D render works (not all black) and its time."""
    import time

    hs = import_habitat_sim()
    info: dict[str, Any] = {
        "version": getattr(hs, "__version__", "?"),
        "cuda_enabled": bool(getattr(hs, "cuda_enabled", False)),
        "egl_devices": egl_devices(),
        "cuda_visible_devices": cuda_visible_devices(),
    }
    if render_scene is not None:
        sim = HabitatSimulator(width=64, height=64, gpu_device_id=gpu_device_id)
        try:
            sim.load_scene(SceneSpec("doctor", Path(render_scene)))
            lo, hi = sim.bounds()
            sim.set_agent_pose(sim.snap_point((lo + hi) / 2), [1.0, 0.0, 0.0, 0.0])
            t = time.perf_counter()
            obs = sim.observe()
            info["render_ms"] = round(1000 * (time.perf_counter() - t), 1)
            info["render_ok"] = bool(obs.rgb.any() and (obs.depth > 0).any())
            info["renderer"] = sim._call(_gl_renderer)
        finally:
            sim.close()
    return info


def _gl_renderer() -> str:
    """The OpenGL renderer string of the current context (e.g. llvmpipe = software EGL)."""
    try:
        from magnum import gl

        ctx = gl.Context.current
        return f"{ctx.renderer_string} ({ctx.version_string})"
    except Exception:  # noqa: BLE001 - the magnum bindings differ between builds
        return "unknown"
