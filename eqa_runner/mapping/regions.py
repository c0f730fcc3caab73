"""Fine-EQA's region map and goal-oriented exploration state (HCPLab-SYSU's method).

The 2D **region map** labels grid cells with one of :data:`REGION_NAMES` (-1: not seen): each
step whose frame shows a region other than "unknown", the lettered point the VLM places in that
region paints a disc of ``radius`` metres, and a line of such discs joins it to every earlier
point of the same region within ``3 * radius`` (one coherent area). A point of a *relevant*
region (from the question, :func:`parse_regions`) becomes a GOE target unless it lies within
``radius / 2`` of a point already visited.

The **exploration state** (:meth:`RegionMap.step`) switches between frontier exploration (FBE)
and goal-oriented exploration (GOE): FBE until the first (else the second) relevant region has
a target; in GOE each region gets ``max_exp`` rounds of one hop followed by three
turn-around steps (``dir`` 1..3), after which it is cleared and the second region (when the
question named exactly two) or FBE takes over. Every GOE step takes a target
(:meth:`RegionMap.next_target`): the region's pending point with the highest masked semantic
value, else the best cell of the masked, visited-cleared value map (a random one of ties).
The rules are upstream's (``src/tsdf.py`` ``integrate_reg``, ``get_exp_state``,
``find_next_point_region``), checked against its outputs by tests/golden/fine_eqa/.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from eqa_runner.mapping.lazy import ndimage

# the 20 region names of Fine-EQA (upstream main.py), lettered A..T in this order
REGION_NAMES: tuple[str, ...] = (
    "bathroom",
    "bedroom",
    "dining room",
    "garage",
    "kitchen",
    "laundry room",
    "living room",
    "office",
    "rec room",
    "study",
    "hallway",
    "entryway",
    "laboratory",
    "workout room",
    "warehouse",
    "lounge",
    "balcony",
    "staircase",
    "cloakroom",
    "unknown",
)
UNKNOWN = REGION_NAMES.index("unknown")
REGION_PARSES = ("upstream", "lenient")


def parse_regions(reply: str, rule: str = "upstream") -> list[int]:
    """The relevant regions (indices, in the reply's order) of a comma-separated reply.

    ``upstream``: each comma-separated piece counts only when it is exactly a region name
    ("bedroom, hallway" gives bedroom alone; "Kitchen" nothing); ``lenient`` also strips
    spaces, quotes and a final full stop and ignores case. "unknown" never counts.
    """
    out: list[int] = []
    for piece in reply.split(","):
        name = piece.strip().strip("'\"`.").lower() if rule == "lenient" else piece
        if name != "unknown" and name in REGION_NAMES:
            out.append(REGION_NAMES.index(name))
    return out


@dataclass
class RegionGoal:
    """One relevant region's GOE state (upstream's ``exp_list`` entry)."""

    region: int
    count: int = 0  # 0: idle; 1..max_exp: the round being explored
    dir: int = 0  # 0: hop this round; 1..3: turn-around steps
    points: list[tuple[int, int]] = field(default_factory=list)  # pending target cells


class RegionMap:
    """The region map, the relevant regions' GOE state and the visited GOE targets."""

    def __init__(
        self,
        dims: tuple[int, int],
        voxel_size: float,
        relevant: list[int],
        *,
        max_exp: int = 3,
        radius: float = 1.0,
        exp_radius: float = 0.5,
        smooth_sigma: float = 5.0,
        rand: random.Random | None = None,
    ) -> None:
        self.grid = np.full(dims, -1, dtype=np.int16)
        self.voxel_size = float(voxel_size)
        self.goals = [RegionGoal(int(r)) for r in relevant]
        self.max_exp = int(max_exp)
        self.radius_vox = int(radius / self.voxel_size)
        self.exp_radius_vox = int(exp_radius / self.voxel_size)
        self.smooth_sigma = float(smooth_sigma)
        self.rand = rand or random.Random(0)
        self.fbe = True  # upstream exp_fbe_state: True = FBE, False = GOE
        self.points: dict[int, list[np.ndarray]] = {}  # every point placed, per region
        self.visited: list[tuple[int, int]] = []  # GOE targets taken (upstream exped_point)
        self.painted: list[tuple[int, int, int]] = []  # (cell i, cell j, region) per point

    # ------------------------------------------------------------------ painting
    def _disc(self, c: np.ndarray | tuple[float, float], r: int, value: int) -> None:
        """Cells within ``r`` cells of ``c`` (inclusive) get ``value``."""
        grid = self.grid
        x, y = round(float(c[0])), round(float(c[1]))
        x0, x1 = max(0, x - r), min(grid.shape[0], x + r + 1)
        y0, y1 = max(0, y - r), min(grid.shape[1], y + r + 1)
        if x0 >= x1 or y0 >= y1:
            return
        ii, jj = np.ogrid[x0:x1, y0:y1]
        grid[x0:x1, y0:y1][(ii - x) ** 2 + (jj - y) ** 2 <= r * r] = value

    def _join(self, a: np.ndarray, b: np.ndarray, value: int) -> None:
        """Paint discs along the grid line a -> b when the points are within 3 radii."""
        r = self.radius_vox
        if math.dist(a, b) > 3 * r:
            return
        for x, y in bresenham(int(a[0]), int(a[1]), int(b[0]), int(b[1])):
            if 0 <= x < self.grid.shape[0] and 0 <= y < self.grid.shape[1]:
                self._disc((x, y), r, value)

    def integrate(self, cell: np.ndarray, region: int) -> None:
        """The point at ``cell`` lies in ``region``: paint, join, maybe queue it as a target."""
        p = np.asarray(cell, dtype=float)
        self.painted.append((int(p[0]), int(p[1]), int(region)))
        self._disc(p, self.radius_vox, region)
        if region not in self.points:
            self.points[region] = [p]
        else:
            for q in self.points[region]:
                self._join(q, p, region)
            self.points[region].append(p)
        rel = [g.region for g in self.goals]
        if region in rel:
            near = any(math.dist(v, p) < self.radius_vox / 2 for v in self.visited)
            if not near:
                self.goals[rel.index(region)].points.append((int(p[0]), int(p[1])))

    def mark_unknown(self) -> None:
        """Unseen cells become "unknown" (upstream does so when it draws the map)."""
        if self.goals:
            self.grid[self.grid == -1] = UNKNOWN

    # ------------------------------------------------------------------ state machine
    def _has_points(self, i: int) -> bool:
        return 0 <= i < len(self.goals) and self.goals[i].count == 0 and bool(self.goals[i].points)

    def _done(self, i: int) -> bool:
        return self.goals[i].count == self.max_exp and self.goals[i].dir == 3

    def _advance(self, i: int) -> None:
        g = self.goals[i]
        if g.dir == 3:
            g.count, g.dir = g.count + 1, 0
        else:
            g.dir += 1

    def _clear(self, i: int) -> None:
        self.goals[i] = RegionGoal(self.goals[i].region)

    def step(self) -> bool:
        """Advance the exploration state once; True: FBE this step, False: GOE."""
        g, two = self.goals, len(self.goals) == 2
        if not g:
            return self.fbe
        if self.fbe:
            for i in (0, 1) if two else (0,):
                if self._has_points(i):
                    self.fbe, g[i].count = False, 1
                    break
        elif g[0].count > 0:
            if not self._done(0):
                self._advance(0)
            else:
                self._clear(0)
                if two and self._has_points(1):
                    g[1].count = 1
                else:
                    self.fbe = True
        elif self._has_points(0):
            self._clear(1)
            g[0].count = 1
        elif self._done(1):
            self._clear(1)
            self.fbe = True
        else:
            self._advance(1)
        return self.fbe

    def active(self) -> int:
        """Index of the region being explored (the highest count; the first of ties)."""
        return int(np.argmax([g.count for g in self.goals]))

    def next_target(self, values: np.ndarray) -> tuple[tuple[int, int], int]:
        """(target cell, active goal index) of a GOE step; ``values`` is the raw semantic map."""
        s = self.smooth_sigma
        val = ndimage.gaussian_filter(values, sigma=s)
        i = self.active()
        goal = self.goals[i]
        masked = ndimage.gaussian_filter(np.where(self.grid == goal.region, val, 0), sigma=s)
        if goal.points:
            k = int(np.argmax([masked[a, b] for a, b in goal.points]))
            cell = goal.points.pop(k)
        else:
            cleared = masked.copy()
            for v in self.visited:
                _zero_disc(cleared, v, self.exp_radius_vox)
            cleared = ndimage.gaussian_filter(cleared, sigma=s)
            best = np.column_stack(np.where(cleared == cleared.max()))
            pick = self.rand.choice(best)
            cell = (int(pick[0]), int(pick[1]))
        self.visited.append(cell)
        if self.goals:
            self.grid[self.grid == -1] = UNKNOWN
        return cell, i

    def move(self, values: np.ndarray) -> tuple[str, tuple[int, int] | None, int]:
        """This step's move: ("fbe", None, -1), or a GOE target cell with ``"goe"`` (hop to it:
        the round's ``dir`` is 0) or ``"goe_turn"`` (a turn-around step; upstream takes a target
        on these steps too, consuming a pending point) and the active goal's index."""
        if not self.goals or self.step():
            return "fbe", None, -1
        cell, i = self.next_target(values)
        return ("goe" if self.goals[i].dir == 0 else "goe_turn"), cell, i

    def counts(self) -> dict[str, int]:
        """Cells per region name (the unseen as "unseen")."""
        vals, n = np.unique(self.grid, return_counts=True)
        return {
            ("unseen" if v < 0 else REGION_NAMES[v]): int(c) for v, c in zip(vals, n, strict=True)
        }

    def snapshot(self) -> list[dict[str, object]]:
        return [
            {
                "region": REGION_NAMES[g.region],
                "count": g.count,
                "dir": g.dir,
                "points": [list(p) for p in g.points],
            }
            for g in self.goals
        ]


def _zero_disc(a: np.ndarray, c: tuple[int, int], r: int) -> None:
    x, y = c
    x0, x1 = max(0, x - r), min(a.shape[0], x + r + 1)
    y0, y1 = max(0, y - r), min(a.shape[1], y + r + 1)
    if x0 < x1 and y0 < y1:
        ii, jj = np.ogrid[x0:x1, y0:y1]
        a[x0:x1, y0:y1][(ii - x) ** 2 + (jj - y) ** 2 <= r * r] = 0


def bresenham(x1: int, y1: int, x2: int, y2: int) -> list[tuple[int, int]]:
    """Grid cells of the line x1,y1 -> x2,y2, both ends included."""
    out = []
    dx, dy = abs(x2 - x1), abs(y2 - y1)
    sx, sy = (1 if x1 < x2 else -1), (1 if y1 < y2 else -1)
    err = dx - dy
    while True:
        out.append((x1, y1))
        if x1 == x2 and y1 == y2:
            return out
        e2 = 2 * err
        if e2 > -dy:
            err -= dy
            x1 += sx
        if e2 < dx:
            err += dx
            y1 += sy
