"""A two-storey demo house with a straight staircase (the multi-storey scene of the demo).

Ground floor (y = 0): living room and kitchen; upper floor (y = ``STOREY_H``): bedroom and
study, reached by a staircase along the back wall that rises through an opening in the upper
floor slab. Steps rise ``STOREY_H / N_STEPS`` (under habitat-sim's default 0.2 m climb) on
0.28 m treads. The result is an :class:`~eqa_runner.demo.apartment.Apartment`, written as
``.glb`` and ``.ply`` like the one-storey apartments; rooms carry their floor height in
``bounds`` as for the others (x-z) and in the object positions (y).
"""

from __future__ import annotations

import numpy as np

from eqa_runner.demo.apartment import Apartment, Room, SceneObject
from eqa_runner.demo.floorplan import CEILING_RGB, DOOR_H, DOOR_W, FLOOR_COLORS, WALL_RGB, WALL_T
from eqa_runner.demo.furniture import COLORS
from eqa_runner.demo.mesh_builder import MeshBuilder

STOREY_H = 3.0  # upper floor height (m)
SLAB_T = 0.2  # upper floor slab thickness
WALL_UP = 2.7  # upper storey's wall height (the ground floor's walls reach the slab)
N_STEPS = 18
TREAD = 0.28
W, D = 8.0, 6.0  # outline x, z (m)
STAIR_Z = (4.8, 5.95)  # staircase width along the back wall
STAIR_X0 = 1.0  # foot of the stairs
OPENING_X0 = 2.4  # stairwell opening starts here (headroom over the lower steps is kept)
STEP_RGB = (0.55, 0.40, 0.25)

# (name, colour, room, storey, (x0, z0, x1, z1) footprint, height)
FURNITURE = [
    ("sofa", "red", "living room", 0, (0.6, 1.0, 2.6, 1.9), 0.8),
    ("coffee table", "brown", "living room", 0, (1.1, 2.4, 2.1, 3.0), 0.45),
    ("refrigerator", "white", "kitchen", 0, (7.1, 0.3, 7.8, 1.0), 1.8),
    ("dining table", "gray", "kitchen", 0, (5.8, 2.0, 7.2, 3.0), 0.75),
    ("bed", "blue", "bedroom", 1, (0.4, 0.4, 2.4, 2.6), 0.55),
    ("wardrobe", "purple", "bedroom", 1, (3.0, 0.2, 3.8, 0.8), 2.0),
    ("desk", "green", "study", 1, (6.0, 0.3, 7.6, 1.0), 0.75),
    ("bookshelf", "yellow", "study", 1, (7.4, 2.0, 7.9, 3.4), 1.8),
]


def _walls(mb: MeshBuilder, y0: float, y1: float) -> None:
    """Outer walls of one storey, from ``y0`` to ``y1``."""
    t = WALL_T
    mb.box((-t, y0, -t), (W + t, y1, 0.0), WALL_RGB)
    mb.box((-t, y0, D), (W + t, y1, D + t), WALL_RGB)
    mb.box((-t, y0, 0.0), (0.0, y1, D), WALL_RGB)
    mb.box((W, y0, 0.0), (W + t, y1, D), WALL_RGB)


def _partition(mb: MeshBuilder, x: float, y0: float, door_z: float) -> None:
    """A wall at ``x`` from the front wall to the staircase, with a doorway centred at
    ``door_z``."""
    t, y1, z1 = WALL_T / 2, y0 + WALL_UP, STAIR_Z[0] - 0.05
    g0, g1 = door_z - DOOR_W / 2, door_z + DOOR_W / 2
    mb.box((x - t, y0, 0.0), (x + t, y1, g0), WALL_RGB)
    mb.box((x - t, y0 + DOOR_H, g0), (x + t, y1, g1), WALL_RGB)
    mb.box((x - t, y0, g1), (x + t, y1, z1), WALL_RGB)


def _stairs(mb: MeshBuilder) -> None:
    rise = STOREY_H / N_STEPS
    for k in range(N_STEPS - 1):  # the last rise lands on the upper floor
        x0 = STAIR_X0 + k * TREAD
        mb.box((x0, 0.0, STAIR_Z[0]), (x0 + TREAD, (k + 1) * rise, STAIR_Z[1]), STEP_RGB)


def _slab(mb: MeshBuilder, rgb_by_room: dict[str, tuple]) -> None:
    """The upper floor: a slab with the stairwell opening, its top split into the two rooms."""
    y0, y1 = STOREY_H - SLAB_T, STOREY_H
    x_top = STAIR_X0 + (N_STEPS - 1) * TREAD  # where the top step meets the slab
    z0, z1 = STAIR_Z
    pieces = [(0.0, 0.0, W, z0), (0.0, z1, W, D), (0.0, z0, OPENING_X0, z1), (x_top, z0, W, z1)]
    for ax0, az0, ax1, az1 in pieces:
        for room, (rx0, rx1) in (("bedroom", (0.0, 4.0)), ("study", (4.0, W))):
            bx0, bx1 = max(ax0, rx0), min(ax1, rx1)
            if bx1 - bx0 > 1e-6:
                mb.box((bx0, y0, az0), (bx1, y1, az1), rgb_by_room[room])


def generate_house(seed: int = 0) -> Apartment:
    """The two-storey house (deterministic; ``seed`` is recorded, the layout is fixed)."""
    mb = MeshBuilder()
    floors = {name: FLOOR_COLORS.get(name, (0.6, 0.55, 0.5)) for name in FLOOR_COLORS}
    floors["study"] = FLOOR_COLORS["office"]
    mb.quad_y(0.0, 0.0, 5.0, D, 0.0, floors["living room"])
    mb.quad_y(5.0, 0.0, W, D, 0.0, floors["kitchen"])
    _slab(mb, floors)
    mb.quad_y(0.0, 0.0, W, D, STOREY_H + WALL_UP, CEILING_RGB, facing_up=False)
    _walls(mb, 0.0, STOREY_H)
    _walls(mb, STOREY_H, STOREY_H + WALL_UP)
    _partition(mb, 5.0, 0.0, 2.5)
    _partition(mb, 4.0, STOREY_H, 3.5)
    _stairs(mb)
    objects = []
    for oid, (name, color, room, storey, (x0, z0, x1, z1), h) in enumerate(FURNITURE):
        y0 = storey * STOREY_H
        mb.box((x0, y0, z0), (x1, y0 + h, z1), COLORS[color], oid)
        objects.append(
            SceneObject(
                id=oid,
                name=name,
                color=color,
                position=[round((x0 + x1) / 2, 3), round(y0 + h / 2, 3), round((z0 + z1) / 2, 3)],
                size=[round(x1 - x0, 3), h, round(z1 - z0, 3)],
                room=room,
            )
        )
    rooms = [
        Room("living room", [[0.0, 0.0], [5.0, D]], list(floors["living room"])),
        Room("kitchen", [[5.0, 0.0], [W, D]], list(floors["kitchen"])),
        Room("bedroom", [[0.0, 0.0], [4.0, D]], list(floors["bedroom"])),
        Room("study", [[4.0, 0.0], [W, D]], list(floors["study"])),
    ]
    v, f, c, o = mb.arrays()
    return Apartment(seed, rooms, objects, _doorways(), v, f, c, o)


def _doorways() -> list[dict]:
    """The doorway between the two rooms of each storey and the stairs between the storeys."""
    return [
        {
            "rooms": ["living room", "kitchen"],
            "axis": 0,
            "line": 5.0,
            "center": 2.5,
            "width": DOOR_W,
            "floor_y": 0.0,
        },
        {
            "rooms": ["bedroom", "study"],
            "axis": 0,
            "line": 4.0,
            "center": 3.5,
            "width": DOOR_W,
            "floor_y": STOREY_H,
        },
        {
            "rooms": ["living room", "bedroom"],
            "stairs": True,
            "floor_y": 0.0,
            "foot": [STAIR_X0, 0.0, float(np.mean(STAIR_Z))],
            "top": [STAIR_X0 + (N_STEPS - 1) * TREAD + 0.3, STOREY_H, float(np.mean(STAIR_Z))],
        },
    ]


def storey_of(apt: Apartment, y: float) -> int:
    """0 for the ground floor, 1 upstairs (by height)."""
    return int(y >= STOREY_H - 0.5)


HOUSE_NAME = "DemoHouse2F"
UPSTAIRS_START = (1.5, STOREY_H, 3.8)  # the bedroom, by the stairwell
DOWNSTAIRS_START = (2.5, 0.0, 4.0)
# (question, answer, colour options, object, goal viewpoint (habitat x, y, z)); the first three
# are downstairs (asked from UPSTAIRS_START), the last upstairs (asked from DOWNSTAIRS_START)
HOUSE_QUESTIONS = [
    ("What color is the sofa in the living room?", "red", "sofa", (1.6, 0.0, 3.6)),
    ("What color is the refrigerator in the kitchen?", "white", "refrigerator", (7.45, 0.0, 2.2)),
    ("What color is the dining table in the kitchen?", "gray", "dining table", (6.5, 0.0, 4.0)),
    ("What color is the desk in the study?", "green", "desk", (6.8, STOREY_H, 2.0)),
]


def house_episodes(sim, apt: Apartment) -> list[dict]:
    """The house's cross-floor questions with snapped start / goal positions (on ``sim``, the
    house loaded), the goal's yaw towards its object and the geodesic between them."""
    from eqa_runner.sim import geometry as geo

    out = []
    for k, (q, a, obj, goal) in enumerate(HOUSE_QUESTIONS):
        start = UPSTAIRS_START if k < 3 else DOWNSTAIRS_START
        sp = np.asarray(sim.snap_point(start), dtype=float)
        gp = np.asarray(sim.snap_point(goal), dtype=float)
        target = next(o for o in apt.objects if o.name == obj)
        out.append(
            {
                "question": q,
                "answer": a,
                "object": target,
                "start": sp,
                "goal": gp,
                "goal_yaw": geo.yaw_facing(gp, np.asarray(target.position)),
                "geodesic": float(sim.geodesic_distance(sp, gp)),
                "upstairs_start": k < 3,
            }
        )
    return out
