"""The mesh backend's file formats, written for real and rendered through ``MeshSimulator``.

Every format gets the same world: a wall at z = -3 made of two differently coloured halves
(x < 0 and x > 0) and a panel behind the start at z = +4. The agent stands at the origin (camera
1.5 m up) and looks along -z (yaw 0: sees both halves) or +z (yaw pi: the panel at the image
centre). Colours are checked against the renderer's documented shading (ambient 0.35 +
headlight 0.45 |cos| + sun 0.2 |n . L|) and depths against the plane distances.

* ``.glb`` / ``.gltf``: one mesh with two primitives (one material each, base colour factors
  only, no vertex colours or textures); the panel is a unit quad placed by a parent/child node
  chain (translation, rotation, scale). glTF factors are linear, so the expected display
  colour is their sRGB encoding.
* ``.ply``: uchar vertex colours (written by open3d).
* ``.obj`` + ``.mtl``: one ``Kd`` per ``usemtl`` group.
* Textured ``.glb`` / ``.obj``: a 2x2 albedo texture sampled per face (UV orientation).
"""

from __future__ import annotations

import io
import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

o3d = pytest.importorskip("open3d")

from eqa_runner.sim import geometry as geo  # noqa: E402
from eqa_runner.sim.base import SceneSpec  # noqa: E402
from eqa_runner.sim.mesh import _LIGHT, MESH_SUFFIXES, MeshSimulator  # noqa: E402

W, H = 64, 48  # hfov 90: fx = fy = 32, principal point (32, 24)

# world geometry (habitat frame, y up): (corners counter-clockwise seen from the camera, normal)
LEFT = np.array([[-3, 0, -3], [0, 0, -3], [0, 3, -3], [-3, 3, -3]], dtype=float)
RIGHT = np.array([[0, 0, -3], [3, 0, -3], [3, 3, -3], [0, 3, -3]], dtype=float)
BACK = np.array([[2, -0.5, 4], [-2, -0.5, 4], [-2, 3.5, 4], [2, 3.5, 4]], dtype=float)
QUAD = np.array([[0, 1, 2], [0, 2, 3]])

# display (sRGB) colours of the three surfaces
COLOURS = {
    "left": np.array([0.85, 0.15, 0.10]),
    "right": np.array([0.10, 0.25, 0.85]),
    "back": np.array([0.20, 0.70, 0.25]),
}
# (surface, world point, yaw, depth): the points project onto exact pixel centres
PROBES = [
    ("left", (-1.5, 1.5, -3.0), 0.0, 3.0),  # pixel (row 24, col 16)
    ("right", (1.5, 1.5, -3.0), 0.0, 3.0),  # pixel (24, 48)
    ("back", (0.0, 1.5, 4.0), math.pi, 4.0),  # image centre (24, 32)
]


def srgb_to_linear(c):
    c = np.asarray(c, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


# ----------------------------------------------------------------------------- glTF writer


class GltfWriter:
    """Minimal glTF 2.0 writer: float32 POSITION / TEXCOORD_0 / COLOR_0, uint16 indices,
    PBR materials (base colour factor and/or an embedded PNG base colour texture)."""

    def __init__(self) -> None:
        self.bin = bytearray()
        self.doc: dict = {
            "asset": {"version": "2.0", "generator": "eqa_runner tests"},
            "scene": 0,
            "scenes": [{"nodes": []}],
            "nodes": [],
            "meshes": [],
            "materials": [],
            "accessors": [],
            "bufferViews": [],
        }

    def _view(self, data: bytes, target: int | None = None) -> int:
        self.bin.extend(b"\0" * (-len(self.bin) % 4))  # 4-byte aligned views
        view = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)}
        if target is not None:
            view["target"] = target
        self.bin.extend(data)
        self.doc["bufferViews"].append(view)
        return len(self.doc["bufferViews"]) - 1

    def _accessor(self, arr: np.ndarray, kind: str) -> int:
        if kind == "index":
            a = np.asarray(arr, dtype="<u2").reshape(-1)
            acc = {"componentType": 5123, "type": "SCALAR", "count": len(a)}
            acc["bufferView"] = self._view(a.tobytes(), 34963)  # ELEMENT_ARRAY_BUFFER
        else:
            a = np.asarray(arr, dtype="<f4")
            acc = {"componentType": 5126, "type": f"VEC{a.shape[1]}", "count": len(a)}
            acc["bufferView"] = self._view(a.tobytes(), 34962)  # ARRAY_BUFFER
            if kind == "position":  # min / max are required for POSITION
                acc.update(min=a.min(axis=0).tolist(), max=a.max(axis=0).tolist())
        self.doc["accessors"].append(acc)
        return len(self.doc["accessors"]) - 1

    def material(self, base_color_linear=None, png: bytes | None = None) -> int:
        pbr: dict = {"metallicFactor": 0.0, "roughnessFactor": 1.0}
        if base_color_linear is not None:
            pbr["baseColorFactor"] = [*map(float, base_color_linear), 1.0]
        if png is not None:
            img = {"bufferView": self._view(png), "mimeType": "image/png"}
            self.doc.setdefault("images", []).append(img)
            self.doc.setdefault("samplers", []).append({"magFilter": 9728, "minFilter": 9728})
            tex = {"source": len(self.doc["images"]) - 1, "sampler": 0}
            self.doc.setdefault("textures", []).append(tex)
            pbr["baseColorTexture"] = {"index": len(self.doc["textures"]) - 1}
        self.doc["materials"].append({"pbrMetallicRoughness": pbr})
        return len(self.doc["materials"]) - 1

    def mesh(self, primitives) -> int:
        """``primitives``: (vertices, triangles, material, {attribute: array}) per primitive,
        the extra attributes being ``TEXCOORD_0`` and/or ``COLOR_0`` (float RGB)."""
        prims = []
        for v, t, mat, extra in primitives:
            attrs = {"POSITION": self._accessor(v, "position")}
            attrs.update({k: self._accessor(a, k) for k, a in extra.items()})
            prims.append({"attributes": attrs, "indices": self._accessor(t, "index"), "mode": 4})
            prims[-1]["material"] = mat
        self.doc["meshes"].append({"primitives": prims})
        return len(self.doc["meshes"]) - 1

    def node(self, root: bool = True, **fields) -> int:
        self.doc["nodes"].append(fields)
        idx = len(self.doc["nodes"]) - 1
        if root:
            self.doc["scenes"][0]["nodes"].append(idx)
        return idx

    def save(self, path: Path) -> Path:
        """``.glb``: header + JSON chunk + BIN chunk; ``.gltf``: JSON + an external ``.bin``."""
        self.bin.extend(b"\0" * (-len(self.bin) % 4))
        doc = dict(self.doc, buffers=[{"byteLength": len(self.bin)}])
        if path.suffix == ".gltf":
            bin_path = path.with_suffix(".bin")
            bin_path.write_bytes(bytes(self.bin))
            doc["buffers"][0]["uri"] = bin_path.name
            path.write_text(json.dumps(doc, indent=1))
            return path
        js = json.dumps(doc, separators=(",", ":")).encode()
        js += b" " * (-len(js) % 4)  # the JSON chunk is padded with spaces
        total = 12 + 8 + len(js) + 8 + len(self.bin)
        with open(path, "wb") as fh:
            fh.write(struct.pack("<4sII", b"glTF", 2, total))
            fh.write(struct.pack("<I4s", len(js), b"JSON") + js)
            fh.write(struct.pack("<I4s", len(self.bin), b"BIN\0") + bytes(self.bin))
        return path


# ----------------------------------------------------------------------------- scene files


def write_gltf_scene(path: Path) -> Path:
    g = GltfWriter()
    left = g.material(srgb_to_linear(COLOURS["left"]))
    right = g.material(srgb_to_linear(COLOURS["right"]))
    back = g.material(srgb_to_linear(COLOURS["back"]))
    wall = g.mesh([(LEFT, QUAD, left, {}), (RIGHT, QUAD, right, {})])
    g.node(mesh=wall)
    # the panel: a unit quad at local z = -1 (without its node transforms nothing would be
    # behind the camera), scaled (2, 2, 1), turned 180 deg about y and moved to z = +4 by the
    # child, up 1.5 m by its parent: x in [-2, 2], y in [-0.5, 3.5], z = 4, i.e. BACK
    unit = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1]], dtype=float)
    panel = g.mesh([(unit, QUAD, back, {})])
    child = g.node(
        root=False, mesh=panel, scale=[2, 2, 1], rotation=[0, 1, 0, 0], translation=[0, 0, 3]
    )
    g.node(children=[child], translation=[0, 1.5, 0])
    return g.save(path)


def write_ply_scene(path: Path) -> Path:
    quads = [(LEFT, "left"), (RIGHT, "right"), (BACK, "back")]
    m = o3d.geometry.TriangleMesh()
    m.vertices = o3d.utility.Vector3dVector(np.vstack([q for q, _ in quads]))
    m.triangles = o3d.utility.Vector3iVector(np.vstack([QUAD + 4 * i for i in range(3)]))
    m.vertex_colors = o3d.utility.Vector3dVector(np.repeat([COLOURS[k] for _, k in quads], 4, 0))
    assert o3d.io.write_triangle_mesh(str(path), m, write_ascii=False)
    return path


def write_obj_scene(path: Path) -> Path:
    mtl = path.with_suffix(".mtl")
    mtl.write_text("".join(f"newmtl {k}\nKd {' '.join(map(str, c))}\n" for k, c in COLOURS.items()))
    lines = [f"mtllib {mtl.name}"]
    for i, (quad, name) in enumerate(((LEFT, "left"), (RIGHT, "right"), (BACK, "back"))):
        lines += [f"v {x} {y} {z}" for x, y, z in quad]
        lines += [f"usemtl {name}"] + [f"f {' '.join(str(4 * i + j + 1) for j in t)}" for t in QUAD]
    path.write_text("\n".join(lines) + "\n")
    return path


WRITERS = {
    ".glb": write_gltf_scene,
    ".gltf": write_gltf_scene,
    ".ply": write_ply_scene,
    ".obj": write_obj_scene,
}


# ----------------------------------------------------------------------------- helpers


def make_sim() -> MeshSimulator:
    # the files here are written y up: read them so (by default a .glb is z up, the HM3D
    # convention habitat-sim uses; tests/sim/test_scene_files.py covers that default)
    return MeshSimulator(width=W, height=H, hfov_deg=90.0, sensor_height_m=1.5, up_axis="y")


def load(sim: MeshSimulator, path: Path) -> None:
    sim.load_scene(SceneSpec(scene_id=path.stem, mesh_path=path), start_position=[0.0, 0.0, 0.0])


def probe(sim: MeshSimulator, yaw: float, point, normal):
    """Render at ``yaw``; the pixel that sees world ``point`` and the shade the renderer should
    give a surface with ``normal`` there (in units of 255)."""
    sim.set_agent_pose([0.0, 0.0, 0.0], geo.yaw_to_quat(yaw))
    obs = sim.observe()
    k, cam = obs.intrinsics, obs.cam_to_world
    p = np.linalg.inv(cam) @ np.append(point, 1.0)  # OpenGL camera: looks along -z
    col = int(round(k[0, 2] + k[0, 0] * p[0] / -p[2]))
    row = int(round(k[1, 2] - k[1, 1] * p[1] / -p[2]))
    ray = cam[:3, :3] @ [(col - k[0, 2]) / k[0, 0], -(row - k[1, 2]) / k[1, 1], -1.0]
    n = np.asarray(normal, dtype=float)
    shade = 0.35 + 0.45 * abs(n @ ray) / np.linalg.norm(ray) + 0.2 * abs(n @ _LIGHT)
    return obs.rgb[row, col].astype(float), float(obs.depth[row, col]), shade * 255.0, (row, col)


def assert_colour(rgb, colour, shade255, what: str) -> None:
    # uint8 truncation (<= 1) plus the 8-bit quantisation of the stored colours
    np.testing.assert_allclose(rgb, np.asarray(colour) * shade255, atol=1.5, err_msg=what)


# ----------------------------------------------------------------------------- tests


def test_every_tested_suffix_is_a_lookup_suffix():
    assert set(WRITERS) <= set(MESH_SUFFIXES)


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_format_colours_and_depth(tmp_path, suffix):
    """Each surface renders in its own colour at its known depth; the two halves of the wall
    (two materials / two colours) stay distinct."""
    path = WRITERS[suffix](tmp_path / f"Scene{suffix}")
    sim = make_sim()
    load(sim, path)
    seen = {}
    for name, point, yaw, depth in PROBES:
        normal = [0.0, 0.0, 1.0]  # all three surfaces are z = const planes
        rgb, d, shade255, pixel = probe(sim, yaw, point, normal)
        if name == "back":
            assert pixel == (H // 2, W // 2)
        assert d == pytest.approx(depth, abs=1e-4), f"{suffix} {name} depth"
        assert_colour(rgb, COLOURS[name], shade255, f"{suffix} {name} at {pixel}")
        seen[name] = rgb
    assert np.abs(seen["left"] - seen["right"]).max() > 100  # per-material, not collapsed
    sim.close()


def test_gltf_colours_are_linear(tmp_path):
    """glTF base colour factors and COLOR_0 are linear: 0.5 shows as sRGB 0.735 (8-bit 188,
    what a texel of 188 shows as)."""
    g = GltfWriter()
    grey = g.material([0.5, 0.5, 0.5])
    plain = g.material()  # white: COLOR_0 alone sets the colour
    vcol = {"COLOR_0": np.full((4, 3), 0.5)}
    g.node(mesh=g.mesh([(LEFT, QUAD, grey, {}), (RIGHT, QUAD, plain, vcol)]))
    sim = make_sim()
    load(sim, g.save(tmp_path / "Grey.glb"))
    for point, what in (((-1.5, 1.5, -3.0), "baseColorFactor"), ((1.5, 1.5, -3.0), "COLOR_0")):
        rgb, _, shade255, _ = probe(sim, 0.0, point, [0.0, 0.0, 1.0])
        assert_colour(rgb, [0.7354] * 3, shade255, f"{what}: linear 0.5 -> sRGB 0.735")
    sim.close()


TEXELS = np.array(  # image rows top to bottom
    [[[230, 30, 30], [30, 200, 40]], [[40, 60, 220], [240, 220, 30]]], dtype=np.uint8
)


def _png(img: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize("suffix", [".glb", ".obj"])
def test_albedo_texture_orientation(tmp_path, suffix):
    """A 2x2 texture on a quad: the lower-right triangle (UV centroid in the image's
    bottom-right texel) and the upper-left one (top-left texel) keep their own texel."""
    quad = np.array([[-3, 0, -3], [3, 0, -3], [3, 3, -3], [-3, 3, -3]], dtype=float)
    if suffix == ".glb":
        uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=float)  # glTF: v = 0 at the top
        g = GltfWriter()
        g.node(mesh=g.mesh([(quad, QUAD, g.material(png=_png(TEXELS)), {"TEXCOORD_0": uv})]))
        path = g.save(tmp_path / "Tex.glb")
    else:
        (tmp_path / "tex.png").write_bytes(_png(TEXELS))
        (tmp_path / "Tex.mtl").write_text("newmtl tex\nKd 1 1 1\nmap_Kd tex.png\n")
        path = tmp_path / "Tex.obj"
        path.write_text(
            "mtllib Tex.mtl\n"
            + "".join(f"v {x} {y} {z}\n" for x, y, z in quad)
            + "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nusemtl tex\n"  # OBJ: v = 0 at the bottom
            + "f 1/1 2/2 3/3\nf 1/1 3/3 4/4\n"
        )
    sim = make_sim()
    load(sim, path)
    for point, texel in (((1.5, 0.75, -3.0), TEXELS[1, 1]), ((-1.5, 2.25, -3.0), TEXELS[0, 0])):
        rgb, d, shade255, pixel = probe(sim, 0.0, point, [0.0, 0.0, 1.0])
        assert d == pytest.approx(3.0, abs=1e-4)
        assert_colour(rgb, texel / 255.0, shade255, f"{suffix} texel at {pixel}")
    sim.close()


# ----------------------------------------------------------------------------- errors


def test_unsupported_suffix_is_not_found_by_scene_lookup(tmp_path):
    d = tmp_path / "val" / "00800-Odd"
    d.mkdir(parents=True)
    (d / "Odd.stl").write_bytes(b"solid x\nendsolid x\n")
    with pytest.raises(FileNotFoundError) as err:
        make_sim().resolve_scene(tmp_path, "val/00800-Odd")
    msg = str(err.value)
    assert "scene 'val/00800-Odd' not found" in msg and str(d / "Odd.glb") in msg


@pytest.mark.parametrize(
    "name, data",
    [
        ("Odd.xyz", b"0 0 0\n1 0 0\n"),  # a suffix no reader handles
        ("Cut.glb", None),  # a valid .glb cut after its JSON chunk header
        ("Junk.ply", b"ply\nformat ascii 1.0\nelement vertex 3\nend_header\njunk"),
        ("Noise.obj", bytes(range(256))),
    ],
)
def test_unreadable_file_names_the_file(tmp_path, name, data):
    path = tmp_path / name
    if data is None:
        data = write_gltf_scene(tmp_path / "Full.glb").read_bytes()[:40]
    path.write_bytes(data)
    sim = make_sim()
    with pytest.raises(ValueError, match="no triangles in mesh file") as err:
        load(sim, path)
    assert str(path) in str(err.value)
    assert sim._rc is None  # nothing half-loaded
