"""Analytic box-world renderer for mapping tests (normal frame, z up, floor at z=0)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqa_runner.sim.geometry import camera_pose_normal, intrinsics_from_hfov

WALL = 0.1
HEIGHT = 2.6


@dataclass
class BoxWorld:
    """Axis-aligned boxes (lo, hi) + floor plane z=0 + ceiling z=HEIGHT."""

    interior: tuple[float, float, float, float]  # xmin, xmax, ymin, ymax of the walkable area
    boxes: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def add(self, lo: tuple[float, float, float], hi: tuple[float, float, float]) -> None:
        self.boxes.append((np.array(lo, dtype=float), np.array(hi, dtype=float)))

    def render(
        self, cam_to_world: np.ndarray, intrinsics: np.ndarray, h: int, w: int
    ) -> np.ndarray:
        """z-depth image (metres) by ray casting: pixel rays have camera z = 1, so t = depth."""
        uu, vv = np.meshgrid(np.arange(w, dtype=float), np.arange(h, dtype=float))
        d_cam = np.stack(
            [
                (uu - intrinsics[0, 2]) / intrinsics[0, 0],
                (vv - intrinsics[1, 2]) / intrinsics[1, 1],
                np.ones_like(uu),
            ],
            axis=-1,
        ).reshape(-1, 3)
        d = d_cam @ cam_to_world[:3, :3].T
        o = cam_to_world[:3, 3]
        t_best = np.full(len(d), np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            for plane_z in (0.0, HEIGHT):
                t = (plane_z - o[2]) / d[:, 2]
                t_best = np.where((t > 0) & (t < t_best), t, t_best)
            inv = 1.0 / d
            for lo, hi in self.boxes:
                t1 = (lo - o) * inv
                t2 = (hi - o) * inv
                tn = np.nanmax(np.minimum(t1, t2), axis=1)
                tf = np.nanmin(np.maximum(t1, t2), axis=1)
                hit = (tn <= tf) & (tn > 0) & (tn < t_best)
                t_best = np.where(hit, tn, t_best)
        t_best[~np.isfinite(t_best)] = 0.0
        return t_best.reshape(h, w).astype(np.float32)

    def nav_bounds(self) -> np.ndarray:
        x0, x1, y0, y1 = self.interior
        return np.array([[x0, x1], [y0, y1]])

    def free_floor_mask(self, origin: np.ndarray, voxel: float, dims: np.ndarray) -> np.ndarray:
        """Grid cells whose sample point lies in the interior and outside every box."""
        xs = origin[0] + np.arange(dims[0]) * voxel
        ys = origin[1] + np.arange(dims[1]) * voxel
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        x0, x1, y0, y1 = self.interior
        m = (gx > x0) & (gx < x1) & (gy > y0) & (gy < y1)
        for lo, hi in self.boxes:
            if lo[2] < 0.5:
                m &= ~((gx >= lo[0]) & (gx <= hi[0]) & (gy >= lo[1]) & (gy <= hi[1]))
        return m


def walled_room(x0: float, x1: float, y0: float, y1: float) -> BoxWorld:
    """Closed rectangular room with walkable interior [x0, x1] x [y0, y1]."""
    world = BoxWorld((x0, x1, y0, y1))
    world.add((x0 - WALL, y0 - WALL, 0), (x1 + WALL, y0, HEIGHT))
    world.add((x0 - WALL, y1, 0), (x1 + WALL, y1 + WALL, HEIGHT))
    world.add((x0 - WALL, y0, 0), (x0, y1, HEIGHT))
    world.add((x1, y0, 0), (x1 + WALL, y1, HEIGHT))
    return world


def add_wall_x(world: BoxWorld, x: float, y0: float, y1: float, door: tuple[float, float]):
    """Wall at constant x from y0 to y1 with a door gap (dy0, dy1)."""
    if door[0] > y0:
        world.add((x, y0, 0), (x + WALL, door[0], HEIGHT))
    if door[1] < y1:
        world.add((x, door[1], 0), (x + WALL, y1, HEIGHT))


CAM_HEIGHT = 1.5
H = W = 128
K = intrinsics_from_hfov(90.0, W, H)


def observe(world: BoxWorld, pos_xy, yaw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(depth, cam_to_world_normal, agent_pos_normal) for an agent at pos_xy on the floor."""
    agent = np.array([pos_xy[0], pos_xy[1], 0.0])
    pose = camera_pose_normal(agent + [0, 0, CAM_HEIGHT], yaw)
    return world.render(pose, K, H, W), pose, agent
