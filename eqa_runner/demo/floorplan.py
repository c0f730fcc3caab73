"""Floor plans of the demo apartments: the outline split into rooms, shared walls, doorway
sizes and the wall/floor/ceiling colours."""

from __future__ import annotations

WALL_H = 2.5
WALL_T = 0.1
DOOR_W = 0.9
DOOR_H = 2.1

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


def split_rooms(rng, width: float, depth: float, n: int) -> list[list[float]]:
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


def shared_edges(rects) -> list[tuple[int, int, int, float, float, float]]:
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


def overlap(r1, r2, margin: float = 0.0) -> bool:
    return not (
        r1[2] + margin <= r2[0]
        or r2[2] + margin <= r1[0]
        or r1[3] + margin <= r2[1]
        or r2[3] + margin <= r1[1]
    )
