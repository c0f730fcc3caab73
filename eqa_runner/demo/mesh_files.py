"""Scene files of the demo apartments: binary PLY and glTF-binary in the HM3D convention.

Both writers take arrays in the habitat frame (y up, metres) and need no third-party package.

``write_glb`` writes what habitat-sim and the mesh backend both read the same way:

- **z up** (the Matterport / HM3D convention): the file holds the "normal"-frame coordinates
  (``geometry.habitat_to_normal``); habitat-sim, and the mesh backend by default, rotate a
  ``.glb`` back into the y-up habitat frame;
- **colours as a palette texture** (one 4x4 texel block per distinct colour, nearest
  filtering, every vertex's UV at its block's centre), like HM3D's textured meshes: habitat-sim
  shows a base-colour texture as is when a scene has no lights (its default), while vertex
  colours would come out nearly black; sRGB texels also mean the same colours in the mesh
  backend (glTF vertex colours are linear, textures sRGB);
- one-sided triangles wound counter-clockwise seen from the side meant to be seen, as
  habitat-sim culls back faces.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

_BLOCK = 4  # palette texel block side (a face's UV sits at its block's centre)


def write_ply(path: Path, vertices: np.ndarray, triangles: np.ndarray, colors: np.ndarray) -> None:
    """Binary little-endian PLY with uchar vertex colours (no open3d needed)."""
    v = np.asarray(vertices, dtype="<f4")
    c = np.clip(np.round(np.asarray(colors) * 255), 0, 255).astype(np.uint8)
    vert = np.empty(len(v), dtype=[("p", "<f4", 3), ("c", "u1", 3)])
    vert["p"], vert["c"] = v, c
    faces = np.empty(len(triangles), dtype=[("n", "u1"), ("i", "<i4", 3)])
    faces["n"], faces["i"] = 3, np.asarray(triangles, dtype="<i4")
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {len(v)}\nproperty float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\n"
        f"element face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n"
    )
    with open(path, "wb") as fh:
        fh.write(header.encode("ascii"))
        fh.write(vert.tobytes())
        fh.write(faces.tobytes())


def palette_texture(colors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(RGB image uint8, per-vertex UV (V, 2) float32) for per-vertex colours in [0, 1].

    Each distinct 8-bit colour gets a ``_BLOCK``-square block; UVs point at block centres
    (glTF UV origin: top-left of the image).
    """
    c8 = np.clip(np.round(np.asarray(colors, dtype=np.float64) * 255), 0, 255).astype(np.uint8)
    uniq, inv = np.unique(c8, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    n = len(uniq)
    cols = int(np.ceil(np.sqrt(n)))
    rows = int(np.ceil(n / cols))
    img = np.zeros((rows * _BLOCK, cols * _BLOCK, 3), dtype=np.uint8)
    k = np.arange(n)
    r, q = k // cols, k % cols
    for i in range(n):
        img[r[i] * _BLOCK : (r[i] + 1) * _BLOCK, q[i] * _BLOCK : (q[i] + 1) * _BLOCK] = uniq[i]
    u = (q[inv] + 0.5) * _BLOCK / img.shape[1]
    v = (r[inv] + 0.5) * _BLOCK / img.shape[0]
    return img, np.stack([u, v], axis=1).astype(np.float32)


def write_glb(path: Path, vertices: np.ndarray, triangles: np.ndarray, colors: np.ndarray) -> None:
    """A glTF-binary scene in the HM3D convention (z up, palette texture); see module doc."""
    from PIL import Image

    from eqa_runner.sim.geometry import habitat_to_normal

    pos = np.ascontiguousarray(habitat_to_normal(np.asarray(vertices, np.float64)), dtype="<f4")
    idx = np.ascontiguousarray(np.asarray(triangles).reshape(-1), dtype="<u4")
    img, uv = palette_texture(colors)
    png = io.BytesIO()
    Image.fromarray(img).save(png, format="PNG")
    chunks = [
        pos.tobytes(),
        np.ascontiguousarray(uv, "<f4").tobytes(),
        idx.tobytes(),
        png.getvalue(),
    ]
    views, blob = _pack(chunks)
    doc = _gltf_document(pos, len(uv), len(idx), views, len(blob))
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 4)
    total = 12 + 8 + len(js) + 8 + len(blob)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<4sII", b"glTF", 2, total))
        fh.write(struct.pack("<I4s", len(js), b"JSON") + js)
        fh.write(struct.pack("<I4s", len(blob), b"BIN\0") + blob)


def _pack(chunks: list[bytes]) -> tuple[list[dict[str, int]], bytes]:
    """The binary buffer (each chunk 4-byte aligned) and one buffer view per chunk: positions,
    texture coordinates, indices, the PNG."""
    views, blob = [], b""
    for data in chunks:
        blob += b"\0" * (-len(blob) % 4)
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)})
        blob += data
    blob += b"\0" * (-len(blob) % 4)
    views[0]["target"] = views[1]["target"] = 34962  # ARRAY_BUFFER
    views[2]["target"] = 34963  # ELEMENT_ARRAY_BUFFER
    return views, blob


def _gltf_document(
    pos: np.ndarray, n_uv: int, n_idx: int, views: list[dict[str, int]], blob_len: int
) -> dict[str, Any]:
    """The glTF JSON: one textured triangle mesh, unlit-looking (metallic 0, roughness 1)."""
    return {
        "asset": {"version": "2.0", "generator": "eqa_runner.demo"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [
            {
                "primitives": [
                    {
                        "attributes": {"POSITION": 0, "TEXCOORD_0": 1},
                        "indices": 2,
                        "material": 0,
                        "mode": 4,
                    }
                ]
            }
        ],
        "materials": [
            {
                "pbrMetallicRoughness": {
                    "baseColorTexture": {"index": 0},
                    "metallicFactor": 0.0,
                    "roughnessFactor": 1.0,
                }
            }
        ],
        "textures": [{"sampler": 0, "source": 0}],
        "samplers": [{"magFilter": 9728, "minFilter": 9728, "wrapS": 33071, "wrapT": 33071}],
        "images": [{"bufferView": 3, "mimeType": "image/png"}],
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": len(pos),
                "type": "VEC3",
                "min": pos.min(axis=0).tolist(),
                "max": pos.max(axis=0).tolist(),
            },
            {"bufferView": 1, "componentType": 5126, "count": n_uv, "type": "VEC2"},
            {"bufferView": 2, "componentType": 5125, "count": n_idx, "type": "SCALAR"},
        ],
        "bufferViews": views,
        "buffers": [{"byteLength": blob_len}],
    }
