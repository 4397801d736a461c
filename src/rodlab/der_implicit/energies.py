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

Energies (per-edge / per-vertex arrays, SI units):

* stretching, edge ``j``: ``E = ks_j / (2 lbar_j) (|e_j| - lbar_j)^2`` (= ``1/2 ks (|e|/lbar - 1)^2 lbar``,
  Takahashi and Batty Eq. 2 with ``ks_j = k s_j``), ``ks`` [N];
* bending, interior vertex ``i`` (4D curvature, Bergou et al. 2008 Eq. 2 and Sec. 4.2.2):
  ``w^j_i = (kb_i . m2^j, -kb_i . m1^j)`` for ``j = i - 1, i`` stacked into ``w`` (4,),
  ``E = kbend_i / (2 l_i) |w - wbar_i|^2`` (Takahashi and Batty Eq. 5), ``l_i = lbar_{i-1} + lbar_i``
  (twice the Voronoi length, fixed), ``kbend`` [N m^2];
  the 2D variant averages the two frames first: ``w2 = (w^{i-1} + w^i) / 2``,
  ``E = kbend_i / l_i |w2 - wbar2|^2`` (equal to the 4D energy when both frames agree);
* twisting, interior vertex ``i``: ``m_i = theta_i - theta_{i-1} + mref_i``,
  ``E = ktwist_i (m_i - mbar_i)^2 / l_i`` (Bergou et al. 2008 Eq. 5), ``ktwist`` [N m^2].

Derivatives (checked by central finite differences in tests/test_der_implicit_energies.py):

* ``kb = 2 e0 x e1 / (|e0||e1| + e0.e1)``; for a row vector ``r``:
  ``d(r.kb)/de0 = (-2 r x e1 - (r.kb)(|e1| t0 + e1)) / D``, ``d(r.kb)/de1 = (2 r x e0 - (r.kb)(|e0| t1 + e0)) / D``,
  ``D = |e0||e1| + e0.e1``.
* Time-parallel frames move with the tangent without rotating about it, ``da1 = -(a1.dt) t``; since
  ``kb`` is orthogonal to both tangents, ``kb . dm = 0``: ``w`` depends on the positions through
  ``kb`` only, and on the angles through ``dw^j/dtheta_j = (w^j_2, -w^j_1)``.
* ``dmref_i/de0 = kb_i / (2|e0|)``, ``dmref_i/de1 = kb_i / (2|e1|)`` (the holonomy gradient,
  Bergou et al. 2008 Sec. 7.1), ``dm_i/dtheta_{i-1} = -1``, ``dm_i/dtheta_i = 1``.

Hessians: stretching exact, projected to SPD by clamping ``1 - lbar/|e|`` at zero; bending and
twisting Gauss-Newton (``kbend/l J^T J`` and ``2 ktwist/l grad m grad m^T``), as Takahashi and
Batty use for forward simulation (Sec. VI).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)
from ..geometry.curves import reference_twist3, transport3  # noqa: E402

BANDWIDTH = 10

# flat per-vertex workspace of der_elastic: compact rows R (5 x 8) at 0, weights C at _C, residuals at
# _RES, Gram matrix S (8 x 8) at _S, curvature w (4) at _W, weighted rows C R (5 x 8) at _CR
_C = 40
_RES = 45
_S = 50
_W = 114
_CR = 118
_WS = 158
_E0 = 158  # der_elastic_ws: the energy summed as ``want = 0`` sums it (stretching, then bending + twisting)
_WS_E = 159  # workspace length of der_elastic_ws


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
    # the compact rows [u, t0, v, t1] of _vertex_rows stand for [-u, t0, u - v, t1, v]
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
def _curvature_binormal(tan, elen, a, b):
    """Edges ``e0 = l0 t_a``, ``e1 = l1 t_b`` of a joint, ``1 / D`` with ``D = |e0||e1| + e0.e1``
    and the curvature binormal ``kb = 2 e0 x e1 / D`` (module docstring); anti-parallel edges raise.
    Returns ``(l0, l1, e0 (3), e1 (3), 1/D, kb (3))`` as scalars."""
    l0 = elen[a]
    l1 = elen[b]
    ex0 = tan[a, 0] * l0
    ey0 = tan[a, 1] * l0
    ez0 = tan[a, 2] * l0
    ex1 = tan[b, 0] * l1
    ey1 = tan[b, 1] * l1
    ez1 = tan[b, 2] * l1
    D = l0 * l1 + ex0 * ex1 + ey0 * ey1 + ez0 * ez1
    if not D > 1e-12 * l0 * l1:
        raise ValueError("consecutive edges are anti-parallel: curvature binormal undefined")
    invD = 1.0 / D
    kx = 2.0 * (ey0 * ez1 - ez0 * ey1) * invD
    ky = 2.0 * (ez0 * ex1 - ex0 * ez1) * invD
    kz = 2.0 * (ex0 * ey1 - ey0 * ex1) * invD
    return l0, l1, ex0, ey0, ez0, ex1, ey1, ez1, invD, kx, ky, kz


@njit(inline="always", **JIT)
def _vertex_rows(q, tan, elen, m1, m2, mref, i, R):
    """Compact Jacobian rows of interior vertex ``i``: ``R[8r : 8r + 8]`` (r < 5) = ``[u (3), t0, v (3), t1]``
    standing for the full row ``[-u, t0, u - v, t1, v]`` over the 11 local unknowns
    ``(x_{i-1}, theta_{i-1}, x_i, theta_i, x_{i+1})`` (positions enter only through the edges,
    ``u = d/de^{i-1}``, ``v = d/de^i``). Rows 0-3: the 4D curvature ``w``, row 4: the twist
    ``m_i``; ``w`` into ``R[_W:_W + 4]``. The formulas of the module docstring, not expanded to 11
    columns (:func:`vertex_jacobians` expands them). Returns ``m_i`` (without the rest twist)."""
    a = i - 1
    b = i
    l0, l1, ex0, ey0, ez0, ex1, ey1, ez1, invD, kx, ky, kz = _curvature_binormal(tan, elen, a, b)
    px = l1 * tan[a, 0] + ex1
    py = l1 * tan[a, 1] + ey1
    pz = l1 * tan[a, 2] + ez1
    sx = l0 * tan[b, 0] + ex0
    sy = l0 * tan[b, 1] + ey0
    sz = l0 * tan[b, 2] + ez0
    for r in range(4):
        e = a if r < 2 else b
        if r % 2 == 0:
            rx, ry, rz = m2[e, 0], m2[e, 1], m2[e, 2]
        else:
            rx, ry, rz = -m1[e, 0], -m1[e, 1], -m1[e, 2]
        wr = rx * kx + ry * ky + rz * kz
        R[_W + r] = wr
        R[8 * r + 0] = (-2.0 * (ry * ez1 - rz * ey1) - wr * px) * invD
        R[8 * r + 1] = (-2.0 * (rz * ex1 - rx * ez1) - wr * py) * invD
        R[8 * r + 2] = (-2.0 * (rx * ey1 - ry * ex1) - wr * pz) * invD
        R[8 * r + 4] = (2.0 * (ry * ez0 - rz * ey0) - wr * sx) * invD
        R[8 * r + 5] = (2.0 * (rz * ex0 - rx * ez0) - wr * sy) * invD
        R[8 * r + 6] = (2.0 * (rx * ey0 - ry * ex0) - wr * sz) * invD
        R[8 * r + 3] = 0.0
        R[8 * r + 7] = 0.0
    R[3] = R[_W + 1]
    R[11] = -R[_W + 0]
    R[23] = R[_W + 3]
    R[31] = -R[_W + 2]
    h0 = 0.5 / l0
    h1 = 0.5 / l1
    R[32] = kx * h0
    R[33] = ky * h0
    R[34] = kz * h0
    R[35] = -1.0
    R[36] = kx * h1
    R[37] = ky * h1
    R[38] = kz * h1
    R[39] = 1.0
    return q[4 * i + 3] - q[4 * i - 1] + mref[a]


@njit(inline="always", **JIT)
def _add_gn_hessian_rows(band, base, R):
    """Add ``sum_r C_r J_r J_r^T`` (Gauss-Newton) into the lower band, from the compact rows ``R``
    (:func:`_vertex_rows`): the 8x8 Gram matrix ``S = sum_r C_r R_r R_r^T`` (36 entries) is mapped to
    the 66 lower entries of the 11x11 block through ``J = [-u, t0, u - v, t1, v]`` and added to the
    band directly (no 11x11 intermediate). ``R`` is the one workspace of :func:`der_elastic` (layout there)."""
    _add_gn_hessian_nrows(band, base, R, 5)


@njit(inline="always", **JIT)
def _gram3(R, p, c, r0, r1, r2):
    """``sum_r C_r R[r, p] R[r, c]`` over rows ``r0 < r1 < r2`` (in that order, from 0.0)."""
    acc = 0.0
    acc += R[_CR + 8 * r0 + p] * R[8 * r0 + c]
    acc += R[_CR + 8 * r1 + p] * R[8 * r1 + c]
    acc += R[_CR + 8 * r2 + p] * R[8 * r2 + c]
    return acc


@njit(inline="always", **JIT)
def _add_gn_hessian_rows4d(band, base, R):
    """:func:`_add_gn_hessian_rows` for the rows of :func:`_vertex_rows` as they are (4D bending): their
    angle columns hold exact zeros (``theta_{i-1}`` enters rows 0, 1 and 4 only, ``theta_i`` rows 2, 3
    and 4), whose products the Gram matrix leaves out; the other terms are summed in the same order
    from the same 0.0, so every entry is bitwise that of :func:`_add_gn_hessian_rows`."""
    for r in range(5):
        cr = R[_C + r]
        for p in range(8):
            R[_CR + 8 * r + p] = cr * R[8 * r + p]
    for p in range(8):
        if p == 3 or p == 7:
            continue
        for c in range(p + 1):
            if c == 3:
                continue
            acc = 0.0
            for r in range(5):
                acc += R[_CR + 8 * r + p] * R[8 * r + c]
            R[_S + 8 * (p) + c] = acc
            R[_S + 8 * (c) + p] = acc
    for c in range(3):  # p = 3 > c
        acc = _gram3(R, 3, c, 0, 1, 4)
        R[_S + 8 * 3 + c] = acc
        R[_S + 8 * c + 3] = acc
    for p in range(3, 7):  # c = 3 <= p
        acc = _gram3(R, p, 3, 0, 1, 4)
        R[_S + 8 * p + 3] = acc
        R[_S + 8 * 3 + p] = acc
    for c in range(8):  # p = 7 >= c
        if c == 3:
            acc = 0.0
            acc += R[_CR + 8 * 4 + 7] * R[8 * 4 + 3]
        else:
            acc = _gram3(R, 7, c, 2, 3, 4)
        R[_S + 8 * 7 + c] = acc
        R[_S + 8 * c + 7] = acc
    _scatter_gram(band, base, R)


@njit(inline="always", **JIT)
def _add_gn_hessian_rows3(band, base, R):
    """:func:`_add_gn_hessian_rows` over the first three rows only (the averaged 2D bending: rows 3
    and 4 have zero weight, and leaving out their exact zeros changes no bit of the sums)."""
    _add_gn_hessian_nrows(band, base, R, 3)


@njit(inline="always", **JIT)
def _add_gn_hessian_nrows(band, base, R, nrows):
    for r in range(nrows):
        cr = R[_C + r]
        for p in range(8):
            R[_CR + 8 * r + p] = cr * R[8 * r + p]
    for p in range(8):
        for c in range(p + 1):
            acc = 0.0
            for r in range(nrows):
                acc += R[_CR + 8 * r + p] * R[8 * r + c]
            R[_S + 8 * (p) + c] = acc
            R[_S + 8 * (c) + p] = acc
    _scatter_gram(band, base, R)


@njit(inline="always", **JIT)
def _scatter_gram(band, base, R):
    """Add the 11x11 block ``J^T S J`` of the Gram matrix ``S`` (``R[_S:]``, 8x8) into the lower band."""
    for a in range(3):
        for b in range(3):
            Suu = R[_S + 8 * (a) + b]
            Suv = R[_S + 8 * (a) + 4 + b]
            Svu = R[_S + 8 * (4 + a) + b]
            Svv = R[_S + 8 * (4 + a) + 4 + b]
            if a >= b:
                band[base + a, a - b] += Suu
                band[base + 4 + a, a - b] += Suu - Suv - Svu + Svv
                band[base + 8 + a, a - b] += Svv
            band[base + 4 + a, 4 + a - b] += Svu - Suu
            band[base + 8 + a, 8 + a - b] -= Svu
            band[base + 8 + a, 4 + a - b] += Svu - Svv
    for b in range(3):
        band[base + 3, 3 - b] -= R[_S + 8 * (3) + b]
        band[base + 4 + b, 1 + b] += R[_S + 8 * (b) + 3] - R[_S + 8 * (4 + b) + 3]
        band[base + 8 + b, 5 + b] += R[_S + 8 * (4 + b) + 3]
        band[base + 7, 7 - b] -= R[_S + 8 * (7) + b]
        band[base + 7, 3 - b] += R[_S + 8 * (7) + b] - R[_S + 8 * (7) + 4 + b]
        band[base + 8 + b, 1 + b] += R[_S + 8 * (4 + b) + 7]
    band[base + 3, 0] += R[_S + 8 * (3) + 3]
    band[base + 7, 4] += R[_S + 8 * (7) + 3]
    band[base + 7, 0] += R[_S + 8 * (7) + 7]


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
        l0, l1, ex0, ey0, ez0, ex1, ey1, ez1, invD, kx, ky, kz = _curvature_binormal(tan, elen, a, b)
        w0 = m2[a, 0] * kx + m2[a, 1] * ky + m2[a, 2] * kz
        w1 = -m1[a, 0] * kx + -m1[a, 1] * ky + -m1[a, 2] * kz
        w2 = m2[b, 0] * kx + m2[b, 1] * ky + m2[b, 2] * kz
        w3 = -m1[b, 0] * kx + -m1[b, 1] * ky + -m1[b, 2] * kz
        li = lvor[i]
        mt = q[4 * i + 3] - q[4 * i - 1] + mref[a] - mbar[i]
        if curv2d:
            r0 = 0.5 * (w0 + w2) - 0.5 * (wbar[i, 0] + wbar[i, 2])
            r1 = 0.5 * (w1 + w3) - 0.5 * (wbar[i, 1] + wbar[i, 3])
            cb = 2.0 * kbend[i] / li
            E += 0.5 * cb * r0 * r0
            E += 0.5 * cb * r1 * r1
        else:
            cb = kbend[i] / li
            r0 = w0 - wbar[i, 0]
            r1 = w1 - wbar[i, 1]
            r2 = w2 - wbar[i, 2]
            r3 = w3 - wbar[i, 3]
            E += 0.5 * cb * r0 * r0
            E += 0.5 * cb * r1 * r1
            E += 0.5 * cb * r2 * r2
            E += 0.5 * cb * r3 * r3
        E += 0.5 * (2.0 * ktwist[i] / li) * mt * mt
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
    kinds (a line search on the result of an assembly) takes that one."""
    ne = tan.shape[0]
    nv = ne + 1
    E = 0.0
    for j in range(ne):
        ln = elen[j]
        lb = lbar[j]
        k = ks[j]
        dl = ln - lb
        E += 0.5 * k * dl * dl / lb
        if want >= 1:
            f = k * dl / lb
            for c in range(3):
                gc = f * tan[j, c]
                grad[4 * j + c] -= gc
                grad[4 * j + 4 + c] += gc
        if want >= 2:
            kk = k / lb
            beta = 1.0 - lb / ln
            if beta < 0.0:
                beta = 0.0
            for r in range(3):
                for c in range(3):
                    h = kk * (1.0 - beta) * tan[j, r] * tan[j, c]
                    if r == c:
                        h += kk * beta
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
        if curv2d:
            # averaged frames: rows (w^{i-1} + w^i)/2; the twist row moves up to row 2
            for r in range(2):
                R[_RES + r] = 0.5 * (R[_W + r] + R[_W + r + 2]) - 0.5 * (wbar[i, r] + wbar[i, r + 2])
                for c in range(8):
                    R[8 * r + c] = 0.5 * (R[8 * r + c] + R[8 * (r + 2) + c])
                R[_C + r] = 2.0 * kbend[i] / li
            for c in range(8):
                R[8 * 2 + c] = R[8 * 4 + c]
            # rows 3, 4 unused: zero weight (the loops below keep a fixed trip count of 5)
            R[_C + 3] = 0.0
            R[_C + 4] = 0.0
            R[_RES + 3] = 0.0
            R[_RES + 4] = 0.0
            tw = 2
        else:
            cb = kbend[i] / li
            for r in range(4):
                R[_RES + r] = R[_W + r] - wbar[i, r]
                R[_C + r] = cb
            tw = 4
        R[_RES + tw] = mt - mbar[i]
        R[_C + tw] = 2.0 * ktwist[i] / li
        for r in range(5):
            er = 0.5 * R[_C + r] * R[_RES + r] * R[_RES + r]
            E += er
            Ebt += er
        if want >= 1:
            gux = 0.0
            guy = 0.0
            guz = 0.0
            gvx = 0.0
            gvy = 0.0
            gvz = 0.0
            gt0 = 0.0
            gt1 = 0.0
            for r in range(5):
                f = R[_C + r] * R[_RES + r]
                gux += f * R[8 * r + 0]
                guy += f * R[8 * r + 1]
                guz += f * R[8 * r + 2]
                gt0 += f * R[8 * r + 3]
                gvx += f * R[8 * r + 4]
                gvy += f * R[8 * r + 5]
                gvz += f * R[8 * r + 6]
                gt1 += f * R[8 * r + 7]
            grad[base] -= gux
            grad[base + 1] -= guy
            grad[base + 2] -= guz
            grad[base + 3] += gt0
            grad[base + 4] += gux - gvx
            grad[base + 5] += guy - gvy
            grad[base + 6] += guz - gvz
            grad[base + 7] += gt1
            grad[base + 8] += gvx
            grad[base + 9] += gvy
            grad[base + 10] += gvz
        if want >= 2:
            if curv2d:
                _add_gn_hessian_rows3(band, base, R)
            else:
                _add_gn_hessian_rows4d(band, base, R)
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
