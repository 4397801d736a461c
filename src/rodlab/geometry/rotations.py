"""Rotations: exponential and logarithm maps of SO(3), quaternions (w, x, y, z).

Compiled scalar kernels over 3-vectors, 4-vectors and 3x3 matrices, accurate in the
small-angle limit (Taylor series below ``1e-4`` rad) and near ``pi``.

Two flavours of the quaternion operations, one implementation: the allocation-free kernels for
hot loops (:func:`quat_mul_scalar`, :func:`rotvec_to_quat_scalar`, :func:`quat_to_rotvec_scalar`
take and return scalar tuples; :func:`quat_matrix_into`, :func:`quat_normalize_into` and
:func:`world_inverse_inertia` write into the caller's arrays; used by the rigid bodies of the DER
simulator, :mod:`rodlab.der.bodies`), and the array-returning :func:`quat_mul`,
:func:`rotvec_to_quat`, :func:`quat_to_rotvec`, :func:`quat_to_matrix` built on them.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._vec import JIT

_SMALL = 1e-4


@njit(**JIT)
def skew(w):
    """``[w]`` with ``[w] v = w x v``."""
    out = np.zeros((3, 3))
    out[0, 1] = -w[2]
    out[0, 2] = w[1]
    out[1, 0] = w[2]
    out[1, 2] = -w[0]
    out[2, 0] = -w[1]
    out[2, 1] = w[0]
    return out


@njit(**JIT)
def _sinc_terms(theta2):
    """``sin(t)/t`` and ``(1 - cos t)/t^2`` from ``t^2``, Taylor-expanded near zero."""
    if theta2 < _SMALL * _SMALL:
        a = 1.0 - theta2 / 6.0 + theta2 * theta2 / 120.0
        b = 0.5 - theta2 / 24.0 + theta2 * theta2 / 720.0
    else:
        t = math.sqrt(theta2)
        a = math.sin(t) / t
        b = (1.0 - math.cos(t)) / theta2
    return a, b


@njit(**JIT)
def exp_so3(w):
    """Rodrigues' formula: ``exp([w]) = I + a [w] + b [w]^2``."""
    theta2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    a, b = _sinc_terms(theta2)
    W = skew(w)
    return np.eye(3) + a * W + b * (W @ W)


@njit(**JIT)
def rotate_by_rotvec(w, v):
    """``exp([w]) v`` without forming the matrix."""
    theta2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    a, b = _sinc_terms(theta2)
    c0 = w[1] * v[2] - w[2] * v[1]
    c1 = w[2] * v[0] - w[0] * v[2]
    c2 = w[0] * v[1] - w[1] * v[0]
    d0 = w[1] * c2 - w[2] * c1
    d1 = w[2] * c0 - w[0] * c2
    d2 = w[0] * c1 - w[1] * c0
    out = np.empty(3)
    out[0] = v[0] + a * c0 + b * d0
    out[1] = v[1] + a * c1 + b * d1
    out[2] = v[2] + a * c2 + b * d2
    return out


@njit(**JIT)
def log_so3(R):
    """Rotation vector ``w`` with ``exp([w]) = R``, ``|w| <= pi``; robust near 0 and near pi."""
    return quat_to_rotvec(matrix_to_quat(R))


# ---- allocation-free kernels (scalars in, scalars out, or written into the caller's arrays) ----
@njit(**JIT)
def quat_mul_scalar(p0, p1, p2, p3, q0, q1, q2, q3):
    """Hamilton product ``p q`` of quaternions given by their (w, x, y, z) components; returns
    the four components of the product."""
    return (p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
            p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
            p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
            p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0)


@njit(**JIT)
def rotvec_to_quat_scalar(a0, a1, a2):
    """Unit quaternion ``exp(a / 2)`` (w, x, y, z) of rotation vector ``a`` [rad] (Taylor series
    below ``1e-4`` rad)."""
    t2 = a0 * a0 + a1 * a1 + a2 * a2
    if t2 < _SMALL * _SMALL:
        s = 0.5 - t2 / 48.0
        c = 1.0 - t2 / 8.0 + t2 * t2 / 384.0
    else:
        t = math.sqrt(t2)
        s = math.sin(0.5 * t) / t
        c = math.cos(0.5 * t)
    return c, s * a0, s * a1, s * a2


@njit(**JIT)
def quat_to_rotvec_scalar(q0, q1, q2, q3):
    """Rotation vector [rad] of a unit quaternion (the shorter of ``q`` and ``-q``, ``|w| <= pi``),
    robust in the small-angle limit."""
    if q0 < 0.0:
        q0, q1, q2, q3 = -q0, -q1, -q2, -q3
    s = math.sqrt(q1 * q1 + q2 * q2 + q3 * q3)
    if s < _SMALL:
        # angle / s = 2 atan(s/q0) / s = 2/q0 (1 - s^2/(3 q0^2) + ...) for small s
        r2 = s * s / (q0 * q0)
        scale = 2.0 / q0 * (1.0 - r2 / 3.0 + r2 * r2 / 5.0)
    else:
        scale = 2.0 * math.atan2(s, q0) / s
    return scale * q1, scale * q2, scale * q3


@njit(**JIT)
def quat_matrix_into(q, R):
    """Rotation matrix of unit quaternion ``q`` (w, x, y, z) written into ``R`` (3, 3)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit(**JIT)
def quat_normalize_into(q):
    """Scale quaternion ``q`` (4,) to unit length in place (the caller keeps it away from zero:
    hot loops renormalise quaternions that are unit to round-off)."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for i in range(4):
        q[i] /= n


@njit(**JIT)
def world_inverse_inertia(q, I_inv_body, R, out):
    """World-frame inverse inertia ``I_w^-1 = R I^-1 R^T`` [1/(kg m^2)] of a body with
    orientation ``q`` and body-frame inverse inertia ``I_inv_body`` (3, 3), written into ``out``
    (3, 3); ``R`` (3, 3) is scratch and holds ``R(q)`` on return."""
    quat_matrix_into(q, R)
    for i in range(3):
        for j in range(3):
            s = 0.0
            for a in range(3):
                for c in range(3):
                    s += R[i, a] * I_inv_body[a, c] * R[j, c]
            out[i, j] = s


# ---- array-returning operations --------------------------------------------------------------
@njit(**JIT)
def quat_mul(p, q):
    """Hamilton product ``p q`` of quaternions stored (w, x, y, z)."""
    out = np.empty(4)
    out[0], out[1], out[2], out[3] = quat_mul_scalar(p[0], p[1], p[2], p[3], q[0], q[1], q[2], q[3])
    return out


@njit(**JIT)
def quat_conj(q):
    out = np.empty(4)
    out[0] = q[0]
    out[1] = -q[1]
    out[2] = -q[2]
    out[3] = -q[3]
    return out


@njit(**JIT)
def quat_normalize(q):
    n = math.sqrt(q[0] ** 2 + q[1] ** 2 + q[2] ** 2 + q[3] ** 2)
    if not n > 1e-300:
        raise ValueError("zero quaternion cannot be normalised")
    return q / n


@njit(**JIT)
def quat_rotate(q, v):
    """``q v q*`` for a unit quaternion ``q``."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    # t = 2 (q_vec x v); v' = v + w t + q_vec x t
    t0 = 2.0 * (y * v[2] - z * v[1])
    t1 = 2.0 * (z * v[0] - x * v[2])
    t2 = 2.0 * (x * v[1] - y * v[0])
    out = np.empty(3)
    out[0] = v[0] + w * t0 + (y * t2 - z * t1)
    out[1] = v[1] + w * t1 + (z * t0 - x * t2)
    out[2] = v[2] + w * t2 + (x * t1 - y * t0)
    return out


@njit(**JIT)
def rotvec_to_quat(w):
    """Unit quaternion (w, x, y, z) of rotation vector ``w`` [rad]."""
    out = np.empty(4)
    out[0], out[1], out[2], out[3] = rotvec_to_quat_scalar(w[0], w[1], w[2])
    return out


@njit(**JIT)
def quat_to_rotvec(q):
    """Rotation vector of unit quaternion ``q`` (the shorter of ``q`` and ``-q``), ``|w| <= pi``."""
    out = np.empty(3)
    out[0], out[1], out[2] = quat_to_rotvec_scalar(q[0], q[1], q[2], q[3])
    return out


@njit(**JIT)
def quat_to_matrix(q):
    """Rotation matrix (3, 3) of unit quaternion ``q`` (w, x, y, z)."""
    R = np.empty((3, 3))
    quat_matrix_into(q, R)
    return R


@njit(**JIT)
def matrix_to_quat(R):
    """Shepperd's method: pick the largest of w^2, x^2, y^2, z^2 to divide by."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    q = np.empty(4)
    if tr >= R[0, 0] and tr >= R[1, 1] and tr >= R[2, 2]:
        s = math.sqrt(1.0 + tr) * 2.0
        q[0] = 0.25 * s
        q[1] = (R[2, 1] - R[1, 2]) / s
        q[2] = (R[0, 2] - R[2, 0]) / s
        q[3] = (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2.0
        q[0] = (R[2, 1] - R[1, 2]) / s
        q[1] = 0.25 * s
        q[2] = (R[0, 1] + R[1, 0]) / s
        q[3] = (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] >= R[2, 2]:
        s = math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2.0
        q[0] = (R[0, 2] - R[2, 0]) / s
        q[1] = (R[0, 1] + R[1, 0]) / s
        q[2] = 0.25 * s
        q[3] = (R[1, 2] + R[2, 1]) / s
    else:
        s = math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2.0
        q[0] = (R[1, 0] - R[0, 1]) / s
        q[1] = (R[0, 2] + R[2, 0]) / s
        q[2] = (R[1, 2] + R[2, 1]) / s
        q[3] = 0.25 * s
    if q[0] < 0.0:
        q = -q
    return quat_normalize(q)


@njit(**JIT)
def rotation_between(a, b):
    """Smallest rotation (matrix) taking unit ``a`` to unit ``b``; anti-parallel: ValueError."""
    c = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    if not 1.0 + c > 1e-12:
        raise ValueError("rotation between anti-parallel vectors is not unique")
    v = np.empty(3)
    v[0] = a[1] * b[2] - a[2] * b[1]
    v[1] = a[2] * b[0] - a[0] * b[2]
    v[2] = a[0] * b[1] - a[1] * b[0]
    V = skew(v)
    return np.eye(3) + V + (V @ V) / (1.0 + c)


def quat_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (m, 3, 3) of unit quaternions (m, 4) (w, x, y, z), in numpy (batched: for
    Python callers; compiled code has :func:`quat_matrix_into`)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)
