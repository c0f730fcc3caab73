"""``sim=mesh``: a coloured triangle mesh rendered by a compiled z-buffer rasteriser
(:mod:`eqa_runner.sim.raster`; open3d ray casts for point queries) + navigable floor spans.

open3d is imported lazily (first ``load_scene``), so building the simulator is cheap.
"""

from __future__ import annotations

import logging
import math
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
    SensorSpec,
    Simulator,
    as_vec3,
    find_scene_file,
)
from eqa_runner.sim.config import MeshSimConfig
from eqa_runner.sim.layered import LayeredNavGrid
from eqa_runner.sim.mesh_io import (  # noqa: F401 - re-exported, the mesh backend's readers
    TriangleMeshData,
    _o3d,
    default_up_axis,
    load_mesh_file,
)
from eqa_runner.sim.navgrid import NavGrid
from eqa_runner.sim.recast import build_spans, no_floor_cause

log = logging.getLogger(__name__)

MESH_SUFFIXES = (".ply", ".glb", ".gltf", ".obj", ".basis.glb")
_LIGHT = (np.array([0.35, 0.85, 0.4]) / np.linalg.norm([0.35, 0.85, 0.4])).astype(np.float32)
# shading x255, two-sided: ambient + headlight * |cos(view ray, n)| + sun * |cos(sun, n)|
_AMBIENT, _HEAD, _SUN = 0.35 * 255.0, 0.45 * 255.0, 0.2 * 255.0


class MeshSimulator(Simulator):
    """Renders RGB-D by rasterising; navigation on a rasterised floor grid per floor height."""

    config_class = MeshSimConfig
    config: MeshSimConfig

    def __init__(self, config: MeshSimConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self._init_body(c)
        self._no_uv = np.zeros((1, 2), dtype=np.float32)
        self.scene: SceneSpec | None = None
        self._mesh: TriangleMeshData | None = None
        self._rc: Any = None  # o3d.t.geometry.RaycastingScene (open3d is untyped)
        self._nav: LayeredNavGrid | None = None
        self._views: dict[float, NavGrid] = {}
        self._floor: float | None = None
        self._has_pose = False
        self._pos = np.zeros(3)
        self._rot = np.array([1.0, 0.0, 0.0, 0.0])
        self._pix: tuple | None = None  # per-sensor ray constants (see _pixel_terms)

    # ------------------------------------------------------------------ scenes
    def resolve_scene(self, scenes_dir: Path, scene_id: str) -> SceneSpec:
        path = find_scene_file(Path(scenes_dir), scene_id, MESH_SUFFIXES)
        return SceneSpec(scene_id=scene_id, mesh_path=path)

    def load_scene(self, scene: SceneSpec, *, start_position=None) -> None:
        if self.scene is None or Path(self.scene.mesh_path) != Path(scene.mesh_path):
            self.load_arrays(load_mesh_file(Path(scene.mesh_path), self.config.up_axis))
        self.scene = scene
        self._floor = None  # found on first use (building the navigable spans is not free)
        self._has_pose = start_position is not None
        if start_position is not None:
            self._pos = as_vec3(start_position)

    def load_arrays(self, mesh: TriangleMeshData) -> None:
        """Use an in-memory mesh (tests, procedural scenes)."""
        o3d = _o3d()
        self._mesh = mesh
        self._vcol = np.asarray(mesh.vertex_colors, dtype=np.float32)
        tri = np.asarray(mesh.triangles, dtype=np.int64)
        self._tri = tri
        self._tri32 = tri.astype(np.int32)
        self._fcol = self._vcol[tri].mean(axis=1)
        per_vertex = self._vcol[tri]
        self._flat_colors = bool(np.abs(per_vertex - self._fcol[:, None]).max(initial=0) < 1e-3)
        self._v64 = np.ascontiguousarray(mesh.vertices, dtype=np.float64)
        self._prepare_shading(self._v64, tri)
        self._rc = o3d.t.geometry.RaycastingScene()
        self._rc.add_triangles(
            o3d.core.Tensor(np.asarray(mesh.vertices, dtype=np.float32)),
            o3d.core.Tensor(tri.astype(np.uint32)),
        )
        self._nav = None
        self._views = {}
        self._floor = None
        self.scene = SceneSpec(scene_id="<memory>", mesh_path=Path("<memory>"))

    def _prepare_shading(self, v: np.ndarray, tri: np.ndarray) -> None:
        """Per-face arrays for ``render``, each with a black sentinel row ``F`` for misses.

        Unit face normals (transposed, (3, F+1)), the view-independent shading term
        (ambient + fixed sun, (F+1,)), face colours (F+1, 3) and, for interpolated colours,
        triangles pointing at a black sentinel vertex.
        """
        n_f = len(tri)
        cr = np.cross(v[tri[:, 1]] - v[tri[:, 0]], v[tri[:, 2]] - v[tri[:, 0]])
        ln = np.linalg.norm(cr, axis=1, keepdims=True)
        fn = np.zeros((n_f + 1, 3), dtype=np.float32)
        fn[:n_f] = cr / np.where(ln > 0, ln, 1.0)
        self._fn_t = np.ascontiguousarray(fn.T)
        sun = np.abs(fn @ _LIGHT)
        self._k_static = (_AMBIENT + _SUN * sun).astype(np.float32)
        self._k_static[n_f] = 0.0
        self._fcol_s = np.zeros((n_f + 1, 3), dtype=np.float32)
        self._fcol_s[:n_f] = self._fcol
        self._vcol_s = np.vstack([self._vcol, np.zeros((1, 3), np.float32)])
        self._tri_s = np.vstack([self._tri32, np.full((1, 3), len(self._vcol), np.int32)])
        self._clip_rgb = bool(self._vcol.max(initial=0.0) > 1.0)

    def _require(self) -> TriangleMeshData:
        """The loaded scene's mesh; RuntimeError when no scene is loaded."""
        if self._rc is None or self._mesh is None:
            raise RuntimeError("no scene loaded: call load_scene() first")
        return self._mesh

    # ------------------------------------------------------------------ raycasting
    def cast(self, origins: np.ndarray, dirs: np.ndarray) -> dict[str, np.ndarray]:
        """Cast rays (N, 3)+(N, 3); returns t_hit, primitive_ids, primitive_uvs, normals."""
        self._require()
        o3d = _o3d()
        rays = np.empty((len(dirs), 6), dtype=np.float32)
        rays[:, :3] = origins
        rays[:, 3:] = dirs
        out = self._rc.cast_rays(o3d.core.Tensor(rays))
        return {
            "t_hit": out["t_hit"].numpy(),
            "primitive_ids": out["primitive_ids"].numpy(),
            "primitive_uvs": out["primitive_uvs"].numpy(),
            "primitive_normals": out["primitive_normals"].numpy(),
        }

    def _pixel_terms(self):
        """Per-sensor constants: pinhole intrinsics (3, 3), camera-frame ray x/y through each
        pixel centre (u + 0.5, v + 0.5, where GL rasterisation samples; forward component -1)
        and the headlight factor ``_HEAD / |ray|`` per pixel."""
        if self._pix is None:
            s = self.sensor
            k = geo.intrinsics_from_hfov(s.hfov_deg, s.width, s.height)
            x = ((np.arange(s.width) + 0.5 - k[0, 2]) / k[0, 0]).astype(np.float32)
            y = (-(np.arange(s.height) + 0.5 - k[1, 2]) / k[1, 1]).astype(np.float32)
            xx = np.broadcast_to(x[None, :], (s.height, s.width)).reshape(-1)
            yy = np.broadcast_to(y[:, None], (s.height, s.width)).reshape(-1)
            head = (_HEAD / np.sqrt(xx * xx + yy * yy + 1.0)).astype(np.float32)
            self._pix = (k, xx.copy(), yy.copy(), head)
        return self._pix

    def set_sensor(self, sensor: SensorSpec) -> None:
        """Change the camera (resolution, hfov, height, tilt)."""
        self.sensor = sensor
        self._pix = None

    def render(
        self, cam_to_world: np.ndarray, *, reference: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """RGB (H, W, 3) uint8 and z-depth (H, W) float32 from a habitat/OpenGL camera pose.

        One rasterisation per frame (the hits of rays through the pixel centres: z-depth,
        triangle, barycentrics; back faces culled with ``cull_back_faces``, as habitat-sim's
        single-sided triangles); colour and shading come from per-face arrays prepared at load
        (the headlight term is the only per-pixel one), all in float32, in one compiled pass.
        ``reference=True`` shades with the numpy reference instead (the test oracle of the
        compiled pass; identical frames, slower).
        """
        from eqa_runner.sim.raster import rasterize, rotate_normals

        s = self.sensor
        k, x, y, head_k = self._pixel_terms()
        cam = np.asarray(cam_to_world, dtype=np.float64)
        n_f = len(self._fcol)
        # headlight: |n . d| / |d| with n in the camera frame, d = (x, y, -1)
        n_cam = rotate_normals(cam[:3, :3].astype(np.float32), self._fn_t)  # (3, F + 1)
        t, pid, uv = rasterize(
            self._v64, self._tri32, cam, k, s.width, s.height, self.config.cull_back_faces
        )  # z-depth, as a ray through each pixel centre with unit forward component hits
        out = {"t_hit": t, "primitive_ids": pid, "primitive_uvs": uv}
        shade = self._shade_reference if reference else self._shade_compiled
        return shade(out, t, n_f, n_cam, x, y, head_k)

    def _shade_reference(self, out, t, n_f, n_cam, x, y, head_k):
        """``render``'s shading in numpy: the test oracle of :meth:`_shade_compiled`."""
        from eqa_runner.sim.shade_kernel import shade_reference

        return shade_reference(self, out, t, n_f, n_cam, x, y, head_k)

    def _shade_compiled(self, out, t, n_f, n_cam, x, y, head_k):
        """``render``'s shading as one compiled pass (:mod:`eqa_runner.sim.shade_kernel`)."""
        from eqa_runner.sim.shade_kernel import shade_hits

        s = self.sensor
        interpolate = bool(self.config.interpolate_colors and not self._flat_colors)
        uv = out["primitive_uvs"] if interpolate else self._no_uv
        rgb = np.empty((t.size, 3), dtype=np.uint8)
        depth = np.empty(t.size, dtype=np.float32)
        shade_hits(
            t,
            out["primitive_ids"],
            uv,
            n_f,
            n_cam,
            x,
            y,
            head_k,
            self._k_static,
            self._fcol_s,
            self._vcol_s,
            self._tri_s,
            interpolate,
            self._clip_rgb,
            rgb,
            depth,
        )
        return rgb.reshape(s.height, s.width, 3), depth.reshape(s.height, s.width)

    # ------------------------------------------------------------------ agent
    def set_agent_pose(self, position, rotation_wxyz) -> None:
        self._pos = as_vec3(position)
        self._rot = geo.quat_normalize(rotation_wxyz)
        self._has_pose = True
        if self._floor is not None and abs(self._pos[1] - self._floor) > 0.5:
            self._floor = None  # another storey: found again on next use

    def agent_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self._pos.copy(), self._rot.copy()

    def camera_pose(self) -> np.ndarray:
        s = self.sensor
        return geo.camera_to_world(self._pos, self._rot, s.sensor_height_m, s.tilt_deg, s.forward_m)

    def observe(self) -> Observation:
        self._require()
        cam = self.camera_pose()
        rgb, depth = self.render(cam)
        s = self.sensor
        k = geo.intrinsics_from_hfov(s.hfov_deg, s.width, s.height)
        return Observation(rgb=rgb, depth=depth, cam_to_world=cam, intrinsics=k)

    # ------------------------------------------------------------------ floors & navigation
    def floor_height_at(self, p=None) -> float:
        """Floor under ``p`` (its navigable span, else a downward ray from 0.5 m above it); the
        main floor (the storey with most navigable area, lowest on ties) when None."""
        self._require()
        if p is None:
            return self._main_floor()
        p = as_vec3(p)
        nav = self.layered
        node = nav.node_at(p)
        if node >= 0:
            return float(nav.y[node])
        res = self.cast(p[None] + [0.0, 0.5, 0.0], np.array([[0.0, -1.0, 0.0]]))
        t = float(res["t_hit"][0])
        return p[1] + 0.5 - t if math.isfinite(t) and t <= 2.0 else float(p[1])

    def _main_floor(self) -> float:
        nav = self.layered
        if nav.n_nodes == 0:
            v = np.asarray(self._require().vertices)
            return float(v[:, 1].min())
        bins = np.round(nav.y / 0.1).astype(int)
        uniq, cnt = np.unique(bins, return_counts=True)
        return float(np.median(nav.y[bins == uniq[int(np.argmax(cnt))]]))

    @property
    def layered(self) -> LayeredNavGrid:
        """Navigable spans of every storey (built on first use, Recast's semantics)."""
        mesh = self._require()
        if self._nav is None:
            field = build_spans(mesh.vertices, self._tri, self.nav)
            nav = LayeredNavGrid(field, self.config.agent_max_climb)
            if nav.n_nodes == 0:
                name = self.scene.scene_id if self.scene else "<memory>"
                raise SceneError(f"scene {name}: {no_floor_cause(mesh, self.nav)}")
            self._nav = nav
        return self._nav

    def _agent_floor(self) -> float:
        if self._floor is None:
            self._floor = self.floor_height_at(self._pos if self._has_pose else None)
        return self._floor

    def _island(self) -> int | None:
        """The island (connected navigable region) the agent stands on, None when off it."""
        nav = self.layered
        node = nav.node_at(self._pos, tol=self.config.agent_max_climb + 0.05)
        return int(nav.island[node]) if node >= 0 else None

    @property
    def floor_height(self) -> float:
        return self._agent_floor()

    @property
    def navgrid(self) -> NavGrid:
        """The agent's storey as a 2-D grid (spans within ``agent_max_climb`` + 5 cm)."""
        key = round(self._agent_floor(), 2)
        if key not in self._views:
            self._views[key] = self.layered.floor_view(
                self._agent_floor(), self.config.agent_max_climb + 0.05, self.config.snap_max_dist
            )
        return self._views[key]

    def snap_point(self, p) -> np.ndarray:
        """Nearest navigable point on the agent's island (any island when the agent is on
        none); NaN beyond the search box."""
        return self.layered.snap_node(as_vec3(p), self._island())[1]

    def random_navigable_point_near(self, p, radius: float, rng: np.random.Generator):
        return self.layered.random_point_near(as_vec3(p), float(radius), rng)

    def geodesic_distance(self, a, b) -> float:
        return self.layered.geodesic_distance(as_vec3(a), as_vec3(b))

    def geodesic_path(self, a, b) -> tuple[float, list[np.ndarray]]:
        path = self.shortest_path(a, b)
        if path is None:
            return float("inf"), []
        return float(np.sum(np.linalg.norm(np.diff(np.asarray(path), axis=0), axis=1))), path

    def shortest_path(self, a, b) -> list[np.ndarray] | None:
        """Waypoints (habitat frame) of a shortest path, or None when unreachable."""
        return self.layered.shortest_path(as_vec3(a), as_vec3(b))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        nav = self.layered
        if nav.n_nodes == 0:
            return np.zeros(3), np.zeros(3)
        pos = np.column_stack([nav.xz[:, 0], nav.y, nav.xz[:, 1]])
        half = np.array([self.config.cell_size / 2, 0.0, self.config.cell_size / 2])
        return pos.min(axis=0) - half, pos.max(axis=0) + half

    def is_navigable(self, p) -> bool:
        p = as_vec3(p)
        if not np.all(np.isfinite(p)):
            return False
        return self.layered.node_at(p, tol=0.5) >= 0

    def random_navigable_point(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random navigable cell centre on the agent's storey."""
        nav = self.layered
        sel = nav.on_floor(self._agent_floor(), self.config.agent_max_climb + 0.05)
        if len(sel) == 0:
            return NAN3.copy()
        return nav.point(int(sel[int(rng.integers(len(sel)))]))

    def navigable_area(self, floor_y: float | None = None, band: float | None = None) -> float:
        """Area (m^2) of the navigable cells within ``band`` (default ``agent_max_climb`` +
        5 cm) of ``floor_y`` (default: the agent's floor), as the habitat backend measures its
        navmesh."""
        y = self._agent_floor() if floor_y is None else float(floor_y)
        sel = self.layered.on_floor(y, self.config.agent_max_climb + 0.05 if band is None else band)
        return float(len(sel)) * self.config.cell_size**2

    def navigable_map(self, floor_y: float, cell_m: float = 0.1) -> NavigableMap:
        """The storey at ``floor_y`` (this backend's own cells; ``cell_m`` is not used)."""
        g = self.layered.floor_view(
            float(floor_y), self.config.agent_max_climb + 0.05, self.config.snap_max_dist
        )
        return NavigableMap(g.navigable, (g.x0, g.z0), g.c, g.floor_y)

    def close(self) -> None:
        self._rc = None
        self._mesh = None
        self._nav = None
        self._views = {}
        self.scene = None
