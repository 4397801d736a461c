"""The compact chain representation of an inextensible Cosserat rod (Zhao et al., Sec. 2.1).

Generalized coordinates ``s`` stored as an ``(n, 3)`` array: ``s[0] = p_c`` (root vertex [m]) and
``s[1 + i] = w_i`` (axis-angle of segment ``i`` [rad], ``i = 0 .. n-2``). The transform
``x = T(s)`` (Eq. 9) gives the vertex positions ``p`` (n, 3) and the segment quaternions
``q`` (n-1, 4) stored (w, x, y, z):

    q_i     = B(w_i) (x) qref_i                                  (Eq. 4/5, re-centred)
    p_0     = p_c,   p_{i+1} = p_i + l_i d(q_i)                   (Eq. 7)

``d(q)`` is the third column of the rotation of ``q`` (the segment-aligned director, as in
CoRdE). ``qref_i`` is a per-segment reference rotation: every time step the solved rotation is
folded into it and ``w`` is reset to zero ("re-centering"), so ``|w|`` stays near the size of one
step's rotation and never approaches the singularity of the exponential map at ``|w| = 2 pi``.
The Jacobian ``J = dx/ds`` (Eq. 16-18) is kept as two per-segment block lists:

    Dj[i] = d p_{i+1} / d w_i = -l_i [d(q_i)]_x J_l(w_i)     (3x3, J_l the left SO(3) Jacobian)
    Qj[i] = d q_i / d w_i     = R(qref_i) dB/dw(w_i)          (4x3, R(r) right multiplication by r)

so ``J v`` is a prefix sum of ``Dj[i] v_i`` (plus ``v_c``) and ``J^T y`` a suffix sum (Eq. 18/19).
Small angles (|w| < 1e-4) use Taylor series (Eq. 5 is their leading term).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)
from ..aot import kernel  # noqa: E402
from ..geometry import rotations as _rotations  # noqa: E402

# called from Python here: the ahead-of-time entry where built (rodlab.aot), else the dispatcher
_matrix_to_quat = kernel(_rotations.matrix_to_quat)

_SMALL2 = 1e-8  # |w|^2 below which the Taylor series are used (|w| < 1e-4)


@njit(inline="always", **JIT)
def _half_angle_terms(t2):
    """cos(t/2), f = sin(t/2)/t and g = f'(t)/t from t^2 (series near zero)."""
    if t2 < _SMALL2:
        c = 1.0 - t2 / 8.0 + t2 * t2 / 384.0
        f = 0.5 - t2 / 48.0 + t2 * t2 / 3840.0
        g = -1.0 / 24.0 + t2 / 960.0
    else:
        t = math.sqrt(t2)
        c = math.cos(0.5 * t)
        sh = math.sin(0.5 * t)
        f = sh / t
        g = (0.5 * t * c - sh) / (t2 * t)
    return c, f, g


@njit(inline="always", **JIT)
def _all_angle_terms(t2):
    """cos(t/2), sin(t/2)/t, its derivative over t, (1 - cos t)/t^2 and (t - sin t)/t^3 with one
    cos/sin pair (double-angle identities); series near zero."""
    if t2 < _SMALL2:
        c = 1.0 - t2 / 8.0 + t2 * t2 / 384.0
        f = 0.5 - t2 / 48.0 + t2 * t2 / 3840.0
        g = -1.0 / 24.0 + t2 / 960.0
        bl = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
        cl = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    else:
        t = math.sqrt(t2)
        c = math.cos(0.5 * t)
        sh = math.sin(0.5 * t)
        f = sh / t
        g = (0.5 * t * c - sh) / (t2 * t)
        bl = 2.0 * sh * sh / t2
        cl = (t - 2.0 * sh * c) / (t2 * t)
    return c, f, g, bl, cl


@njit(inline="always", **JIT)
def _left_jacobian_terms(t2):
    """(1 - cos t)/t^2 and (t - sin t)/t^3 (series near zero)."""
    if t2 < _SMALL2:
        b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
        c = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    else:
        t = math.sqrt(t2)
        b = (1.0 - math.cos(t)) / t2
        c = (t - math.sin(t)) / (t2 * t)
    return b, c


@njit(**JIT)
def chain_forward(s, lengths, qref, p, q, Dj, Qj, with_jacobian):
    """x = T(s) (Zhao et al., Eq. 9) and, if ``with_jacobian``, the Jacobian blocks (Eq. 17/18).

    s (n, 3); lengths (m,) [m]; qref (m, 4) unit quaternions; outputs p (n, 3), q (m, 4),
    Dj (m, 3, 3), Qj (m, 4, 3). One pass, O(n), no allocation.
    """
    m = lengths.shape[0]
    dB = np.empty((4, 3))
    Jl = np.empty((3, 3))
    p[0, 0] = s[0, 0]
    p[0, 1] = s[0, 1]
    p[0, 2] = s[0, 2]
    for i in range(m):
        w0 = s[i + 1, 0]
        w1 = s[i + 1, 1]
        w2 = s[i + 1, 2]
        t2 = w0 * w0 + w1 * w1 + w2 * w2
        c, f, g, bl, cl = _all_angle_terms(t2)
        # B(w) = (c, f w)   (Eq. 4; Eq. 5 is the small-angle limit)
        b0 = c
        b1 = f * w0
        b2 = f * w1
        b3 = f * w2
        r0 = qref[i, 0]
        r1 = qref[i, 1]
        r2 = qref[i, 2]
        r3 = qref[i, 3]
        # q = B (x) r
        q0 = b0 * r0 - b1 * r1 - b2 * r2 - b3 * r3
        q1 = b0 * r1 + b1 * r0 + b2 * r3 - b3 * r2
        q2 = b0 * r2 - b1 * r3 + b2 * r0 + b3 * r1
        q3 = b0 * r3 + b1 * r2 - b2 * r1 + b3 * r0
        q[i, 0] = q0
        q[i, 1] = q1
        q[i, 2] = q2
        q[i, 3] = q3
        # director d(q) = R(q) e3
        d0 = 2.0 * (q1 * q3 + q0 * q2)
        d1 = 2.0 * (q2 * q3 - q0 * q1)
        d2 = 1.0 - 2.0 * (q1 * q1 + q2 * q2)
        li = lengths[i]
        p[i + 1, 0] = p[i, 0] + li * d0
        p[i + 1, 1] = p[i, 1] + li * d1
        p[i + 1, 2] = p[i, 2] + li * d2
        if with_jacobian:
            # dB/dw: row 0 = -(f/2) w^T, rows 1..3 = f I + g w w^T
            dB[0, 0] = -0.5 * f * w0
            dB[0, 1] = -0.5 * f * w1
            dB[0, 2] = -0.5 * f * w2
            for a in range(3):
                wa = s[i + 1, a]
                for bb in range(3):
                    dB[1 + a, bb] = g * wa * s[i + 1, bb]
                dB[1 + a, a] += f
            # Qj = Rr(r) dB with Rr the right-multiplication matrix of r
            for bb in range(3):
                x0 = dB[0, bb]
                x1 = dB[1, bb]
                x2 = dB[2, bb]
                x3 = dB[3, bb]
                Qj[i, 0, bb] = r0 * x0 - r1 * x1 - r2 * x2 - r3 * x3
                Qj[i, 1, bb] = r1 * x0 + r0 * x1 + r3 * x2 - r2 * x3
                Qj[i, 2, bb] = r2 * x0 - r3 * x1 + r0 * x2 + r1 * x3
                Qj[i, 3, bb] = r3 * x0 + r2 * x1 - r1 * x2 + r0 * x3
            # J_l(w) = I + bl [w]x + cl [w]x^2 ;  Dj = -l [d]x J_l
            # [w]x^2 = w w^T - t2 I
            Jl[0, 0] = 1.0 + cl * (w0 * w0 - t2)
            Jl[1, 1] = 1.0 + cl * (w1 * w1 - t2)
            Jl[2, 2] = 1.0 + cl * (w2 * w2 - t2)
            Jl[0, 1] = -bl * w2 + cl * w0 * w1
            Jl[1, 0] = bl * w2 + cl * w0 * w1
            Jl[0, 2] = bl * w1 + cl * w0 * w2
            Jl[2, 0] = -bl * w1 + cl * w0 * w2
            Jl[1, 2] = -bl * w0 + cl * w1 * w2
            Jl[2, 1] = bl * w0 + cl * w1 * w2
            for bb in range(3):
                j0 = Jl[0, bb]
                j1 = Jl[1, bb]
                j2 = Jl[2, bb]
                # -l * (d x col)
                Dj[i, 0, bb] = -li * (d1 * j2 - d2 * j1)
                Dj[i, 1, bb] = -li * (d2 * j0 - d0 * j2)
                Dj[i, 2, bb] = -li * (d0 * j1 - d1 * j0)


@njit(**JIT)
def jac_mul(Dj, Qj, v, out_p, out_q):
    """``[out_p; out_q] = J v`` (Eq. 18): a prefix sum for positions, block-diagonal for quaternions. O(n)."""
    m = Dj.shape[0]
    out_p[0, 0] = v[0, 0]
    out_p[0, 1] = v[0, 1]
    out_p[0, 2] = v[0, 2]
    for i in range(m):
        a0 = v[i + 1, 0]
        a1 = v[i + 1, 1]
        a2 = v[i + 1, 2]
        for r in range(3):
            out_p[i + 1, r] = out_p[i, r] + Dj[i, r, 0] * a0 + Dj[i, r, 1] * a1 + Dj[i, r, 2] * a2
        for r in range(4):
            out_q[i, r] = Qj[i, r, 0] * a0 + Qj[i, r, 1] * a1 + Qj[i, r, 2] * a2


@njit(**JIT)
def jac_t_mul(Dj, Qj, yp, yq, out):
    """``out = J^T [yp; yq]`` (Eq. 18/19): a suffix sum of ``yp``. O(n)."""
    m = Dj.shape[0]
    s0 = yp[m, 0]
    s1 = yp[m, 1]
    s2 = yp[m, 2]
    for i in range(m - 1, -1, -1):
        # s = sum_{k > i} yp_k
        for c in range(3):
            out[i + 1, c] = (
                Dj[i, 0, c] * s0 + Dj[i, 1, c] * s1 + Dj[i, 2, c] * s2
                + Qj[i, 0, c] * yq[i, 0] + Qj[i, 1, c] * yq[i, 1] + Qj[i, 2, c] * yq[i, 2] + Qj[i, 3, c] * yq[i, 3]
            )
        s0 += yp[i, 0]
        s1 += yp[i, 1]
        s2 += yp[i, 2]
    out[0, 0] = s0
    out[0, 1] = s1
    out[0, 2] = s2


@njit(**JIT)
def recenter(q, qref, s):
    """Fold the solved rotations into the reference (``qref_i <- q_i``, renormalised, sign kept
    continuous) and reset ``w_i = 0``: the axis-angle never nears ``|w| = 2 pi``."""
    m = q.shape[0]
    for i in range(m):
        nrm = math.sqrt(q[i, 0] ** 2 + q[i, 1] ** 2 + q[i, 2] ** 2 + q[i, 3] ** 2)
        for c in range(4):
            qref[i, c] = q[i, c] / nrm
            q[i, c] = qref[i, c]
        s[i + 1, 0] = 0.0
        s[i + 1, 1] = 0.0
        s[i + 1, 2] = 0.0


def directors(q: np.ndarray) -> np.ndarray:
    """``d(q_i)``: third column of each quaternion's rotation matrix, (m, 3)."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=1)


def frames_from_polyline(p: np.ndarray, d1=None) -> np.ndarray:
    """Unit quaternions (m, 4) whose third axis is along each segment of polyline ``p`` and
    whose first axis is ``d1`` (projected; default a Bishop-like parallel transport from a
    perpendicular of the first segment). Neighbouring quaternions are sign-aligned."""
    from ..geometry.curves import any_perpendicular

    p = np.asarray(p, dtype=float)
    e = np.diff(p, axis=0)
    t = e / np.linalg.norm(e, axis=1)[:, None]
    m = len(t)
    out = np.empty((m, 4))
    u = any_perpendicular(t[0]) if d1 is None else np.asarray(d1[0], dtype=float)
    for i in range(m):
        if d1 is not None:
            u = np.asarray(d1[i], dtype=float)
        elif i > 0:
            # parallel transport u from t[i-1] to t[i]
            b = np.cross(t[i - 1], t[i])
            sb = np.linalg.norm(b)
            if sb > 1e-14:
                ax = b / sb
                ang = math.atan2(sb, float(np.dot(t[i - 1], t[i])))
                u = u * math.cos(ang) + np.cross(ax, u) * math.sin(ang) + ax * np.dot(ax, u) * (1 - math.cos(ang))
        u = u - np.dot(u, t[i]) * t[i]
        u = u / np.linalg.norm(u)
        v = np.cross(t[i], u)
        R = np.stack([u, v, t[i]], axis=1)
        qi = np.asarray(_matrix_to_quat(np.ascontiguousarray(R)))
        if i > 0 and np.dot(qi, out[i - 1]) < 0:
            qi = -qi
        out[i] = qi
    return out


class Chain:
    """Convenience wrapper (tests, scenes): the transform for fixed ``lengths`` and ``qref``."""

    def __init__(self, lengths, qref):
        self.lengths = np.ascontiguousarray(lengths, dtype=float)
        self.qref = np.ascontiguousarray(qref, dtype=float)
        self.m = len(self.lengths)
        if self.qref.shape != (self.m, 4):
            raise ValueError(f"qref must have shape ({self.m}, 4) (got {self.qref.shape})")

    def transform(self, s):
        """``(p, q, Dj, Qj)`` at ``s`` (shape (m+1, 3))."""
        s = np.ascontiguousarray(s, dtype=float).reshape(self.m + 1, 3)
        p = np.empty((self.m + 1, 3))
        q = np.empty((self.m, 4))
        Dj = np.empty((self.m, 3, 3))
        Qj = np.empty((self.m, 4, 3))
        chain_forward(s, self.lengths, self.qref, p, q, Dj, Qj, True)
        return p, q, Dj, Qj

    def x_of(self, s) -> np.ndarray:
        """Flat ``x = [p; q]`` (Eq. 9)."""
        p, q, _, _ = self.transform(s)
        return np.concatenate([p.ravel(), q.ravel()])

    def jacobian_dense(self, s) -> np.ndarray:
        """Dense ``J = dx/ds`` (for tests and the direct baseline), shape (3n + 4m, 3n)."""
        _, _, Dj, Qj = self.transform(s)
        m = self.m
        n = m + 1
        J = np.zeros((3 * n + 4 * m, 3 * n))
        for j in range(n):
            J[3 * j:3 * j + 3, 0:3] = np.eye(3)
            for i in range(j):
                J[3 * j:3 * j + 3, 3 * (i + 1):3 * (i + 2)] = Dj[i]
        for i in range(m):
            J[3 * n + 4 * i:3 * n + 4 * i + 4, 3 * (i + 1):3 * (i + 2)] = Qj[i]
        return J
