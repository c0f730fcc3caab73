"""Differential measurements of two simulator backends on one scene (``test_parity.py``).

Every number compares the same query answered by both backends: the navigable area of the
floor, geodesic distances between random navigable pairs, ``snap_point`` of points off the
floor, depth and colour rendered from the same poses. Colour is compared as chromaticity
(r, g, b) / (r + g + b): the mesh backend shades with a white light and habitat-sim shows the
demo's textures unlit, so intensities differ by design while the layout (which surface covers
which pixel, in which colour) must not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from eqa_runner.sim import geometry as geo


@dataclass
class Parity:
    scene: str
    area_a: float
    area_b: float
    pairs: int
    geo_median_rel: float
    geo_p90_rel: float
    reach_mismatch: int
    snaps: int
    snap_max_m: float
    snap_median_m: float
    poses: int
    depth_median_abs_m: float
    depth_only_one_frac: float
    chroma_median: float
    chroma_off_frac: float
    scene_area_a: float = 0.0
    scene_area_b: float = 0.0
    snap_xz_max_m: float = 0.0  # the horizontal part of the snap difference

    @property
    def area_rel(self) -> float:
        return abs(self.area_a - self.area_b) / max(self.area_a, 1e-9)

    def row(self) -> str:
        return (
            f"| {self.scene} | {self.area_a:.1f} / {self.area_b:.1f} ({100 * self.area_rel:.1f}%) "
            f"| {self.pairs}: {100 * self.geo_median_rel:.2f}% (p90 {100 * self.geo_p90_rel:.2f}%)"
            f", {self.reach_mismatch} | {self.snaps}: max {100 * self.snap_max_m:.1f} cm "
            f"(x-z {100 * self.snap_xz_max_m:.1f} cm) "
            f"| {self.poses}: {1000 * self.depth_median_abs_m:.1f} mm, "
            f"{100 * self.depth_only_one_frac:.2f}% | {self.chroma_median:.4f}, "
            f"{100 * self.chroma_off_frac:.2f}% "
            f"| {self.scene_area_a:.1f} / {self.scene_area_b:.1f} |"
        )

    def as_dict(self) -> dict:
        return asdict(self) | {"area_rel": self.area_rel}


def main_floor_points(mesh_sim, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` navigable points of the mesh backend's largest island (every storey of it)."""
    nav = mesh_sim.layered
    main = np.bincount(nav.island).argmax()
    sel = np.nonzero(nav.island == main)[0]
    pick = sel[rng.choice(len(sel), size=n, replace=False)]
    return np.stack([nav.xz[pick, 0], nav.y[pick], nav.xz[pick, 1]], axis=1)


def chroma(rgb: np.ndarray) -> np.ndarray:
    c = rgb.astype(np.float64)
    return c / np.maximum(c.sum(axis=-1, keepdims=True), 1.0)


def measure(
    scene: str,
    a,
    b,
    *,
    seed: int = 0,
    pairs: int = 60,
    snaps: int = 40,
    poses: int = 24,
    band: float | None = None,
) -> Parity:
    """``a`` is the mesh backend (its largest island picks the points), ``b`` the other one;
    both with the same scene loaded, the same sensor and the agent on that island. Areas count
    the navigable surface within ``band`` of the agent's floor (default: climb + 5 cm)."""
    rng = np.random.default_rng(seed)
    floor_y = a.floor_height
    area_a, area_b = a.navigable_area(floor_y, band), b.navigable_area(floor_y, band)

    pts = main_floor_points(a, 2 * pairs, rng)
    rel, mismatch = [], 0
    for p, q in zip(pts[:pairs], pts[pairs:], strict=True):
        da, db = a.geodesic_distance(p, q), b.geodesic_distance(p, q)
        if math.isfinite(da) != math.isfinite(db):
            mismatch += 1
        elif math.isfinite(da) and da > 0.5:
            rel.append(abs(da - db) / da)

    base = main_floor_points(a, snaps, rng)
    off = base + np.column_stack([np.zeros(snaps), rng.uniform(0.2, 0.5, snaps), np.zeros(snaps)])
    snap_d, snap_xz = [], []
    for p in off:
        sa, sb = a.snap_point(p), b.snap_point(p)
        if np.all(np.isfinite(sa)) and np.all(np.isfinite(sb)):
            snap_d.append(float(np.linalg.norm(sa - sb)))
            snap_xz.append(float(np.hypot(*(sa - sb)[[0, 2]])))
        else:
            snap_d.append(math.inf)
            snap_xz.append(math.inf)

    dabs, only, total, cdiff = [], 0, 0, []
    for p in main_floor_points(a, poses, rng):
        q = geo.yaw_to_quat(float(rng.uniform(-math.pi, math.pi)))
        a.set_agent_pose(p, q)
        b.set_agent_pose(p, q)
        oa, ob = a.observe(), b.observe()
        ha, hb = oa.depth > 0, ob.depth > 0
        both = ha & hb
        only += int((ha ^ hb).sum())
        total += ha.size
        dabs.append(np.abs(oa.depth[both] - ob.depth[both]))
        cdiff.append(np.abs(chroma(oa.rgb) - chroma(ob.rgb)).max(axis=-1)[both])
    dabs_all, c_all = np.concatenate(dabs), np.concatenate(cdiff)
    return Parity(
        scene=scene,
        area_a=area_a,
        area_b=area_b,
        pairs=len(rel) + mismatch,
        geo_median_rel=float(np.median(rel)),
        geo_p90_rel=float(np.percentile(rel, 90)),
        reach_mismatch=mismatch,
        snaps=len(snap_d),
        snap_max_m=float(np.max(snap_d)),
        snap_median_m=float(np.median(snap_d)),
        poses=poses,
        depth_median_abs_m=float(np.median(dabs_all)),
        depth_only_one_frac=only / total,
        chroma_median=float(np.median(c_all)),
        chroma_off_frac=float((c_all > 0.05).mean()),
        scene_area_a=a.scene_area(),
        scene_area_b=b.scene_area(),
        snap_xz_max_m=float(np.max(snap_xz)),
    )
