"""Seeded procedural apartments: rooms, walls with doorways, named coloured furniture.

Everything is built from axis-aligned boxes in the habitat frame (y up, metres). The result
carries the mesh arrays, a per-triangle object index and a JSON-able scene description.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

WALL_H = 2.5
WALL_T = 0.1
DOOR_W = 0.9
DOOR_H = 2.1

COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.80, 0.15, 0.15),
    "blue": (0.15, 0.30, 0.80),
    "green": (0.20, 0.62, 0.25),
    "yellow": (0.95, 0.85, 0.20),
    "white": (0.93, 0.93, 0.93),
    "black": (0.09, 0.09, 0.09),
    "brown": (0.45, 0.28, 0.12),
    "gray": (0.50, 0.50, 0.52),
    "orange": (0.95, 0.50, 0.10),
    "purple": (0.50, 0.20, 0.65),
    "pink": (0.95, 0.55, 0.70),
}
BRIGHT = ["red", "blue", "green", "yellow", "orange", "purple", "pink"]
WOOD = ["brown", "white", "black", "gray"]
FLOOR_COLORS = {
    "living room": (0.62, 0.47, 0.30),
    "kitchen": (0.75, 0.75, 0.72),
    "bedroom": (0.55, 0.45, 0.38),
    "guest bedroom": (0.50, 0.52, 0.45),
    "bathroom": (0.70, 0.80, 0.85),
    "office": (0.48, 0.42, 0.35),
    "dining room": (0.60, 0.50, 0.36),
    "laundry room": (0.72, 0.70, 0.62),
}
ROOM_KINDS = [
    "living room",
    "kitchen",
    "bedroom",
    "bathroom",
    "office",
    "dining room",
    "guest bedroom",
    "laundry room",
]
WALL_RGB = (0.86, 0.84, 0.78)
CEILING_RGB = (0.95, 0.95, 0.93)

Box = tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float, float]]


@dataclass
class Room:
    name: str
    bounds: list[list[float]]  # [[x0, z0], [x1, z1]]
    floor_rgb: list[float]
    accessible: bool = True

    @property
    def center(self) -> np.ndarray:
        (x0, z0), (x1, z1) = self.bounds
        return np.array([(x0 + x1) / 2, 0.0, (z0 + z1) / 2])


@dataclass
class SceneObject:
    id: int
    name: str
    color: str
    position: list[float]  # centre of the bounding box (habitat frame)
    size: list[float]  # bounding box extent (x, y, z)
    room: str
    state: str | None = None
    supported_by: int | None = None
    supported_by_name: str | None = None
    facing: list[float] = field(default_factory=lambda: [0.0, 0.0, 1.0])


@dataclass
class Apartment:
    """A generated apartment: description plus mesh arrays (habitat frame)."""

    seed: int
    rooms: list[Room]
    objects: list[SceneObject]
    doorways: list[dict[str, Any]]
    vertices: np.ndarray
    triangles: np.ndarray
    vertex_colors: np.ndarray
    face_object: np.ndarray  # (F,) object id per triangle, -1 for structure

    def room(self, name: str) -> Room:
        return next(r for r in self.rooms if r.name == name)

    def description(self) -> dict[str, Any]:
        v = self.vertices
        return {
            "seed": self.seed,
            "frame": "habitat (y up, metres)",
            "bounds": [v.min(axis=0).round(3).tolist(), v.max(axis=0).round(3).tolist()],
            "num_triangles": int(len(self.triangles)),
            "rooms": [asdict(r) for r in self.rooms],
            "objects": [asdict(o) for o in self.objects],
            "doorways": self.doorways,
        }

    def mesh_data(self):
        from eqa_runner.sim.mesh import TriangleMeshData

        return TriangleMeshData(self.vertices, self.triangles, self.vertex_colors)

    def write(self, directory: Path, name: str) -> tuple[Path, Path]:
        """Write ``<name>.ply`` (vertex colours) and ``<name>.scene.json``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        ply = directory / f"{name}.ply"
        write_ply(ply, self.vertices, self.triangles, self.vertex_colors)
        js = directory / f"{name}.scene.json"
        js.write_text(json.dumps(self.description(), indent=1))
        return ply, js


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


# ----------------------------------------------------------------------------- mesh builder

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


class _MeshBuilder:
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

    def quad_y(self, x0, z0, x1, z1, y, rgb, obj: int = -1) -> None:
        v = np.array([[x0, y, z0], [x1, y, z0], [x1, y, z1], [x0, y, z1]])
        self.add(v, np.array([[0, 2, 1], [0, 3, 2]]), rgb, obj)

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


# ----------------------------------------------------------------------------- furniture


def _shade(rgb, f: float):
    return tuple(min(1.0, x * f) for x in rgb)


def _furniture(name: str, color: str, state: str | None, rng) -> tuple[tuple, list[Box]]:
    """(size (w, h, d), boxes) in a local frame: origin at the footprint centre on the floor,
    front towards +z."""
    rgb = COLORS[color]
    dark = _shade(rgb, 0.6)
    boxes: list[Box] = []

    def b(x0, y0, z0, x1, y1, z1, col=rgb):
        boxes.append(((x0, y0, z0), (x1, y1, z1), col))

    def legs(w, d, h, col, t=0.05):
        for sx in (-1, 1):
            for sz in (-1, 1):
                x, z = sx * (w / 2 - t), sz * (d / 2 - t)
                b(x - t / 2, 0, z - t / 2, x + t / 2, h, z + t / 2, col)

    if name == "sofa" or name == "armchair":
        w, d, h = (2.0, 0.9, 0.85) if name == "sofa" else (0.9, 0.85, 0.85)
        b(-w / 2, 0, -d / 2, w / 2, 0.45, d / 2)
        b(-w / 2, 0.45, -d / 2, w / 2, h, -d / 2 + 0.2, dark)
        b(-w / 2, 0.45, -d / 2, -w / 2 + 0.15, 0.65, d / 2, dark)
        b(w / 2 - 0.15, 0.45, -d / 2, w / 2, 0.65, d / 2, dark)
    elif name in ("table", "coffee table", "desk", "dining table"):
        w, d, h = {
            "table": (1.2, 0.8, 0.75),
            "coffee table": (1.1, 0.6, 0.45),
            "desk": (1.3, 0.65, 0.75),
            "dining table": (1.6, 0.9, 0.75),
        }[name]
        b(-w / 2, h - 0.05, -d / 2, w / 2, h, d / 2)
        legs(w, d, h - 0.05, dark)
    elif name == "chair":
        w, d, h = 0.45, 0.45, 0.9
        b(-w / 2, 0.42, -d / 2, w / 2, 0.47, d / 2)
        b(-w / 2, 0.47, -d / 2, w / 2, h, -d / 2 + 0.05, dark)
        legs(w, d, 0.42, dark, 0.04)
    elif name == "bed":
        w, d, h = 1.6, 2.0, 1.0
        b(-w / 2, 0, -d / 2, w / 2, 0.35, d / 2, COLORS["brown"])
        b(-w / 2, 0.35, -d / 2 + 0.5, w / 2, 0.5, d / 2)  # blanket
        b(-w / 2 + 0.1, 0.35, -d / 2 + 0.08, w / 2 - 0.1, 0.5, -d / 2 + 0.45, COLORS["white"])
        b(-w / 2, 0, -d / 2, w / 2, h, -d / 2 + 0.08, _shade(COLORS["brown"], 0.8))
    elif name in (
        "nightstand",
        "cabinet",
        "tv stand",
        "wardrobe",
        "fridge",
        "stove",
        "washing machine",
        "bookshelf",
    ):
        w, d, h = {
            "nightstand": (0.45, 0.4, 0.55),
            "cabinet": (1.4, 0.6, 0.9),
            "tv stand": (1.4, 0.45, 0.5),
            "wardrobe": (1.2, 0.6, 2.0),
            "fridge": (0.75, 0.7, 1.8),
            "stove": (0.6, 0.6, 0.9),
            "washing machine": (0.6, 0.6, 0.85),
            "bookshelf": (0.9, 0.35, 1.9),
        }[name]
        if name == "bookshelf":
            b(-w / 2, 0, -d / 2, w / 2, h, -d / 2 + 0.03)
            b(-w / 2, 0, -d / 2, -w / 2 + 0.03, h, d / 2)
            b(w / 2 - 0.03, 0, -d / 2, w / 2, h, d / 2)
            for k in range(5):
                y = k * (h - 0.03) / 4
                b(-w / 2, y, -d / 2, w / 2, y + 0.03, d / 2)
                if k < 4:
                    x = -w / 2 + 0.05
                    while x < w / 2 - 0.12:
                        bw = float(rng.uniform(0.04, 0.08))
                        col = COLORS[str(rng.choice(BRIGHT))]
                        b(
                            x,
                            y + 0.03,
                            -d / 2 + 0.05,
                            x + bw,
                            y + 0.03 + float(rng.uniform(0.2, 0.33)),
                            d / 2 - 0.03,
                            col,
                        )
                        x += bw + 0.01
        else:
            b(-w / 2, 0, -d / 2, w / 2, h, d / 2)
            if name == "stove":
                b(-w / 2, h, -d / 2, w / 2, h + 0.02, d / 2, COLORS["black"])
                h += 0.02
            if name in ("fridge", "wardrobe", "cabinet", "nightstand"):  # handles / door gap
                b(-0.01, 0.1, d / 2, 0.01, h - 0.1, d / 2 + 0.01, dark)
            if name == "washing machine":
                b(-0.18, 0.25, d / 2, 0.18, 0.6, d / 2 + 0.02, COLORS["gray"])
    elif name == "lamp":
        on = state == "on"
        shade_col = (1.0, 0.96, 0.70) if on else _shade(rgb, 0.55)
        bulb = (1.0, 1.0, 0.85) if on else (0.15, 0.15, 0.15)
        tall = 1.65 if rng.random() < 0.5 else 0.55
        w = d = 0.4 if tall > 1 else 0.3
        h = tall
        b(-0.12, 0, -0.12, 0.12, 0.04, 0.12)
        b(-0.02, 0.04, -0.02, 0.02, h - 0.3, 0.02)
        b(-0.06, h - 0.32, -0.06, 0.06, h - 0.26, 0.06, bulb)
        b(-w / 2, h - 0.3, -d / 2, w / 2, h, d / 2, shade_col)
    elif name == "plant":
        w = d = 0.45
        h = 1.0
        b(-0.15, 0, -0.15, 0.15, 0.3, 0.15)  # pot in the object's colour
        leaf = COLORS["green"]
        b(-0.22, 0.3, -0.22, 0.22, 0.75, 0.22, _shade(leaf, 0.8))
        b(-0.14, 0.75, -0.14, 0.14, 1.0, 0.14, leaf)
    elif name == "tv":
        w, d, h = 1.1, 0.2, 0.72
        screen = (0.35, 0.65, 1.0) if state == "on" else (0.03, 0.03, 0.04)
        b(-0.15, 0, -0.1, 0.15, 0.03, 0.1, COLORS["black"])
        b(-0.03, 0.03, -0.03, 0.03, 0.1, 0.03, COLORS["black"])
        b(-w / 2, 0.1, -0.03, w / 2, h, 0.03, COLORS["black"])
        b(-w / 2 + 0.04, 0.14, 0.03, w / 2 - 0.04, h - 0.04, 0.04, screen)
    elif name == "laptop":
        w, d = 0.36, 0.26
        b(-w / 2, 0, -d / 2, w / 2, 0.02, d / 2)
        if state == "open":
            h = 0.26
            b(-w / 2, 0.02, -d / 2, w / 2, h, -d / 2 + 0.015)
            b(
                -w / 2 + 0.02,
                0.04,
                -d / 2 + 0.015,
                w / 2 - 0.02,
                h - 0.02,
                -d / 2 + 0.02,
                (0.4, 0.6, 0.9),
            )
        else:
            h = 0.035
            b(-w / 2, 0.02, -d / 2, w / 2, h, d / 2, dark)
    elif name == "vase":
        w = d = 0.16
        h = 0.32
        b(-0.08, 0, -0.08, 0.08, 0.25, 0.08)
        b(-0.05, 0.25, -0.05, 0.05, h, 0.05)
    elif name in ("toilet", "sink", "bathtub"):
        white = COLORS["white"]
        if name == "toilet":
            w, d, h = 0.42, 0.7, 0.8
            b(-0.2, 0, -0.35, 0.2, 0.8, -0.15, white)
            b(-0.18, 0, -0.15, 0.18, 0.42, 0.35, white)
        elif name == "sink":
            w, d, h = 0.6, 0.45, 0.85
            b(-0.08, 0, -0.2, 0.08, 0.75, -0.05, white)
            b(-0.3, 0.75, -0.225, 0.3, 0.85, 0.225, white)
        else:
            w, d, h = 1.6, 0.75, 0.55
            b(-w / 2, 0, -d / 2, w / 2, h, d / 2, white)
        color = "white"
    elif name == "painting":
        w, d, h = 0.8, 0.03, 0.6
        b(-w / 2, 0, -d / 2, w / 2, h, d / 2, COLORS["black"])
        b(-w / 2 + 0.04, 0.04, d / 2, w / 2 - 0.04, h - 0.04, d / 2 + 0.005)
    else:
        raise ValueError(f"unknown furniture {name!r}")
    return (w, h, d), boxes


# What sits where: (name, placement, colour choices, {kind of object placed on top: prob})
ROOM_CONTENT: dict[str, list[tuple[str, str, list[str], float]]] = {
    "living room": [
        ("sofa", "wall", BRIGHT + ["gray", "brown"], 1.0),
        ("tv stand", "wall", WOOD, 1.0),
        ("coffee table", "center", WOOD, 0.8),
        ("armchair", "wall", BRIGHT, 0.5),
        ("lamp", "wall", BRIGHT, 0.6),
        ("bookshelf", "wall", WOOD, 0.5),
        ("plant", "wall", BRIGHT, 0.5),
        ("painting", "wallhang", BRIGHT, 0.6),
    ],
    "kitchen": [
        ("fridge", "wall", ["white", "gray", "black"], 1.0),
        ("stove", "wall", ["white", "gray", "black"], 1.0),
        ("cabinet", "wall", WOOD, 0.8),
        ("table", "center", WOOD, 0.6),
        ("plant", "wall", BRIGHT, 0.4),
    ],
    "bedroom": [
        ("bed", "wall", BRIGHT, 1.0),
        ("nightstand", "wall", WOOD, 1.0),
        ("wardrobe", "wall", WOOD, 0.6),
        ("plant", "wall", BRIGHT, 0.4),
        ("painting", "wallhang", BRIGHT, 0.5),
    ],
    "guest bedroom": [
        ("bed", "wall", BRIGHT, 1.0),
        ("nightstand", "wall", WOOD, 0.7),
        ("lamp", "wall", BRIGHT, 0.5),
        ("wardrobe", "wall", WOOD, 0.4),
    ],
    "bathroom": [
        ("toilet", "wall", ["white"], 1.0),
        ("sink", "wall", ["white"], 1.0),
        ("bathtub", "wall", ["white"], 0.5),
    ],
    "office": [
        ("desk", "wall", WOOD, 1.0),
        ("bookshelf", "wall", WOOD, 0.8),
        ("plant", "wall", BRIGHT, 0.5),
        ("lamp", "wall", BRIGHT, 0.4),
    ],
    "dining room": [
        ("dining table", "center", WOOD, 1.0),
        ("cabinet", "wall", WOOD, 0.7),
        ("plant", "wall", BRIGHT, 0.5),
        ("painting", "wallhang", BRIGHT, 0.5),
    ],
    "laundry room": [
        ("washing machine", "wall", ["white", "gray"], 1.0),
        ("cabinet", "wall", WOOD, 0.6),
        ("plant", "wall", BRIGHT, 0.3),
    ],
}
ON_TOP = {  # support -> [(item, probability)]
    "coffee table": [("vase", 0.5), ("plant", 0.3)],
    "tv stand": [("tv", 1.0)],
    "nightstand": [("lamp", 0.9)],
    "desk": [("laptop", 0.9)],
    "table": [("vase", 0.5)],
    "dining table": [("vase", 0.6)],
    "cabinet": [("plant", 0.3)],
}
STATES = {
    "lamp": ("on", "off"),
    "tv": ("on", "off"),
    "laptop": ("open", "closed"),
    "door": ("open", "closed"),
}


# ----------------------------------------------------------------------------- layout


def _split_rooms(rng, width: float, depth: float, n: int) -> list[list[float]]:
    rects = [[0.0, 0.0, width, depth]]
    for _ in range(200):
        if len(rects) >= n:
            break
        rng.shuffle(rects)
        rects.sort(key=lambda r: -(r[2] - r[0]) * (r[3] - r[1]))
        for k, (x0, z0, x1, z1) in enumerate(rects):
            axis = 0 if (x1 - x0) >= (z1 - z0) else 1
            length = (x1 - x0) if axis == 0 else (z1 - z0)
            if length < 5.2:
                axis = 1 - axis
                length = (x1 - x0) if axis == 0 else (z1 - z0)
            if length < 5.2:
                continue
            cut = round(float(rng.uniform(0.38, 0.62)) * length, 1)
            if axis == 0:
                rects[k : k + 1] = [[x0, z0, x0 + cut, z1], [x0 + cut, z0, x1, z1]]
            else:
                rects[k : k + 1] = [[x0, z0, x1, z0 + cut], [x0, z0 + cut, x1, z1]]
            break
        else:
            break
    return rects


def _shared_edges(rects) -> list[tuple[int, int, int, float, float, float]]:
    """(a, b, axis, line, lo, hi): rooms a and b share a wall on x=line (axis 0) or z=line."""
    out = []
    for a in range(len(rects)):
        for b in range(a + 1, len(rects)):
            ra, rb = rects[a], rects[b]
            for axis in (0, 1):
                o = 1 - axis
                for la, lb in ((ra[2 + axis], rb[axis]), (ra[axis], rb[2 + axis])):
                    if abs(la - lb) < 1e-6:
                        lo = max(ra[o], rb[o])
                        hi = min(ra[2 + o], rb[2 + o])
                        if hi - lo > 1e-6:
                            out.append((a, b, axis, la, lo, hi))
    return out


def _overlap(r1, r2, margin: float = 0.0) -> bool:
    return not (
        r1[2] + margin <= r2[0]
        or r2[2] + margin <= r1[0]
        or r1[3] + margin <= r2[1]
        or r2[3] + margin <= r1[1]
    )


def generate_apartment(
    seed: int,
    *,
    n_rooms: int | None = None,
    ceiling: bool = True,
    min_triangles: int = 0,
) -> Apartment:
    """A deterministic apartment for ``seed`` (4-8 rooms, 10-30 objects)."""
    rng = np.random.default_rng(seed)
    n_rooms = int(n_rooms if n_rooms is not None else rng.integers(4, 7))
    n_rooms = int(np.clip(n_rooms, 4, 8))
    width = round(float(rng.uniform(9.0, 12.0)) + 0.6 * max(0, n_rooms - 5), 1)
    depth = round(float(rng.uniform(7.0, 9.0)) + 0.4 * max(0, n_rooms - 5), 1)
    rects = _split_rooms(rng, width, depth, n_rooms)
    order = sorted(
        range(len(rects)), key=lambda i: -(rects[i][2] - rects[i][0]) * (rects[i][3] - rects[i][1])
    )
    kinds = {order[0]: "living room", order[-1]: "bathroom"}
    rest = [k for k in ROOM_KINDS if k not in ("living room", "bathroom")][: len(rects) - 2]
    rest = [rest[i] for i in rng.permutation(len(rest))]
    for i, kind in zip(order[1:-1], rest, strict=True):
        kinds[i] = kind
    # kitchen next to the living room when possible is nice but not required
    rooms = [
        Room(kinds[i], [[r[0], r[1]], [r[2], r[3]]], list(FLOOR_COLORS[kinds[i]]))
        for i, r in enumerate(rects)
    ]

    # doorways: a random spanning tree over shared walls long enough for a door
    edges = [e for e in _shared_edges(rects) if e[5] - e[4] >= DOOR_W + 0.6]
    rng.shuffle(edges)
    parent = list(range(len(rects)))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    doorways: list[dict[str, Any]] = []
    for a, b, axis, line, lo, hi in edges:
        if find(a) != find(b):
            parent[find(a)] = find(b)
            c = round(float(rng.uniform(lo + 0.3 + DOOR_W / 2, hi - 0.3 - DOOR_W / 2)), 2)
            doorways.append(
                {
                    "rooms": [rooms[a].name, rooms[b].name],
                    "axis": axis,
                    "line": line,
                    "center": c,
                    "width": DOOR_W,
                }
            )

    mb = _MeshBuilder()
    # floors and ceiling
    for r in rooms:
        (x0, z0), (x1, z1) = r.bounds
        mb.quad_y(x0, z0, x1, z1, 0.0, r.floor_rgb)
    if ceiling:
        mb.quad_y(-WALL_T, -WALL_T, width + WALL_T, depth + WALL_T, WALL_H, CEILING_RGB)
    # walls: outer boundary + shared segments, with doorway gaps
    segments = [
        (1, 0.0, 0.0, width),
        (1, depth, 0.0, width),
        (0, 0.0, 0.0, depth),
        (0, width, 0.0, depth),
    ]
    segments += [(axis, line, lo, hi) for _, _, axis, line, lo, hi in _shared_edges(rects)]
    for axis, line, lo, hi in segments:
        gaps = sorted(
            (d["center"] - d["width"] / 2, d["center"] + d["width"] / 2)
            for d in doorways
            if d["axis"] == axis and abs(d["line"] - line) < 1e-6 and lo <= d["center"] <= hi
        )
        pieces, start = [], lo - WALL_T / 2
        for g0, g1 in gaps:
            pieces.append((start, g0, 0.0, WALL_H))
            pieces.append((g0, g1, DOOR_H, WALL_H))
            start = g1
        pieces.append((start, hi + WALL_T / 2, 0.0, WALL_H))
        for p0, p1, y0, y1 in pieces:
            if p1 - p0 <= 1e-6:
                continue
            if axis == 0:
                mb.box((line - WALL_T / 2, y0, p0), (line + WALL_T / 2, y1, p1), WALL_RGB)
            else:
                mb.box((p0, y0, line - WALL_T / 2), (p1, y1, line + WALL_T / 2), WALL_RGB)

    objects: list[SceneObject] = []

    def add_object(name, color, state, room, x, z, yaw_k, y=0.0, support=None, size_boxes=None):
        size, boxes = size_boxes or _furniture(name, color, state, rng)
        oid = len(objects)
        ang = yaw_k * math.pi / 2
        cs, sn = round(math.cos(ang)), round(math.sin(ang))
        rot = np.array([[cs, 0, sn], [0, 1, 0], [-sn, 0, cs]], dtype=float)
        lo_all, hi_all = np.full(3, np.inf), np.full(3, -np.inf)
        for lo, hi, col in boxes:
            corners = np.array([lo, hi]) @ rot.T + [x, y, z]
            blo, bhi = corners.min(axis=0), corners.max(axis=0)
            mb.box(blo, bhi, col, oid)
            lo_all, hi_all = np.minimum(lo_all, blo), np.maximum(hi_all, bhi)
        sup = objects[support] if support is not None else None
        objects.append(
            SceneObject(
                id=oid,
                name=name,
                color=color,
                position=((lo_all + hi_all) / 2).round(3).tolist(),
                size=(hi_all - lo_all).round(3).tolist(),
                room=room.name,
                state=state,
                supported_by=support,
                supported_by_name=sup.name if sup else None,
                facing=(rot @ [0, 0, 1.0]).round(3).tolist(),
            )
        )
        return oid, hi_all[1]

    # doors on private rooms (one per room); closed only for a leaf room
    deg = {r.name: sum(r.name in d["rooms"] for d in doorways) for r in rooms}
    for d in doorways:
        priv = [
            n
            for n in d["rooms"]
            if n in ("bathroom", "bedroom", "guest bedroom", "office", "laundry room")
        ]
        if not priv or any(o.name == "door" and o.room == priv[0] for o in objects):
            continue
        room = next(r for r in rooms if r.name == priv[0])
        closed = deg[room.name] == 1 and rng.random() < 0.35
        color = str(rng.choice(["white", "brown"]))
        state = "closed" if closed else "open"
        w, t, c, line = d["width"] - 0.04, 0.04, d["center"], d["line"]
        if closed:  # (along-wall lo, hi), (across-wall lo, hi)
            along, across = (c - w / 2, c + w / 2), (line - t / 2, line + t / 2)
        else:  # swung open into the private room, against the jamb
            lo_edge = room.bounds[0][d["axis"]]
            sgn = 1.0 if abs(lo_edge - line) < 1e-6 else -1.0
            a0, a1 = line + sgn * WALL_T / 2, line + sgn * (WALL_T / 2 + w)
            along, across = (c - w / 2, c - w / 2 + t), (min(a0, a1), max(a0, a1))
        if d["axis"] == 1:  # wall along x at z = line
            lo, hi = (along[0], 0.0, across[0]), (along[1], DOOR_H - 0.02, across[1])
        else:  # wall along z at x = line
            lo, hi = (across[0], 0.0, along[0]), (across[1], DOOR_H - 0.02, along[1])
        size = tuple(float(b - a) for a, b in zip(lo, hi, strict=True))
        boxes = [(lo, hi, COLORS[color])]
        cx = cz = 0.0
        k = 0
        add_object("door", color, state, room, cx, cz, k, size_boxes=(size, boxes))
        if closed:
            room.accessible = False

    # furniture
    for room in rooms:
        (x0, z0), (x1, z1) = room.bounds
        ix0, iz0, ix1, iz1 = x0 + WALL_T / 2, z0 + WALL_T / 2, x1 - WALL_T / 2, z1 - WALL_T / 2
        keep_out = []
        for d in doorways:
            if room.name not in d["rooms"]:
                continue
            c0, c1 = d["center"] - d["width"] / 2 - 0.35, d["center"] + d["width"] / 2 + 0.35
            if d["axis"] == 0:
                keep_out.append([d["line"] - 1.2, c0, d["line"] + 1.2, c1])
            else:
                keep_out.append([c0, d["line"] - 1.2, c1, d["line"] + 1.2])
        placed: list[list[float]] = []
        hanging: list[list[float]] = []
        for name, placement, palette, prob in ROOM_CONTENT[room.name]:
            if rng.random() > prob:
                continue
            color = str(rng.choice(palette))
            state = str(rng.choice(STATES[name])) if name in STATES else None
            size, boxes = _furniture(name, color, state, rng)
            w, h, dd = size
            extra_front = 0.7 if name in ("desk", "dining table", "table") else 0.0
            for _ in range(60):
                if placement == "center":
                    k = int(rng.integers(0, 2))
                    fw, fd = (w, dd) if k % 2 == 0 else (dd, w)
                    m = 1.0 + extra_front
                    if ix1 - ix0 < fw + 2 * m or iz1 - iz0 < fd + 2 * m:
                        break
                    cx = float(rng.uniform(ix0 + m + fw / 2, ix1 - m - fw / 2))
                    cz = float(rng.uniform(iz0 + m + fd / 2, iz1 - m - fd / 2))
                    fp = [
                        cx - fw / 2 - extra_front,
                        cz - fd / 2 - extra_front,
                        cx + fw / 2 + extra_front,
                        cz + fd / 2 + extra_front,
                    ]
                else:
                    side = int(rng.integers(0, 4))  # 0: z0 wall, 1: x1, 2: z1, 3: x0
                    k = {0: 0, 1: 3, 2: 2, 3: 1}[side]
                    fw, fd = (w, dd) if k % 2 == 0 else (dd, w)
                    if side in (0, 2):
                        if ix1 - ix0 < fw + 0.2:
                            continue
                        cx = float(rng.uniform(ix0 + fw / 2 + 0.05, ix1 - fw / 2 - 0.05))
                        cz = iz0 + fd / 2 + 0.01 if side == 0 else iz1 - fd / 2 - 0.01
                    else:
                        if iz1 - iz0 < fd + 0.2:
                            continue
                        cz = float(rng.uniform(iz0 + fd / 2 + 0.05, iz1 - fd / 2 - 0.05))
                        cx = ix1 - fw / 2 - 0.01 if side == 1 else ix0 + fw / 2 + 0.01
                    ef = extra_front
                    fp = [cx - fw / 2, cz - fd / 2, cx + fw / 2, cz + fd / 2]
                    if ef:
                        grow = {
                            0: (0, 0, 0, ef),
                            1: (-ef, 0, 0, 0),
                            2: (0, -ef, 0, 0),
                            3: (0, 0, ef, 0),
                        }[side]
                        fp = [fp[0] + grow[0], fp[1] + grow[1], fp[2] + grow[2], fp[3] + grow[3]]
                if placement == "wallhang":
                    if any(_overlap(fp, q, 0.1) for q in hanging) or any(
                        _overlap(fp, q) for q in keep_out
                    ):
                        continue
                    hanging.append(fp)
                    add_object(name, color, state, room, cx, cz, k, y=1.2, size_boxes=(size, boxes))
                    break
                if any(_overlap(fp, q, 0.5) for q in placed) or any(
                    _overlap(fp, q) for q in keep_out
                ):
                    continue
                placed.append(fp)
                oid, top = add_object(name, color, state, room, cx, cz, k, size_boxes=(size, boxes))
                if name in ("desk", "dining table", "table"):
                    _add_chairs(name, rng, room, cx, cz, k, fw, fd, w, dd, add_object)
                for item, p in ON_TOP.get(name, []):
                    if rng.random() < p:
                        icol = str(rng.choice(BRIGHT if item != "tv" else ["black"]))
                        ist = str(rng.choice(STATES[item])) if item in STATES else None
                        isize, iboxes = _furniture(item, icol, ist, rng)
                        if item == "lamp" and isize[1] > 1.0:  # table lamps only on top
                            isize, iboxes = _small_lamp(icol, ist)
                        add_object(
                            item,
                            icol,
                            ist,
                            room,
                            cx,
                            cz,
                            k,
                            y=float(top),
                            support=oid,
                            size_boxes=(isize, iboxes),
                        )
                        break
                break

    v, t, c, o = mb.arrays()
    if min_triangles and len(t) < min_triangles:
        v, t, c, o = subdivide_to(v, t, c, o, min_triangles)
    return Apartment(seed, rooms, objects, doorways, v, t, c, o)


def _small_lamp(color: str, state: str | None):
    on = state == "on"
    rgb = COLORS[color]
    shade_col = (1.0, 0.96, 0.70) if on else _shade(rgb, 0.55)
    bulb = (1.0, 1.0, 0.85) if on else (0.15, 0.15, 0.15)
    boxes = [
        ((-0.08, 0, -0.08), (0.08, 0.03, 0.08), rgb),
        ((-0.015, 0.03, -0.015), (0.015, 0.3, 0.015), rgb),
        ((-0.05, 0.27, -0.05), (0.05, 0.31, 0.05), bulb),
        ((-0.14, 0.3, -0.14), (0.14, 0.52, 0.14), shade_col),
    ]
    return (0.28, 0.52, 0.28), boxes


def _add_chairs(table, rng, room, cx, cz, k, fw, fd, w, dd, add_object) -> None:
    """Chairs facing a table: in front of a desk, along the long sides of other tables."""
    chair_col = str(rng.choice(BRIGHT + ["black", "white", "brown"]))
    if table == "desk":
        n_front = 1
        spots = [(0.0, dd / 2 + 0.35, 2)]  # local (x, z, yaw_k): chair faces the desk
    else:
        n_front = int(rng.integers(1, 3))
        xs = [0.0] if n_front == 1 else [-w / 4, w / 4]
        spots = [(x, dd / 2 + 0.3, 2) for x in xs] + [(x, -dd / 2 - 0.3, 0) for x in xs]
        if rng.random() < 0.3:
            spots = spots[: len(xs)]
    ang = k * math.pi / 2
    cs, sn = round(math.cos(ang)), round(math.sin(ang))
    for lx, lz, lk in spots:
        wx, wz = cx + cs * lx + sn * lz, cz - sn * lx + cs * lz
        add_object("chair", chair_col, None, room, wx, wz, (k + lk) % 4)
