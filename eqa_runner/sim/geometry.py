"""Frame conventions and conversions (numpy only).

Frames used in the project:

* **habitat world frame** — y up; an agent with yaw 0 looks along -z. Positions and quaternions
  (w, x, y, z) in the datasets are in this frame.
* **normal frame** — z up, the frame of the upstream explore-eqa TSDF planner:
  ``normal = (x_h, -z_h, y_h)``.
* **camera conventions** — habitat/OpenGL camera (x right, y up, looks along -z), used by
  ``Observation.cam_to_world``; OpenCV camera (x right, y down, looks along +z), used by the
  TSDF fusion (``cam_pose_tsdf``).
"""

from __future__ import annotations

import math

import numpy as np

# habitat -> normal: (x, y, z) -> (x, -z, y); a rotation of -90 deg about x.
HABITAT_TO_NORMAL = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
NORMAL_TO_HABITAT = HABITAT_TO_NORMAL.T
# OpenGL camera axes <-> OpenCV camera axes (flip y and z); its own inverse.
GL_TO_CV = np.diag([1.0, -1.0, -1.0])


def _as_points(p: np.ndarray | list[float]) -> np.ndarray:
    return np.asarray(p, dtype=np.float64)


def habitat_to_normal(p: np.ndarray | list[float]) -> np.ndarray:
    """Points (..., 3) from the habitat frame to the normal (z-up) frame."""
    return _as_points(p) @ HABITAT_TO_NORMAL.T


def normal_to_habitat(p: np.ndarray | list[float]) -> np.ndarray:
    """Points (..., 3) from the normal (z-up) frame to the habitat frame."""
    return _as_points(p) @ NORMAL_TO_HABITAT.T


def _rigid(rotation: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = rotation
    return out


def pose_habitat_to_normal(pose: np.ndarray) -> np.ndarray:
    """A 4x4 pose (object-to-world) with world in habitat frame -> world in normal frame."""
    return _rigid(HABITAT_TO_NORMAL) @ np.asarray(pose, dtype=np.float64)


def pose_normal_to_habitat(pose: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pose_habitat_to_normal`."""
    return _rigid(NORMAL_TO_HABITAT) @ np.asarray(pose, dtype=np.float64)


def cam_gl_to_cv(pose: np.ndarray) -> np.ndarray:
    """Camera-to-world with OpenGL camera axes -> with OpenCV camera axes (and back)."""
    return np.asarray(pose, dtype=np.float64) @ _rigid(GL_TO_CV)


def cam_pose_tsdf(cam_to_world_habitat: np.ndarray) -> np.ndarray:
    """The camera pose the TSDF fusion expects.

    Input: camera-to-world in the habitat frame with the habitat/OpenGL camera convention (as in
    ``Observation.cam_to_world``). Output: camera-to-world in the normal frame with the OpenCV
    camera convention (x right, y down, z forward).
    """
    return cam_gl_to_cv(pose_habitat_to_normal(cam_to_world_habitat))


def cam_pose_tsdf_to_habitat(cam_pose: np.ndarray) -> np.ndarray:
    """Inverse of :func:`cam_pose_tsdf`."""
    return pose_normal_to_habitat(cam_gl_to_cv(cam_pose))


# ----------------------------------------------------------------------------- quaternions


def quat_normalize(q: np.ndarray | list[float]) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    n = np.linalg.norm(q)
    if n == 0:
        raise ValueError("zero quaternion")
    return q / n


def quat_to_matrix(q_wxyz: np.ndarray | list[float]) -> np.ndarray:
    """Rotation matrix of a unit quaternion given as (w, x, y, z)."""
    w, x, y, z = quat_normalize(q_wxyz)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(r: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) with w >= 0 of a rotation matrix."""
    r = np.asarray(r, dtype=np.float64)
    tr = np.trace(r)
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2]) * 2
        q = [(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s]
    elif r[1, 1] > r[2, 2]:
        s = math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2]) * 2
        q = [(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1]) * 2
        q = [(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s]
    unit = quat_normalize(q)
    return -unit if unit[0] < 0 else unit


def quat_wxyz_to_xyzw(q: np.ndarray | list[float]) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return np.array([q[1], q[2], q[3], q[0]])


def quat_xyzw_to_wxyz(q: np.ndarray | list[float]) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return np.array([q[3], q[0], q[1], q[2]])


def yaw_to_quat(yaw: float) -> np.ndarray:
    """Quaternion (w, x, y, z) of a rotation by ``yaw`` radians about +y (habitat frame)."""
    return np.array([math.cos(yaw / 2), 0.0, math.sin(yaw / 2), 0.0])


def quat_to_yaw(q_wxyz: np.ndarray | list[float]) -> float:
    """Yaw about +y (radians, in (-pi, pi]) of the forward (-z) axis of a rotation."""
    fwd = quat_to_matrix(q_wxyz) @ np.array([0.0, 0.0, -1.0])
    return math.atan2(-fwd[0], -fwd[2])


def yaw_facing(src: np.ndarray | list[float], dst: np.ndarray | list[float]) -> float:
    """Habitat yaw of an agent at ``src`` looking horizontally towards ``dst``."""
    d = np.asarray(dst, dtype=np.float64) - np.asarray(src, dtype=np.float64)
    return math.atan2(-d[0], -d[2])


def yaw_to_normal_heading(yaw: float) -> float:
    """Habitat yaw -> heading angle in the normal frame (atan2 of the x-y forward vector)."""
    return wrap_angle(yaw + math.pi / 2)


def normal_heading_to_yaw(heading: float) -> float:
    """Inverse of :func:`yaw_to_normal_heading`."""
    return wrap_angle(heading - math.pi / 2)


def wrap_angle(a: float) -> float:
    """Angle wrapped to (-pi, pi]."""
    a = math.fmod(a + math.pi, 2 * math.pi)
    if a <= 0:
        a += 2 * math.pi
    return a - math.pi


def rot_x(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


# ----------------------------------------------------------------------------- camera


def intrinsics_from_hfov(hfov_deg: float, width: int, height: int) -> np.ndarray:
    """3x3 pinhole intrinsics for square pixels and principal point at (W/2, H/2).

    Same model as the upstream ``get_cam_intr`` (fx = fy = W / (2 tan(hfov/2))).
    """
    fx = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    vfov = 2.0 * math.atan(math.tan(math.radians(hfov_deg) / 2.0) * height / width)
    fy = (height / 2.0) / math.tan(vfov / 2.0)
    return np.array([[fx, 0.0, width / 2.0], [0.0, fy, height / 2.0], [0.0, 0.0, 1.0]])


def camera_to_world(
    position: np.ndarray | list[float],
    rotation_wxyz: np.ndarray | list[float],
    sensor_height_m: float,
    tilt_deg: float = 0.0,
    forward_m: float = 0.0,
) -> np.ndarray:
    """Camera-to-world (habitat frame, OpenGL camera) of a sensor mounted on an agent.

    The sensor sits at ``[0, sensor_height, -forward_m]`` in the agent frame (``forward_m``
    ahead: the agent looks along -z) and is rotated about the agent's x axis by ``tilt_deg``
    (positive looks up), as habitat's ``CameraSensorSpec`` with that ``position``.
    """
    r_agent = quat_to_matrix(rotation_wxyz)
    out = np.eye(4)
    out[:3, :3] = r_agent @ rot_x(math.radians(tilt_deg))
    out[:3, 3] = np.asarray(position, dtype=np.float64) + r_agent @ np.array(
        [0.0, sensor_height_m, -forward_m]
    )
    return out


def camera_pose_normal(
    position_normal: np.ndarray | list[float], yaw: float, tilt: float = 0.0
) -> np.ndarray:
    """TSDF camera pose (normal frame, OpenCV camera) of a camera at ``position_normal``.

    ``yaw`` is the habitat yaw in radians (0 looks along normal +y; the planner's waypoint
    angle), ``tilt`` the pitch in radians (negative looks down).
    """
    pos_h = normal_to_habitat(position_normal)
    return cam_pose_tsdf(camera_to_world(pos_h, yaw_to_quat(yaw), 0.0, math.degrees(tilt)))


def invert_pose(pose: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform."""
    pose = np.asarray(pose, dtype=np.float64)
    out = np.eye(4)
    out[:3, :3] = pose[:3, :3].T
    out[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return out


def project_points(
    points_world: np.ndarray, cam_to_world: np.ndarray, intrinsics: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Project habitat-frame points with an OpenGL-convention camera.

    Returns pixel coordinates (N, 2) as (u, v) and the depth along the optical axis (N,);
    points behind the camera have depth <= 0.
    """
    pts = np.atleast_2d(np.asarray(points_world, dtype=np.float64))
    cam = (pts - cam_to_world[:3, 3]) @ cam_to_world[:3, :3]  # world -> camera (GL)
    depth = -cam[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = intrinsics[0, 0] * cam[:, 0] / depth + intrinsics[0, 2]
        v = -intrinsics[1, 1] * cam[:, 1] / depth + intrinsics[1, 2]
    return np.stack([u, v], axis=1), depth


def unproject_depth(depth: np.ndarray, intrinsics: np.ndarray, cam_to_world: np.ndarray):
    """World points (habitat frame) of every pixel with depth > 0, shape (N, 3)."""
    h, w = depth.shape
    v, u = np.nonzero(depth > 0)
    z = depth[v, u].astype(np.float64)
    x = (u - intrinsics[0, 2]) / intrinsics[0, 0] * z
    y = -(v - intrinsics[1, 2]) / intrinsics[1, 1] * z
    cam = np.stack([x, y, -z], axis=1)
    return cam @ cam_to_world[:3, :3].T + cam_to_world[:3, 3]
