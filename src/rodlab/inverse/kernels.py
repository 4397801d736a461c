"""Compiled kernels of the sag-free parameter optimization (Takahashi and Batty, Sec. IV-V).

Parameter vector, interleaved along the strand so every system is banded (Sec. IV): for each
block ``b = i - 1``, ``i = 1 .. n-2`` (interior vertex ``i`` followed by edge ``i``; the root edge 0
is clamped and its parameters are not optimized)::

    p[7b + 0 : 7b + 2]  rest curvature kbar_i (2): w^{i-1}_i rest value; the other frame's pair
                        follows it, wbar^i_i = kbar_i + (wbar^i_i - wbar^{i-1}_i) at the start
    p[7b + 2]           bending stiffness scale s_b,i   (kbend_i = Kb s_b,i)
    p[7b + 3]           rest twist mbar_i [rad]
    p[7b + 4]           twisting stiffness scale s_t,i  (ktwist_i = Kt s_t,i)
    p[7b + 5]           rest-length ratio u_i          (lbar_i = u_i l0_i)
    p[7b + 6]           stretching stiffness scale s_s,i (ks_i = Ks s_s,i)

``Ks, Kb, Kt`` are the initial (uniform) physical stiffnesses, so every scale starts at 1.

Net force at the groomed shape ``q*`` (free DOFs, i.e. all but ``x_0, theta_0, x_1``):
``f = -grad E(q*; p) + f_gravity``. Its Jacobian ``df/dp`` is exact and cheap because the
geometry (curvatures, their Jacobians, twists, lengths) is fixed: bending and twisting forces are
bilinear in (scale, rest value), stretching forces are ``-Ks s (l/(u l0) - 1) t`` (Sec. IV-E).
The geometry is the DER joint stencil's (:mod:`rodlab.geometry.der_joint`, through
:func:`rodlab.der_implicit.energies.vertex_jacobians`: the curvature and twist rows of every joint)
and the edges' tension its ``edge_stretch_tension``; the forces are the stencil's gradient
``sum_r C_r res_r J_r`` written with the weights ``C`` and residuals ``res`` as functions of ``p``.
Constraint (Eq. 14, scaled): ``c_a = S_a f_a`` with ``S = lam_v^2 / Kb`` on the position rows of
vertex ``v`` (``lam_v`` its initial Voronoi length) and ``S = l0_j / Kb`` on the angle row of edge
``j``: dimensionless (forces in units of the bending force scale), fixed during the optimization.
The Jacobian is stored by row windows: row ``a`` holds columns ``cs[a] .. cs[a] + 18``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..der_implicit.energies import material_frames_q, vertex_jacobians_call
from ..geometry._vec import JIT
from ..geometry.der_joint import edge_stretch_tension
from ..linalg.banded_ldlt import ldlt_factor_band, ldlt_solve_band
from .qp import NWS, PC_ASC, PC_ASCS, PC_IC, PC_MIC, SCHUR_CAP, ipm, mprgp, mprgp_fast_solve, pgs

JW = 19  # row-window width of the Jacobian (a vertex row sees parameter blocks v-1, v, v+1)
HBW = 18  # half bandwidth of the parameter Hessian
NFIX = 7  # x_0, theta_0, x_1

QP_MPRGP = 0
QP_PGS = 1
QP_IPM = 2
QP_PENALTY = 3


@njit(**JIT)
def sf_window_starts(nv, cs):
    """First parameter column of each DOF row's Jacobian window."""
    for a in range(4 * nv - 1):
        v = a // 4
        if a % 4 == 3:
            cs[a] = 7 * (v - 1)
        else:
            cs[a] = 7 * (v - 2)


@njit(**JIT)
def _addJ(J, cs, a, col, val):
    if a >= NFIX:
        J[a - NFIX, col - cs[a]] += val


@njit(**JIT)
def sf_constraint(p, want_J, tan, elen, l0, Ks, Kb, Kt, lv, W0, JWv, GM, MT, dW, fg, S, cs, f, c, J):
    """Net force ``f`` (4n-1,), scaled constraint ``c`` (4n-8,) and, if ``want_J``, its Jacobian windows ``J``."""
    ne = tan.shape[0]
    nv = ne + 1
    for a in range(f.shape[0]):
        f[a] = fg[a]
    if want_J:
        J[:, :] = 0.0
    for j in range(ne):
        if j == 0:
            ss = 1.0
            u = 1.0
        else:
            b = j - 1
            u = p[7 * b + 5]
            ss = p[7 * b + 6]
        ks = Ks * ss
        lb = u * l0[j]
        ln = elen[j]
        F = edge_stretch_tension(ks, ln, lb)
        for cc in range(3):
            f[4 * j + cc] += F * tan[j, cc]
            f[4 * j + 4 + cc] -= F * tan[j, cc]
        if want_J and j > 0:
            b = j - 1
            dFs = Ks * (ln / lb - 1.0)
            dFu = -ks * ln / (u * u * l0[j])
            for cc in range(3):
                t = tan[j, cc]
                _addJ(J, cs, 4 * j + cc, 7 * b + 6, dFs * t)
                _addJ(J, cs, 4 * j + 4 + cc, 7 * b + 6, -dFs * t)
                _addJ(J, cs, 4 * j + cc, 7 * b + 5, dFu * t)
                _addJ(J, cs, 4 * j + 4 + cc, 7 * b + 5, -dFu * t)
    dw = np.empty(4)
    for i in range(1, nv - 1):
        b = i - 1
        k1 = p[7 * b]
        k2 = p[7 * b + 1]
        sb = p[7 * b + 2]
        mb = p[7 * b + 3]
        st = p[7 * b + 4]
        dw[0] = W0[i, 0] - k1
        dw[1] = W0[i, 1] - k2
        dw[2] = W0[i, 2] - (k1 + dW[i, 0])
        dw[3] = W0[i, 3] - (k2 + dW[i, 1])
        li = lv[i]
        cb = Kb * sb / li
        dm = MT[i] - mb
        ct = 2.0 * Kt * st / li
        base = 4 * (i - 1)
        for cc in range(11):
            gsum = dw[0] * JWv[i, 0, cc] + dw[1] * JWv[i, 1, cc] + dw[2] * JWv[i, 2, cc] + dw[3] * JWv[i, 3, cc]
            a = base + cc
            f[a] -= cb * gsum + ct * dm * GM[i, cc]
            if want_J and a >= NFIX:
                r = a - NFIX
                o = 7 * b - cs[a]
                J[r, o + 0] += cb * (JWv[i, 0, cc] + JWv[i, 2, cc])
                J[r, o + 1] += cb * (JWv[i, 1, cc] + JWv[i, 3, cc])
                J[r, o + 2] += -(Kb / li) * gsum
                J[r, o + 3] += ct * GM[i, cc]
                J[r, o + 4] += -(2.0 * Kt / li) * dm * GM[i, cc]
    m = c.shape[0]
    for r in range(m):
        c[r] = S[r + NFIX] * f[r + NFIX]
    if want_J:
        for r in range(m):
            s = S[r + NFIX]
            for k in range(JW):
                J[r, k] *= s


@njit(**JIT)
def _lagrangian(p, p0, Wd, lam, rho, c):
    v = 0.0
    for k in range(p.shape[0]):
        d = p[k] - p0[k]
        v += 0.5 * Wd[k] * d * d
    for r in range(c.shape[0]):
        v += -lam[r] * c[r] + 0.5 * rho * c[r] * c[r]
    return v


@njit(**JIT)
def _residual(c, inv_cw):
    r = 0.0
    for k in range(c.shape[0]):
        v = abs(c[k]) * inv_cw[k]
        if v > r:
            r = v
    return r


@njit(**JIT)
def sf_optimize(p, p0, lo, hi, Wd, lam, rho, rho_growth, rho_max, update_dual, maxit, tol, qp_mode, pc, qp_rtol, qp_atol,
                qp_maxit, warm, box_mu, tan, elen, l0, Ks, Kb, Kt, lv, W0, JWv, GM, MT, dW, fg, S, inv_cw,
                res_hist, stats, capture_at, capH, capb, caplo, caphi):
    """Augmented-Lagrangian outer loop (Takahashi and Batty Alg. 1, Eqs. 10-13, 20-23), in place on ``p`` and ``lam``.

    Each iteration: constraint and Jacobian at ``p``; ``g = W (p - p0) + J^T (rho c - lam)``,
    ``H = W + rho J^T J`` (banded, half bandwidth 18); one box-constrained QP
    ``min 1/2 d^T H d + g^T d, lo - p <= d <= hi - p`` (``qp_mode``: MPRGP with preconditioner ``pc``,
    PGS, interior point, or the box as a quadratic penalty ``box_mu`` with an unconstrained LDL^T solve);
    backtracking (Armijo) line search on ``L(p) = 1/2|p - p0|_W^2 - lam.c + rho/2 |c|^2``; then
    ``lam <- lam - rho c`` if ``update_dual`` (the quadratic-penalty schemes keep ``lam = 0``).
    With ``update_dual``, ``rho`` grows by ``rho_growth`` (up to ``rho_max``) whenever an iteration
    fails to halve the residual (Nocedal and Wright, Framework 17.3); the penalty schemes keep it fixed.
    Stops when the weight-scaled residual ``max |c_a| inv_cw_a <= tol``, after ``maxit`` iterations, or
    when the line search fails. ``stats``: [iterations, total QP iterations, status (1 converged,
    0 iteration cap, -1 line search failed, -2 stationary with the constraint violated), final residual, max QP iterations, clamped pivots,
    final rho].
    ``capture_at >= 0`` copies that iteration's QP (``H``, ``b = -g``, bounds) into ``cap*``.
    """
    P = p.shape[0]
    N = fg.shape[0]
    m = N - NFIX
    nv = (N + 1) // 4
    cs = np.empty(N, dtype=np.int64)
    sf_window_starts(nv, cs)
    f = np.empty(N)
    c = np.empty(m)
    ct = np.empty(m)
    J = np.zeros((m, JW))
    H = np.empty((P, HBW + 1))
    Lf = np.empty((P, HBW + 1))
    Dp = np.empty(P)
    g = np.empty(P)
    bq = np.empty(P)
    ld = np.empty(P)
    hd = np.empty(P)
    d = np.zeros(P)
    dsc = np.ones(P)
    dprev = np.zeros(P)
    pt = np.empty(P)
    tmp = np.empty(m)
    qhist = np.zeros(0)
    # MPRGP with the filtered-factor preconditioners: row-aligned copies of H and its factor and the
    # solver's scratch, allocated once and reused by every QP of the run
    # (and the Schur-corrected ASC, whose scratch is allocated only when it runs)
    fast = pc == PC_ASC or pc == PC_IC or pc == PC_MIC or pc == PC_ASCS
    # MPRGP's expansion exactly as in the paper (no preconditioned candidate, see qp.mprgp_fast.mprgp_fast); a
    # runtime False (pc >= 0): the literal False would compile a second specialization of the solver
    pexp = pc < 0
    Ar = np.empty((P, 2 * HBW + 1))
    Lpair = np.empty((2, P, HBW + 1))
    qws = np.empty((NWS, P + 2 * HBW))
    qfree = np.empty(P, dtype=np.bool_)
    qcounts = np.zeros(4)
    scap = min(SCHUR_CAP, P) if pc == PC_ASCS else 0
    sfm = np.ones(P, dtype=np.bool_)
    sY = np.empty((scap, P + 2 * HBW))  # (contents on entry do not matter, see qp.fast_preconditioners._schur_fast)
    sC = np.empty((scap, scap))
    sw = np.empty(scap)
    siw = np.full(2 * P + scap + 2, -1, dtype=np.int64)
    stats[:] = 0.0
    status = 0
    it = 0
    res = 0.0
    for it in range(maxit + 1):
        sf_constraint(p, True, tan, elen, l0, Ks, Kb, Kt, lv, W0, JWv, GM, MT, dW, fg, S, cs, f, c, J)
        res_prev = res
        res = _residual(c, inv_cw)
        if it < res_hist.shape[0]:
            res_hist[it] = res
        if res <= tol:
            status = 1
            break
        if update_dual and it > 0 and res > 0.5 * res_prev and rho < rho_max:
            rho = min(rho * rho_growth, rho_max)
        if it == maxit:
            break
        # gradient and Gauss-Newton Hessian
        for r in range(m):
            tmp[r] = rho * c[r] - lam[r]
        for k in range(P):
            g[k] = Wd[k] * (p[k] - p0[k])
            H[k, 0] = Wd[k]
            for q in range(1, HBW + 1):
                H[k, q] = 0.0
        for r in range(m):
            a = r + NFIX
            c0 = cs[a]
            for k in range(JW):
                col = c0 + k
                if col < 0 or col >= P:
                    continue
                jk = J[r, k]
                if jk == 0.0:
                    continue
                g[col] += jk * tmp[r]
                rj = rho * jk
                for q in range(k + 1):
                    col2 = c0 + q
                    if col2 < 0:
                        continue
                    H[col, k - q] += rj * J[r, q]
        for k in range(P):
            bq[k] = -g[k]
            ld[k] = lo[k] - p[k]
            hd[k] = hi[k] - p[k]
            if warm:
                v = dprev[k]
                d[k] = min(max(v, ld[k]), hd[k])
            else:
                d[k] = 0.0
        # variables pinned by their bounds (lo == hi, e.g. the stiffness of the rest-only scheme) are
        # eliminated: decoupled rows/columns, so the factor is exact for the remaining variables
        for k in range(P):
            if lo[k] == hi[k]:
                bq[k] = 0.0
                for q in range(1, HBW + 1):
                    H[k, q] = 0.0
                    if k + q < P:
                        H[k + q, q] = 0.0
        if qp_mode != QP_PENALTY:
            # symmetric Jacobi scaling of the QP (unit diagonal): the variables span ~13 orders of
            # magnitude in curvature (rest lengths are stiff, stiffness scales soft); every solver
            # sees the same scaled problem, whose bounds are scaled with it
            for k in range(P):
                dsc[k] = 1.0 / math.sqrt(H[k, 0])
            for k in range(P):
                for q in range(HBW + 1):
                    if k - q >= 0:
                        H[k, q] *= dsc[k] * dsc[k - q]
                bq[k] *= dsc[k]
                ld[k] /= dsc[k]
                hd[k] /= dsc[k]
                d[k] /= dsc[k]
        if capture_at == it:
            capH[:, :] = H
            capb[:] = bq
            caplo[:] = ld
            caphi[:] = hd
        # inexact Newton: the QP's relative tolerance tightens with the force residual
        rt = min(qp_rtol, 0.1 * res)
        if rt < 1e-12:
            rt = 1e-12
        if qp_mode == QP_MPRGP and fast:
            qit, qres, ncl = mprgp_fast_solve(pc, H, bq, ld, hd, d, rt, qp_atol, qp_maxit, qhist, qcounts, 1.0, Ar, Lf, Lpair, Dp,
                                              qws, qfree, pexp, sfm, sY, sC, sw, siw)
            stats[5] += ncl
        elif qp_mode == QP_MPRGP:
            # the other preconditioners (no factor; ASC, IC, MIC and ASC-Schur take the fast path)
            qit, qres = mprgp(H, bq, ld, hd, d, pc, Lf, Dp, rt, qp_atol, qp_maxit, qhist)
        elif qp_mode == QP_PGS:
            qit, qres = pgs(H, bq, ld, hd, d, rt, qp_atol, qp_maxit, qhist)
        elif qp_mode == QP_IPM:
            qit, qres = ipm(H, bq, ld, hd, d, rt, qp_atol, qp_maxit, qhist)
        else:
            # box constraints as a quadratic penalty box_mu/2 * violation^2 (Takahashi and Batty [5])
            for k in range(P):
                if p[k] < lo[k]:
                    H[k, 0] += box_mu
                    bq[k] += box_mu * (lo[k] - p[k])
                elif p[k] > hi[k]:
                    H[k, 0] += box_mu
                    bq[k] += box_mu * (hi[k] - p[k])
            Lf[:, :] = H
            stats[5] += ldlt_factor_band(Lf, Dp, 1e-12)
            d[:] = bq
            ldlt_solve_band(Lf, Dp, d)
            qit = 1
        if qp_mode != QP_PENALTY:
            for k in range(P):
                d[k] *= dsc[k]
        stats[1] += qit
        if qit > stats[4]:
            stats[4] = qit
        dn = 0.0
        for k in range(P):
            dn = max(dn, abs(d[k]))
        if dn == 0.0:
            status = -2  # stationary: the (penalty) subproblem cannot move, the constraint stays violated
            break
        # line search on the augmented Lagrangian (plus the box penalty in the penalty mode)
        L0 = _lagrangian(p, p0, Wd, lam, rho, c)
        slope = 0.0
        for k in range(P):
            slope += g[k] * d[k]
        if qp_mode == QP_PENALTY:
            for k in range(P):
                if p[k] < lo[k]:
                    L0 += 0.5 * box_mu * (lo[k] - p[k]) ** 2
                    slope -= box_mu * (lo[k] - p[k]) * d[k]
                elif p[k] > hi[k]:
                    L0 += 0.5 * box_mu * (p[k] - hi[k]) ** 2
                    slope += box_mu * (p[k] - hi[k]) * d[k]
        alpha = 1.0
        ok = False
        for ls in range(30):
            for k in range(P):
                pt[k] = p[k] + alpha * d[k]
            sf_constraint(pt, False, tan, elen, l0, Ks, Kb, Kt, lv, W0, JWv, GM, MT, dW, fg, S, cs, f, ct, J)
            Lt = _lagrangian(pt, p0, Wd, lam, rho, ct)
            if qp_mode == QP_PENALTY:
                for k in range(P):
                    if pt[k] < lo[k]:
                        Lt += 0.5 * box_mu * (lo[k] - pt[k]) ** 2
                    elif pt[k] > hi[k]:
                        Lt += 0.5 * box_mu * (pt[k] - hi[k]) ** 2
            if Lt <= L0 + 1e-4 * alpha * slope + 1e-13 * abs(L0):
                ok = True
                break
            alpha *= 0.5
        if not ok:
            status = -1
            break
        for k in range(P):
            p[k] = pt[k]
            dprev[k] = alpha * d[k]
        if update_dual:
            for r in range(m):
                lam[r] -= rho * ct[r]
    if status < 0:
        sf_constraint(p, False, tan, elen, l0, Ks, Kb, Kt, lv, W0, JWv, GM, MT, dW, fg, S, cs, f, c, J)
        res = _residual(c, inv_cw)
    stats[0] = it
    stats[2] = status
    stats[3] = res
    stats[6] = rho


@njit(**JIT)
def sf_geometry(q, tan, elen, a1, mref, W0, JWv, GM, MT):
    """Curvatures, their Jacobians, twists and twist gradients of every interior vertex at ``q``."""
    ne = tan.shape[0]
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    material_frames_q(q, tan, a1, m1, m2)
    w = np.empty(4)
    Jw = np.empty((4, 11))
    gm = np.empty(11)
    for i in range(1, ne):
        MT[i] = vertex_jacobians_call(q, tan, elen, m1, m2, mref, i, w, Jw, gm)
        for r in range(4):
            W0[i, r] = w[r]
            for cc in range(11):
                JWv[i, r, cc] = Jw[r, cc]
        for cc in range(11):
            GM[i, cc] = gm[cc]
