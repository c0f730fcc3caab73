"""Seeded procedural apartments: rooms, walls with doorways, named coloured furniture.

Everything is built from axis-aligned boxes in the habitat frame (y up, metres). The result
carries the mesh arrays, a per-triangle object index and a JSON-able scene description.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from eqa_runner.demo.floorplan import (
    CEILING_RGB,
    DOOR_H,
    DOOR_W,
    FLOOR_COLORS,
    ROOM_KINDS,
    WALL_H,
    WALL_RGB,
    WALL_T,
    overlap,
    shared_edges,
    split_rooms,
)
from eqa_runner.demo.furniture import (
    BRIGHT,
    COLORS,
    ON_TOP,
    ROOM_CONTENT,
    STATES,
    Box,
    add_chairs,
    furniture,
    small_lamp,
)
from eqa_runner.demo.mesh_builder import MeshBuilder, subdivide_to
from eqa_runner.demo.mesh_files import write_glb, write_ply


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

    def write(self, directory: Path, name: str, *, ply: bool = False) -> tuple[Path, Path]:
        """Write ``<name>.glb`` (HM3D convention: z up, palette texture; what both simulator
        backends load the same way) and ``<name>.scene.json``; ``ply=True`` adds a y-up
        ``<name>.ply`` with vertex colours. Returns (glb, json)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        glb = directory / f"{name}.glb"
        write_glb(glb, self.vertices, self.triangles, self.vertex_colors)
        if ply:
            write_ply(directory / f"{name}.ply", self.vertices, self.triangles, self.vertex_colors)
        js = directory / f"{name}.scene.json"
        js.write_text(json.dumps(self.description(), indent=1))
        return glb, js


def generate_apartment(
    seed: int,
    *,
    n_rooms: int | None = None,
    ceiling: bool = True,
    min_triangles: int = 0,
) -> Apartment:
    """A deterministic apartment for ``seed`` (4-8 rooms, 10-30 objects): rooms split from a
    rectangle, doorways on a spanning tree, walls, doors on private rooms, then furniture."""
    rng = np.random.default_rng(seed)
    n_rooms = int(n_rooms if n_rooms is not None else rng.integers(4, 7))
    n_rooms = int(np.clip(n_rooms, 4, 8))
    width = round(float(rng.uniform(9.0, 12.0)) + 0.6 * max(0, n_rooms - 5), 1)
    depth = round(float(rng.uniform(7.0, 9.0)) + 0.4 * max(0, n_rooms - 5), 1)
    rects = split_rooms(rng, width, depth, n_rooms)
    rooms = _name_rooms(rng, rects)
    doorways = _doorways(rng, rects, rooms)
    b = _Builder(rng)
    _shell(b.mb, rooms, rects, doorways, (width, depth), ceiling)
    _doors(b, rooms, doorways)
    for room in rooms:
        _furnish(b, room, doorways)
    v, t, c, o = b.mb.arrays()
    if min_triangles and len(t) < min_triangles:
        v, t, c, o = subdivide_to(v, t, c, o, min_triangles)
    return Apartment(seed, rooms, b.objects, doorways, v, t, c, o)


Rect = Any  # (x0, z0, x1, z1) of a room, as split_rooms returns it


def _name_rooms(rng: np.random.Generator, rects: list[Rect]) -> list[Room]:
    """The largest room is the living room, the smallest the bathroom, the rest drawn."""
    order = sorted(
        range(len(rects)), key=lambda i: -(rects[i][2] - rects[i][0]) * (rects[i][3] - rects[i][1])
    )
    kinds = {order[0]: "living room", order[-1]: "bathroom"}
    rest = [k for k in ROOM_KINDS if k not in ("living room", "bathroom")][: len(rects) - 2]
    rest = [rest[i] for i in rng.permutation(len(rest))]
    for i, kind in zip(order[1:-1], rest, strict=True):
        kinds[i] = kind
    return [
        Room(kinds[i], [[r[0], r[1]], [r[2], r[3]]], list(FLOOR_COLORS[kinds[i]]))
        for i, r in enumerate(rects)
    ]


def _doorways(
    rng: np.random.Generator, rects: list[Rect], rooms: list[Room]
) -> list[dict[str, Any]]:
    """Doorways on a random spanning tree over shared walls long enough for a door."""
    edges = [e for e in shared_edges(rects) if e[5] - e[4] >= DOOR_W + 0.6]
    rng.shuffle(edges)
    parent = list(range(len(rects)))

    def find(a: int) -> int:
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
    return doorways


def _shell(
    mb: MeshBuilder,
    rooms: list[Room],
    rects: list[Rect],
    doorways: list[dict[str, Any]],
    size: tuple[float, float],
    ceiling: bool,
) -> None:
    """Floors, the ceiling, and the walls (outer boundary + shared segments) with doorway gaps."""
    width, depth = size
    for r in rooms:
        (x0, z0), (x1, z1) = r.bounds
        mb.quad_y(x0, z0, x1, z1, 0.0, r.floor_rgb)
    if ceiling:
        mb.quad_y(
            -WALL_T, -WALL_T, width + WALL_T, depth + WALL_T, WALL_H, CEILING_RGB, facing_up=False
        )
    segments = [
        (1, 0.0, 0.0, width),
        (1, depth, 0.0, width),
        (0, 0.0, 0.0, depth),
        (0, width, 0.0, depth),
    ]
    segments += [(axis, line, lo, hi) for _, _, axis, line, lo, hi in shared_edges(rects)]
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


class _Builder:
    """The mesh and the object list of an apartment being furnished."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.mb = MeshBuilder()
        self.objects: list[SceneObject] = []

    def add_object(
        self, name, color, state, room, x, z, yaw_k, y=0.0, support=None, size_boxes=None
    ) -> tuple[int, float]:
        """Place an object (its boxes rotated by ``yaw_k`` quarter turns) and describe it."""
        size, boxes = size_boxes or furniture(name, color, state, self.rng)
        oid = len(self.objects)
        ang = yaw_k * math.pi / 2
        cs, sn = round(math.cos(ang)), round(math.sin(ang))
        rot = np.array([[cs, 0, sn], [0, 1, 0], [-sn, 0, cs]], dtype=float)
        lo_all, hi_all = np.full(3, np.inf), np.full(3, -np.inf)
        for lo, hi, col in boxes:
            corners = np.array([lo, hi]) @ rot.T + [x, y, z]
            blo, bhi = corners.min(axis=0), corners.max(axis=0)
            self.mb.box(blo, bhi, col, oid)
            lo_all, hi_all = np.minimum(lo_all, blo), np.maximum(hi_all, bhi)
        sup = self.objects[support] if support is not None else None
        self.objects.append(
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


PRIVATE_ROOMS = ("bathroom", "bedroom", "guest bedroom", "office", "laundry room")


def _doors(b: _Builder, rooms: list[Room], doorways: list[dict[str, Any]]) -> None:
    """One door per private room; closed (the room inaccessible) only for a leaf room."""
    deg = {r.name: sum(r.name in d["rooms"] for d in doorways) for r in rooms}
    for d in doorways:
        priv = [n for n in d["rooms"] if n in PRIVATE_ROOMS]
        if not priv or any(o.name == "door" and o.room == priv[0] for o in b.objects):
            continue
        room = next(r for r in rooms if r.name == priv[0])
        closed = deg[room.name] == 1 and b.rng.random() < 0.35
        color = str(b.rng.choice(["white", "brown"]))
        w, t, c, line = d["width"] - 0.04, 0.04, d["center"], d["line"]
        if closed:  # (along-wall lo, hi), (across-wall lo, hi)
            along, across = (c - w / 2, c + w / 2), (line - t / 2, line + t / 2)
        else:  # swung open into the private room, against the jamb
            lo_edge = room.bounds[0][d["axis"]]
            sgn = 1.0 if abs(lo_edge - line) < 1e-6 else -1.0
            a0, a1 = line + sgn * WALL_T / 2, line + sgn * (WALL_T / 2 + w)
            along, across = (c - w / 2, c - w / 2 + t), (min(a0, a1), max(a0, a1))
        corner_lo: tuple[float, float, float]
        corner_hi: tuple[float, float, float]
        if d["axis"] == 1:  # wall along x at z = line
            corner_lo = (along[0], 0.0, across[0])
            corner_hi = (along[1], DOOR_H - 0.02, across[1])
        else:  # wall along z at x = line
            corner_lo = (across[0], 0.0, along[0])
            corner_hi = (across[1], DOOR_H - 0.02, along[1])
        size = tuple(float(hi - lo) for lo, hi in zip(corner_lo, corner_hi, strict=True))
        boxes: list[Box] = [(corner_lo, corner_hi, COLORS[color])]
        state = "closed" if closed else "open"
        b.add_object("door", color, state, room, 0.0, 0.0, 0, size_boxes=(size, boxes))
        if closed:
            room.accessible = False


def _keep_out(room: Room, doorways: list[dict[str, Any]]) -> list[list[float]]:
    """Footprints in front of the room's doorways where no furniture goes."""
    out = []
    for d in doorways:
        if room.name not in d["rooms"]:
            continue
        c0, c1 = d["center"] - d["width"] / 2 - 0.35, d["center"] + d["width"] / 2 + 0.35
        if d["axis"] == 0:
            out.append([d["line"] - 1.2, c0, d["line"] + 1.2, c1])
        else:
            out.append([c0, d["line"] - 1.2, c1, d["line"] + 1.2])
    return out


TABLES = ("desk", "dining table", "table")  # get chairs and room in front


def _furnish(b: _Builder, room: Room, doorways: list[dict[str, Any]]) -> None:
    """The room's furniture (``ROOM_CONTENT``): up to 60 tries per item for a free footprint."""
    (x0, z0), (x1, z1) = room.bounds
    inner = (x0 + WALL_T / 2, z0 + WALL_T / 2, x1 - WALL_T / 2, z1 - WALL_T / 2)
    keep_out = _keep_out(room, doorways)
    placed: list[list[float]] = []
    hanging: list[list[float]] = []
    for name, placement, palette, prob in ROOM_CONTENT[room.name]:
        if b.rng.random() > prob:
            continue
        color = str(b.rng.choice(palette))
        state = str(b.rng.choice(STATES[name])) if name in STATES else None
        size, boxes = furniture(name, color, state, b.rng)
        extra_front = 0.7 if name in TABLES else 0.0
        for _ in range(60):
            spot = _spot(b.rng, placement, inner, size, extra_front)
            if spot is False:
                break
            if spot is None:
                continue
            cx, cz, k, fw, fd, fp = spot
            if placement == "wallhang":
                if any(overlap(fp, q, 0.1) for q in hanging) or any(
                    overlap(fp, q) for q in keep_out
                ):
                    continue
                hanging.append(fp)
                b.add_object(name, color, state, room, cx, cz, k, y=1.2, size_boxes=(size, boxes))
                break
            if any(overlap(fp, q, 0.5) for q in placed) or any(overlap(fp, q) for q in keep_out):
                continue
            placed.append(fp)
            oid, top = b.add_object(name, color, state, room, cx, cz, k, size_boxes=(size, boxes))
            if name in TABLES:
                add_chairs(name, b.rng, room, cx, cz, k, fw, fd, size[0], size[2], b.add_object)
            _put_on_top(b, room, name, oid, float(top), (cx, cz, k))
            break


Spot = tuple[float, float, int, float, float, list[float]]


def _spot(
    rng: np.random.Generator,
    placement: str,
    inner: tuple[float, float, float, float],
    size: tuple[float, float, float],
    extra_front: float,
) -> Spot | None | Literal[False]:
    """A drawn (cx, cz, yaw_k, footprint w, footprint d, footprint) for an item; None: draw
    again; False: a centred item does not fit the room at all."""
    ix0, iz0, ix1, iz1 = inner
    w, _, dd = size
    if placement == "center":
        k = int(rng.integers(0, 2))
        fw, fd = (w, dd) if k % 2 == 0 else (dd, w)
        m = 1.0 + extra_front
        if ix1 - ix0 < fw + 2 * m or iz1 - iz0 < fd + 2 * m:
            return False
        cx = float(rng.uniform(ix0 + m + fw / 2, ix1 - m - fw / 2))
        cz = float(rng.uniform(iz0 + m + fd / 2, iz1 - m - fd / 2))
        ef = extra_front
        return (
            cx,
            cz,
            k,
            fw,
            fd,
            [cx - fw / 2 - ef, cz - fd / 2 - ef, cx + fw / 2 + ef, cz + fd / 2 + ef],
        )
    side = int(rng.integers(0, 4))  # 0: z0 wall, 1: x1, 2: z1, 3: x0
    k = {0: 0, 1: 3, 2: 2, 3: 1}[side]
    fw, fd = (w, dd) if k % 2 == 0 else (dd, w)
    if side in (0, 2):
        if ix1 - ix0 < fw + 0.2:
            return None
        cx = float(rng.uniform(ix0 + fw / 2 + 0.05, ix1 - fw / 2 - 0.05))
        cz = iz0 + fd / 2 + 0.01 if side == 0 else iz1 - fd / 2 - 0.01
    else:
        if iz1 - iz0 < fd + 0.2:
            return None
        cz = float(rng.uniform(iz0 + fd / 2 + 0.05, iz1 - fd / 2 - 0.05))
        cx = ix1 - fw / 2 - 0.01 if side == 1 else ix0 + fw / 2 + 0.01
    fp = [cx - fw / 2, cz - fd / 2, cx + fw / 2, cz + fd / 2]
    if extra_front:  # room in front of a table, away from its wall
        ef = extra_front
        grow = {0: (0, 0, 0, ef), 1: (-ef, 0, 0, 0), 2: (0, -ef, 0, 0), 3: (0, 0, ef, 0)}[side]
        fp = [fp[0] + grow[0], fp[1] + grow[1], fp[2] + grow[2], fp[3] + grow[3]]
    return cx, cz, k, fw, fd, fp


def _put_on_top(
    b: _Builder, room: Room, name: str, oid: int, top: float, pose: tuple[float, float, int]
) -> None:
    """At most one small item (``ON_TOP``) on a placed piece of furniture."""
    cx, cz, k = pose
    for item, p in ON_TOP.get(name, []):
        if b.rng.random() < p:
            icol = str(b.rng.choice(BRIGHT if item != "tv" else ["black"]))
            ist = str(b.rng.choice(STATES[item])) if item in STATES else None
            isize, iboxes = furniture(item, icol, ist, b.rng)
            if item == "lamp" and isize[1] > 1.0:  # table lamps only on top
                isize, iboxes = small_lamp(icol, ist)
            b.add_object(
                item, icol, ist, room, cx, cz, k, y=top, support=oid, size_boxes=(isize, iboxes)
            )
            break
