"""``sim=mesh``: open3d raycasting of a coloured triangle mesh + a navigable floor grid.

open3d is imported lazily (first ``load_scene``), so building the simulator is cheap.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.errors import ConfigError
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
from eqa_runner.sim.config import UP_AXES, MeshSimConfig
from eqa_runner.sim.navgrid import NavGrid

log = logging.getLogger(__name__)

MESH_SUFFIXES = (".ply", ".glb", ".gltf", ".obj", ".basis.glb")
_LIGHT = (np.array([0.35, 0.85, 0.4]) / np.linalg.norm([0.35, 0.85, 0.4])).astype(np.float32)
_GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])  # OpenGL camera axes -> OpenCV camera axes
# shading x255, two-sided: ambient + headlight * |cos(view ray, n)| + sun * |cos(sun, n)|
_AMBIENT, _HEAD, _SUN = 0.35 * 255.0, 0.45 * 255.0, 0.2 * 255.0
_CULL_PASSES, _CULL_EPS = 4, 1e-4  # back-face culling: re-casts per frame, step past a hit (m)


@dataclass
class TriangleMeshData:
    """Plain arrays of a coloured triangle mesh in the habitat frame."""

    vertices: np.ndarray  # (V, 3) float
    triangles: np.ndarray  # (F, 3) int
    vertex_colors: np.ndarray  # (V, 3) float in [0, 1]


def _o3d():
    try:
        import open3d as o3d
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise ImportError(
            f"the mesh simulator needs open3d (pip install open3d): {exc}. On Debian/Ubuntu "
            "open3d also needs the system package libusb-1.0-0."
        ) from exc
    return o3d


def _texture_colors(mat, mesh, n_faces: int) -> np.ndarray | None:
    """Per-face colours sampled from a material's albedo texture at the face's UV centroid."""
    img = getattr(mat, "albedo_img", None)
    uvs = np.asarray(mesh.triangle_uvs)
    if img is None or len(uvs) != 3 * n_faces:
        return None
    tex = np.asarray(img)
    if tex.size == 0:
        return None
    if tex.ndim == 2:
        tex = np.repeat(tex[..., None], 3, axis=2)
    uv = uvs.reshape(n_faces, 3, 2).mean(axis=1) % 1.0
    h, w = tex.shape[:2]
    # nearest texel; assimp hands UVs over with v = 0 at the image's bottom row (OpenGL)
    px = np.clip(np.floor(uv[:, 0] * w), 0, w - 1).astype(int)
    py = np.clip(np.floor((1.0 - uv[:, 1]) * h), 0, h - 1).astype(int)
    col = tex[py, px, :3].astype(np.float64)
    return col / 255.0 if tex.dtype == np.uint8 else col


def _linear_to_srgb(c: np.ndarray) -> np.ndarray:
    """sRGB encoding of linear colours in [0, 1] (the renderer shades display values)."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def default_up_axis(path: Path) -> str:
    """habitat-sim's convention: ``.glb``/``.gltf`` (HM3D, Matterport) are z up, the rest y up."""
    return "z" if Path(path).suffix.lower() in (".glb", ".gltf") else "y"


def load_mesh_file(path: Path, up_axis: str = "auto") -> TriangleMeshData:
    """Read ``.ply``/``.obj``/``.glb`` with vertex or per-material colours into arrays (habitat
    frame; ``up_axis="auto"`` reads a file the way habitat-sim does, see
    :func:`default_up_axis`)."""
    o3d = _o3d()
    path = Path(path)
    verts: list[np.ndarray] = []
    tris: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    if path.suffix.lower() == ".ply":
        m = o3d.io.read_triangle_mesh(str(path))
        v = np.asarray(m.vertices, dtype=np.float64)
        c = np.asarray(m.vertex_colors, dtype=np.float64)
        verts, tris = [v], [np.asarray(m.triangles, dtype=np.int64)]
        cols = [c if len(c) == len(v) else np.full((len(v), 3), 0.7)]
    else:
        model = o3d.io.read_triangle_model(str(path))
        # glTF base colour factors and COLOR_0 are linear; textures (and .ply/.obj) are sRGB
        gltf = path.suffix.lower() in (".glb", ".gltf")
        offset = 0
        for info in model.meshes:
            m = info.mesh
            v = np.asarray(m.vertices, dtype=np.float64)
            t = np.asarray(m.triangles, dtype=np.int64)
            if len(v) == 0 or len(t) == 0:
                continue
            c = np.asarray(m.vertex_colors, dtype=np.float64)
            if gltf and len(c) == len(v):
                c = _linear_to_srgb(c)
            if len(c) != len(v):
                mat = model.materials[info.material_idx] if model.materials else None
                face_col = _texture_colors(mat, m, len(t)) if mat is not None else None
                if face_col is not None:  # unshare vertices so faces keep their own colour
                    v = v[t.reshape(-1)]
                    t = np.arange(len(v)).reshape(-1, 3)
                    c = np.repeat(face_col, 3, axis=0)
                else:
                    base = np.asarray(mat.base_color)[:3] if mat is not None else np.full(3, 0.7)
                    base = _linear_to_srgb(base) if gltf and mat is not None else base
                    c = np.tile(np.asarray(base, dtype=np.float64), (len(v), 1))
            verts.append(v)
            tris.append(t + offset)
            cols.append(c)
            offset += len(v)
    if not verts or sum(len(t) for t in tris) == 0:
        raise ValueError(f"no triangles in mesh file {path}")
    v = np.concatenate(verts)
    if up_axis == "auto":
        up_axis = default_up_axis(path)
    if up_axis == "z":
        v = geo.normal_to_habitat(v)
    elif up_axis != "y":
        raise ConfigError(f"sim.up_axis={up_axis!r}: use auto, y or z")
    return TriangleMeshData(v, np.concatenate(tris), np.clip(np.concatenate(cols), 0.0, 1.0))


class MeshSimulator(Simulator):
    """Renders RGB-D by raycasting; navigation on a rasterised floor grid per floor height."""

    def __init__(
        self,
        width: int = MeshSimConfig.width,
        height: int = MeshSimConfig.height,
        hfov_deg: float = MeshSimConfig.hfov_deg,
        sensor_height_m: float = MeshSimConfig.sensor_height_m,
        tilt_deg: float = MeshSimConfig.tilt_deg,
        sensor_forward_m: float = MeshSimConfig.sensor_forward_m,
        agent_radius: float = MeshSimConfig.agent_radius,
        agent_height: float = MeshSimConfig.agent_height,
        agent_max_climb: float = MeshSimConfig.agent_max_climb,
        seed: int = MeshSimConfig.seed,
        cell_size: float = MeshSimConfig.cell_size,
        snap_max_dist: float = MeshSimConfig.snap_max_dist,
        up_axis: str = MeshSimConfig.up_axis,
        interpolate_colors: bool = MeshSimConfig.interpolate_colors,
        cull_back_faces: bool = MeshSimConfig.cull_back_faces,
        **_ignored: Any,
    ) -> None:
        if up_axis not in UP_AXES:
            raise ConfigError(f"sim.up_axis={up_axis!r}: use auto, y or z")
        self.cull_back_faces = bool(cull_back_faces)
        self._init_body(width, height, hfov_deg, sensor_height_m, tilt_deg, agent_radius,
                        agent_height, agent_max_climb, seed, sensor_forward_m)  # fmt: skip
        self.cell_size = float(cell_size)
        self.snap_max_dist = float(snap_max_dist)
        self.up_axis = up_axis
        self.interpolate_colors = bool(interpolate_colors)
        self._no_uv = np.zeros((1, 2), dtype=np.float32)
        self.scene: SceneSpec | None = None
        self._mesh: TriangleMeshData | None = None
        self._rc: Any = None  # o3d.t.geometry.RaycastingScene (open3d is untyped)
        self._grids: dict[float, NavGrid] = {}
        self._floor: float | None = None
        self._pos = np.zeros(3)
        self._rot = np.array([1.0, 0.0, 0.0, 0.0])
        self._pix: tuple | None = None  # per-sensor ray constants (see _pixel_terms)

    # ------------------------------------------------------------------ scenes
    def resolve_scene(self, scenes_dir: Path, scene_id: str) -> SceneSpec:
        path = find_scene_file(Path(scenes_dir), scene_id, MESH_SUFFIXES)
        return SceneSpec(scene_id=scene_id, mesh_path=path)

    def load_scene(self, scene: SceneSpec, *, start_position=None) -> None:
        if self.scene is None or Path(self.scene.mesh_path) != Path(scene.mesh_path):
            self.load_arrays(load_mesh_file(Path(scene.mesh_path), self.up_axis))
        self.scene = scene
        self._floor = self.floor_height_at(start_position)
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
        self._prepare_shading(np.asarray(mesh.vertices, dtype=np.float64), tri)
        self._rc = o3d.t.geometry.RaycastingScene()
        self._rc.add_triangles(
            o3d.core.Tensor(np.asarray(mesh.vertices, dtype=np.float32)),
            o3d.core.Tensor(tri.astype(np.uint32)),
        )
        self._grids = {}
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
        """Per-sensor constants: pinhole intrinsics (pixel-centre convention of
        ``create_rays_pinhole``), camera-frame ray x/y (forward component -1) and the
        headlight factor ``_HEAD / |ray|`` per pixel."""
        if self._pix is None:
            o3d = _o3d()
            s = self.sensor
            k = geo.intrinsics_from_hfov(s.hfov_deg, s.width, s.height)
            # our rays pass through pixel index u (not u + 0.5): shift the principal point
            k_o3d = k.copy()
            k_o3d[0, 2] += 0.5
            k_o3d[1, 2] += 0.5
            x = ((np.arange(s.width) - k[0, 2]) / k[0, 0]).astype(np.float32)
            y = (-(np.arange(s.height) - k[1, 2]) / k[1, 1]).astype(np.float32)
            xx = np.broadcast_to(x[None, :], (s.height, s.width)).reshape(-1)
            yy = np.broadcast_to(y[:, None], (s.height, s.width)).reshape(-1)
            head = (_HEAD / np.sqrt(xx * xx + yy * yy + 1.0)).astype(np.float32)
            self._pix = (o3d.core.Tensor(k_o3d), xx.copy(), yy.copy(), head)
        return self._pix

    def set_sensor(self, sensor: SensorSpec) -> None:
        """Change the camera (resolution, hfov, height, tilt)."""
        self.sensor = sensor
        self._pix = None

    def render(
        self, cam_to_world: np.ndarray, *, reference: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """RGB (H, W, 3) uint8 and z-depth (H, W) float32 from a habitat/OpenGL camera pose.

        One ray cast per frame; colour and shading come from per-face arrays prepared at load
        (the headlight term is the only per-pixel one), all in float32, in one compiled pass.
        ``reference=True`` shades with the numpy reference instead (the test oracle of the
        compiled pass; identical frames, slower).
        """
        o3d = _o3d()
        s = self.sensor
        k_o3d, x, y, head_k = self._pixel_terms()
        cam = np.asarray(cam_to_world, dtype=np.float64)
        world_to_cv = geo.invert_pose(cam @ _GL_TO_CV)  # open3d wants an OpenCV extrinsic
        rays = o3d.t.geometry.RaycastingScene.create_rays_pinhole(
            k_o3d, o3d.core.Tensor(world_to_cv), s.width, s.height
        )  # unit forward component: t_hit is the z-depth
        n_f = len(self._fcol)
        # headlight: |n . d| / |d| with n in the camera frame, d = (x, y, -1)
        n_cam = cam[:3, :3].T.astype(np.float32) @ self._fn_t  # (3, F + 1)
        out = self._cast_frame(rays, n_cam, x, y)
        t = out["t_hit"]
        shade = self._shade_reference if reference else self._shade_compiled
        return shade(out, t, n_f, n_cam, x, y, head_k)

    def _shade_reference(self, out, t, n_f, n_cam, x, y, head_k):
        """``render``'s shading in numpy: the test oracle of :meth:`_shade_compiled`."""
        s = self.sensor
        # misses (INVALID_ID) -> the black sentinel face; intp once instead of in every take
        pid = np.minimum(out["primitive_ids"], n_f).astype(np.intp)
        shade = np.take(n_cam[0], pid)
        shade *= x
        tmp = np.take(n_cam[1], pid)
        tmp *= y
        shade += tmp
        shade -= np.take(n_cam[2], pid)
        np.abs(shade, out=shade)
        shade *= head_k
        shade += np.take(self._k_static, pid)
        if self.interpolate_colors and not self._flat_colors:
            uv = out["primitive_uvs"]
            tri = np.take(self._tri_s, pid, axis=0)
            u, v = uv[:, 0:1], uv[:, 1:2]
            col = np.take(self._vcol_s, tri[:, 1], axis=0) * u
            col += np.take(self._vcol_s, tri[:, 2], axis=0) * v
            col += np.take(self._vcol_s, tri[:, 0], axis=0) * (1.0 - u - v)
        else:
            col = np.take(self._fcol_s, pid, axis=0)
        col *= shade[:, None]
        if self._clip_rgb:  # colours in [0, 1] keep col * shade <= 255
            np.minimum(col, 255.0, out=col)
        rgb = col.astype(np.uint8)
        np.copyto(t, np.float32(0.0), where=pid == n_f)
        return rgb.reshape(s.height, s.width, 3), t.reshape(s.height, s.width)

    def _cast_frame(self, rays, n_cam: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict:
        """One frame's hits as flat numpy arrays (t_hit, primitive_ids, primitive_uvs).

        With ``cull_back_faces`` (default) a ray that hits a triangle from behind goes on
        through it, as in habitat-sim's rasteriser (single-sided triangles, counter-clockwise
        front): such rays are cast again from just past the hit, at most ``_CULL_PASSES``
        times per frame.
        """
        out = self._rc.cast_rays(rays, nthreads=0)
        t = out["t_hit"].numpy().reshape(-1)
        pid = out["primitive_ids"].numpy().reshape(-1)
        uv = out["primitive_uvs"].numpy().reshape(-1, 2)
        if self.cull_back_faces:
            n_f = len(self._fcol)
            flat_rays = None
            for _ in range(_CULL_PASSES):
                idx = np.nonzero(pid < n_f)[0]
                p = pid[idx]
                facing = n_cam[0, p] * x[idx] + n_cam[1, p] * y[idx] - n_cam[2, p]
                back = idx[facing > 0]  # the normal points away from the camera
                if back.size == 0:
                    break
                if flat_rays is None:
                    flat_rays = rays.numpy().reshape(-1, 6)
                r = flat_rays[back]
                start = t[back] + _CULL_EPS
                res = self.cast(r[:, :3] + r[:, 3:] * start[:, None], r[:, 3:])
                t[back] = start + res["t_hit"]
                pid[back] = res["primitive_ids"]
                uv[back] = res["primitive_uvs"]
        return {"t_hit": t, "primitive_ids": pid, "primitive_uvs": uv}

    def _shade_compiled(self, out, t, n_f, n_cam, x, y, head_k):
        """``render``'s shading as one compiled pass (:mod:`eqa_runner.sim.shade_kernel`)."""
        from eqa_runner.sim.shade_kernel import shade_hits

        s = self.sensor
        interpolate = bool(self.interpolate_colors and not self._flat_colors)
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
        if self._rc is not None and (self._floor is None or abs(self._pos[1] - self._floor) > 1.0):
            self._floor = self.floor_height_at(self._pos)

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

    # ------------------------------------------------------------------ floors & grid
    def floor_height_at(self, p=None) -> float:
        """Floor under ``p`` (downward ray from 0.5 m above it); the main floor when None."""
        self._require()
        if p is not None:
            p = as_vec3(p)
            res = self.cast(p[None] + [0.0, 0.5, 0.0], np.array([[0.0, -1.0, 0.0]]))
            t = float(res["t_hit"][0])
            return p[1] + 0.5 - t if math.isfinite(t) and t <= 2.0 else float(p[1])
        return self._main_floor()

    def _main_floor(self) -> float:
        """Lowest height with >= 25% of the largest area of horizontal triangles."""
        v = np.asarray(self._require().vertices)
        t = self._tri
        a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
        cr = np.cross(b - a, c - a)
        area = 0.5 * np.linalg.norm(cr, axis=1)
        horiz = np.abs(cr[:, 1]) > 0.95 * np.maximum(2 * area, 1e-12)
        if not horiz.any():
            return float(v[:, 1].min())
        ys = (a[horiz, 1] + b[horiz, 1] + c[horiz, 1]) / 3
        bins = np.floor(ys / 0.1).astype(int)
        uniq, inv = np.unique(bins, return_inverse=True)
        tot = np.bincount(inv, weights=area[horiz])
        cand = np.nonzero(tot >= 0.25 * tot.max())[0]
        k = int(cand[0])
        for nxt in cand[1:]:  # a floor slab: walk up to its top face
            if (uniq[nxt] - uniq[k]) * 0.1 <= 0.35:
                k = int(nxt)
            else:
                break
        return float(np.median(ys[inv == k]))

    def _grid(self) -> NavGrid:
        self._require()
        if self._floor is None:
            self._floor = self.floor_height_at(None)
        key = round(self._floor, 2)
        if key not in self._grids:
            self._grids[key] = self.build_grid(self._floor)
        return self._grids[key]

    def build_grid(self, floor_y: float) -> NavGrid:
        """Navigable cells: floor within max_climb below, no obstacle in the body column."""
        from scipy.ndimage import distance_transform_edt

        v = np.asarray(self._require().vertices)
        c = self.cell_size
        pad = 2 * c
        lo = v[:, [0, 2]].min(axis=0) - pad
        hi = v[:, [0, 2]].max(axis=0) + pad
        nx, nz = (np.ceil((hi - lo) / c)).astype(int)
        ii, jj = np.meshgrid(np.arange(nx), np.arange(nz), indexing="ij")
        xs = lo[0] + (ii.reshape(-1) + 0.5) * c
        zs = lo[1] + (jj.reshape(-1) + 0.5) * c
        # floor: a downward ray from floor + max_climb lands within +-max_climb of the floor
        top = floor_y + self.agent_max_climb
        orig = np.stack([xs, np.full_like(xs, top), zs], axis=1)
        res = self.cast(orig, np.tile([0.0, -1.0, 0.0], (len(xs), 1)))
        floor_ok = res["t_hit"] <= 2 * self.agent_max_climb + 1e-3
        # obstacles: surface samples between floor + max_climb and floor + agent height
        occ = self._rasterize_band(
            floor_y + self.agent_max_climb, floor_y + self.agent_height, lo, (nx, nz)
        )
        clear = distance_transform_edt(~occ) * c > self.agent_radius
        nav = floor_ok.reshape(nx, nz) & clear
        return NavGrid(nav, (lo[0], lo[1]), c, floor_y, snap_max_dist=self.snap_max_dist)

    def _rasterize_band(self, y0: float, y1: float, lo: np.ndarray, shape) -> np.ndarray:
        """Occupancy (nx, nz) of mesh surface points with y in [y0, y1] (dense barycentric
        sampling at a third of the cell size, so thin walls leave no gaps)."""
        v = np.asarray(self._require().vertices)
        tri = v[self._tri]  # (F, 3, 3)
        ymin, ymax = tri[:, :, 1].min(axis=1), tri[:, :, 1].max(axis=1)
        tri = tri[(ymax >= y0) & (ymin <= y1)]
        occ = np.zeros(shape, dtype=bool)
        if len(tri) == 0:
            return occ
        step = self.cell_size / 3
        edge = np.max(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2), axis=1)
        n_div = np.clip(np.ceil(edge / step).astype(int), 1, 2000)
        for n in np.unique(n_div):
            sel = tri[n_div == n]
            a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
            keep = a + b <= n
            w1, w2 = a[keep] / n, b[keep] / n
            w0 = 1.0 - w1 - w2
            chunk = max(1, 2_000_000 // len(w0))
            for s in range(0, len(sel), chunk):
                t = sel[s : s + chunk]
                pts = (
                    w0[None, :, None] * t[:, None, 0]
                    + w1[None, :, None] * t[:, None, 1]
                    + w2[None, :, None] * t[:, None, 2]
                ).reshape(-1, 3)
                pts = pts[(pts[:, 1] >= y0) & (pts[:, 1] <= y1)]
                i = np.floor((pts[:, 0] - lo[0]) / self.cell_size).astype(int)
                j = np.floor((pts[:, 2] - lo[1]) / self.cell_size).astype(int)
                ok = (i >= 0) & (i < shape[0]) & (j >= 0) & (j < shape[1])
                occ[i[ok], j[ok]] = True
        return occ

    @property
    def floor_height(self) -> float:
        return self._grid().floor_y

    @property
    def navgrid(self) -> NavGrid:
        return self._grid()

    # ------------------------------------------------------------------ navigation API
    def snap_point(self, p) -> np.ndarray:
        return self._grid().snap_point(as_vec3(p))

    def random_navigable_point_near(self, p, radius: float, rng: np.random.Generator):
        return self._grid().random_point_near(as_vec3(p), float(radius), rng)

    def geodesic_distance(self, a, b) -> float:
        return self._grid().geodesic_distance(as_vec3(a), as_vec3(b))

    def shortest_path(self, a, b) -> list[np.ndarray] | None:
        """Waypoints (habitat frame) of a shortest path, or None when unreachable."""
        return self._grid().shortest_path(as_vec3(a), as_vec3(b))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self._grid().bounds()

    def is_navigable(self, p) -> bool:
        p = as_vec3(p)
        return self._grid().is_navigable(p) if np.all(np.isfinite(p)) else False

    def random_navigable_point(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random navigable cell centre on the current floor."""
        g = self._grid()
        if len(g._nav_ij) == 0:
            return NAN3.copy()
        x, z = g._nav_xz[int(rng.integers(len(g._nav_xz)))]
        return np.array([x, g.floor_y, z])

    def navigable_map(self, floor_y: float, cell_m: float = 0.1) -> NavigableMap:
        """The floor grid of ``floor_y`` (this backend's own cells; ``cell_m`` is not used)."""
        g = self._grid()
        if abs(g.floor_y - floor_y) > self.agent_max_climb:  # another storey: its own grid
            key = round(floor_y, 2)
            if key not in self._grids:
                self._grids[key] = self.build_grid(floor_y)
            g = self._grids[key]
        return NavigableMap(g.navigable, (g.x0, g.z0), g.c, g.floor_y)

    def navigable_area(self) -> float:
        """Area (m^2) of the navigable cells on the agent's floor."""
        g = self._grid()
        return float(len(g._nav_ij)) * g.c * g.c

    def close(self) -> None:
        self._rc = None
        self._mesh = None
        self._grids = {}
        self.scene = None
