"""Phase (d) of the coupled DER step: the exact linearised projection of the inextensibility
constraints of rods joined by rigid bodies (Bergou et al. 2008, Sec. 8.1, with the
substructured solve of :mod:`rodlab.der.bodies`' module docstring: per-rod tridiagonal blocks
``T'``, a capacitance matrix over the welds, bodies moved rigidly by their exact displacement),
plus the per-rod work views and the weld placement the step's other phases share.

Split out of :mod:`rodlab.der.bodies` (which drives the step) to keep each file short; the
indexing and conventions are that module's.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry.rotations import quat_matrix_into, world_inverse_inertia
from ..geometry.rotations import quat_mul_scalar as _qmul
from ..geometry.rotations import quat_normalize_into as _normalize_into
from ..geometry.rotations import rotvec_to_quat_scalar as _rotvec_quat
from ..geometry._vec import JIT, JIT_INNER

from ..geometry.curves import compute_edges


@njit(**JIT_INNER)
def _work_views(m, w, r):
    vs, ve = m.rod_vertex_start[r], m.rod_vertex_start[r + 1]
    es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
    js, je = m.rod_joint_start[r], m.rod_joint_start[r + 1]
    nv, ne = ve - vs, ee - es
    v3 = w.vertex_v3[6 * vs:6 * ve].reshape((2, nv, 3))
    e3 = w.edge_e3[18 * es:18 * ee].reshape((6, ne, 3))
    s = w.edge_s[7 * es:7 * ee].reshape((7, ne))
    return vs, ve, es, ee, js, je, v3, e3, s, w.joint_kb[js:je], w.joint_omega[js:je]


@njit(**JIT)
def place_welded(bm, r, x, BX, BQ, Rm):
    """Put rod ``r``'s welded vertices at ``r_b + R(q_b) p_k`` (``x`` is the rod's slice)."""
    for wd in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
        b = bm.weld_body[wd]
        quat_matrix_into(BQ[b], Rm)
        j = bm.weld_edge[wd]
        for sl in range(2):
            k = j + sl
            for d in range(3):
                x[k, d] = (BX[b, d] + Rm[d, 0] * bm.weld_p[wd, 3 * sl] + Rm[d, 1] * bm.weld_p[wd, 3 * sl + 1]
                           + Rm[d, 2] * bm.weld_p[wd, 3 * sl + 2])


@njit(**JIT)
def _tri_factor(diag, lower, n):
    """In place ``L D L^T`` of a symmetric tridiagonal matrix (``lower[j]`` at (j + 1, j)):
    ``diag`` becomes ``D``, ``lower`` the unit lower factor's subdiagonal. Returns False at a
    pivot that is not positive (the matrix is not positive definite)."""
    for j in range(n):
        if j > 0:
            diag[j] -= lower[j - 1] * lower[j - 1] * diag[j - 1]
        if not diag[j] > 0.0:
            return False
        if j + 1 < n:
            lower[j] = lower[j] / diag[j]
    return True


@njit(**JIT)
def _tri_solve(d, l, n, rhs, unit, out):
    """Solve ``L D L^T out = rhs`` (factors of :func:`_tri_factor`); ``unit >= 0``: the right-hand
    side is the unit vector at row ``unit`` instead (``rhs`` unused)."""
    prev = 0.0
    for j in range(n):
        if unit >= 0:
            b = 1.0 if j == unit else 0.0
        else:
            b = rhs[j]
        prev = b - l[j - 1] * prev if j > 0 else b
        out[j] = prev
    for j in range(n - 1, -1, -1):
        out[j] = out[j] / d[j] - (l[j] * out[j + 1] if j + 1 < n else 0.0)


@njit(**JIT_INNER)
def _minv_u(bm, b, BQ, u, out):
    """``out = Mb^-1 u`` for body ``b`` (``Mb = diag(M Id, I_w)``); returns ``u . Mb^-1 u``."""
    Rm = np.empty((3, 3))
    Iw_inv = np.empty((3, 3))
    world_inverse_inertia(BQ[b], bm.body_inv_inertia[3 * b:3 * b + 3], Rm, Iw_inv)
    inv_m = 1.0 / bm.body_mass[b]
    q = 0.0
    for a in range(3):
        out[a] = inv_m * u[a]
        out[3 + a] = Iw_inv[a, 0] * u[3] + Iw_inv[a, 1] * u[4] + Iw_inv[a, 2] * u[5]
    for a in range(6):
        q += u[a] * out[a]
    return q


@njit(**JIT)
def _move_body(b, dq, BX, BQ):
    """Move body ``b`` by the generalized displacement ``dq`` (centre, then the exponential map
    of the rotation vector on the left, so it stays rigid)."""
    for d in range(3):
        BX[b, d] += dq[d]
    dq0, dq1, dq2, dq3 = _rotvec_quat(dq[3], dq[4], dq[5])
    q0, q1, q2, q3 = _qmul(dq0, dq1, dq2, dq3, BQ[b, 0], BQ[b, 1], BQ[b, 2], BQ[b, 3])
    BQ[b, 0] = q0
    BQ[b, 1] = q1
    BQ[b, 2] = q2
    BQ[b, 3] = q3
    _normalize_into(BQ[b])


@njit(**JIT_INNER)
def _body_velocity_add(bm, b, BQ, BV, BW, dq):
    """Add the generalized velocity ``dq = (dV, dw_world)`` to body ``b`` (angular velocity
    stored in body coordinates)."""
    Rm = np.empty((3, 3))
    quat_matrix_into(BQ[b], Rm)
    for d in range(3):
        BV[b, d] += dq[d]
    for d in range(3):
        BW[b, d] += Rm[0, d] * dq[3] + Rm[1, d] * dq[4] + Rm[2, d] * dq[5]


@njit(**JIT_INNER)
def _welded_velocities(bm, r, x, v, BX, BQ, BV, BW):
    """Rod ``r``'s welded vertices' velocities ``V_b + w x (x_k - r_b)`` (world frame)."""
    Rm = np.empty((3, 3))
    for wd in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
        b = bm.weld_body[wd]
        quat_matrix_into(BQ[b], Rm)
        w0 = Rm[0, 0] * BW[b, 0] + Rm[0, 1] * BW[b, 1] + Rm[0, 2] * BW[b, 2]
        w1 = Rm[1, 0] * BW[b, 0] + Rm[1, 1] * BW[b, 1] + Rm[1, 2] * BW[b, 2]
        w2 = Rm[2, 0] * BW[b, 0] + Rm[2, 1] * BW[b, 1] + Rm[2, 2] * BW[b, 2]
        j = bm.weld_edge[wd]
        for sl in range(2):
            k = j + sl
            r0, r1, r2 = x[k, 0] - BX[b, 0], x[k, 1] - BX[b, 1], x[k, 2] - BX[b, 2]
            v[k, 0] = BV[b, 0] + w1 * r2 - w2 * r1
            v[k, 1] = BV[b, 1] + w2 * r0 - w0 * r2
            v[k, 2] = BV[b, 2] + w0 * r1 - w1 * r0


@njit(**JIT_INNER)
def _rod_measure(m, w, bm, bw, r, it, solve, vel, X, V, BX, BQ, BV, BW):
    """One parallel visit of rod ``r`` per projection iteration (module docstring). For
    ``it > 0`` the previous iteration's ``dlam = y + sum_k Z_k w_k`` (multi-weld welds ``k``)
    moves the free vertices by ``-M^-1 J^T dlam`` and each single-weld body of the rod by
    ``-Mb^-1 u_k dlam_c``. Then welded vertices are placed, ``C`` and the violation measured
    (``bw.rod_viol[r]``; NaN if ``T'`` is not positive definite); with ``solve``, ``u_k`` of each
    weld, ``T'`` (``T`` plus ``u_k.Mb^-1 u_k`` on a single-weld contact row, ``delta_k`` on a
    multi-weld one) factored, ``y = T'^-1 C`` (the rod's ``s[6]``) and ``Z_k = T'^-1 e_c``.

    ``projection="symplectic"`` (``m.option_int[3]``), positions (``vel`` false): SHAKE, every
    correction along the gradients of the step's start (edges of ``x_old = v3[1]``, kept in
    ``e3[2]``, and levers from the bodies' start poses ``bw.body_old``); the matrix is the same
    Woodbury system built from those gradients (simplified Newton, as
    :func:`rodlab.der.projection.shake_projection`). ``vel`` true: RATTLE's velocity step, the same
    solve with ``C`` replaced by ``dC/dt`` (welded vertices moving with their bodies) at the
    current positions, applied to the velocities (``V``, ``BV``, ``BW``) instead of positions;
    it is linear, so one solve is exact."""
    vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
    x = X[vs:ve]
    ne = ee - es
    edges, d, l, C, y = e3[0], s[2], s[3], s[5], s[6]
    active = bw.edge_active[es:ee]
    rest = m.edge_rest_length[es:ee]
    im = m.vertex_inv_mass[vs:ve]
    ws, we = bm.rod_weld_start[r], bm.rod_weld_start[r + 1]
    mu = np.empty(6)
    shake = m.option_int[3] != 0 and not vel
    ge = e3[2] if shake else edges  # the gradients' edge vectors
    v = V[vs:ve]
    x_old = v3[1]
    if shake and it == 0:
        compute_edges(x_old, np.bool_(False), ge)
    if vel and it == 0:
        compute_edges(x, np.bool_(False), edges)
    if it > 0:
        for wd in range(ws, we):
            p = bm.weld_cap[wd]
            if p >= 0:
                a = bw.cap_w[p]
                zs = bm.weld_z_start[wd]
                for j in range(ne):
                    y[j] += a * bw.weld_z[zs + j]
        for j in range(ne):
            if not active[j]:
                continue
            lam = 2.0 * y[j]
            wa, wb = im[j] * lam, im[j + 1] * lam
            tgt = v if vel else x
            for dd in range(3):
                tgt[j, dd] += wa * ge[j, dd]
                tgt[j + 1, dd] -= wb * ge[j, dd]
        for wd in range(ws, we):
            b = bm.weld_body[wd]
            if bm.body_multi[b] == 0:
                _minv_u(bm, b, BQ, bw.weld_u[wd], mu)
                lam = y[bm.weld_row[wd]]
                for a in range(6):
                    mu[a] *= -lam
                if vel:
                    _body_velocity_add(bm, b, BQ, BV, BW, mu)
                else:
                    _move_body(b, mu, BX, BQ)
    viol = 0.0
    if vel:
        _welded_velocities(bm, r, x, v, BX, BQ, BV, BW)
        for j in range(ne):
            c = 2.0 * (edges[j, 0] * (v[j + 1, 0] - v[j, 0]) + edges[j, 1] * (v[j + 1, 1] - v[j, 1])
                       + edges[j, 2] * (v[j + 1, 2] - v[j, 2]))
            C[j] = c if active[j] else 0.0
            viol = max(viol, abs(C[j]) / (rest[j] * rest[j]))
    else:
        place_welded(bm, r, x, BX, BQ, np.empty((3, 3)))
        compute_edges(x, np.bool_(False), edges)  # not a literal: see rodlab.der.batch, "Compile time"
        for j in range(ne):
            c = edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2 - rest[j] ** 2
            C[j] = c if active[j] else 0.0
            viol = max(viol, abs(C[j]) / (rest[j] * rest[j]))
    bw.rod_viol[r] = viol
    if not solve:
        return
    for j in range(ne):
        if active[j]:
            d[j] = 4.0 * (im[j] + im[j + 1]) * (ge[j, 0] ** 2 + ge[j, 1] ** 2 + ge[j, 2] ** 2)
            if j + 1 < ne and active[j + 1]:
                l[j] = -4.0 * im[j + 1] * (ge[j, 0] * ge[j + 1, 0] + ge[j, 1] * ge[j + 1, 1]
                                           + ge[j, 2] * ge[j + 1, 2])
            else:
                l[j] = 0.0
        else:
            d[j] = 1.0
            l[j] = 0.0
    for wd in range(ws, we):
        c = bm.weld_row[wd]
        b = bm.weld_body[wd]
        k = bm.weld_vertex[wd]
        if shake:
            r0, r1, r2 = x_old[k, 0] - bw.body_old[b, 0], x_old[k, 1] - bw.body_old[b, 1], x_old[k, 2] - bw.body_old[b, 2]
        else:
            r0, r1, r2 = x[k, 0] - BX[b, 0], x[k, 1] - BX[b, 1], x[k, 2] - BX[b, 2]
        sg = 2.0 * bm.weld_sign[wd]
        e0, e1, e2 = ge[c, 0], ge[c, 1], ge[c, 2]
        u = bw.weld_u[wd]
        u[0] = sg * e0
        u[1] = sg * e1
        u[2] = sg * e2
        u[3] = sg * (r1 * e2 - r2 * e1)
        u[4] = sg * (r2 * e0 - r0 * e2)
        u[5] = sg * (r0 * e1 - r1 * e0)
        wkk = _minv_u(bm, b, BQ, u, mu)
        if bm.body_multi[b] == 0:
            d[c] += wkk
        else:  # delta_k = 2 n_b W_kk
            d[c] += 2.0 * (bm.body_weld_start[b + 1] - bm.body_weld_start[b]) * wkk
    if not _tri_factor(d, l, ne):
        bw.rod_viol[r] = math.nan
        return
    _tri_solve(d, l, ne, C, np.int64(-1), y)
    for wd in range(ws, we):
        if bm.weld_cap[wd] >= 0:
            zs = bm.weld_z_start[wd]
            _tri_solve(d, l, ne, C, bm.weld_row[wd], bw.weld_z[zs:zs + ne])


@njit(**JIT_INNER)
def _cap_slot(bm, n, i, j):
    """Index in ``cap_val`` of ``H[i, j]`` (positions, ``i >= j``); -1 outside the pattern."""
    if i == j:
        return i
    for q in range(bm.cap_pattern_start[j], bm.cap_pattern_start[j + 1]):
        if bm.cap_pattern[q] == i:
            return n + q
    return -1


@njit(**JIT_INNER)
def _bodies_solve(m, w, bm, bw, vel, BX, BQ, BV, BW):
    """The capacitance step of the projection (module docstring) for every iterating group:
    ``P_b^-1 = (Delta_b - W_b)^-1`` per multi-weld body, ``H = P^-1 - V^T T'^-1 V``,
    ``H w = V^T T'^-1 C`` by sparse Cholesky in the setup's elimination order, and the multi-weld
    bodies moved by ``-Mb^-1 U_b^T dlam_c`` with ``dlam_c = P_b^-1 w_b`` (``vel``: their velocities
    changed by it). False if a matrix is not positive definite."""
    n = bm.cap_weld.shape[0]
    H, wv = bw.cap_val, bw.cap_w
    mu = np.empty(6)
    for p in range(n):
        if bw.comp_state[bm.body_comp[bm.weld_body[bm.cap_weld[p]]]] == 0:
            continue
        H[p] = 0.0
        wv[p] = 0.0
        for q in range(bm.cap_pattern_start[p], bm.cap_pattern_start[p + 1]):
            H[n + q] = 0.0
    for b in range(bm.body_mass.shape[0]):
        if bm.body_multi[b] == 0 or bw.comp_state[bm.body_comp[b]] == 0:
            continue
        k0, k1 = bm.body_weld_start[b], bm.body_weld_start[b + 1]
        nb = k1 - k0
        P = bw.body_pinv[bm.body_sq_start[b]:bm.body_sq_start[b + 1]].reshape((nb, nb))
        for a in range(nb):
            wkk = _minv_u(bm, b, BQ, bw.weld_u[bm.body_weld[k0 + a]], mu)
            for c in range(nb):
                t = 0.0
                for e in range(6):
                    t += bw.weld_u[bm.body_weld[k0 + c], e] * mu[e]
                P[a, c] = -t
            P[a, a] += 2.0 * nb * wkk
        Pi = np.linalg.inv(P)
        P[:, :] = Pi
        for a in range(nb):
            for c in range(nb):
                i, j = bm.weld_cap[bm.body_weld[k0 + a]], bm.weld_cap[bm.body_weld[k0 + c]]
                if i >= j:
                    H[_cap_slot(bm, n, i, j)] += P[a, c]
    for r in range(bm.rod_coupled.shape[0]):
        cp = bm.rod_comp[r]
        if cp < 0 or bw.comp_state[cp] == 0:
            continue
        es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
        ybase = 7 * es + 6 * (ee - es)  # the rod's s[6] = T'^-1 C
        for k in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
            i = bm.weld_cap[k]
            if i < 0:
                continue
            wv[i] += w.edge_s[ybase + bm.weld_row[k]]
            for l in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
                j = bm.weld_cap[l]
                if j >= 0 and i >= j:
                    H[_cap_slot(bm, n, i, j)] -= bw.weld_z[bm.weld_z_start[l] + bm.weld_row[k]]
    # sparse Cholesky H = L L^T (no fill outside the setup's pattern), forward substitution
    for p in range(n):
        if bw.comp_state[bm.body_comp[bm.weld_body[bm.cap_weld[p]]]] == 0:
            continue
        if not H[p] > 0.0:
            return False
        lp = math.sqrt(H[p])
        H[p] = lp
        q0, q1 = bm.cap_pattern_start[p], bm.cap_pattern_start[p + 1]
        for q in range(q0, q1):
            H[n + q] /= lp
        for qa in range(q0, q1):
            i = bm.cap_pattern[qa]
            for qb in range(q0, q1):
                j = bm.cap_pattern[qb]
                if j <= i:
                    H[_cap_slot(bm, n, i, j)] -= H[n + qa] * H[n + qb]
        wv[p] /= lp
        for q in range(q0, q1):
            wv[bm.cap_pattern[q]] -= H[n + q] * wv[p]
    for p in range(n - 1, -1, -1):
        if bw.comp_state[bm.body_comp[bm.weld_body[bm.cap_weld[p]]]] == 0:
            continue
        t = wv[p]
        for q in range(bm.cap_pattern_start[p], bm.cap_pattern_start[p + 1]):
            t -= H[n + q] * wv[bm.cap_pattern[q]]
        wv[p] = t / H[p]
    dq = np.empty(6)
    for b in range(bm.body_mass.shape[0]):
        if bm.body_multi[b] == 0 or bw.comp_state[bm.body_comp[b]] == 0:
            continue
        k0, k1 = bm.body_weld_start[b], bm.body_weld_start[b + 1]
        nb = k1 - k0
        P = bw.body_pinv[bm.body_sq_start[b]:bm.body_sq_start[b + 1]].reshape((nb, nb))
        dq[:] = 0.0
        for a in range(nb):
            lam = 0.0
            for c in range(nb):
                lam += P[a, c] * wv[bm.weld_cap[bm.body_weld[k0 + c]]]
            for e in range(6):
                dq[e] += bw.weld_u[bm.body_weld[k0 + a], e] * lam
        _minv_u(bm, b, BQ, dq.copy(), dq)
        for e in range(6):
            dq[e] = -dq[e]
        if vel:
            _body_velocity_add(bm, b, BQ, BV, BW, dq)
        else:
            _move_body(b, dq, BX, BQ)
    return True
