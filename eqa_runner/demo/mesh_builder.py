"""Triangle-mesh assembly for the demo apartments: boxes and floor/ceiling quads with one colour
and one object id each, and subdivision to a target triangle count (render benchmarks).

Faces are wound counter-clockwise seen from outside a box (normals point out), floor quads face
up and ceiling quads down: habitat-sim culls back faces, so every surface faces the side it is
seen from.
"""

from __future__ import annotations

import numpy as np

_BOX_FACES = np.array(
    [
        [0, 2, 1],
        [0, 3, 2],
        [4, 5, 6],
        [4, 6, 7],
        [0, 1, 5],
        [0, 5, 4],
        [3, 7, 6],
        [3, 6, 2],
        [0, 4, 7],
        [0, 7, 3],
        [1, 2, 6],
        [1, 6, 5],
    ]
)


class MeshBuilder:
    """Collects coloured boxes and quads; ``arrays()`` gives (vertices, triangles, colours,
    per-triangle object id)."""

    def __init__(self) -> None:
        self.v: list[np.ndarray] = []
        self.f: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.o: list[np.ndarray] = []
        self.n = 0

    def add(self, verts: np.ndarray, faces: np.ndarray, rgb, obj: int) -> None:
        self.v.append(np.asarray(verts, dtype=np.float64))
        self.f.append(np.asarray(faces) + self.n)
        self.c.append(np.tile(np.asarray(rgb, dtype=np.float64), (len(verts), 1)))
        self.o.append(np.full(len(faces), obj, dtype=np.int64))
        self.n += len(verts)

    def box(self, lo, hi, rgb, obj: int = -1) -> None:
        (x0, y0, z0), (x1, y1, z1) = lo, hi
        v = np.array(
            [
                [x0, y0, z0],
                [x1, y0, z0],
                [x1, y1, z0],
                [x0, y1, z0],
                [x0, y0, z1],
                [x1, y0, z1],
                [x1, y1, z1],
                [x0, y1, z1],
            ]
        )
        self.add(v, _BOX_FACES, rgb, obj)

    def quad_y(self, x0, z0, x1, z1, y, rgb, obj: int = -1, *, facing_up: bool = True) -> None:
        """A horizontal rectangle at height ``y``; one-sided: seen from above (a floor) or,
        with ``facing_up=False``, from below (a ceiling)."""
        v = np.array([[x0, y, z0], [x1, y, z0], [x1, y, z1], [x0, y, z1]])
        faces = [[0, 2, 1], [0, 3, 2]] if facing_up else [[0, 1, 2], [0, 2, 3]]
        self.add(v, np.array(faces), rgb, obj)

    def arrays(self):
        return (
            np.concatenate(self.v),
            np.concatenate(self.f),
            np.concatenate(self.c),
            np.concatenate(self.o),
        )


def subdivide_to(vertices, triangles, colors, face_obj, target: int):
    """Split the largest triangles at their longest edge until there are >= target faces."""
    v, t, c, o = vertices, triangles, colors, face_obj
    while len(t) < target:
        p = v[t]
        e = np.stack(
            [
                np.linalg.norm(p[:, 1] - p[:, 2], axis=1),
                np.linalg.norm(p[:, 2] - p[:, 0], axis=1),
                np.linalg.norm(p[:, 0] - p[:, 1], axis=1),
            ],
            axis=1,
        )
        k = min(len(t), target - len(t))
        idx = np.argsort(-e.max(axis=1), kind="stable")[:k]
        opp = e[idx].argmax(axis=1)  # vertex opposite the longest edge
        tri = t[idx]
        a = tri[np.arange(k), opp]
        b = tri[np.arange(k), (opp + 1) % 3]
        cc = tri[np.arange(k), (opp + 2) % 3]
        mid = len(v) + np.arange(k)
        v = np.concatenate([v, (v[b] + v[cc]) / 2])
        c = np.concatenate([c, (c[b] + c[cc]) / 2])
        t = t.copy()
        t[idx] = np.stack([a, b, mid], axis=1)
        t = np.concatenate([t, np.stack([a, mid, cc], axis=1)])
        o = np.concatenate([o, o[idx]])
    return v, t, c, o
