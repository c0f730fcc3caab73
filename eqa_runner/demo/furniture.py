"""Furniture of the demo apartments: named, coloured pieces built from axis-aligned boxes.

Each piece is given in a local frame (origin at the footprint centre on the floor, front
towards +z); ``ROOM_CONTENT`` says what each room kind may hold and where, ``ON_TOP`` what may
stand on what, ``STATES`` the visible states (lamp on/off, ...).
"""

from __future__ import annotations

import math

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

Box = tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float, float]]


def _shade(rgb, f: float):
    return tuple(min(1.0, x * f) for x in rgb)


class _Boxes:
    """The boxes of one piece, in its local frame, with its colour and a darker shade."""

    def __init__(self, rgb: tuple[float, float, float]) -> None:
        self.rgb, self.dark = rgb, _shade(rgb, 0.6)
        self.boxes: list[Box] = []

    def b(self, x0, y0, z0, x1, y1, z1, col=None) -> None:
        self.boxes.append(((x0, y0, z0), (x1, y1, z1), self.rgb if col is None else col))

    def legs(self, w, d, h, col, t=0.05) -> None:
        for sx in (-1, 1):
            for sz in (-1, 1):
                x, z = sx * (w / 2 - t), sz * (d / 2 - t)
                self.b(x - t / 2, 0, z - t / 2, x + t / 2, h, z + t / 2, col)


def _seat(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = (2.0, 0.9, 0.85) if name == "sofa" else (0.9, 0.85, 0.85)
    bx.b(-w / 2, 0, -d / 2, w / 2, 0.45, d / 2)
    bx.b(-w / 2, 0.45, -d / 2, w / 2, h, -d / 2 + 0.2, bx.dark)
    bx.b(-w / 2, 0.45, -d / 2, -w / 2 + 0.15, 0.65, d / 2, bx.dark)
    bx.b(w / 2 - 0.15, 0.45, -d / 2, w / 2, 0.65, d / 2, bx.dark)
    return w, h, d


_TABLE_SIZES = {
    "table": (1.2, 0.8, 0.75),
    "coffee table": (1.1, 0.6, 0.45),
    "desk": (1.3, 0.65, 0.75),
    "dining table": (1.6, 0.9, 0.75),
}


def _table(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = _TABLE_SIZES[name]
    bx.b(-w / 2, h - 0.05, -d / 2, w / 2, h, d / 2)
    bx.legs(w, d, h - 0.05, bx.dark)
    return w, h, d


def _chair(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = 0.45, 0.45, 0.9
    bx.b(-w / 2, 0.42, -d / 2, w / 2, 0.47, d / 2)
    bx.b(-w / 2, 0.47, -d / 2, w / 2, h, -d / 2 + 0.05, bx.dark)
    bx.legs(w, d, 0.42, bx.dark, 0.04)
    return w, h, d


def _bed(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = 1.6, 2.0, 1.0
    bx.b(-w / 2, 0, -d / 2, w / 2, 0.35, d / 2, COLORS["brown"])
    bx.b(-w / 2, 0.35, -d / 2 + 0.5, w / 2, 0.5, d / 2)  # blanket
    bx.b(-w / 2 + 0.1, 0.35, -d / 2 + 0.08, w / 2 - 0.1, 0.5, -d / 2 + 0.45, COLORS["white"])
    bx.b(-w / 2, 0, -d / 2, w / 2, h, -d / 2 + 0.08, _shade(COLORS["brown"], 0.8))
    return w, h, d


_CABINET_SIZES = {
    "nightstand": (0.45, 0.4, 0.55),
    "cabinet": (1.4, 0.6, 0.9),
    "tv stand": (1.4, 0.45, 0.5),
    "wardrobe": (1.2, 0.6, 2.0),
    "fridge": (0.75, 0.7, 1.8),
    "stove": (0.6, 0.6, 0.9),
    "washing machine": (0.6, 0.6, 0.85),
    "bookshelf": (0.9, 0.35, 1.9),
}


def _bookshelf(bx: _Boxes, w: float, d: float, h: float, rng) -> None:
    """Sides, back, five shelves and books of random widths, heights and colours."""
    bx.b(-w / 2, 0, -d / 2, w / 2, h, -d / 2 + 0.03)
    bx.b(-w / 2, 0, -d / 2, -w / 2 + 0.03, h, d / 2)
    bx.b(w / 2 - 0.03, 0, -d / 2, w / 2, h, d / 2)
    for k in range(5):
        y = k * (h - 0.03) / 4
        bx.b(-w / 2, y, -d / 2, w / 2, y + 0.03, d / 2)
        if k == 4:
            continue
        x = -w / 2 + 0.05
        while x < w / 2 - 0.12:
            bw = float(rng.uniform(0.04, 0.08))
            col = COLORS[str(rng.choice(BRIGHT))]
            top = y + 0.03 + float(rng.uniform(0.2, 0.33))
            bx.b(x, y + 0.03, -d / 2 + 0.05, x + bw, top, d / 2 - 0.03, col)
            x += bw + 0.01


def _cabinet(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = _CABINET_SIZES[name]
    if name == "bookshelf":
        _bookshelf(bx, w, d, h, rng)
        return w, h, d
    bx.b(-w / 2, 0, -d / 2, w / 2, h, d / 2)
    if name == "stove":
        bx.b(-w / 2, h, -d / 2, w / 2, h + 0.02, d / 2, COLORS["black"])
        h += 0.02
    if name in ("fridge", "wardrobe", "cabinet", "nightstand"):  # handles / door gap
        bx.b(-0.01, 0.1, d / 2, 0.01, h - 0.1, d / 2 + 0.01, bx.dark)
    if name == "washing machine":
        bx.b(-0.18, 0.25, d / 2, 0.18, 0.6, d / 2 + 0.02, COLORS["gray"])
    return w, h, d


def _lamp(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    on = state == "on"
    shade_col = (1.0, 0.96, 0.70) if on else _shade(bx.rgb, 0.55)
    bulb = (1.0, 1.0, 0.85) if on else (0.15, 0.15, 0.15)
    h = 1.65 if rng.random() < 0.5 else 0.55
    w = d = 0.4 if h > 1 else 0.3
    bx.b(-0.12, 0, -0.12, 0.12, 0.04, 0.12)
    bx.b(-0.02, 0.04, -0.02, 0.02, h - 0.3, 0.02)
    bx.b(-0.06, h - 0.32, -0.06, 0.06, h - 0.26, 0.06, bulb)
    bx.b(-w / 2, h - 0.3, -d / 2, w / 2, h, d / 2, shade_col)
    return w, h, d


def _plant(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    bx.b(-0.15, 0, -0.15, 0.15, 0.3, 0.15)  # pot in the object's colour
    leaf = COLORS["green"]
    bx.b(-0.22, 0.3, -0.22, 0.22, 0.75, 0.22, _shade(leaf, 0.8))
    bx.b(-0.14, 0.75, -0.14, 0.14, 1.0, 0.14, leaf)
    return 0.45, 1.0, 0.45


def _tv(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = 1.1, 0.2, 0.72
    screen = (0.35, 0.65, 1.0) if state == "on" else (0.03, 0.03, 0.04)
    bx.b(-0.15, 0, -0.1, 0.15, 0.03, 0.1, COLORS["black"])
    bx.b(-0.03, 0.03, -0.03, 0.03, 0.1, 0.03, COLORS["black"])
    bx.b(-w / 2, 0.1, -0.03, w / 2, h, 0.03, COLORS["black"])
    bx.b(-w / 2 + 0.04, 0.14, 0.03, w / 2 - 0.04, h - 0.04, 0.04, screen)
    return w, h, d


def _laptop(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d = 0.36, 0.26
    bx.b(-w / 2, 0, -d / 2, w / 2, 0.02, d / 2)
    if state != "open":
        bx.b(-w / 2, 0.02, -d / 2, w / 2, 0.035, d / 2, bx.dark)
        return w, 0.035, d
    h = 0.26
    bx.b(-w / 2, 0.02, -d / 2, w / 2, h, -d / 2 + 0.015)
    bx.b(
        -w / 2 + 0.02, 0.04, -d / 2 + 0.015, w / 2 - 0.02, h - 0.02, -d / 2 + 0.02, (0.4, 0.6, 0.9)
    )
    return w, h, d


def _vase(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    bx.b(-0.08, 0, -0.08, 0.08, 0.25, 0.08)
    bx.b(-0.05, 0.25, -0.05, 0.05, 0.32, 0.05)
    return 0.16, 0.32, 0.16


def _bathroom(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    white = COLORS["white"]
    if name == "toilet":
        bx.b(-0.2, 0, -0.35, 0.2, 0.8, -0.15, white)
        bx.b(-0.18, 0, -0.15, 0.18, 0.42, 0.35, white)
        return 0.42, 0.8, 0.7
    if name == "sink":
        bx.b(-0.08, 0, -0.2, 0.08, 0.75, -0.05, white)
        bx.b(-0.3, 0.75, -0.225, 0.3, 0.85, 0.225, white)
        return 0.6, 0.85, 0.45
    bx.b(-0.8, 0, -0.375, 0.8, 0.55, 0.375, white)  # bathtub
    return 1.6, 0.55, 0.75


def _painting(name: str, bx: _Boxes, state: str | None, rng) -> tuple[float, float, float]:
    w, d, h = 0.8, 0.03, 0.6
    bx.b(-w / 2, 0, -d / 2, w / 2, h, d / 2, COLORS["black"])
    bx.b(-w / 2 + 0.04, 0.04, d / 2, w / 2 - 0.04, h - 0.04, d / 2 + 0.005)
    return w, h, d


_SHAPES = {
    "sofa": _seat,
    "armchair": _seat,
    **dict.fromkeys(_TABLE_SIZES, _table),
    "chair": _chair,
    "bed": _bed,
    **dict.fromkeys(_CABINET_SIZES, _cabinet),
    "lamp": _lamp,
    "plant": _plant,
    "tv": _tv,
    "laptop": _laptop,
    "vase": _vase,
    **dict.fromkeys(("toilet", "sink", "bathtub"), _bathroom),
    "painting": _painting,
}


def furniture(name: str, color: str, state: str | None, rng) -> tuple[tuple, list[Box]]:
    """(size (w, h, d), boxes) in a local frame: origin at the footprint centre on the floor,
    front towards +z."""
    shape = _SHAPES.get(name)
    if shape is None:
        raise ValueError(f"unknown furniture {name!r}")
    bx = _Boxes(COLORS[color])
    w, h, d = shape(name, bx, state, rng)
    return (w, h, d), bx.boxes


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


def small_lamp(color: str, state: str | None):
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


def add_chairs(table, rng, room, cx, cz, k, fw, fd, w, dd, add_object) -> None:
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
