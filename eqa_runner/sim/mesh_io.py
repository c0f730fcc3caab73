"""Reading mesh files (``.ply``/``.obj``/``.glb``/``.gltf``) into plain arrays in habitat's frame.

open3d is imported lazily, on the first read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqa_runner.errors import ConfigError
from eqa_runner.sim import geometry as geo


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
