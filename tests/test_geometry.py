"""Property-based tests of the geometry core (hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rodlab.geometry import (
    bishop_frames,
    compute_curvature_binormals,
    compute_edges,
    compute_tangents,
    exp_so3,
    log_so3,
    matrix_to_quat,
    parallel_transport,
    quat_mul,
    quat_rotate,
    quat_to_matrix,
    quat_to_rotvec,
    reference_twist,
    rotate_by_rotvec,
    rotvec_to_quat,
    signed_angle,
    turning_angles,
)

finite = st.floats(-1.0, 1.0, allow_nan=False)
vec3 = arrays(np.float64, 3, elements=finite)
SET = settings(max_examples=60, deadline=None)


def _unit(v):
    n = np.linalg.norm(v)
    return None if n < 1e-3 else v / n


def _polyline(seed, n=9):
    rng = np.random.default_rng(seed)
    steps = rng.standard_normal((n - 1, 3))
    steps[:, 0] += 2.0  # keep consecutive edges far from anti-parallel
    return np.vstack([np.zeros(3), np.cumsum(steps, axis=0)])


def _geometry(x, closed=False):
    ne = x.shape[0] if closed else x.shape[0] - 1
    e = np.empty((ne, 3))
    compute_edges(np.ascontiguousarray(x), closed, e)
    lengths, t = np.empty(ne), np.empty((ne, 3))
    compute_tangents(e, lengths, t)
    nj = ne if closed else ne - 1
    kb = np.empty((nj, 3))
    compute_curvature_binormals(t, closed, kb)
    phi = np.empty(nj)
    turning_angles(t, closed, phi)
    return lengths, t, kb, phi


@SET
@given(st.integers(0, 10**6), vec3, vec3)
def test_curvature_is_invariant_under_rigid_motions(seed, w, shift):
    x = _polyline(seed)
    R = exp_so3(3.0 * w)
    l0, _, kb0, phi0 = _geometry(x)
    l1, _, kb1, phi1 = _geometry(x @ R.T + 5 * shift)
    assert np.allclose(l0, l1, rtol=1e-12)
    assert np.allclose(phi0, phi1, atol=1e-12)
    assert np.allclose(kb1, kb0 @ R.T, atol=1e-12)  # kb rotates with the rod
    assert np.allclose(np.linalg.norm(kb0, axis=1), 2 * np.tan(phi0 / 2), rtol=1e-10)


@SET
@given(st.integers(0, 10**6), vec3)
def test_bishop_frames_are_orthonormal_and_twist_free(seed, seedvec):
    x = _polyline(seed)
    _, t, _, _ = _geometry(x)
    u0 = np.cross(t[0], seedvec + np.array([0.3, -0.7, 0.2]))
    if np.linalg.norm(u0) < 1e-3:
        return
    u, v = np.empty_like(t), np.empty_like(t)
    bishop_frames(t, u0, False, u, v)
    for j in range(len(t)):
        F = np.stack([t[j], u[j], v[j]])
        assert np.allclose(F @ F.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(F) > 0
    tw = np.zeros(len(t) - 1)
    reference_twist(t, u, False, np.zeros(len(t) - 1), tw)
    assert np.allclose(tw, 0.0, atol=1e-12)  # a Bishop frame has no reference twist


@SET
@given(vec3, vec3, vec3)
def test_parallel_transport_round_trip_and_tangent_map(a, b, u):
    t1, t2 = _unit(a + np.array([0.1, 0.0, 0.0])), _unit(b + np.array([0.1, 0.0, 0.0]))
    if t1 is None or t2 is None or t1 @ t2 < -0.99:
        return
    assert np.allclose(parallel_transport(t1, t2, t1), t2, atol=1e-12)
    back = parallel_transport(t2, t1, parallel_transport(t1, t2, u))
    assert np.allclose(back, u, atol=1e-12)
    assert np.linalg.norm(parallel_transport(t1, t2, u)) == pytest.approx(np.linalg.norm(u), abs=1e-12)


def test_parallel_transport_is_accurate_for_nearly_parallel_tangents():
    t1 = np.array([1.0, 0.0, 0.0])
    eps = 1e-9
    t2 = np.array([np.cos(eps), np.sin(eps), 0.0])
    u = np.array([0.0, 1.0, 0.0])
    out = parallel_transport(t1, t2, u)
    assert np.allclose(out, [-np.sin(eps), np.cos(eps), 0.0], atol=1e-17)


def test_anti_parallel_tangents_raise_instead_of_nan():
    with pytest.raises(ValueError, match="anti-parallel"):
        parallel_transport(np.array([1.0, 0, 0]), np.array([-1.0, 0, 0]), np.array([0, 1.0, 0]))
    t = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    with pytest.raises(ValueError, match="anti-parallel"):
        compute_curvature_binormals(t, False, np.empty((1, 3)))


@SET
@given(vec3, vec3)
def test_signed_angle_recovers_rotation_about_axis(a, b):
    axis = _unit(a + np.array([0.0, 0.0, 0.2]))
    if axis is None:
        return
    u = np.cross(axis, _unit(b + np.array([0.3, 0.1, 0.0])) if _unit(b + np.array([0.3, 0.1, 0.0])) is not None else [1.0, 0, 0])
    if np.linalg.norm(u) < 1e-3:
        return
    for ang in (0.0, 1e-9, 0.5, np.pi / 2, 3.0, -3.0, -1e-7):
        v = exp_so3(axis * ang) @ u
        assert signed_angle(u, v, axis) == pytest.approx(ang, abs=1e-12)


@SET
@given(vec3)
def test_rotation_maps_round_trip(w):
    w = 3.0 * w
    if np.linalg.norm(w) > 3.1:
        w *= 3.1 / np.linalg.norm(w)
    R = exp_so3(w)
    assert np.allclose(R @ R.T, np.eye(3), atol=1e-13) and np.linalg.det(R) == pytest.approx(1.0)
    assert np.allclose(log_so3(R), w, atol=1e-10)
    q = rotvec_to_quat(w)
    assert np.allclose(quat_to_matrix(q), R, atol=1e-13)
    assert np.allclose(quat_to_rotvec(q), w, atol=1e-12)
    assert np.allclose(np.abs(matrix_to_quat(R) @ q), 1.0, atol=1e-12)
    v = np.array([0.3, -0.2, 0.9])
    assert np.allclose(quat_rotate(q, v), R @ v, atol=1e-13)
    assert np.allclose(rotate_by_rotvec(w, v), R @ v, atol=1e-13)


@SET
@given(vec3, vec3)
def test_quaternion_product_composes_rotations(a, b):
    qa, qb = rotvec_to_quat(2 * a), rotvec_to_quat(2 * b)
    assert np.allclose(quat_to_matrix(quat_mul(qa, qb)), quat_to_matrix(qa) @ quat_to_matrix(qb), atol=1e-12)


def test_small_angle_limits_are_smooth():
    for s in (1e-12, 1e-8, 1e-5, 1e-4 * (1 - 1e-9), 1e-4 * (1 + 1e-9)):
        w = np.array([s, -0.5 * s, 0.25 * s])
        R = exp_so3(w)
        assert np.allclose(log_so3(R), w, rtol=1e-6, atol=1e-18)
        assert np.allclose(quat_to_rotvec(rotvec_to_quat(w)), w, rtol=1e-12, atol=1e-20)


def test_log_near_pi():
    axis = np.array([1.0, 2.0, -2.0]) / 3.0
    for ang in (np.pi - 1e-9, np.pi - 1e-4, np.pi):
        w = log_so3(exp_so3(axis * ang))
        assert np.linalg.norm(w) == pytest.approx(ang, abs=1e-8)
        assert abs(abs(w @ axis) / np.linalg.norm(w) - 1) < 1e-8
