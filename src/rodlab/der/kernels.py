"""Compiled kernels of Discrete Elastic Rods (Bergou et al. 2008).

Indexing follows ``rodlab.geometry.curves``: joint ``k`` joins edge ``e = k`` to edge
``f = (k + 1) % ne`` at vertex ``(k + 1) % nv``; the three vertices of joint ``k`` are
``k, k + 1, k + 2`` (mod ``nv``).

Energies (Bergou 2008, Sec. 4; MATH-NOTES "DER quantities"), with ``lbar_k = |ebar_e| + |ebar_f|``:

    E_bend    = sum_k 1/(2 lbar_k) sum_{j in (e, f)} (w^j_k - wbar^j_k)^T B^j (w^j_k - wbar^j_k)
    E_twist   = sum_k beta_k (m_k - mbar_k)^2 / lbar_k,      m_k = theta_f - theta_e + mref_k
    E_stretch = 1/2 sum_j ks_j (|e_j| / |ebar_j| - 1)^2 |ebar_j|

The material frames hang off *time-parallel* reference frames with a reference twist ``mref``
(MATH-NOTES); the variation of ``mref`` with the centerline is the discrete holonomy gradient of
Bergou 2008, Eq. 9, so the centerline forces below are the paper's Eq. 9-11 written locally
(docs/der.md derives the equivalence).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from ..geometry.der_joint import (edge_stretch_energy, edge_stretch_tension, joint_angle_gradient_hessian, joint_energy,
                                  joint_holonomy, joint_kb_gradient, joint_kb_pullback, joint_pullback_scales,
                                  joint_stresses)
from ..geometry.curves import (
    compute_curvature_binormals,
    compute_edges,
    compute_tangents,
    complete_frames,
    material_curvatures,
    material_frames,
    reference_twist,
    reference_twist_two_pass,
    time_parallel_update,
)
from ..linalg.tridiagonal import solve_tridiagonal_masked
from .projection import fast_projection, shake_projection, velocity_projection


# --------------------------------------------------------------------------------------------
# geometry refresh
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def refresh_geometry(x, closed, ref_d1, ref_twist, transport_frames, edges, lengths, tangents, kb, ref_d2):
    """Recompute edges, tangents and curvature binormals of ``x``; move the reference frames.

    With ``transport_frames`` the reference directors ``ref_d1`` are parallel transported in
    time from the tangents held in ``tangents`` on entry to the new ones; the reference twist
    is then recomputed (unwrapped against its previous value).
    """
    old = tangents.copy() if transport_frames else tangents
    compute_edges(x, closed, edges)
    compute_tangents(edges, lengths, tangents)
    if transport_frames:
        time_parallel_update(old, tangents, ref_d1)
    complete_frames(tangents, ref_d1, ref_d2)
    compute_curvature_binormals(tangents, closed, kb)
    reference_twist(tangents, ref_d1, closed, ref_twist, ref_twist)


@njit(**JIT)
def _refresh_transported(x, closed, ref_d1, ref_twist, edges, lengths, tangents, kb, ref_d2, old, num, den,
                         edges_current):
    """:func:`refresh_geometry` with ``transport_frames``, the old tangents kept in the caller's
    scratch ``old`` (ne, 3) instead of a fresh copy, the reference twist in two passes
    (:func:`rodlab.geometry.curves.reference_twist_two_pass`, scratch ``num``, ``den``): the same
    operations in the same order on every value, bitwise. ``edges_current``: ``edges`` already
    holds the edges of ``x`` (the projection's last constraint evaluation computed them with
    ``compute_edges``), so they are not computed again.
    (Fusing the six passes into two was measured slower on a 275-vertex rod, 13.0-14.5 vs 12.4 us:
    the work is divisions, square roots and ``atan2``, not memory.)"""
    for j in range(tangents.shape[0]):
        for d in range(3):
            old[j, d] = tangents[j, d]
    if not edges_current:
        compute_edges(x, closed, edges)
    transported_geometry(closed, ref_d1, ref_twist, edges, lengths, tangents, kb, ref_d2, old, num, den)


@njit(inline="always", **JIT)
def transported_geometry(closed, ref_d1, ref_twist, edges, lengths, tangents, kb, ref_d2, old, num, den):
    """The geometry of the edge vectors ``edges`` (lengths, tangents, curvature binormals) and the
    reference frames carried in time to it from the tangents ``old`` (:func:`refresh_geometry`
    with ``transport_frames`` after its ``compute_edges``, the reference twist in two passes,
    scratch ``num``, ``den``; bitwise the same)."""
    compute_tangents(edges, lengths, tangents)
    time_parallel_update(old, tangents, ref_d1)
    complete_frames(tangents, ref_d1, ref_d2)
    compute_curvature_binormals(tangents, closed, kb)
    reference_twist_two_pass(tangents, ref_d1, ref_twist, num, den)


# --------------------------------------------------------------------------------------------
# energy in the twist angles (x fixed): value, gradient, tridiagonal Hessian (Eq. 4, 7)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def elastic_energy(kb, ref_d1, ref_d2, theta, ref_twist, lengths, rest_lengths, lbar,
                   omega_bar, bend_k, twist_bar, twist_k, stretch_k, m1, m2, omega):
    """Total elastic energy [J] (bending + twisting + stretching) for the current geometry."""
    material_frames(ref_d1, ref_d2, theta, m1, m2)
    material_curvatures(kb, m1, m2, False, omega)
    return _energy_of_curvatures(kb.shape[0], omega, theta, ref_twist, lengths, rest_lengths, lbar, omega_bar, bend_k,
                                 twist_bar, twist_k, stretch_k)


@njit(**JIT)
def _energy_of_curvatures(nj, omega, theta, ref_twist, lengths, rest_lengths, lbar, omega_bar, bend_k, twist_bar,
                          twist_k, stretch_k):
    """:func:`elastic_energy` from the material curvatures ``omega`` (``nj`` joints) of the angles ``theta``."""
    ne = theta.shape[0]
    energy = 0.0
    for k in range(nj):
        e = k
        f = k + 1
        if f == ne:
            f = 0
        energy += joint_energy(omega[k, 0], omega[k, 1], omega[k, 2], omega[k, 3],
                               omega_bar[k, 0], omega_bar[k, 1], omega_bar[k, 2], omega_bar[k, 3],
                               bend_k[e, 0], bend_k[e, 1], bend_k[f, 0], bend_k[f, 1],
                               theta[f] - theta[e] + ref_twist[k] - twist_bar[k], twist_k[k], lbar[k])
    for j in range(ne):
        if stretch_k[j] > 0.0:
            energy += edge_stretch_energy(stretch_k[j], lengths[j], rest_lengths[j])
    return energy


@njit(**JIT)
def twist_gradient_hessian(kb, ref_d1, ref_d2, theta, ref_twist, lbar, omega_bar, bend_k, twist_bar,
                           twist_k, m1, m2, omega, grad, h_diag, h_lower):
    """dE/dtheta (Bergou 2008, Eq. 7) and its tridiagonal Hessian.

    ``h_lower[j]`` couples edge ``j`` with edge ``j + 1`` (for a closed rod ``h_lower[ne-1]``
    couples the last edge with edge 0). Bending terms: ``dw/dtheta = -J w = (w_2, -w_1)`` and
    ``d^2 w/dtheta^2 = -w``.
    """
    material_frames(ref_d1, ref_d2, theta, m1, m2)
    material_curvatures(kb, m1, m2, False, omega)
    _twist_gradient_hessian_of_curvatures(kb.shape[0], omega, theta, ref_twist, lbar, omega_bar, bend_k, twist_bar,
                                          twist_k, grad, h_diag, h_lower)


@njit(**JIT)
def _twist_gradient_hessian_of_curvatures(nj, omega, theta, ref_twist, lbar, omega_bar, bend_k, twist_bar, twist_k,
                                          grad, h_diag, h_lower):
    """:func:`twist_gradient_hessian` from the material curvatures ``omega`` (``nj`` joints) of the angles
    ``theta``."""
    ne = theta.shape[0]
    for j in range(ne):
        grad[j] = 0.0
        h_diag[j] = 0.0
        h_lower[j] = 0.0
    for k in range(nj):
        e = k
        f = k + 1
        if f == ne:
            f = 0
        inv = 1.0 / lbar[k]
        # bending seen from edge e: components 0, 1; from edge f: components 2, 3
        ge, he, gf, hf = joint_angle_gradient_hessian(omega[k, 0], omega[k, 1], omega[k, 2], omega[k, 3],
                                                      omega_bar[k, 0], omega_bar[k, 1], omega_bar[k, 2],
                                                      omega_bar[k, 3], bend_k[e, 0], bend_k[e, 1], bend_k[f, 0],
                                                      bend_k[f, 1], inv)
        grad[e] += ge
        h_diag[e] += he
        grad[f] += gf
        h_diag[f] += hf
        tw = 2.0 * twist_k[k] * inv  # d2E/dm2 of the joint's twist
        mk = theta[f] - theta[e] + ref_twist[k] - twist_bar[k]
        grad[f] += tw * mk
        grad[e] -= tw * mk
        h_diag[e] += tw
        h_diag[f] += tw
        h_lower[e] -= tw


@njit(**JIT)
def quasistatic_twist(kb, ref_d1, ref_d2, theta, ref_twist, lengths, rest_lengths, lbar, omega_bar,
                      bend_k, twist_bar, twist_k, stretch_k, free, closed, tol, max_iter,
                      m1, m2, omega, grad, h_diag, h_lower, step):
    """Quasistatic material frame (Bergou 2008, Sec. 5.1): minimise E over the free angles.

    Newton's method on the tridiagonal Hessian with a backtracking line search, warm-started
    from ``theta``. The Hessian is shifted toward positive definiteness where bending makes it
    indefinite. Returns ``(iterations, final max |dE/dtheta|)``; the caller judges convergence.
    """
    ne = theta.shape[0]
    trial = theta  # the line search's scratch, allocated once Newton runs
    # the material frames and curvatures of ``theta`` are computed once per iterate: here for the
    # start, then by the line search's energy of the accepted trial (which becomes ``theta``); the
    # energy of the start only once Newton needs it (bitwise the same as computing it first)
    material_frames(ref_d1, ref_d2, theta, m1, m2)
    material_curvatures(kb, m1, m2, False, omega)
    energy = 0.0
    gnorm = 0.0
    for it in range(max_iter + 1):
        _twist_gradient_hessian_of_curvatures(kb.shape[0], omega, theta, ref_twist, lbar, omega_bar, bend_k,
                                              twist_bar, twist_k, grad, h_diag, h_lower)
        gnorm = 0.0
        scale = 0.0
        for j in range(ne):
            if free[j]:
                gnorm = max(gnorm, abs(grad[j]))
                scale = max(scale, abs(h_diag[j]))
        if gnorm <= tol or it == max_iter:
            return it, gnorm
        if it == 0:
            trial = np.empty(ne)
            energy = _energy_of_curvatures(kb.shape[0], omega, theta, ref_twist, lengths, rest_lengths, lbar,
                                           omega_bar, bend_k, twist_bar, twist_k, stretch_k)
        # keep Newton a descent method: diagonally dominant shift where needed
        for j in range(ne):
            off = abs(h_lower[j])
            if j > 0:
                off += abs(h_lower[j - 1])
            elif closed:
                off += abs(h_lower[ne - 1])
            floor = 1e-12 * scale + 1e-300
            if h_diag[j] < floor:
                h_diag[j] = off + floor
        for j in range(ne):
            grad[j] = -grad[j]
        solve_tridiagonal_masked(h_diag, h_lower, grad, free, closed, step)
        slope = 0.0
        for j in range(ne):
            slope += step[j] * grad[j]  # = -g.d
        if slope <= 0.0:  # not a descent direction: fall back to scaled gradient
            for j in range(ne):
                step[j] = grad[j] / max(h_diag[j], 1e-300) if free[j] else 0.0
            slope = 0.0
            for j in range(ne):
                slope += step[j] * grad[j]
        alpha = 1.0
        accepted = False
        for _ in range(30):
            for j in range(ne):
                trial[j] = theta[j] + alpha * step[j]
            e_new = elastic_energy(kb, ref_d1, ref_d2, trial, ref_twist, lengths, rest_lengths, lbar,
                                   omega_bar, bend_k, twist_bar, twist_k, stretch_k, m1, m2, omega)
            if e_new <= energy - 1e-4 * alpha * slope or (e_new - energy) <= 1e-14 * abs(energy):
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            return it, gnorm
        for j in range(ne):
            theta[j] = trial[j]
        energy = e_new
    return max_iter, gnorm


@njit(**JIT)
def uniform_twist_update(theta, ref_twist, lbar, twist_bar, free, closed):
    """Closed-form quasistatic twist of a naturally straight isotropic rod (Bergou 2008, Eq. 5).

    Bending does not depend on the angles, so the twist energy alone is minimised: between two
    prescribed edges the twist ``m_k - mbar_k`` is proportional to ``lbar_k``; beyond the last
    prescribed edge (a free end) it vanishes.
    """
    ne = theta.shape[0]
    nj = ref_twist.shape[0]
    if closed:
        # a ring with no prescribed edge: the total twist is conserved, spread it uniformly
        any_fixed = False
        for j in range(ne):
            if not free[j]:
                any_fixed = True
        if not any_fixed:
            total = 0.0
            ltot = 0.0
            for k in range(nj):
                f = k + 1 if k + 1 < ne else 0
                total += theta[f] - theta[k] + ref_twist[k] - twist_bar[k]
                ltot += lbar[k]
            # total over the loop is theta-independent up to 2 pi windings; keep it
            rate = total / ltot
            for k in range(nj - 1):
                theta[k + 1] = theta[k] + rate * lbar[k] - ref_twist[k] + twist_bar[k]
            return
    # open chain: segments between prescribed edges
    prev = -1
    for j in range(ne):
        if not free[j]:
            if prev >= 0 and j > prev + 1:
                total = theta[j] - theta[prev]
                ltot = 0.0
                for k in range(prev, j):
                    total += ref_twist[k] - twist_bar[k]
                    ltot += lbar[k]
                rate = total / ltot
                th = theta[prev]  # (each angle carried in a scalar: the chain skips a store-to-load trip)
                for k in range(prev, j - 1):
                    th = th + rate * lbar[k] - ref_twist[k] + twist_bar[k]
                    theta[k + 1] = th
            prev = j
    if prev < 0:
        prev = 0  # no prescribed edge at all: twist-free from edge 0
    # free tail after the last prescribed edge, and free head before the first
    th = theta[prev]
    for k in range(prev, nj):
        th = th - ref_twist[k] + twist_bar[k]
        theta[k + 1] = th
    first = -1
    for j in range(ne):
        if not free[j]:
            first = j
            break
    if first > 0:
        th = theta[first]
        for k in range(first - 1, -1, -1):
            th = th + ref_twist[k] - twist_bar[k]
            theta[k] = th


# --------------------------------------------------------------------------------------------
# centerline forces (Bergou 2008, Sec. 7.1, Eq. 9-11)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def scatter_bending_force(k, e, f, va, vb, vc, g0, g1, g2, kb, tangents, lengths, forces):
    """Add ``-dE/dx`` of joint ``k`` given ``g = dE/d(kb_k)``: the joint's pullback
    (:func:`rodlab.geometry.der_joint.joint_kb_pullback`, exact for extensible edges) scattered to its
    three vertices."""
    ce, cf = joint_pullback_scales(tangents, lengths, e, f)
    kbg = kb[k, 0] * g0 + kb[k, 1] * g1 + kb[k, 2] * g2
    de0, de1, de2, df0, df1, df2 = joint_kb_pullback(tangents, e, f, ce, cf, kbg, g0, g1, g2)
    # forces = -dE/dx with e = x_b - x_a, f = x_c - x_b
    forces[va, 0] += de0
    forces[va, 1] += de1
    forces[va, 2] += de2
    forces[vb, 0] += df0 - de0
    forces[vb, 1] += df1 - de1
    forces[vb, 2] += df2 - de2
    forces[vc, 0] -= df0
    forces[vc, 1] -= df1
    forces[vc, 2] -= df2


@njit(**JIT)
def elastic_forces(kb, tangents, lengths, rest_lengths, ref_d1, ref_d2, theta, ref_twist, lbar,
                   omega_bar, bend_k, twist_bar, twist_k, stretch_k, m1, m2, omega, forces):
    """``forces = -dE/dx`` with the material angles held (at equilibrium they are stationary).

    Bending: ``dE/de = M_e^T g``, ``dE/df = M_f^T g`` where ``g = dE/d(kb)`` and
    ``M_e, M_f`` are the exact derivatives of ``kb = 2 e x f / (|e||f| + e.f)`` (the 2008 paper's
    ``grad kb`` drops the part along the edges, exact only for inextensible motions).
    The material frames move with the time-parallel reference frames, so ``d(kb . m^j) = dkb . m^j``.
    Twist: ``dE/dmref * grad(mref)``, the holonomy gradient (Eq. 9):
    ``grad_{k} mref_k = -kb/(2|e|)``, ``grad_{k+2} mref_k = kb/(2|f|)``, middle = minus their sum.
    """
    material_frames(ref_d1, ref_d2, theta, m1, m2)
    material_curvatures(kb, m1, m2, False, omega)
    _elastic_forces_of_curvatures(kb, tangents, lengths, rest_lengths, theta, ref_twist, lbar, omega_bar, bend_k,
                                  twist_bar, twist_k, stretch_k, m1, m2, omega, forces)


@njit(**JIT)
def _elastic_forces_of_curvatures(kb, tangents, lengths, rest_lengths, theta, ref_twist, lbar, omega_bar, bend_k,
                                  twist_bar, twist_k, stretch_k, m1, m2, omega, forces):
    """:func:`elastic_forces` given the material directors ``m1``, ``m2`` and curvatures ``omega``
    of the angles ``theta``."""
    nv = forces.shape[0]
    ne = tangents.shape[0]
    for i in range(nv):
        forces[i, 0] = 0.0
        forces[i, 1] = 0.0
        forces[i, 2] = 0.0
    for k in range(kb.shape[0]):
        e = k
        f = k + 1
        if f == ne:
            f = 0
        va = k
        vb = k + 1
        if vb >= nv:
            vb -= nv
        vc = k + 2
        if vc >= nv:
            vc -= nv
        # dE_k/dw and dE_k/dm, then g = dE_k / d(kb)
        c1e, c2e, c1f, c2f, tau = joint_stresses(omega[k, 0], omega[k, 1], omega[k, 2], omega[k, 3],
                                                 omega_bar[k, 0], omega_bar[k, 1], omega_bar[k, 2], omega_bar[k, 3],
                                                 bend_k[e, 0], bend_k[e, 1], bend_k[f, 0], bend_k[f, 1],
                                                 theta[f] - theta[e] + ref_twist[k] - twist_bar[k], twist_k[k],
                                                 1.0 / lbar[k])
        g0, g1, g2 = joint_kb_gradient(c1e, c2e, c1f, c2f, m1, m2, e, f)
        scatter_bending_force(k, e, f, va, vb, vc, g0, g1, g2, kb, tangents, lengths, forces)
        # twist through the reference twist (holonomy): dE/de = he kb, dE/df = hf kb
        he, hf = joint_holonomy(tau, lengths[e], lengths[f])
        for d in range(3):
            forces[va, d] += he * kb[k, d]
            forces[vb, d] += (hf - he) * kb[k, d]
            forces[vc, d] -= hf * kb[k, d]
    add_stretching_forces(tangents, lengths, rest_lengths, stretch_k, forces)


@njit(**JIT)
def add_stretching_forces(tangents, lengths, rest_lengths, stretch_k, forces):
    """``-dE_stretch/dx`` with ``E_stretch = 1/2 sum ks (|e|/|ebar| - 1)^2 |ebar|``."""
    nv = forces.shape[0]
    for j in range(tangents.shape[0]):
        if stretch_k[j] > 0.0:
            a = j
            b = j + 1
            if b == nv:
                b = 0
            s = edge_stretch_tension(stretch_k[j], lengths[j], rest_lengths[j])
            for d in range(3):
                forces[a, d] += s * tangents[j, d]
                forces[b, d] -= s * tangents[j, d]


@njit(**JIT)
def isotropic_bending_forces(kb, tangents, lengths, lbar, bend_k, forces):
    """``-dE/dx`` of a naturally straight isotropic rod with no twist: with ``B = b I`` and
    ``wbar = 0`` the bending energy is ``sum_k (b_e + b_f) |kb_k|^2 / (2 lbar_k)`` (Bergou 2008,
    Eq. 6), so ``g = dE/d(kb) = (b_e + b_f) kb / lbar`` needs no material frame."""
    nv = forces.shape[0]
    for i in range(nv):
        forces[i, 0] = 0.0
        forces[i, 1] = 0.0
        forces[i, 2] = 0.0
    for k in range(kb.shape[0]):
        e = k
        f = k + 1
        c = (bend_k[e, 0] + bend_k[f, 0]) / lbar[k]
        g0 = c * kb[k, 0]
        g1 = c * kb[k, 1]
        g2 = c * kb[k, 2]
        scatter_bending_force(k, e, f, k, k + 1, k + 2, g0, g1, g2, kb, tangents, lengths, forces)


def no_sliders():
    """The ``slide_*`` arguments of :func:`fast_projection` / :func:`run_steps` for a rod without
    sliding clamps (empty arrays of the compiled types)."""
    return (np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0))


# --------------------------------------------------------------------------------------------
# the time step (Bergou 2008, Algorithm 1): many steps per call into compiled code
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def clamp_material_angles(ref_d1, ref_d2, tangents, theta, clamp_edges, clamp_m1):
    """Angle of each clamped edge's prescribed director ``clamp_m1`` from its reference frame,
    unwrapped against the previous angle so whole turns accumulate."""
    for c in range(clamp_edges.shape[0]):
        j = clamp_edges[c]
        u0 = clamp_m1[c, 0] * ref_d1[j, 0] + clamp_m1[c, 1] * ref_d1[j, 1] + clamp_m1[c, 2] * ref_d1[j, 2]
        u1 = clamp_m1[c, 0] * ref_d2[j, 0] + clamp_m1[c, 1] * ref_d2[j, 1] + clamp_m1[c, 2] * ref_d2[j, 2]
        ang = math.atan2(u1, u0)
        two_pi = 2.0 * math.pi
        theta[j] = ang + two_pi * math.floor((theta[j] - ang) / two_pi + 0.5)


@njit(**JIT)
def set_material_angles(ref_d1, tangents, m1, theta):
    """``theta_j`` = signed angle from ``a1_j`` to the material director ``m1_j`` about ``t_j``,
    unwrapped against the current ``theta_j``."""
    two_pi = 2.0 * math.pi
    for j in range(theta.shape[0]):
        a0, a1, a2 = ref_d1[j, 0], ref_d1[j, 1], ref_d1[j, 2]
        u0, u1, u2 = m1[j, 0], m1[j, 1], m1[j, 2]
        c0 = a1 * u2 - a2 * u1
        c1 = a2 * u0 - a0 * u2
        c2 = a0 * u1 - a1 * u0
        ang = math.atan2(c0 * tangents[j, 0] + c1 * tangents[j, 1] + c2 * tangents[j, 2], a0 * u0 + a1 * u1 + a2 * u2)
        theta[j] = ang + two_pi * math.floor((theta[j] - ang) / two_pi + 0.5)


@njit(**JIT)
def update_twist(kb, ref_d1, ref_d2, tangents, theta, ref_twist, lengths, rest_lengths, lbar, omega_bar,
                 bend_k, twist_bar, twist_k, stretch_k, free_theta, closed, uniform, tol, max_iter,
                 m1, m2, omega, grad, h_diag, h_lower, step):
    """Quasistatic twist: closed form for naturally straight isotropic rods, else Newton."""
    if uniform:
        uniform_twist_update(theta, ref_twist, lbar, twist_bar, free_theta, closed)
        return 0, 0.0
    return quasistatic_twist(kb, ref_d1, ref_d2, theta, ref_twist, lengths, rest_lengths, lbar, omega_bar,
                             bend_k, twist_bar, twist_k, stretch_k, free_theta, closed, tol, max_iter,
                             m1, m2, omega, grad, h_diag, h_lower, step)


@njit(**JIT)
def run_steps(nsteps, h, closed, inextensible, uniform, twist_free, x, v, theta, ref_d1, ref_twist,
              inv_mass, ext_accel, ext_force, damping, presc_idx, presc_pos, clamp_edges, clamp_m1,
              slide_v, slide_axis, slide_w, slide_edge, slide_side, free_theta, rest_lengths, lbar, omega_bar, bend_k, twist_bar, twist_k, stretch_k,
              proj_tol, proj_fail, proj_max_iter, twist_tol, twist_max_iter, work_v3, work_e3, work_s, kb, omega, diag,
              vertex_damp=None, symplectic=False):
    """Advance ``nsteps`` symplectic-Euler steps with fast projection and quasistatic twist.

    Per step: forces ``-dE/dx`` (+ external), ``v += h M^-1 F`` with implicit viscous damping,
    ``x += h v``, prescribed vertices set, projection onto inextensibility, ``v = (x - x_old)/h``,
    frames transported in time, clamped angles set, twist re-equilibrated.
    A sliding clamp ``k`` (vertices ``slide_v[k]``, prescribed like any clamp) is free along
    ``slide_axis[k]``: its slide is one more unknown, with inverse mass ``slide_w[k]`` (of the two
    vertices together), driven by the axial forces on its two vertices and by the projection.
    ``presc_pos[s]`` / ``clamp_m1[s]`` hold step ``s``'s prescribed positions and directors (a
    single row stands for every step: clamps that do not move). A projection that does not reach
    ``proj_fail`` (relative length violation) restores the step's start and stops, like a
    non-finite state; ``diag[5]`` is then 1.
    ``diag`` receives (max projection iterations, max violation, max twist iterations,
    max twist gradient, steps completed). Returns the number of steps completed (fewer if the
    state became non-finite; the state is then the last finite one).

    ``twist_free`` (an open, naturally straight, isotropic rod with at most one prescribed
    material frame: its twist vanishes identically) skips the frames inside the loop; the
    caller rebuilds frames and angles once after the call.

    Work arrays: ``work_v3`` (2, nv, 3), ``work_e3`` (6, ne, 3), ``work_s`` (7, ne); rows 2, 4, 5
    of ``work_e3`` and 1-6 of ``work_s`` are scratch, the others the geometry the steps leave.

    ``vertex_damp`` (optional, (nv,)): per-vertex velocity factors replacing ``1 / (1 + h damping)``
    (a sliding clamp takes its first vertex's), for damping that varies along the rod (wind drag
    on a rod of varying linear density, :mod:`rodlab.der.batch`).

    ``symplectic`` (inextensible rods only; ``None``: false, and RATTLE's code is left out of the
    compilation): the constrained step is RATTLE (Andersen 1983) in
    its symplectic-Euler form instead of fast projection: the positions are corrected along the
    constraint gradients of the step's start (:func:`shake_projection`), then the velocity
    ``(x - x_old) / h`` is projected onto the constraints' tangent space at the step's end
    (:func:`velocity_projection`). The positions are those of RATTLE / SHAKE (the constrained
    leapfrog): no first-order energy loss from the projection.
    """
    nv = x.shape[0]
    ne = theta.shape[0]
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
    # ``work_e3[2]``, a row no step keeps, holds the frame transport's previous tangents (from the
    # refresh's start to its transport) and RATTLE's start-of-step edges (inside the projection):
    # their lifetimes within a step do not overlap
    old_tangents = work_e3[2]
    edges0 = work_e3[2]
    damp = 1.0 / (1.0 + h * damping)
    if vertex_damp is None:
        vdamp = np.full(nv, damp)
    else:
        vdamp = vertex_damp
    done = 0
    # m1, m2, omega hold the material frames and curvatures of the state's angles: after a Newton
    # twist solve that ended at its convergence test (:func:`quasistatic_twist` computed them
    # there, and nothing changes the geometry before the next step's forces), never at a call's start
    frames_current = False
    for s in range(nsteps):
        if twist_free:
            isotropic_bending_forces(kb, tangents, lengths, lbar, bend_k, forces)
            if not inextensible:
                add_stretching_forces(tangents, lengths, rest_lengths, stretch_k, forces)
        elif frames_current:
            _elastic_forces_of_curvatures(kb, tangents, lengths, rest_lengths, theta, ref_twist, lbar, omega_bar,
                                          bend_k, twist_bar, twist_k, stretch_k, m1, m2, omega, forces)
        else:
            elastic_forces(kb, tangents, lengths, rest_lengths, ref_d1, ref_d2, theta, ref_twist, lbar,
                           omega_bar, bend_k, twist_bar, twist_k, stretch_k, m1, m2, omega, forces)
        for i in range(nv):
            for d in range(3):
                x_old[i, d] = x[i, d]
                if inv_mass[i] > 0.0:
                    v[i, d] = (v[i, d] + h * (inv_mass[i] * (forces[i, d] + ext_force[i, d]) + ext_accel[d])) * vdamp[i]
                    x[i, d] += h * v[i, d]
        for c in range(presc_idx.shape[0]):
            for d in range(3):
                x[presc_idx[c], d] = presc_pos[min(s, presc_pos.shape[0] - 1), c, d]
        for k in range(slide_w.shape[0]):
            a, b = slide_v[k, 0], slide_v[k, 1]
            f_ax = 0.0
            v_ax = 0.0
            g_ax = 0.0
            for d in range(3):
                f_ax += (forces[a, d] + ext_force[a, d] + forces[b, d] + ext_force[b, d]) * slide_axis[k, d]
                v_ax += v[a, d] * slide_axis[k, d]
                g_ax += ext_accel[d] * slide_axis[k, d]
            v_ax = (v_ax + h * (slide_w[k] * f_ax + g_ax)) * vdamp[a]
            for c in range(2):
                p = slide_v[k, c]
                shift = 0.0  # from the prescribed axial coordinate to the old one plus h v
                for d in range(3):
                    shift += (x_old[p, d] - x[p, d]) * slide_axis[k, d]
                shift += h * v_ax
                for d in range(3):
                    x[p, d] += shift * slide_axis[k, d]
        if inextensible:
            if symplectic is not None and symplectic:
                it, viol = shake_projection(x, x_old, inv_mass, rest_lengths, closed, proj_tol, proj_max_iter,
                                            edges, edges0, h_diag, h_lower, rhs, active, dlam,
                                            slide_v, slide_axis, slide_w, slide_edge, slide_side)
            else:
                it, viol = fast_projection(x, inv_mass, rest_lengths, closed, proj_tol, proj_max_iter,
                                           edges, h_diag, h_lower, rhs, active, dlam,
                                           slide_v, slide_axis, slide_w, slide_edge, slide_side)
            diag[0] = max(diag[0], it)
            diag[1] = max(diag[1], viol)
            if not viol <= proj_fail:
                for i in range(nv):
                    for d in range(3):
                        x[i, d] = x_old[i, d]
                diag[5] = 1.0
                return done
        # x - x is 0 for finite x and NaN for inf/NaN; three sums (one per coordinate), not one
        # chain of 3 nv additions: the same test (a sum of zeros is 0, one NaN makes it NaN)
        probe0 = 0.0
        probe1 = 0.0
        probe2 = 0.0
        for i in range(nv):
            probe0 += x[i, 0] - x[i, 0]
            probe1 += x[i, 1] - x[i, 1]
            probe2 += x[i, 2] - x[i, 2]
        probe = probe0 + probe1 + probe2
        if probe != 0.0:
            for i in range(nv):
                for d in range(3):
                    x[i, d] = x_old[i, d]
            return done
        inv_h = 1.0 / h
        for i in range(nv):
            for d in range(3):
                v[i, d] = (x[i, d] - x_old[i, d]) * inv_h
        if symplectic is not None and symplectic and inextensible:
            velocity_projection(v, inv_mass, closed, active, edges, h_diag, h_lower, rhs, dlam,
                                slide_v, slide_axis, slide_w, slide_edge, slide_side)
        if twist_free:
            if not inextensible:  # the projection leaves the final edges in ``edges``
                compute_edges(x, closed, edges)
            compute_tangents(edges, lengths, tangents)
            compute_curvature_binormals(tangents, closed, kb)
            done += 1
            diag[4] = done
            continue
        # (the projection's scratch rows: free until its next step; its last evaluation left the edges of x)
        _refresh_transported(x, closed, ref_d1, ref_twist, edges, lengths, tangents, kb, ref_d2, old_tangents, rhs,
                             dlam, inextensible)
        clamp_material_angles(ref_d1, ref_d2, tangents, theta, clamp_edges, clamp_m1[min(s, clamp_m1.shape[0] - 1)])
        it, gn = update_twist(kb, ref_d1, ref_d2, tangents, theta, ref_twist, lengths, rest_lengths, lbar,
                              omega_bar, bend_k, twist_bar, twist_k, stretch_k, free_theta, closed, uniform,
                              twist_tol, twist_max_iter, m1, m2, omega, grad, h_diag, h_lower, step)
        diag[2] = max(diag[2], it)
        diag[3] = max(diag[3], gn)
        # quasistatic_twist returns at its convergence test (frames of the final angles) or after a
        # failed line search (frames of a rejected trial: gn > tol before the last iteration)
        frames_current = not uniform and (gn <= twist_tol or it == twist_max_iter)
        done += 1
        diag[4] = done
    return done


# --------------------------------------------------------------------------------------------
# reduced-energy gradient at a displaced centerline (static solver, Hessian by differences)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def displaced_forces(x_new, closed, tangents0, ref_d1_0, ref_twist0, theta0, clamp_edges, clamp_m1,
                     free_theta, uniform, rest_lengths, lbar, omega_bar, bend_k, twist_bar, twist_k, stretch_k,
                     twist_tol, twist_max_iter, forces):
    """``-dE/dx`` at ``x_new`` after carrying the frames of the base state there (time-parallel)
    and re-solving the quasistatic twist; all in one compiled call."""
    ne = theta0.shape[0]
    nj = ref_twist0.shape[0]
    d1 = ref_d1_0.copy()
    tw = ref_twist0.copy()
    theta = theta0.copy()
    tangents = tangents0.copy()
    edges = np.empty((ne, 3))
    lengths = np.empty(ne)
    kb = np.empty((nj, 3))
    d2 = np.empty((ne, 3))
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    omega = np.empty((nj, 4))
    w = np.empty((5, ne))
    refresh_geometry(x_new, closed, d1, tw, True, edges, lengths, tangents, kb, d2)
    clamp_material_angles(d1, d2, tangents, theta, clamp_edges, clamp_m1)
    update_twist(kb, d1, d2, tangents, theta, tw, lengths, rest_lengths, lbar, omega_bar, bend_k, twist_bar,
                 twist_k, stretch_k, free_theta, closed, uniform, twist_tol, twist_max_iter, m1, m2, omega,
                 w[0], w[1], w[2], w[3])
    elastic_forces(kb, tangents, lengths, rest_lengths, d1, d2, theta, tw, lbar, omega_bar, bend_k, twist_bar,
                   twist_k, stretch_k, m1, m2, omega, forces)


@njit(**JIT)
def fd_reduced_hessian(x, free_idx, h, closed, tangents0, ref_d1_0, ref_twist0, theta0, clamp_edges, clamp_m1,
                       free_theta, uniform, rest_lengths, lbar, omega_bar, bend_k, twist_bar, twist_k, stretch_k,
                       twist_tol, twist_max_iter, out):
    """Central differences of the reduced gradient ``-F`` over the free vertices' coordinates."""
    nv = x.shape[0]
    nf = free_idx.shape[0]
    fp = np.empty((nv, 3))
    fm = np.empty((nv, 3))
    xp = x.copy()
    for col in range(3 * nf):
        v = free_idx[col // 3]
        c = col % 3
        xp[v, c] = x[v, c] + h
        displaced_forces(xp, closed, tangents0, ref_d1_0, ref_twist0, theta0, clamp_edges, clamp_m1, free_theta,
                         uniform, rest_lengths, lbar, omega_bar, bend_k, twist_bar, twist_k, stretch_k,
                         twist_tol, twist_max_iter, fp)
        xp[v, c] = x[v, c] - h
        displaced_forces(xp, closed, tangents0, ref_d1_0, ref_twist0, theta0, clamp_edges, clamp_m1, free_theta,
                         uniform, rest_lengths, lbar, omega_bar, bend_k, twist_bar, twist_k, stretch_k,
                         twist_tol, twist_max_iter, fm)
        xp[v, c] = x[v, c]
        for r in range(nf):
            for d in range(3):
                out[3 * r + d, col] = -(fp[free_idx[r], d] - fm[free_idx[r], d]) / (2.0 * h)
