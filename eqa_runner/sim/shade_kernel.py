"""Compiled (numba) per-pixel shading of the mesh backend's ray-cast hits.

One pass over the pixels turns open3d's hit arrays (distance, triangle id, barycentric uv)
into the uint8 RGB frame and the z-depth frame, instead of a dozen whole-image numpy passes.
Arithmetic is float32 in the same order as the numpy path of ``MeshSimulator.render``, so
both give identical frames (``tests/sim/test_mesh_render.py``). The kernel releases the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def shade_hits(
    t_hit: np.ndarray,  # (N,) float32 ray distance (= z-depth: unit forward component)
    pid: np.ndarray,  # (N,) uint32 hit triangle, >= n_faces for a miss
    uv: np.ndarray,  # (N, 2) float32 barycentric (u, v) of the hit
    n_faces: int,
    n_cam: np.ndarray,  # (3, F + 1) float32 face normals in the camera frame (+ sentinel)
    x: np.ndarray,  # (N,) float32 camera-frame ray x (forward component -1)
    y: np.ndarray,  # (N,) float32 camera-frame ray y
    head: np.ndarray,  # (N,) float32 headlight factor / |ray|
    k_static: np.ndarray,  # (F + 1,) float32 ambient + sun term
    face_rgb: np.ndarray,  # (F + 1, 3) float32 face colours
    vert_rgb: np.ndarray,  # (V + 1, 3) float32 vertex colours (+ black sentinel)
    tri: np.ndarray,  # (F + 1, 3) int32 triangles (+ sentinel pointing at the black vertex)
    interpolate: bool,
    clip: bool,
    rgb: np.ndarray,  # (N, 3) uint8 out
    depth: np.ndarray,  # (N,) float32 out
) -> None:
    """Fill ``rgb`` and ``depth`` (misses: black, depth 0)."""
    one = np.float32(1.0)
    top = np.float32(255.0)
    for i in range(t_hit.size):
        p = np.int64(pid[i])
        if p > n_faces:
            p = n_faces
        s = n_cam[0, p] * x[i]
        s = s + n_cam[1, p] * y[i]
        s = s - n_cam[2, p]
        s = abs(s) * head[i] + k_static[p]
        if interpolate:
            u = uv[i, 0]
            v = uv[i, 1]
            w = (one - u) - v
            a, b, c = tri[p, 0], tri[p, 1], tri[p, 2]
            for j in range(3):
                col = vert_rgb[b, j] * u
                col = col + vert_rgb[c, j] * v
                col = col + vert_rgb[a, j] * w
                col = col * s
                if clip and col > top:
                    col = top
                rgb[i, j] = np.uint8(np.int64(col))
        else:
            for j in range(3):
                col = face_rgb[p, j] * s
                if clip and col > top:
                    col = top
                rgb[i, j] = np.uint8(np.int64(col))
        depth[i] = np.float32(0.0) if p == n_faces else t_hit[i]


def shade_reference(sim, out, t, n_f, n_cam, x, y, head_k):
    """The mesh backend's shading in numpy (``sim``: a MeshSimulator): the test oracle of
    :func:`shade_hits`."""
    s = sim.sensor
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
    shade += np.take(sim._k_static, pid)
    if sim.config.interpolate_colors and not sim._flat_colors:
        uv = out["primitive_uvs"]
        tri = np.take(sim._tri_s, pid, axis=0)
        u, v = uv[:, 0:1], uv[:, 1:2]
        col = np.take(sim._vcol_s, tri[:, 1], axis=0) * u
        col += np.take(sim._vcol_s, tri[:, 2], axis=0) * v
        col += np.take(sim._vcol_s, tri[:, 0], axis=0) * (1.0 - u - v)
    else:
        col = np.take(sim._fcol_s, pid, axis=0)
    col *= shade[:, None]
    if sim._clip_rgb:  # colours in [0, 1] keep col * shade <= 255
        np.minimum(col, 255.0, out=col)
    rgb = col.astype(np.uint8)
    np.copyto(t, np.float32(0.0), where=pid == n_f)
    return rgb.reshape(s.height, s.width, 3), t.reshape(s.height, s.width)
