"""Implicit-DER elastic energies on interleaved DOFs, with gradients and banded Hessians.

Generalized coordinates ``q = [x_0, theta_0, x_1, theta_1, ..., x_{n-1}]`` (``4n - 1`` values):
vertex ``i`` at ``q[4i:4i+3]``, the material angle of edge ``j`` at ``q[4j+3]``. Every energy
term touches at most 11 consecutive unknowns, so every Hessian is banded with half bandwidth 10
(Bergou et al. 2010; Takahashi and Batty, Sec. III).

Reference frames are **time-parallel**: edge ``j`` carries a reference director ``a1[j]``
(orthogonal to the current tangent ``t[j]``, ``a2 = t x a1``), obtained by parallel-transporting
last step's director from last step's tangent to the current one; the **reference twist**
``mref[k]`` of joint ``k`` (vertex ``k + 1``) is the signed angle about ``t[k+1]`` from the
space-parallel transport of ``a1[k]`` to ``a1[k+1]``. Material frame: ``m1 = cos(theta) a1 +
sin(theta) a2``, ``m2 = -sin(theta) a1 + cos(theta) a2``.

Every term is the DER stencil of :mod:`rodlab.geometry.der_joint` (the one definition of the
energies, their gradients and Hessian blocks, shared with the explicit stepper and the sag-free
derivatives), here with isotropic per-vertex stiffnesses on interleaved unknowns (SI units):

* stretching, edge ``j``: ``E = 1/2 ks (|e|/lbar - 1)^2 lbar`` (Takahashi and Batty Eq. 2 with
  ``ks_j = k s_j``), ``ks`` [N];
* bending, interior vertex ``i`` (the joint of edges ``i - 1``, ``i``): 4D curvature ``w`` (4,)
  (Bergou et al. 2008 Eq. 2), ``E = kbend_i / (2 l_i) |w - wbar_i|^2`` (Takahashi and Batty Eq. 5),
  ``l_i = lbar_{i-1} + lbar_i`` (twice the Voronoi length, fixed), ``kbend`` [N m^2];
  the 2D variant (``curv2d``, a different discretization: one frame per vertex, Takahashi and Batty
  Fig. 2) averages the two frames first: ``w2 = (w^{i-1} + w^i) / 2``,
  ``E = kbend_i / l_i |w2 - wbar2|^2`` (equal to the 4D energy when both frames agree), i.e. the
  stencil's energy and rows with the averaged rows and weight ``2 kbend``;
* twisting, interior vertex ``i``: ``m_i = theta_i - theta_{i-1} + mref_i``,
  ``E = ktwist_i (m_i - mbar_i)^2 / l_i`` (Bergou et al. 2008 Eq. 5), ``ktwist`` [N m^2].

Hessians: stretching exact, projected to SPD by clamping ``1 - lbar/|e|`` at zero; bending and
twisting Gauss-Newton (``kbend/l J^T J`` and ``2 ktwist/l grad m grad m^T``), as Takahashi and
Batty use for forward simulation (Sec. VI). Checked by central finite differences in
tests/test_der_implicit_energies.py (whole rod) and tests/test_der_joint.py (one joint).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)
from ..geometry.curves import reference_twist3, transport3  # noqa: E402
from ..geometry.der_joint import (ROW_CURVATURE, ROW_RESIDUAL, ROW_WEIGHT, ROWS_LEN, edge_stretch_energy,  # noqa: E402
                                  edge_stretch_hessian, edge_stretch_tension, joint_curvature_binormal, joint_energy,
                                  joint_gn_hessian_add, joint_gn_hessian_add4d, joint_material_curvature, joint_rows,
                                  joint_rows_gradient)
from .joint_hessian import joint_gn_hessian_add4d_regs

BANDWIDTH = 10

# flat per-vertex workspace of der_elastic: the joint stencil's rows and Gram matrix
# (rodlab.geometry.der_joint, ROWS_LEN values), then the energy of ``want = 0``
_C = ROW_WEIGHT
_RES = ROW_RESIDUAL
_W = ROW_CURVATURE
_WS = ROWS_LEN
_E0 = ROWS_LEN  # der_elastic_ws: the energy summed as ``want = 0`` sums it (stretching, then bending + twisting)
_WS_E = ROWS_LEN + 1  # workspace length of der_elastic_ws
WANT_DERIVATIVES = 3  # der_elastic_ws's ``want``: gradient and Hessian without the energy (4D and averaged 2D)


def ndof(nv: int) -> int:
    return 4 * nv - 1


def pack_dofs(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Interleave vertices (n, 3) and edge angles (n-1,) into ``q`` (4n-1,)."""
    x = np.asarray(x, dtype=float)
    nv = x.shape[0]
    q = np.empty(4 * nv - 1)
    q[0::4] = x[:, 0]
    q[1::4] = x[:, 1]
    q[2::4] = x[:, 2]
    q[3::4] = np.asarray(theta, dtype=float)
    return q


def unpack_dofs(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x (n,3), theta (n-1,))`` views-copies of interleaved ``q``."""
    nv = (q.shape[0] + 1) // 4
    x = np.empty((nv, 3))
    x[:, 0] = q[0::4]
    x[:, 1] = q[1::4]
    x[:, 2] = q[2::4]
    return x, q[3::4].copy()


@njit(**JIT)
def edge_geometry(q, tan, elen):
    """Unit tangents and lengths of every edge of interleaved ``q``; a zero-length edge raises."""
    ne = tan.shape[0]
    for j in range(ne):
        e0 = q[4 * j + 4] - q[4 * j]
        e1 = q[4 * j + 5] - q[4 * j + 1]
        e2 = q[4 * j + 6] - q[4 * j + 2]
        ln = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        if not ln > 1e-300:
            raise ValueError("zero-length edge: tangent undefined")
        elen[j] = ln
        tan[j, 0] = e0 / ln
        tan[j, 1] = e1 / ln
        tan[j, 2] = e2 / ln


_transport = transport3  # parallel transport on scalars (rodlab.geometry.curves: the one copy)


@njit(**JIT)
def update_frames(q, tan_old, a1_old, mref_old, tan, elen, a1, mref):
    """Time-parallel reference frames and reference twist at configuration ``q``.

    ``a1[j]`` = parallel transport of ``a1_old[j]`` from ``tan_old[j]`` to the current tangent
    (re-orthonormalised); ``mref[k]`` = signed angle about ``t[k+1]`` from the transport of
    ``a1[k]`` along the rod to ``a1[k+1]``, unwrapped against ``mref_old`` (no 2 pi jumps).
    Anti-parallel old/new tangents (undefined transport) raise ValueError. Same operations as
    :func:`rodlab.geometry.curves.time_parallel_update` and ``reference_twist``, written with
    scalars so the loop allocates nothing.
    """
    edge_geometry(q, tan, elen)
    for j in range(tan.shape[0]):
        tx, ty, tz = tan[j, 0], tan[j, 1], tan[j, 2]
        ux, uy, uz = _transport(tan_old[j, 0], tan_old[j, 1], tan_old[j, 2], tx, ty, tz, a1_old[j, 0], a1_old[j, 1], a1_old[j, 2])
        d = ux * tx + uy * ty + uz * tz
        ux -= d * tx
        uy -= d * ty
        uz -= d * tz
        nrm = math.sqrt(ux * ux + uy * uy + uz * uz)
        a1[j, 0] = ux / nrm
        a1[j, 1] = uy / nrm
        a1[j, 2] = uz / nrm
    for k in range(mref.shape[0]):
        mref[k] = reference_twist3(tan[k, 0], tan[k, 1], tan[k, 2], tan[k + 1, 0], tan[k + 1, 1], tan[k + 1, 2],
                                   a1[k, 0], a1[k, 1], a1[k, 2], a1[k + 1, 0], a1[k + 1, 1], a1[k + 1, 2], mref_old[k])


@njit(**JIT)
def material_frames_q(q, tan, a1, m1, m2):
    for j in range(tan.shape[0]):
        th = q[4 * j + 3]
        c = math.cos(th)
        s = math.sin(th)
        t0, t1, t2 = tan[j, 0], tan[j, 1], tan[j, 2]
        u0, u1, u2 = a1[j, 0], a1[j, 1], a1[j, 2]
        v0 = t1 * u2 - t2 * u1
        v1 = t2 * u0 - t0 * u2
        v2 = t0 * u1 - t1 * u0
        m1[j, 0] = c * u0 + s * v0
        m1[j, 1] = c * u1 + s * v1
        m1[j, 2] = c * u2 + s * v2
        m2[j, 0] = -s * u0 + c * v0
        m2[j, 1] = -s * u1 + c * v1
        m2[j, 2] = -s * u2 + c * v2


@njit(inline="always", **JIT)
def vertex_jacobians(q, tan, elen, m1, m2, mref, i, w, Jw, gm):
    """4D material curvature ``w`` (4,), its Jacobian ``Jw`` (4, 11) and the twist gradient ``gm`` (11,)
    of interior vertex ``i`` over the local unknowns ``q[4(i-1) : 4(i-1) + 11]``. Returns the twist ``m_i``
    (without the rest twist)."""
    # the compact rows [u, t0, v, t1] of joint_rows stand for [-u, t0, u - v, t1, v]
    R = np.empty(_W + 4)
    mt = _vertex_rows(q, tan, elen, m1, m2, mref, i, R)
    for r in range(5):
        o = 8 * r
        for c in range(3):
            u = R[o + c]
            v = R[o + 4 + c]
            if r < 4:
                Jw[r, c] = -u
                Jw[r, 4 + c] = u - v
                Jw[r, 8 + c] = v
            else:
                gm[c] = -u
                gm[4 + c] = u - v
                gm[8 + c] = v
        if r < 4:
            Jw[r, 3] = R[o + 3]
            Jw[r, 7] = R[o + 7]
            w[r] = R[_W + r]
        else:
            gm[3] = R[o + 3]
            gm[7] = R[o + 7]
    return mt


@njit(inline="always", **JIT)
def _vertex_rows(q, tan, elen, m1, m2, mref, i, R):
    """Compact Jacobian rows of interior vertex ``i`` (the joint of edges ``i - 1``, ``i``): rows 0-3 the
    4D curvature ``w``, row 4 the twist, over the 11 local unknowns ``(x_{i-1}, theta_{i-1}, x_i, theta_i,
    x_{i+1})`` (:func:`rodlab.geometry.der_joint.joint_rows`); ``w`` into ``R[_W:_W + 4]``. Returns the
    twist ``m_i`` (without the rest twist)."""
    joint_rows(tan, elen, m1, m2, i - 1, i, R)
    return q[4 * i + 3] - q[4 * i - 1] + mref[i - 1]


@njit(**JIT)
def _add_gn_hessian_rows(band, base, R):
    """:func:`rodlab.geometry.der_joint.joint_gn_hessian_add` over five rows, as a call (tests)."""
    joint_gn_hessian_add(band, base, R, 5)


@njit(**JIT)
def _add_gn_hessian_rows4d(band, base, R):
    """:func:`rodlab.geometry.der_joint.joint_gn_hessian_add4d` as a call (tests)."""
    joint_gn_hessian_add4d(band, base, R)


@njit(inline="always", **JIT)
def _bend_twist_energy(q, tan, elen, m1, m2, mref, kbend, wbar, ktwist, mbar, lvor, curv2d):
    """Bending + twisting energy alone (``der_elastic`` with ``want = 0``): the curvature binormal,
    the four ``w`` entries and the twist of each interior vertex, without the Jacobian rows the
    derivatives need (same expressions as :func:`_vertex_rows`, so the same round-off). The line
    search of every Newton step calls this: about half the cost of the rows."""
    nv = tan.shape[0] + 1
    E = 0.0
    for i in range(1, nv - 1):
        a = i - 1
        b = i
        kx, ky, kz, _ = joint_curvature_binormal(tan[a, 0], tan[a, 1], tan[a, 2], tan[b, 0], tan[b, 1], tan[b, 2])
        w0, w1, w2, w3 = joint_material_curvature(kx, ky, kz, m1, m2, a, b)
        mt = q[4 * i + 3] - q[4 * i - 1] + mref[a] - mbar[i]
        kbi = kbend[i]
        if curv2d:
            kb2 = 2.0 * kbi
            E += joint_energy(0.5 * (w0 + w2), 0.5 * (w1 + w3), 0.0, 0.0, 0.5 * (wbar[i, 0] + wbar[i, 2]),
                              0.5 * (wbar[i, 1] + wbar[i, 3]), 0.0, 0.0, kb2, kb2, 0.0, 0.0, mt, ktwist[i], lvor[i])
        else:
            E += joint_energy(w0, w1, w2, w3, wbar[i, 0], wbar[i, 1], wbar[i, 2], wbar[i, 3], kbi, kbi, kbi, kbi,
                              mt, ktwist[i], lvor[i])
    return E


@njit(**JIT)
def der_elastic(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, curv2d, want, grad, band):
    """Elastic energy of the rod at ``q`` with frames ``a1``/``mref`` (see :func:`update_frames`).

    ``want`` 0: energy only; 1: also add the gradient into ``grad`` (4n-1,); 2: also add the SPD
    Hessian (projected stretching + Gauss-Newton bending/twisting) into the lower band ``band``
    (4n-1, 11). ``grad`` and ``band`` are *accumulated into* (the caller zeroes them).
    ``curv2d`` selects the averaged-frame 2D curvature instead of the 4D one.
    Per-edge: ``ks`` [N], ``lbar`` [m]; per-vertex (length n, ends unused): ``kbend`` [N m^2],
    ``wbar`` (n, 4), ``ktwist`` [N m^2], ``mbar`` [rad], ``lvor`` = ``lbar_{i-1} + lbar_i`` [m].
    """
    ne = tan.shape[0]
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    R = np.empty(_WS_E)
    return der_elastic_ws(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, curv2d, want, grad, band,
                          m1, m2, R)


@njit(**JIT)
def der_elastic_ws(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, curv2d, want, grad, band, m1, m2,
                   R):
    """:func:`der_elastic` on the caller's workspace (no allocation): ``m1``, ``m2`` (n-1, 3), ``R``
    (>= ``_WS_E``). Also leaves in ``R[_E0]`` the energy summed in the order of ``want = 0``
    (stretching, plus the bending and twisting summed apart), which the returned value of ``want``
    1 / 2 (one running sum) may differ from in the last bits: a caller comparing energies of both
    kinds (a line search on the result of an assembly) takes that one. ``want = WANT_DERIVATIVES``:
    the gradient and Hessian of ``want = 2`` (bitwise) without the energy (returns 0.0): for a
    Newton step that takes the full step without a line search, where no energy is compared."""
    ne = tan.shape[0]
    nv = ne + 1
    E = 0.0
    energy = want != WANT_DERIVATIVES
    for j in range(ne):
        ln = elen[j]
        lb = lbar[j]
        k = ks[j]
        if energy:
            E += edge_stretch_energy(k, ln, lb)
        if want >= 1:
            f = edge_stretch_tension(k, ln, lb)
            for c in range(3):
                gc = f * tan[j, c]
                grad[4 * j + c] -= gc
                grad[4 * j + 4 + c] += gc
        if want >= 2:
            h_tt, h_id = edge_stretch_hessian(k, ln, lb)
            for r in range(3):
                for c in range(3):
                    h = h_tt * tan[j, r] * tan[j, c]
                    if r == c:
                        h += h_id
                    if r >= c:
                        band[4 * j + r, r - c] += h
                        band[4 * j + 4 + r, r - c] += h
                    band[4 * j + 4 + r, 4 + r - c] -= h
    if nv < 3:
        R[_E0] = E
        return E
    material_frames_q(q, tan, a1, m1, m2)
    # one flat workspace (compact rows, weights, residuals, Gram matrix, curvature): with constant
    # offsets into a single buffer the compiler can tell the pieces apart (separate arrays may alias)
    if want == 0:
        E = E + _bend_twist_energy(q, tan, elen, m1, m2, mref, kbend, wbar, ktwist, mbar, lvor, curv2d)
        R[_E0] = E
        return E
    Ebt = 0.0
    Es = E
    for i in range(1, nv - 1):
        mt = _vertex_rows(q, tan, elen, m1, m2, mref, i, R)
        base = 4 * (i - 1)
        li = lvor[i]
        inv_l = 1.0 / li
        twist = mt - mbar[i]
        kbi = kbend[i]
        if curv2d:
            # averaged frames: rows (w^{i-1} + w^i)/2, weight 2 kbend; the twist row moves up to row 2
            kb2 = 2.0 * kbi
            ej = 0.0
            if energy:
                ej = joint_energy(0.5 * (R[_W] + R[_W + 2]), 0.5 * (R[_W + 1] + R[_W + 3]), 0.0, 0.0,
                                  0.5 * (wbar[i, 0] + wbar[i, 2]), 0.5 * (wbar[i, 1] + wbar[i, 3]), 0.0, 0.0,
                                  kb2, kb2, 0.0, 0.0, twist, ktwist[i], li)
            for r in range(2):
                R[_RES + r] = 0.5 * (R[_W + r] + R[_W + r + 2]) - 0.5 * (wbar[i, r] + wbar[i, r + 2])
                for c in range(8):
                    R[8 * r + c] = 0.5 * (R[8 * r + c] + R[8 * (r + 2) + c])
                R[_C + r] = inv_l * kb2
            for c in range(8):
                R[8 * 2 + c] = R[8 * 4 + c]
            tw = 2
        else:
            ej = 0.0
            if energy:
                ej = joint_energy(R[_W], R[_W + 1], R[_W + 2], R[_W + 3], wbar[i, 0], wbar[i, 1], wbar[i, 2],
                                  wbar[i, 3], kbi, kbi, kbi, kbi, twist, ktwist[i], li)
            cb = inv_l * kbi
            for r in range(4):
                R[_RES + r] = R[_W + r] - wbar[i, r]
                R[_C + r] = cb
            tw = 4
        # weights C_r and residuals of the rows: C_r res_r = dE/d(row r), joint_stresses' products
        R[_RES + tw] = twist
        R[_C + tw] = 2.0 * ktwist[i] * inv_l
        E += ej
        Ebt += ej
        if want >= 1:
            joint_rows_gradient(grad, base, R, tw + 1)
        if want >= 2:
            if curv2d:
                joint_gn_hessian_add(band, base, R, 3)
            else:
                joint_gn_hessian_add4d_regs(band, base, R)
    R[_E0] = Es + Ebt
    return E


@njit(**JIT)
def vertex_jacobians_call(q, tan, elen, m1, m2, mref, i, w, Jw, gm):
    """:func:`vertex_jacobians` as an ordinary (not inlined) call, for the non-critical users, so the
    large body is compiled once more instead of once per caller."""
    return vertex_jacobians(q, tan, elen, m1, m2, mref, i, w, Jw, gm)


@njit(**JIT)
def material_curvature_all(q, tan, elen, a1, mref, w_out, m_out):
    """4D material curvature (n, 4) and twist ``m_i`` (n,) of every interior vertex (ends left 0)."""
    ne = tan.shape[0]
    nv = ne + 1
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    material_frames_q(q, tan, a1, m1, m2)
    w = np.empty(4)
    Jw = np.empty((4, 11))
    gm = np.empty(11)
    w_out[:, :] = 0.0
    m_out[:] = 0.0
    for i in range(1, nv - 1):
        m_out[i] = vertex_jacobians_call(q, tan, elen, m1, m2, mref, i, w, Jw, gm)
        for r in range(4):
            w_out[i, r] = w[r]
