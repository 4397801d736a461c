"""Compiled kernels of rod / rigid-body coupling (Bergou et al. 2008, Sec. 8, 8.1, 8.2).

Each rigid body ``b`` is welded to one end edge of the rod: the edge's two vertices are
``x_k = r_b + R(q_b) p_k`` with body-frame offsets ``p_k`` (Sec. 8, the weld constraints
``q x_k^0 q* + r - x_k = 0``), and the edge's material director is ``m1 = R(q_b) m1^0``.
We eliminate the weld constraints instead of projecting them: the two welded vertices are
*computed* from the body pose, so they hold exactly (to round-off) at every step. The
remaining inextensibility constraints are projected by fast projection in the generalized
mass metric of Sec. 8.1 (rod masses, body mass ``M`` and world inertia ``I_w = R I R^T``):
a welded vertex moved by a generalized force ``f`` moves by ``W f`` with

    W = (1/M) Id - [rho] I_w^-1 [rho],     rho = x_k - r_b

(translation ``f / M`` plus rotation ``I_w^-1 (rho x f)`` about the centre of mass).
The twist torque ``-dE/dtheta_w t_w`` (Sec. 8.2) is transferred explicitly each step.

Indexing follows ``rodlab.der.kernels`` (joint ``k`` joins edges ``k`` and ``k + 1``).
Quaternions are (w, x, y, z); body angular velocities are stored in the body frame.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..der import kernels as K
from ..geometry._vec import JIT
from ..geometry.curves import compute_edges


# --------------------------------------------------------------------------------------------
# small quaternion / matrix helpers (scalar code, no allocation)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def quat_matrix_into(q, R):
    """Rotation matrix of unit quaternion ``q`` into ``R`` (3, 3)."""
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
def _rotvec_quat(a0, a1, a2):
    """Unit quaternion ``exp(a / 2)`` of rotation vector ``a`` (series below 1e-4 rad)."""
    t2 = a0 * a0 + a1 * a1 + a2 * a2
    if t2 < 1e-8:
        s = 0.5 - t2 / 48.0
        c = 1.0 - t2 / 8.0 + t2 * t2 / 384.0
    else:
        t = math.sqrt(t2)
        s = math.sin(0.5 * t) / t
        c = math.cos(0.5 * t)
    return c, s * a0, s * a1, s * a2


@njit(**JIT)
def _qmul(p0, p1, p2, p3, q0, q1, q2, q3):
    return (p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
            p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
            p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
            p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0)


@njit(**JIT)
def _quat_log(q0, q1, q2, q3):
    """Rotation vector of a unit quaternion (the shorter of ``q`` and ``-q``)."""
    if q0 < 0.0:
        q0, q1, q2, q3 = -q0, -q1, -q2, -q3
    s = math.sqrt(q1 * q1 + q2 * q2 + q3 * q3)
    if s < 1e-4:
        r2 = s * s / (q0 * q0)
        scale = 2.0 / q0 * (1.0 - r2 / 3.0 + r2 * r2 / 5.0)
    else:
        scale = 2.0 * math.atan2(s, q0) / s
    return scale * q1, scale * q2, scale * q3


@njit(**JIT)
def _normalize_into(q):
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for i in range(4):
        q[i] /= n


@njit(**JIT)
def place_body_vertices(x, b_r, b_q, b_p, b_vidx, R):
    """``x_k = r + R(q) p_k`` for each body's two welded vertices (the weld, Sec. 8)."""
    for b in range(b_r.shape[0]):
        quat_matrix_into(b_q[b], R)
        for s in range(2):
            k = b_vidx[b, s]
            for d in range(3):
                x[k, d] = b_r[b, d] + R[d, 0] * b_p[b, s, 0] + R[d, 1] * b_p[b, s, 1] + R[d, 2] * b_p[b, s, 2]


@njit(**JIT)
def body_directors(b_q, b_m1, out):
    """World material director ``m1 = q m1^0 q*`` of each welded edge (Sec. 8.1, last line)."""
    R = np.empty((3, 3))
    for b in range(b_q.shape[0]):
        quat_matrix_into(b_q[b], R)
        for d in range(3):
            out[b, d] = R[d, 0] * b_m1[b, 0] + R[d, 1] * b_m1[b, 1] + R[d, 2] * b_m1[b, 2]


@njit(**JIT)
def world_inverse_inertia(q, I_inv_body, R, out):
    """``I_w^-1 = R I^-1 R^T``."""
    quat_matrix_into(q, R)
    for i in range(3):
        for j in range(3):
            s = 0.0
            for a in range(3):
                for c in range(3):
                    s += R[i, a] * I_inv_body[a, c] * R[j, c]
            out[i, j] = s


@njit(**JIT)
def _apply_W(inv_m, Iw_inv, rho, f, out):
    """``out = W f = f / M - rho x (I_w^-1 (rho x f))``: displacement of a welded vertex under a
    generalized force ``f`` applied at it (the body's effective inverse mass, Sec. 8.1 metric)."""
    c0 = rho[1] * f[2] - rho[2] * f[1]
    c1 = rho[2] * f[0] - rho[0] * f[2]
    c2 = rho[0] * f[1] - rho[1] * f[0]
    a0 = Iw_inv[0, 0] * c0 + Iw_inv[0, 1] * c1 + Iw_inv[0, 2] * c2
    a1 = Iw_inv[1, 0] * c0 + Iw_inv[1, 1] * c1 + Iw_inv[1, 2] * c2
    a2 = Iw_inv[2, 0] * c0 + Iw_inv[2, 1] * c1 + Iw_inv[2, 2] * c2
    out[0] = inv_m * f[0] + (a1 * rho[2] - a2 * rho[1])
    out[1] = inv_m * f[1] + (a2 * rho[0] - a0 * rho[2])
    out[2] = inv_m * f[2] + (a0 * rho[1] - a1 * rho[0])


# --------------------------------------------------------------------------------------------
# fast projection in the generalized mass metric (Sec. 8.1)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def _apply_multipliers(x, directions, x_ref, r_ref, dlam, active, vbody, inv_mass, b_inv_mass, b_Iinv, b_r, b_q, b_p,
                       b_vidx, R, Iw_inv, b_force, b_torque, rho, g, wb):
    """Move rod vertices and bodies by ``-M^-1 grad C^T dlam``: the constraint gradient of edge j
    is ``2 d_j`` on its far vertex and ``-2 d_j`` on its near one (``d = directions``); a welded
    vertex passes its share to its body as a force and a torque about ``r_ref`` (lever arms from
    ``x_ref``), and the bodies then carry their vertices."""
    nb = b_r.shape[0]
    ne = directions.shape[0]
    for bb in range(nb):
        for d in range(3):
            b_force[bb, d] = 0.0
            b_torque[bb, d] = 0.0
    for j in range(ne):
        if not active[j]:
            continue
        lam = 2.0 * dlam[j]
        for d in range(3):
            g[d] = lam * directions[j, d]
        for side in range(2):
            v = j + 1 if side == 0 else j
            sign = -1.0 if side == 0 else 1.0
            if vbody[v] >= 0:
                bb = vbody[v]
                for d in range(3):
                    rho[d] = x_ref[v, d] - r_ref[bb, d]
                b_force[bb, 0] += sign * g[0]
                b_force[bb, 1] += sign * g[1]
                b_force[bb, 2] += sign * g[2]
                b_torque[bb, 0] += sign * (rho[1] * g[2] - rho[2] * g[1])
                b_torque[bb, 1] += sign * (rho[2] * g[0] - rho[0] * g[2])
                b_torque[bb, 2] += sign * (rho[0] * g[1] - rho[1] * g[0])
            elif inv_mass[v] > 0.0:
                for d in range(3):
                    x[v, d] += sign * inv_mass[v] * g[d]
    for bb in range(nb):
        world_inverse_inertia(b_q[bb], b_Iinv[bb], R, Iw_inv)
        for d in range(3):
            b_r[bb, d] += b_inv_mass[bb] * b_force[bb, d]
            wb[d] = Iw_inv[d, 0] * b_torque[bb, 0] + Iw_inv[d, 1] * b_torque[bb, 1] + Iw_inv[d, 2] * b_torque[bb, 2]
        dq0, dq1, dq2, dq3 = _rotvec_quat(wb[0], wb[1], wb[2])
        q0, q1, q2, q3 = _qmul(dq0, dq1, dq2, dq3, b_q[bb, 0], b_q[bb, 1], b_q[bb, 2], b_q[bb, 3])
        b_q[bb, 0] = q0
        b_q[bb, 1] = q1
        b_q[bb, 2] = q2
        b_q[bb, 3] = q3
        _normalize_into(b_q[bb])
    place_body_vertices(x, b_r, b_q, b_p, b_vidx, R)


@njit(**JIT)
def coupled_projection(x, inv_mass, vbody, rest_lengths, b_inv_mass, b_Iinv, b_r, b_q, b_p, b_vidx,
                       tol, max_iter, edges, a_diag, a_lower, rhs, active, dlam, Iw_inv, R, b_force, b_torque):
    """Project onto ``C_j = e_j . e_j - ebar_j^2 = 0`` with bodies in the generalized metric.

    Goldenthal et al. 2007 fast projection extended as in Bergou 2008, Sec. 8.1: each
    iteration solves ``(grad C  M~^-1  grad C^T) dlam = C`` and moves every unknown by
    ``-M~^-1 grad C^T dlam``. Rod vertex ``i`` has inverse mass ``inv_mass[i]`` (0 = held);
    a welded vertex (``vbody[i] >= 0``) belongs to a body with metric ``M Id`` and ``I_w``:
    its generalized force moves the body's centre by ``f / M`` and turns it by
    ``I_w^-1 (rho x f)`` (applied through the exponential map so the body stays rigid).
    An edge whose two vertices are both held or both on one body carries no constraint.
    With bodies on end edges the system stays tridiagonal (each body touches one constraint).
    Returns ``(iterations, final max |C_j| / ebar_j^2)``.
    """
    nv = x.shape[0]
    ne = rest_lengths.shape[0]
    nb = b_r.shape[0]
    wa = np.empty(3)
    wb = np.empty(3)
    g = np.empty(3)
    rho = np.empty(3)
    for j in range(ne):
        a = j
        b = j + 1
        rigid_pair = vbody[a] >= 0 and vbody[a] == vbody[b]
        held = inv_mass[a] == 0.0 and inv_mass[b] == 0.0 and vbody[a] < 0 and vbody[b] < 0
        active[j] = not (rigid_pair or held)
    viol = 0.0
    for it in range(max_iter + 1):
        compute_edges(x, False, edges)
        viol = 0.0
        for j in range(ne):
            c = edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2 - rest_lengths[j] ** 2
            rhs[j] = c if active[j] else 0.0
            viol = max(viol, abs(rhs[j]) / (rest_lengths[j] * rest_lengths[j]))
        if viol <= tol or it == max_iter:
            return it, viol
        # matrix A = grad C M~^-1 grad C^T (tridiagonal)
        for j in range(ne):
            a = j
            b = j + 1
            ee = edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2
            if not active[j]:
                a_diag[j] = 1.0
                a_lower[j] = 0.0
                continue
            s = 0.0
            for v in (a, b):
                if vbody[v] >= 0:
                    bb = vbody[v]
                    world_inverse_inertia(b_q[bb], b_Iinv[bb], R, Iw_inv)
                    for d in range(3):
                        rho[d] = x[v, d] - b_r[bb, d]
                    _apply_W(b_inv_mass[bb], Iw_inv, rho, edges[j], wa)
                    s += edges[j, 0] * wa[0] + edges[j, 1] * wa[1] + edges[j, 2] * wa[2]
                else:
                    s += inv_mass[v] * ee
            a_diag[j] = 4.0 * s
            if j + 1 < ne and active[j + 1]:
                dot = edges[j, 0] * edges[j + 1, 0] + edges[j, 1] * edges[j + 1, 1] + edges[j, 2] * edges[j + 1, 2]
                if vbody[b] >= 0:
                    bb = vbody[b]
                    world_inverse_inertia(b_q[bb], b_Iinv[bb], R, Iw_inv)
                    for d in range(3):
                        rho[d] = x[b, d] - b_r[bb, d]
                    _apply_W(b_inv_mass[bb], Iw_inv, rho, edges[j + 1], wa)
                    dot = edges[j, 0] * wa[0] + edges[j, 1] * wa[1] + edges[j, 2] * wa[2]
                    a_lower[j] = -4.0 * dot
                else:
                    a_lower[j] = -4.0 * inv_mass[b] * dot
            else:
                a_lower[j] = 0.0
        K.solve_tridiagonal_masked(a_diag, a_lower, rhs, active, False, dlam)
        _apply_multipliers(x, edges, x, b_r, dlam, active, vbody, inv_mass, b_inv_mass, b_Iinv, b_r, b_q, b_p, b_vidx,
                           R, Iw_inv, b_force, b_torque, rho, g, wb)
    return max_iter, viol


@njit(**JIT)
def _solve_tridiag_general(lower, diag, upper, rhs, active, out):
    """Thomas algorithm for a general (non-symmetric) tridiagonal system; inactive unknowns get 0.
    ``lower[j]`` couples row j + 1 to unknown j, ``upper[j]`` row j to unknown j + 1."""
    n = diag.shape[0]
    cp = np.empty(n)
    dp = np.empty(n)
    for i in range(n):
        out[i] = 0.0
    i = 0
    while i < n:
        if not active[i]:
            i += 1
            continue
        start = i
        while i < n and active[i]:
            i += 1
        stop = i
        b = diag[start]
        if b == 0.0:
            raise ValueError("singular projection matrix")
        cp[start] = upper[start] / b
        dp[start] = rhs[start] / b
        for r in range(start + 1, stop):
            a = lower[r - 1]
            b = diag[r] - a * cp[r - 1]
            if b == 0.0:
                raise ValueError("singular projection matrix")
            cp[r] = upper[r] / b
            dp[r] = (rhs[r] - a * dp[r - 1]) / b
        out[stop - 1] = dp[stop - 1]
        for r in range(stop - 2, start - 1, -1):
            out[r] = dp[r] - cp[r] * out[r + 1]


@njit(**JIT)
def shake_projection(x, x0, r0, inv_mass, vbody, rest_lengths, b_inv_mass, b_Iinv, b_r, b_q, b_p, b_vidx,
                     tol, max_iter, edges, edges0, a_diag, a_lower, a_upper, rhs, active, dlam, Iw_inv, R,
                     b_force, b_torque):
    """SHAKE-type projection (Ryckaert et al. 1977): like :func:`coupled_projection`, but every
    correction moves along the constraint gradients of the step's *start* ``x0`` (levers
    ``x0_k - r0`` for welded vertices): ``y = y~ - M~^-1 grad C(y0)^T mu`` with ``mu`` such that
    ``C(y) = 0`` (quasi-Newton on ``mu``; the matrix ``grad C(y) M~^-1 grad C(y0)^T`` is
    tridiagonal but not symmetric). With symplectic Euler this is the constrained leapfrog,
    which does not dissipate energy the way closest-point projection does.
    Returns ``(iterations, final max |C_j| / ebar_j^2)``.
    """
    ne = rest_lengths.shape[0]
    nb = b_r.shape[0]
    wa = np.empty(3)
    wb = np.empty(3)
    g = np.empty(3)
    rho = np.empty(3)
    rho0 = np.empty(3)
    for j in range(ne):
        a = j
        b = j + 1
        rigid_pair = vbody[a] >= 0 and vbody[a] == vbody[b]
        held = inv_mass[a] == 0.0 and inv_mass[b] == 0.0 and vbody[a] < 0 and vbody[b] < 0
        active[j] = not (rigid_pair or held)
    compute_edges(x0, False, edges0)
    viol = 0.0
    for it in range(max_iter + 1):
        compute_edges(x, False, edges)
        viol = 0.0
        for j in range(ne):
            c = edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2 - rest_lengths[j] ** 2
            rhs[j] = c if active[j] else 0.0
            viol = max(viol, abs(rhs[j]) / (rest_lengths[j] * rest_lengths[j]))
        if viol <= tol or it == max_iter:
            return it, viol
        for j in range(ne):
            a = j
            b = j + 1
            if not active[j]:
                a_diag[j] = 1.0
                a_lower[j] = 0.0
                a_upper[j] = 0.0
                continue
            s = 0.0
            for v in (a, b):
                if vbody[v] >= 0:
                    bb = vbody[v]
                    world_inverse_inertia(b_q[bb], b_Iinv[bb], R, Iw_inv)
                    for d in range(3):
                        rho[d] = x0[v, d] - r0[bb, d]
                    _apply_W(b_inv_mass[bb], Iw_inv, rho, edges0[j], wa)
                    s += edges[j, 0] * wa[0] + edges[j, 1] * wa[1] + edges[j, 2] * wa[2]
                else:
                    s += inv_mass[v] * (edges[j, 0] * edges0[j, 0] + edges[j, 1] * edges0[j, 1] + edges[j, 2] * edges0[j, 2])
            a_diag[j] = 4.0 * s
            a_lower[j] = 0.0
            a_upper[j] = 0.0
            if j + 1 < ne and active[j + 1]:
                # shared vertex b: row j (edge j, dC_j/dx_b = +2 e_j) with unknown j + 1
                # (moves x_b by +M^-1 2 e0_{j+1}); row j + 1 (dC_{j+1}/dx_b = -2 e_{j+1}) with unknown j
                if vbody[b] >= 0:
                    bb = vbody[b]
                    world_inverse_inertia(b_q[bb], b_Iinv[bb], R, Iw_inv)
                    for d in range(3):
                        rho[d] = x0[b, d] - r0[bb, d]
                    _apply_W(b_inv_mass[bb], Iw_inv, rho, edges0[j + 1], wa)
                    a_upper[j] = -4.0 * (edges[j, 0] * wa[0] + edges[j, 1] * wa[1] + edges[j, 2] * wa[2])
                    _apply_W(b_inv_mass[bb], Iw_inv, rho, edges0[j], wb)
                    a_lower[j] = -4.0 * (edges[j + 1, 0] * wb[0] + edges[j + 1, 1] * wb[1] + edges[j + 1, 2] * wb[2])
                else:
                    a_upper[j] = -4.0 * inv_mass[b] * (edges[j, 0] * edges0[j + 1, 0] + edges[j, 1] * edges0[j + 1, 1] + edges[j, 2] * edges0[j + 1, 2])
                    a_lower[j] = -4.0 * inv_mass[b] * (edges[j + 1, 0] * edges0[j, 0] + edges[j + 1, 1] * edges0[j, 1] + edges[j + 1, 2] * edges0[j, 2])
        _solve_tridiag_general(a_lower, a_diag, a_upper, rhs, active, dlam)
        _apply_multipliers(x, edges0, x0, r0, dlam, active, vbody, inv_mass, b_inv_mass, b_Iinv, b_r, b_q, b_p, b_vidx,
                           R, Iw_inv, b_force, b_torque, rho0, g, wb)
    return max_iter, viol



@njit(**JIT)
def rod_wrench_on_bodies(x, forces, grad, tangents, b_r, b_vidx, b_edge, out_force, out_torque):
    """Force and torque (world, about the centre of mass) of the rod on each body.

    ``forces = -dE/dx`` at held angles on the welded vertices, plus the explicit twist torque
    of Sec. 8.2: turning the body by ``dphi`` turns the welded material frame by ``dphi`` but its
    time-parallel reference frame only by the part normal to the edge, so
    ``dtheta_w = dphi . t_w`` and the torque is ``-(dE/dtheta_w) t_w``
    (``|tau| = dE/dtheta_0``; ``grad = dE/dtheta``, Eq. 7).
    """
    for b in range(b_r.shape[0]):
        for d in range(3):
            out_force[b, d] = 0.0
            out_torque[b, d] = 0.0
        for sl in range(2):
            k = b_vidx[b, sl]
            r0 = x[k, 0] - b_r[b, 0]
            r1 = x[k, 1] - b_r[b, 1]
            r2 = x[k, 2] - b_r[b, 2]
            f0, f1, f2 = forces[k, 0], forces[k, 1], forces[k, 2]
            out_force[b, 0] += f0
            out_force[b, 1] += f1
            out_force[b, 2] += f2
            out_torque[b, 0] += r1 * f2 - r2 * f1
            out_torque[b, 1] += r2 * f0 - r0 * f2
            out_torque[b, 2] += r0 * f1 - r1 * f0
        j = b_edge[b]
        gt = grad[j]
        for d in range(3):
            out_torque[b, d] -= gt * tangents[j, d]


# --------------------------------------------------------------------------------------------
# the coupled time step (Bergou 2008, Algorithm 1 with steps 4, 5 and 8)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def run_coupled_steps(nsteps, h, uniform, x, v, theta, ref_d1, ref_twist, inv_mass, vbody, gravity, damping,
                      clamp_edges, clamp_m1, free_theta, rest_lengths, lbar, omega_bar, bend_k, twist_bar,
                      twist_k, stretch_k, b_mass, b_I, b_Iinv, b_r, b_q, b_V, b_w, b_p, b_vidx, b_edge, b_m1,
                      b_slot, b_damping, proj_tol, proj_max_iter, twist_tol, twist_max_iter,
                      work_v3, work_e3, work_s, kb, omega, diag, shake):
    """Advance ``nsteps`` coupled steps. Per step (Algorithm 1 of Bergou 2008):

    1. forces ``F = -dE/dx`` at the quasistatic twist (Sec. 7.1) and ``dE/dtheta`` (Eq. 7);
    2. each body: force ``sum F_k + M g`` and torque ``sum rho_k x F_k - (dE/dtheta_w) t_w``
       over its welded vertices (the explicit torque transfer of Sec. 8.2); symplectic Euler
       ``V += h F / M``, ``w += h I^-1 (tau_b - w x I w)`` (body frame, gyroscopic term),
       ``r += h V``, ``q <- q exp(h w / 2)``, renormalised; welded vertices placed;
    3. rod vertices: ``v += h (F / m + g)`` (implicit damping), ``x += h v``;
    4. fast projection in the generalized metric (Sec. 8.1, ``coupled_projection``);
    5. velocity update from positions: ``v = (x - x0)/h``, ``V = (r - r0)/h``,
       ``w = log(q0* q) / h``;
    6. frames transported in time, clamped/welded material angles set (welds from
       ``q m1^0 q*``), twist re-equilibrated.

    Returns the number of completed steps (fewer if the state became non-finite).
    """
    nv = x.shape[0]
    ne = theta.shape[0]
    nb = b_r.shape[0]
    forces = work_v3[0]
    x_old = work_v3[1]
    edges = work_e3[0]
    tangents = work_e3[1]
    ref_d2 = work_e3[3]
    m1 = work_e3[4]
    m2 = work_e3[5]
    lengths = work_s[0]
    grad = work_s[1]
    h_diag = work_s[2]
    h_lower = work_s[3]
    step = work_s[4]
    rhs = work_s[5]
    dlam = work_s[6]
    active = np.empty(ne, dtype=np.bool_)
    edges0 = np.empty((ne, 3))
    R = np.empty((3, 3))
    Iw_inv = np.empty((3, 3))
    r_old = np.empty((nb, 3))
    q_old = np.empty((nb, 4))
    b_force = np.empty((nb, 3))
    b_torque = np.empty((nb, 3))
    dirs = np.empty((nb, 3))
    tau_b = np.empty(3)
    Iw = np.empty(3)
    damp = 1.0 / (1.0 + h * damping)
    bdamp = 1.0 / (1.0 + h * b_damping)
    inv_h = 1.0 / h
    done = 0
    for s in range(nsteps):
        K.elastic_forces(kb, tangents, lengths, rest_lengths, ref_d1, ref_d2, theta, ref_twist, lbar,
                         omega_bar, bend_k, twist_bar, twist_k, stretch_k, m1, m2, omega, forces)
        K.twist_gradient_hessian(kb, ref_d1, ref_d2, theta, ref_twist, lbar, omega_bar, bend_k, twist_bar,
                                 twist_k, m1, m2, omega, grad, h_diag, h_lower)
        # ---- bodies: explicit forces and torque transfer, symplectic Euler (steps 4, 5)
        rod_wrench_on_bodies(x, forces, grad, tangents, b_r, b_vidx, b_edge, b_force, b_torque)
        for b in range(nb):
            r_old[b] = b_r[b]
            q_old[b] = b_q[b]
            for d in range(3):
                b_force[b, d] += b_mass[b] * gravity[d]
            quat_matrix_into(b_q[b], R)
            # torque in the body frame: R^T tau
            for d in range(3):
                tau_b[d] = R[0, d] * b_torque[b, 0] + R[1, d] * b_torque[b, 1] + R[2, d] * b_torque[b, 2]
            for d in range(3):
                Iw[d] = b_I[b, d, 0] * b_w[b, 0] + b_I[b, d, 1] * b_w[b, 1] + b_I[b, d, 2] * b_w[b, 2]
            # gyroscopic term: tau - w x (I w)
            tau_b[0] -= b_w[b, 1] * Iw[2] - b_w[b, 2] * Iw[1]
            tau_b[1] -= b_w[b, 2] * Iw[0] - b_w[b, 0] * Iw[2]
            tau_b[2] -= b_w[b, 0] * Iw[1] - b_w[b, 1] * Iw[0]
            for d in range(3):
                acc = b_Iinv[b, d, 0] * tau_b[0] + b_Iinv[b, d, 1] * tau_b[1] + b_Iinv[b, d, 2] * tau_b[2]
                Iw[d] = (b_w[b, d] + h * acc) * bdamp
            for d in range(3):
                b_w[b, d] = Iw[d]
                b_V[b, d] = (b_V[b, d] + h * b_force[b, d] / b_mass[b]) * bdamp
                b_r[b, d] += h * b_V[b, d]
            dq0, dq1, dq2, dq3 = _rotvec_quat(h * b_w[b, 0], h * b_w[b, 1], h * b_w[b, 2])
            q0, q1, q2, q3 = _qmul(b_q[b, 0], b_q[b, 1], b_q[b, 2], b_q[b, 3], dq0, dq1, dq2, dq3)
            b_q[b, 0] = q0
            b_q[b, 1] = q1
            b_q[b, 2] = q2
            b_q[b, 3] = q3
            _normalize_into(b_q[b])
        # ---- rod vertices (step 7)
        for i in range(nv):
            for d in range(3):
                x_old[i, d] = x[i, d]
                if inv_mass[i] > 0.0:
                    v[i, d] = (v[i, d] + h * (inv_mass[i] * forces[i, d] + gravity[d])) * damp
                    x[i, d] += h * v[i, d]
        place_body_vertices(x, b_r, b_q, b_p, b_vidx, R)
        # ---- inextensibility + coupling (step 8)
        if shake:
            it, viol = shake_projection(x, x_old, r_old, inv_mass, vbody, rest_lengths, 1.0 / b_mass, b_Iinv, b_r, b_q,
                                        b_p, b_vidx, proj_tol, proj_max_iter, edges, edges0, h_diag, h_lower, step,
                                        rhs, active, dlam, Iw_inv, R, b_force, b_torque)
        else:
            it, viol = coupled_projection(x, inv_mass, vbody, rest_lengths, 1.0 / b_mass, b_Iinv, b_r, b_q, b_p, b_vidx,
                                          proj_tol, proj_max_iter, edges, h_diag, h_lower, rhs, active, dlam,
                                          Iw_inv, R, b_force, b_torque)
        diag[0] = max(diag[0], it)
        diag[1] = max(diag[1], viol)
        finite = True
        for i in range(nv):
            for d in range(3):
                if not math.isfinite(x[i, d]):
                    finite = False
        if not finite:
            return done
        # ---- velocity update (Sec. 8.1)
        for i in range(nv):
            for d in range(3):
                v[i, d] = (x[i, d] - x_old[i, d]) * inv_h
        for b in range(nb):
            for d in range(3):
                b_V[b, d] = (b_r[b, d] - r_old[b, d]) * inv_h
            p0, p1, p2, p3 = _qmul(q_old[b, 0], -q_old[b, 1], -q_old[b, 2], -q_old[b, 3],
                                   b_q[b, 0], b_q[b, 1], b_q[b, 2], b_q[b, 3])
            w0, w1, w2 = _quat_log(p0, p1, p2, p3)
            b_w[b, 0] = w0 * inv_h
            b_w[b, 1] = w1 * inv_h
            b_w[b, 2] = w2 * inv_h
            # welded vertices move rigidly: v_k = V + w x rho (world)
        # ---- frames, clamped and welded material angles, quasistatic twist
        K.refresh_geometry(x, False, ref_d1, ref_twist, True, edges, lengths, tangents, kb, ref_d2)
        body_directors(b_q, b_m1, dirs)
        for b in range(nb):
            for d in range(3):
                clamp_m1[b_slot[b], d] = dirs[b, d]
        K.clamp_material_angles(ref_d1, ref_d2, tangents, theta, clamp_edges, clamp_m1)
        it2, gn = K.update_twist(kb, ref_d1, ref_d2, tangents, theta, ref_twist, lengths, rest_lengths, lbar,
                                 omega_bar, bend_k, twist_bar, twist_k, stretch_k, free_theta, False, uniform,
                                 twist_tol, twist_max_iter, m1, m2, omega, grad, h_diag, h_lower, step)
        diag[2] = max(diag[2], it2)
        diag[3] = max(diag[3], gn)
        done += 1
        diag[4] = done
    return done
