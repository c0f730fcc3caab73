"""Frame conversions: round trips and agreement with the upstream conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqa_runner.sim import geometry as geo

RNG = np.random.default_rng(0)


def _random_quat() -> np.ndarray:
    q = RNG.normal(size=4)
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def test_point_frames_roundtrip_and_convention():
    p = RNG.normal(size=(10, 3))
    np.testing.assert_allclose(geo.normal_to_habitat(geo.habitat_to_normal(p)), p)
    # upstream: pos_normal = [x, -z, y]
    np.testing.assert_allclose(geo.habitat_to_normal([1.0, 2.0, 3.0]), [1.0, -3.0, 2.0])


def test_quaternion_matrix_roundtrip():
    for _ in range(20):
        q = _random_quat()
        r = geo.quat_to_matrix(q)
        np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(r) == pytest.approx(1.0)
        np.testing.assert_allclose(geo.matrix_to_quat(r), q, atol=1e-9)
    np.testing.assert_allclose(
        geo.quat_xyzw_to_wxyz(geo.quat_wxyz_to_xyzw([1, 2, 3, 4])), [1, 2, 3, 4]
    )


@pytest.mark.parametrize("yaw", [0.0, 0.3, -1.2, math.pi / 2, 3.0])
def test_yaw_roundtrip_and_heading(yaw):
    assert geo.quat_to_yaw(geo.yaw_to_quat(yaw)) == pytest.approx(yaw)
    assert geo.normal_heading_to_yaw(geo.yaw_to_normal_heading(yaw)) == pytest.approx(
        geo.wrap_angle(yaw)
    )
    # the heading is the direction of the camera's forward axis in the normal frame
    fwd_h = geo.quat_to_matrix(geo.yaw_to_quat(yaw)) @ [0.0, 0.0, -1.0]
    fwd_n = geo.habitat_to_normal(fwd_h)
    assert math.atan2(fwd_n[1], fwd_n[0]) == pytest.approx(geo.yaw_to_normal_heading(yaw))


def test_yaw_zero_looks_minus_z_and_facing():
    fwd = geo.quat_to_matrix(geo.yaw_to_quat(0.0)) @ [0.0, 0.0, -1.0]
    np.testing.assert_allclose(fwd, [0.0, 0.0, -1.0], atol=1e-12)
    yaw = geo.yaw_facing([0, 0, 0], [2.0, 0.0, 1.0])
    fwd = geo.quat_to_matrix(geo.yaw_to_quat(yaw)) @ [0.0, 0.0, -1.0]
    np.testing.assert_allclose(fwd, np.array([2.0, 0.0, 1.0]) / math.sqrt(5), atol=1e-12)


def test_intrinsics():
    k = geo.intrinsics_from_hfov(90.0, 512, 512)
    assert k[0, 0] == pytest.approx(256.0) and k[1, 1] == pytest.approx(256.0)
    assert k[0, 2] == 256.0 and k[1, 2] == 256.0
    k = geo.intrinsics_from_hfov(90.0, 640, 360)
    assert k[0, 0] == pytest.approx(k[1, 1])  # square pixels


def test_pose_roundtrips_and_tsdf_convention():
    for _ in range(10):
        pose = np.eye(4)
        pose[:3, :3] = geo.quat_to_matrix(_random_quat())
        pose[:3, 3] = RNG.normal(size=3)
        np.testing.assert_allclose(
            geo.pose_normal_to_habitat(geo.pose_habitat_to_normal(pose)), pose, atol=1e-12
        )
        np.testing.assert_allclose(
            geo.cam_pose_tsdf_to_habitat(geo.cam_pose_tsdf(pose)), pose, atol=1e-12
        )
        np.testing.assert_allclose(geo.invert_pose(pose) @ pose, np.eye(4), atol=1e-12)
    # a camera at yaw 0: OpenCV +z (forward) must be habitat -z, i.e. normal +y
    cam = geo.camera_to_world([1.0, 0.0, 2.0], geo.yaw_to_quat(0.0), 1.5)
    t = geo.cam_pose_tsdf(cam)
    np.testing.assert_allclose(t[:3, 2], [0.0, 1.0, 0.0], atol=1e-12)  # forward
    np.testing.assert_allclose(t[:3, 1], [0.0, 0.0, -1.0], atol=1e-12)  # image down = -up
    np.testing.assert_allclose(t[:3, 3], geo.habitat_to_normal([1.0, 1.5, 2.0]))


def test_project_unproject_roundtrip():
    cam = geo.camera_to_world([0.0, 0.0, 0.0], geo.yaw_to_quat(0.4), 1.5, tilt_deg=-10.0)
    k = geo.intrinsics_from_hfov(90.0, 64, 48)
    depth = np.full((48, 64), 2.5, dtype=np.float32)
    pts = geo.unproject_depth(depth, k, cam)
    uv, z = geo.project_points(pts, cam, k)
    np.testing.assert_allclose(z, 2.5, atol=1e-9)
    v, u = np.nonzero(depth > 0)
    np.testing.assert_allclose(uv, np.stack([u, v], axis=1), atol=1e-6)


def test_tilt_looks_up():
    cam = geo.camera_to_world([0.0, 0.0, 0.0], geo.yaw_to_quat(0.0), 1.5, tilt_deg=30.0)
    fwd = cam[:3, :3] @ [0.0, 0.0, -1.0]
    assert fwd[1] > 0.4


def test_forward_offset_is_explore_eqas_pitched_body():
    """explore-eqa pitches the agent body (sensor 1.5 m up it) by -30 deg: the camera ends up at
    R_yaw R_x(-30 deg) [0, 1.5, 0]. A sensor pitched alone at height 1.5 cos 30 deg, 1.5 sin 30
    deg = 0.75 m ahead, has the same pose."""
    yaw, tilt, h = 0.7, math.radians(-30.0), 1.5
    body = geo.quat_to_matrix(geo.yaw_to_quat(yaw)) @ geo.rot_x(tilt)
    want = np.array([1.0, 0.2, -3.0]) + body @ np.array([0.0, h, 0.0])
    cam = geo.camera_to_world([1.0, 0.2, -3.0], geo.yaw_to_quat(yaw), h * math.cos(tilt), -30.0,
                              forward_m=-h * math.sin(tilt))  # fmt: skip
    assert np.allclose(cam[:3, 3], want) and np.allclose(cam[:3, :3], body)
