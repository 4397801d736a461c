"""Discrete residual of the generalized-alpha Cosserat rod (GA paper, Eq. 14a-d, 17-20) and
its exact block-banded Jacobian, as compiled kernels.

Nodal state (15 numbers per node, all in the node's director basis {d1, d2, d3}):

    x[j] = (u[0:3], omega[3:6], kappa[6:9], n[9:12], g[12:15])

``u`` centerline velocity [m/s], ``omega`` angular velocity [1/s], ``kappa`` Darboux vector
[1/m], ``n`` contact force [N]; ``m = K (kappa - kappa_hat)`` (Eq. 11). The paper's 12 unknowns
are the first twelve. ``g`` [m/s^2] is the gravity vector in local components (``R^T g_world``),
carried as a field with its own kinematic equation ``g' + kappa x g = 0`` so that the weight in
Eq. 14a is differentiated exactly (the paper lags every load by one Newton iterate; here only
end loads are lagged). See docs/galpha.md.

Pointwise terms (Eq. 15 ``M x_t + Khat x_s + Lambda = 0``), rows a..d = Eq. 14a..d::

    a:  rhoA u_t   - n_s            + [-kappa x n + rhoA omega x u - rhoA g + c rhoA u]
    b:  J omega_t  - m_s            + [-kappa x m - d3 x n + omega x J omega]
    c:  kappa_t    - omega_s        + [omega x kappa]
    d:               - u_s          + [-kappa x u + omega x d3]

Segment residual between nodes j-1 and j (Eq. 18 with Eq. 19-20 substituted; with
``gamma_s = 1 - beta_s`` -- which the Chung-Hulbert rule always satisfies -- the spatial
recursion Eq. 20 collapses to ``(1-beta_s) x_s[j] + beta_s x_s[j-1] = (x[j] - x[j-1]) / ds``
and the system is exactly block-bidiagonal)::

    F = ca [(1-as) M xdot[j] + as M xdot[j-1]]
      + cb [Khat (x[j] - x[j-1]) / ds + (1-bs) Lambda[j] + bs Lambda[j-1]] + Old

with ``ca = 1 - alpha_t``, ``cb = 1 - beta_t``, ``xdot`` from Eq. 19 and ``Old`` the same
expression at the previous step weighted by ``alpha_t`` and ``beta_t`` (Eq. 17). The three
g rows use the midpoint rule ``(g[j]-g[j-1])/ds + kappa_mid x g_mid = 0`` (a Cayley step,
norm-preserving) at the new time only.

Parameter vector ``prm`` (float64): see :data:`PRM_NAMES`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_INNER, python_entry

NV = 15  # unknowns per node
NP = 12  # pointwise rows (Eq. 14a-d)

PRM_NAMES = ("ds", "dt", "rhoA", "damping", "alpha_t", "beta_t", "gamma_t", "alpha_s", "beta_s", "static",
             "constraint_new")
P_DS, P_DT, P_RHOA, P_DAMP, P_AT, P_BT, P_GT, P_AS, P_BS, P_STATIC, P_CNEW = range(11)


@njit(inline="always", **JIT)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(inline="always", **JIT)
def _put_skew(A, r, c, s, w0, w1, w2):
    """A[r:r+3, c:c+3] += s [w]x."""
    A[r + 0, c + 1] -= s * w2
    A[r + 0, c + 2] += s * w1
    A[r + 1, c + 0] += s * w2
    A[r + 1, c + 2] -= s * w0
    A[r + 2, c + 0] -= s * w1
    A[r + 2, c + 1] += s * w0


@njit(**JIT_INNER)
def _node_terms(x, khat, K, J, prm, P, dP, want_jac):
    """Pointwise ``Lambda`` (rows a..d, Eq. 14a-d) at every node, and ``dLambda/dx``.

    x (N, 15); khat (N, 3) rest Darboux vector; K (3,) stiffness [N m^2]; J (3,) rotational
    inertia per length rho*I_k [kg m]; P (N, 12) out; dP (N, 12, 15) out (if ``want_jac``).
    """
    rhoA = prm[P_RHOA]
    c = prm[P_DAMP]
    N = x.shape[0]
    for j in range(N):
        u0, u1, u2 = x[j, 0], x[j, 1], x[j, 2]
        w0, w1, w2 = x[j, 3], x[j, 4], x[j, 5]
        k0, k1, k2 = x[j, 6], x[j, 7], x[j, 8]
        n0, n1, n2 = x[j, 9], x[j, 10], x[j, 11]
        g0, g1, g2 = x[j, 12], x[j, 13], x[j, 14]
        m0 = K[0] * (k0 - khat[j, 0])
        m1 = K[1] * (k1 - khat[j, 1])
        m2 = K[2] * (k2 - khat[j, 2])
        Jw0, Jw1, Jw2 = J[0] * w0, J[1] * w1, J[2] * w2
        # a
        kn0, kn1, kn2 = _cross(k0, k1, k2, n0, n1, n2)
        wu0, wu1, wu2 = _cross(w0, w1, w2, u0, u1, u2)
        P[j, 0] = -kn0 + rhoA * wu0 - rhoA * g0 + c * rhoA * u0
        P[j, 1] = -kn1 + rhoA * wu1 - rhoA * g1 + c * rhoA * u1
        P[j, 2] = -kn2 + rhoA * wu2 - rhoA * g2 + c * rhoA * u2
        # b  (d3 x n = (-n1, n0, 0))
        km0, km1, km2 = _cross(k0, k1, k2, m0, m1, m2)
        wJ0, wJ1, wJ2 = _cross(w0, w1, w2, Jw0, Jw1, Jw2)
        P[j, 3] = -km0 + n1 + wJ0
        P[j, 4] = -km1 - n0 + wJ1
        P[j, 5] = -km2 + wJ2
        # c
        wk0, wk1, wk2 = _cross(w0, w1, w2, k0, k1, k2)
        P[j, 6] = wk0
        P[j, 7] = wk1
        P[j, 8] = wk2
        # d  (omega x d3 = (w1, -w0, 0))
        ku0, ku1, ku2 = _cross(k0, k1, k2, u0, u1, u2)
        P[j, 9] = -ku0 + w1
        P[j, 10] = -ku1 - w0
        P[j, 11] = -ku2
        if want_jac:
            D = dP[j]
            D[:, :] = 0.0
            # a: d/dkappa = [n]x ; d/dn = -[kappa]x ; d/domega = -rhoA [u]x ; d/du = rhoA [omega]x + c rhoA I ; d/dg = -rhoA I
            _put_skew(D, 0, 6, 1.0, n0, n1, n2)
            _put_skew(D, 0, 9, -1.0, k0, k1, k2)
            _put_skew(D, 0, 3, -rhoA, u0, u1, u2)
            _put_skew(D, 0, 0, rhoA, w0, w1, w2)
            for r in range(3):
                D[r, r] += c * rhoA
                D[r, 12 + r] -= rhoA
            # b: d/dkappa = [m]x - [kappa]x K ; d/dn = -[d3]x ; d/domega = [omega]x J - [J omega]x
            _put_skew(D, 3, 6, 1.0, m0, m1, m2)
            D[3, 7] -= -k2 * K[1]
            D[3, 8] -= k1 * K[2]
            D[4, 6] -= k2 * K[0]
            D[4, 8] -= -k0 * K[2]
            D[5, 6] -= -k1 * K[0]
            D[5, 7] -= k0 * K[1]
            D[3, 10] += 1.0
            D[4, 9] -= 1.0
            D[3, 4] += -w2 * J[1]
            D[3, 5] += w1 * J[2]
            D[4, 3] += w2 * J[0]
            D[4, 5] += -w0 * J[2]
            D[5, 3] += -w1 * J[0]
            D[5, 4] += w0 * J[1]
            _put_skew(D, 3, 3, -1.0, Jw0, Jw1, Jw2)
            # c: d/domega = -[kappa]x ; d/dkappa = [omega]x
            _put_skew(D, 6, 3, -1.0, k0, k1, k2)
            _put_skew(D, 6, 6, 1.0, w0, w1, w2)
            # d: d/dkappa = [u]x ; d/du = -[kappa]x ; d/domega: (w1, -w0, 0)
            _put_skew(D, 9, 6, 1.0, u0, u1, u2)
            _put_skew(D, 9, 0, -1.0, k0, k1, k2)
            D[9, 4] += 1.0
            D[10, 3] -= 1.0


@njit(inline="always", **JIT)
def _khat_diff(x, khat, K, j, r):
    """Row r (0..11) of ``Khat (x[j] - x[j-1])``: -dn, -dm, -domega, -du."""
    if r < 3:
        return -(x[j, 9 + r] - x[j - 1, 9 + r])
    if r < 6:
        q = r - 3
        return -K[q] * ((x[j, 6 + q] - khat[j, q]) - (x[j - 1, 6 + q] - khat[j - 1, q]))
    if r < 9:
        return -(x[j, 3 + r - 6] - x[j - 1, 3 + r - 6])
    return -(x[j, r - 9] - x[j - 1, r - 9])


@njit(inline="always", **JIT)
def _mass(rhoA, J, r):
    """Diagonal of Mhat for variable/row r (u: rhoA, omega: J, kappa: 1, n and g: 0)."""
    if r < 3:
        return rhoA
    if r < 6:
        return J[r - 3]
    if r < 9:
        return 1.0
    return 0.0


@njit(**JIT_INNER)
def _node_parts(x, xprev, xdotprev, khat, K, J, rhoA, inv_gdt, cgt, with_mass, Q, Md):
    """Per node: ``Q[j] = Khat-part S x_j`` (rows a..d: -n, -m, -omega, -u) and
    ``Md[j] = M xdot_j`` with ``xdot`` from Eq. 19 (``inv_gdt = 1/(gamma dt)``,
    ``cgt = (1 - gamma)/gamma``)."""
    N = x.shape[0]
    for j in range(N):
        for q in range(3):
            Q[j, q] = -x[j, 9 + q]
            Q[j, 3 + q] = -K[q] * (x[j, 6 + q] - khat[j, q])
            Q[j, 6 + q] = -x[j, 3 + q]
            Q[j, 9 + q] = -x[j, q]
        if with_mass:
            for q in range(3):
                Md[j, q] = rhoA * ((x[j, q] - xprev[j, q]) * inv_gdt - cgt * xdotprev[j, q])
                Md[j, 3 + q] = J[q] * ((x[j, 3 + q] - xprev[j, 3 + q]) * inv_gdt - cgt * xdotprev[j, 3 + q])
                Md[j, 6 + q] = (x[j, 6 + q] - xprev[j, 6 + q]) * inv_gdt - cgt * xdotprev[j, 6 + q]
                Md[j, 9 + q] = 0.0


@njit(**JIT_INNER)
def _old_terms(xprev, xdotprev, khat, K, J, prm, Pwork, out):
    """``Old`` part of Eq. 18 (previous-step terms weighted by alpha_t, beta_t), (N-1, 15)."""
    N = xprev.shape[0]
    ds = prm[P_DS]
    at, bt = prm[P_AT], prm[P_BT]
    a_s, b_s = prm[P_AS], prm[P_BS]
    rhoA = prm[P_RHOA]
    dummy = np.zeros((1, 1, 1))
    _node_terms(xprev, khat, K, J, prm, Pwork, dummy, np.bool_(False))  # np.bool_: one compilation, not one per literal
    Q = np.empty((N, NP))
    Md = np.empty((N, NP))
    for j in range(N):  # M xdot at the old step is M xdotprev
        for q in range(3):
            Md[j, q] = rhoA * xdotprev[j, q]
            Md[j, 3 + q] = J[q] * xdotprev[j, 3 + q]
            Md[j, 6 + q] = xdotprev[j, 6 + q]
            Md[j, 9 + q] = 0.0
    _node_parts(xprev, xprev, xdotprev, khat, K, J, rhoA, 0.0, 0.0, np.bool_(False), Q, Md)  # not a literal: one compilation
    inv_ds = 1.0 / ds
    for s in range(N - 1):
        j = s + 1
        for r in range(NP):
            out[s, r] = (at * ((1.0 - a_s) * Md[j, r] + a_s * Md[j - 1, r])
                         + bt * ((Q[j, r] - Q[j - 1, r]) * inv_ds + (1.0 - b_s) * Pwork[j, r] + b_s * Pwork[j - 1, r]))
        for r in range(NP, NV):
            out[s, r] = 0.0
        if prm[P_CNEW] != 0.0:  # Eq. 14d enforced at the new time only
            for r in range(9, 12):
                out[s, r] = 0.0


@njit(**JIT)
def residual(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, want_jac, F, ab, colmap, kl, ku, tipblock):
    """Segment residuals F (N-1, 15), row-scaled, and (if ``want_jac``) the Jacobian in band storage.

    The Jacobian is taken with respect to the free unknowns ``colmap[j*15 + v] >= 0`` (the
    boundary values have ``colmap = -1``) and written into ``ab`` in the layout of
    :mod:`rodlab.linalg.banded_lu` (row of segment s, equation r: ``15 s + r``); it is
    :func:`residual_blocks`'s block Jacobian scattered into the band. ``tipblock``: see there.
    Returns the infinity norm of the scaled residual.
    """
    N = x.shape[0]
    Jb = np.empty((N - 1, NV, 2 * NV))
    fnorm = _residual_blocks(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, want_jac, F, Jb, tipblock)
    if want_jac:
        ab[:, :] = 0.0
        d = kl + ku
        for s in range(N - 1):
            row0 = s * NV
            for side in range(2):
                base = (s + side) * NV
                off = side * NV
                for v in range(NV):
                    col = colmap[base + v]
                    if col >= 0:
                        o = d + row0 - col
                        for r in range(NV):
                            ab[col, o + r] = Jb[s, r, off + v]
    return fnorm


@njit(**JIT_INNER)
def _residual_blocks(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, want_jac, F, Jb, tipblock):
    """Segment residuals F (N-1, 15), row-scaled, and (if ``want_jac``) the block Jacobian:
    ``Jb[s]`` (15, 30) = derivative of segment s's scaled rows with respect to all 15 unknowns of
    node s (columns 0..14) and of node s+1 (columns 15..29), boundary values included (the
    solver drops their columns; :func:`rodlab.linalg.banded_lu.make_block_lu`).
    ``tipblock`` (15, 15) receives the derivative of the last segment's (scaled) rows with
    respect to all 15 unknowns of the tip node, boundary values included (for the exact
    coupling of the end loads through the tip frame, see :func:`tip_sensitivity`).
    Returns the infinity norm of the scaled residual.
    """
    N = x.shape[0]
    ds = prm[P_DS]
    dt = prm[P_DT]
    rhoA = prm[P_RHOA]
    static = prm[P_STATIC] != 0.0
    at, bt, gt = prm[P_AT], prm[P_BT], prm[P_GT]
    a_s, b_s = prm[P_AS], prm[P_BS]
    if static:
        ca = 0.0
        cb = 1.0
    else:
        ca = 1.0 - at
        cb = 1.0 - bt
    inv_gdt = 0.0 if static else 1.0 / (gt * dt)
    _node_terms(x, khat, K, J, prm, P, dP, want_jac)
    Q = np.empty((N, NP))
    Md = np.zeros((N, NP))
    _node_parts(x, xprev, xdotprev, khat, K, J, rhoA, inv_gdt, 0.0 if static else (1.0 - gt) / gt, not static, Q, Md)
    inv_ds = 1.0 / ds
    cnew = prm[P_CNEW] != 0.0 and not static
    fnorm = 0.0
    for s in range(N - 1):
        j = s + 1
        # rows a..d
        for r in range(NP):
            cbr = 1.0 if (cnew and r >= 9) else cb
            v = cbr * ((Q[j, r] - Q[j - 1, r]) * inv_ds + (1.0 - b_s) * P[j, r] + b_s * P[j - 1, r])
            if not static:
                v += ca * ((1.0 - a_s) * Md[j, r] + a_s * Md[j - 1, r]) + old[s, r]
            F[s, r] = v * rowscale[r]
        # g rows: (g_j - g_{j-1})/ds + kmid x gmid
        km0 = 0.5 * (x[j, 6] + x[j - 1, 6])
        km1 = 0.5 * (x[j, 7] + x[j - 1, 7])
        km2 = 0.5 * (x[j, 8] + x[j - 1, 8])
        gm0 = 0.5 * (x[j, 12] + x[j - 1, 12])
        gm1 = 0.5 * (x[j, 13] + x[j - 1, 13])
        gm2 = 0.5 * (x[j, 14] + x[j - 1, 14])
        c0, c1, c2 = _cross(km0, km1, km2, gm0, gm1, gm2)
        F[s, 12] = ((x[j, 12] - x[j - 1, 12]) / ds + c0) * rowscale[12]
        F[s, 13] = ((x[j, 13] - x[j - 1, 13]) / ds + c1) * rowscale[13]
        F[s, 14] = ((x[j, 14] - x[j - 1, 14]) / ds + c2) * rowscale[14]
        for r in range(NV):
            a = abs(F[s, r])
            if a > fnorm:
                fnorm = a
        if want_jac:
            blk = Jb[s]
            for side in range(2):
                node = j - 1 + side
                off = side * NV
                sgn = 1.0 if side == 1 else -1.0
                wP = cb * ((1.0 - b_s) if side == 1 else b_s)
                wA = ca * ((1.0 - a_s) if side == 1 else a_s) * inv_gdt
                for r in range(NP):
                    for v in range(NV):
                        blk[r, off + v] = wP * dP[node, r, v]
                if not static:
                    for q in range(3):
                        blk[q, off + q] += wA * rhoA
                        blk[3 + q, off + 3 + q] += wA * J[q]
                        blk[6 + q, off + 6 + q] += wA
                c = cb * sgn * inv_ds
                for q in range(3):
                    blk[q, off + 9 + q] -= c
                    blk[3 + q, off + 6 + q] -= c * K[q]
                    blk[6 + q, off + 3 + q] -= c
                    blk[9 + q, off + q] -= c
                # g rows: d/dg = sgn/ds I + 0.5 [kmid]x ; d/dkappa = -0.5 [gmid]x
                for r in range(NP, NV):
                    for v in range(NV):
                        blk[r, off + v] = 0.0
                for q in range(3):
                    blk[12 + q, off + 12 + q] = sgn * inv_ds
                blk[12, off + 13] = -0.5 * km2
                blk[12, off + 14] = 0.5 * km1
                blk[13, off + 12] = 0.5 * km2
                blk[13, off + 14] = -0.5 * km0
                blk[14, off + 12] = -0.5 * km1
                blk[14, off + 13] = 0.5 * km0
                blk[12, off + 7] = 0.5 * gm2
                blk[12, off + 8] = -0.5 * gm1
                blk[13, off + 6] = -0.5 * gm2
                blk[13, off + 8] = 0.5 * gm0
                blk[14, off + 6] = 0.5 * gm1
                blk[14, off + 7] = -0.5 * gm0
            for r in range(NV):
                sc = rowscale[r]
                if cnew and 9 <= r < 12:
                    sc /= cb
                for v in range(2 * NV):
                    blk[r, v] *= sc
            if s == N - 2:
                for r in range(NV):
                    for v in range(NV):
                        tipblock[r, v] = blk[r, NV + v]
    return fnorm



@njit(**JIT_INNER)
def _inv_one_plus_skew(h0, h1, h2, out):
    """``(I + [h]x)^-1 = (I - [h]x + h h^T) / (1 + |h|^2)`` into ``out`` (3, 3) (Cayley map pieces)."""
    den = 1.0 + h0 * h0 + h1 * h1 + h2 * h2
    out[0, 0] = (1.0 + h0 * h0) / den
    out[1, 1] = (1.0 + h1 * h1) / den
    out[2, 2] = (1.0 + h2 * h2) / den
    out[0, 1] = (h2 + h0 * h1) / den
    out[1, 0] = (-h2 + h0 * h1) / den
    out[0, 2] = (-h1 + h0 * h2) / den
    out[2, 0] = (h1 + h0 * h2) / den
    out[1, 2] = (h0 + h1 * h2) / den
    out[2, 1] = (-h0 + h1 * h2) / den

@njit(**JIT_INNER)
def _tip_sensitivity(x, R, ds, vecs, colmap, D):
    """Derivative of the tip-frame components ``z_w = R_L^T vecs[w]`` (w = 0, 1) with respect to
    the free Darboux unknowns: D (6, n), rows 3w..3w+2, columns ``colmap[15 j + 6 + q]``.

    ``R_L`` is the product of the Cayley steps ``E_k = cay(kappa_mid_k ds)`` (see
    :func:`rodlab.galpha.state.integrate_frames`); with ``y_k = R_k^T v``, ``y_{k+1} = E_k^T y_k``
    and ``d y_{k+1} / d w_k = (I + [w_k]/2)^-1 [(y_k + y_{k+1})/2]x``, carried to the tip by
    ``R_L^T R_{k+1}``. (For the Rodrigues update this is the Cayley approximation of the
    derivative: Newton then converges linearly there.)"""
    N = x.shape[0]
    D[:, :] = 0.0
    L = N - 1
    G = np.empty((3, 3))
    Minv = np.empty((3, 3))
    Pm = np.empty((3, 3))
    for w in range(vecs.shape[0]):
        a0, a1, a2 = vecs[w, 0], vecs[w, 1], vecs[w, 2]
        if a0 == 0.0 and a1 == 0.0 and a2 == 0.0:
            continue
        for k in range(N - 1):
            y0 = R[k, 0, 0] * a0 + R[k, 1, 0] * a1 + R[k, 2, 0] * a2
            y1 = R[k, 0, 1] * a0 + R[k, 1, 1] * a1 + R[k, 2, 1] * a2
            y2 = R[k, 0, 2] * a0 + R[k, 1, 2] * a1 + R[k, 2, 2] * a2
            z0 = R[k + 1, 0, 0] * a0 + R[k + 1, 1, 0] * a1 + R[k + 1, 2, 0] * a2
            z1 = R[k + 1, 0, 1] * a0 + R[k + 1, 1, 1] * a1 + R[k + 1, 2, 1] * a2
            z2 = R[k + 1, 0, 2] * a0 + R[k + 1, 1, 2] * a1 + R[k + 1, 2, 2] * a2
            m0, m1, m2 = 0.5 * (y0 + z0), 0.5 * (y1 + z1), 0.5 * (y2 + z2)
            h0 = 0.25 * (x[k, 6] + x[k + 1, 6]) * ds
            h1 = 0.25 * (x[k, 7] + x[k + 1, 7]) * ds
            h2 = 0.25 * (x[k, 8] + x[k + 1, 8]) * ds
            _inv_one_plus_skew(h0, h1, h2, Minv)
            # G = Minv [m]x
            for r in range(3):
                G[r, 0] = Minv[r, 1] * m2 - Minv[r, 2] * m1
                G[r, 1] = -Minv[r, 0] * m2 + Minv[r, 2] * m0
                G[r, 2] = Minv[r, 0] * m1 - Minv[r, 1] * m0
            # Pm = R_L^T R_{k+1}
            for r in range(3):
                for c in range(3):
                    Pm[r, c] = R[L, 0, r] * R[k + 1, 0, c] + R[L, 1, r] * R[k + 1, 1, c] + R[L, 2, r] * R[k + 1, 2, c]
            for node in range(k, k + 2):
                for q in range(3):
                    col = colmap[node * NV + 6 + q]
                    if col < 0:
                        continue
                    for r in range(3):
                        D[3 * w + r, col] += 0.5 * ds * (Pm[r, 0] * G[0, q] + Pm[r, 1] * G[1, q] + Pm[r, 2] * G[2, q])


# Python entries of the inner kernels (tests, the Jacobian checks, the solver's setup)
node_terms = python_entry(_node_terms, "node_terms")
old_terms = python_entry(_old_terms, "old_terms")
residual_blocks = python_entry(_residual_blocks, "residual_blocks")
tip_sensitivity = python_entry(_tip_sensitivity, "tip_sensitivity")
