"""Compiled pieces of the compact contact world's SQP (Zhao et al., "Efficient and Stable
Simulation of Inextensible Cosserat Rods by a Compact Representation", CGF 2024, Alg. 1) outside
its QP (:mod:`rodlab.compact.world_qp`): the edge-edge rows of App. B, Eq. 32, and the
backtracking line search on the merit function ``phi = E + |C_-|_1 / mu`` (Eq. 11).

The line search here covers the steps whose rows are edge-edge rows and linear equality rows
(clamps away from the root, sliding clamps, pins, stick rows: ``C = sum_v coef_v . (x_v - ref_v)``)
and whose objective is the rods' implicit-Euler energy plus point forces: every step of a world
without obstacle candidates and without sliding frictional contacts.
:class:`rodlab.compact.contact_world.WorldContactSolver` runs its Python line search otherwise
(vertex-obstacle rows, the kinetic friction potential); both evaluate the same formulas.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..contact.ccd import ccd_segment_segment
from ..contact.narrowphase import segment_segment, vrow
from ..geometry._vec import JIT
from .chain import chain_forward
from .energies import eval_energy


CROSSING_FRACTION = 0.5
"""A pair's centre lines count as having met on the way from the reference configuration when
their distance fell below this fraction of the pair's thickness (both radii) on the straight path."""


@njit(**JIT)
def centre_lines_met(x_ref, x, a0, a1, b0, b1, tolerance):
    """Whether the centre lines of segments ``(a0, a1)`` and ``(b0, b1)`` (vertex indices) came
    within ``tolerance`` [m] of each other while every vertex moves on a straight line from
    ``x_ref`` to ``x`` (N, 3) (conservative advancement, :func:`rodlab.contact.ccd.ccd_segment_segment`)."""
    return ccd_segment_segment(vrow(x_ref, a0), vrow(x_ref, a1), vrow(x, a0), vrow(x, a1), vrow(x_ref, b0),
                               vrow(x_ref, b1), vrow(x, b0), vrow(x, b1), 0.0, tolerance) <= 1.0


@njit(**JIT)
def edge_edge_kernel(x, x_ref, edge_v0, edge_v1, edge_radius, pairs, normal_ref, verts, coef, value, normal):
    """Edge-edge rows of segment ``pairs`` (K, 2) at ``x`` (N, 3): vertices (K, 4), coefficients
    (K, 4, 3), values (K,) [m] and unit normals (K, 3) (from b toward a). The distance counts
    negative where the centre lines crossed since the reference configuration ``x_ref`` (N, 3)
    (where ``normal_ref`` (K, 3) was taken): the normal turned against ``normal_ref`` and the
    centre lines met on the straight way from ``x_ref`` to ``x`` (:func:`centre_lines_met`, to
    :data:`CROSSING_FRACTION` of the thickness). A normal that turned without the lines meeting
    (a far pair whose closest points slid to a segment's end while the rods moved a lot) is not
    a crossing (see :func:`rodlab.compact.contact_world.edge_edge_rows`)."""
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        verts[k, 0], verts[k, 1], verts[k, 2], verts[k, 3] = edge_v0[a], edge_v1[a], edge_v0[b], edge_v1[b]
        wa, wb, dist, n = segment_segment(vrow(x, edge_v0[a]), vrow(x, edge_v1[a]), vrow(x, edge_v0[b]),
                                          vrow(x, edge_v1[b]))
        thickness = edge_radius[a] + edge_radius[b]
        side = 1.0
        if n[0] * normal_ref[k, 0] + n[1] * normal_ref[k, 1] + n[2] * normal_ref[k, 2] < 0.0:
            if centre_lines_met(x_ref, x, edge_v0[a], edge_v1[a], edge_v0[b], edge_v1[b],
                                CROSSING_FRACTION * thickness):
                side = -1.0  # the centre lines crossed since the reference: the distance counts negative
        value[k] = side * dist - thickness
        w = (side * (1.0 - wa), side * wa, -side * (1.0 - wb), -side * wb)
        for c in range(3):
            normal[k, c] = n[c]
            for v in range(4):
                coef[k, v, c] = w[v] * n[c]


class RodConstants:
    """Every rod's model arrays in flat world arrays (rod ``r``: vertices ``vstart[r]:vstart[r+1]``,
    edges from ``vstart[r] - r``, hinges from ``vstart[r] - 2 r``), its gravity [m/s^2] (R, 3)."""

    def __init__(self, solvers, vstart):
        md = [sol.model for sol in solvers]
        self.vstart = np.ascontiguousarray(vstart, dtype=np.int64)
        self.lengths = np.concatenate([m.lengths for m in md])
        self.masses = np.concatenate([m.masses for m in md])
        self.Jr = np.ascontiguousarray(np.concatenate([m.Jr for m in md]))
        self.lbar = np.concatenate([m.lbar for m in md])
        self.Kh = np.ascontiguousarray(np.concatenate([m.Kh for m in md]).reshape(-1, 3))
        self.ubar = np.ascontiguousarray(np.concatenate([m.ubar for m in md]).reshape(-1, 3))
        self.gravity = np.ascontiguousarray([sol.gravity for sol in solvers], dtype=float).reshape(-1, 3)
        for a in (self.lengths, self.masses, self.Jr, self.lbar, self.Kh, self.ubar):
            a.setflags(write=False)  # as the models' arrays: the kernels' compiled signatures are shared

    def args(self):
        return self.vstart, self.lengths, self.masses, self.Jr, self.lbar, self.Kh, self.ubar, self.gravity


@njit(**JIT)
def world_energy(S, qref, p_pred, p_t, q_t, th_pred, a_in, a_d, vstart, lengths, masses, Jr, lbar, Kh, ubar, gravity,
                 pf_rod, pf_vertex, pf_force, P, Q, scratch, mode, comps):
    """Objective (Eq. 8a) of every rod at coordinates ``S`` (N, 3) (value only) minus the point
    forces' work ``f . p_j``; writes the positions ``P`` (N, 3), quaternions ``Q`` (N - R, 4) and
    each rod's energy components ``comps`` (R, 4). ``scratch``: (gradients (N, 3), (N - R, 4), Hessian
    blocks (N,), (N - R, 4, 4), (N - 2R, 4, 4), Jacobian blocks (N - R, 3, 3), (N - R, 4, 3)), not
    written (value only); ``mode`` 0 (an argument, not a literal: the kernels then share the
    compiled versions of :func:`chain_forward` and :func:`eval_energy` with the Python callers).
    Returns (energy [J], sum of |comps|)."""
    R = vstart.shape[0] - 1
    gp, gq, hp, hqd, hqo, dj, qj = scratch
    total = 0.0
    mag = 0.0
    for r in range(R):
        v0, v1 = vstart[r], vstart[r + 1]
        e0, e1 = v0 - r, v1 - r - 1
        h0, h1 = v0 - 2 * r, v1 - 2 * r - 2
        chain_forward(S[v0:v1], lengths[e0:e1], qref[e0:e1], P[v0:v1], Q[e0:e1], dj[e0:e1], qj[e0:e1], mode >= 1)
        total += eval_energy(P[v0:v1], Q[e0:e1], p_pred[v0:v1], p_t[v0:v1], q_t[e0:e1], th_pred[e0:e1], masses[v0:v1],
                             Jr[e0:e1], lbar[h0:h1], Kh[h0:h1], ubar[h0:h1], gravity[r], a_in, a_d[r],
                             gp[v0:v1], gq[e0:e1], hp[v0:v1], hqd[e0:e1], hqo[h0:h1], mode, comps[r])
        for i in range(pf_rod.shape[0]):
            if pf_rod[i] == r:
                j = pf_vertex[i]
                total -= pf_force[i, 0] * P[j, 0] + pf_force[i, 1] * P[j, 1] + pf_force[i, 2] * P[j, 2]
        mag += abs(comps[r, 0]) + abs(comps[r, 1]) + abs(comps[r, 2]) + abs(comps[r, 3])
    return total, mag


APART_MARGIN = 1e-9
"""A pair is left out of :func:`world_infeasibility` only when its gap at the reference exceeds the
motion bound by this fraction of its thickness (room for round-off)."""


RULED_OUT_CHUNK = 8
"""Pairs evaluated between two checks of :func:`world_infeasibility`'s early exit."""


@njit(**JIT)
def _ruled_out(E, inv_mu, infeasible, armijo, phi0, round_off):
    """Whether ``phi = E + inv_mu infeasible`` fails both acceptance tests of
    :func:`world_line_search` (Armijo bound ``armijo``; no decrease left above ``round_off``)."""
    phi = E + inv_mu * infeasible
    return phi > armijo and phi - phi0 > round_off


@njit(**JIT)
def world_infeasibility(P, x_ref, edge_v0, edge_v1, edge_radius, pairs, normal_ref, gap_ref, lin_verts, lin_coef,
                        lin_ref, ee, move, E, inv_mu, armijo, phi0, round_off):
    """``|C_A|_1`` of Eq. 11 at ``P``: violated edge-edge rows (reference configuration ``x_ref``,
    :func:`edge_edge_kernel`) and every linear equality row ``sum_v coef_v . (P[v] - ref_v)``; or
    ``inf`` as soon as the trial with energy ``E`` is certainly rejected by the line search's tests
    (:func:`_ruled_out` of the sum so far: the sum of non-negative terms only grows, and so does
    ``phi``, in floating point too, so the decision is the one the whole sum would give).

    A pair whose gap at ``x_ref`` (``gap_ref`` (K,) [m]: centre-line distance minus thickness; 0
    where unknown) exceeds ``D_a + D_b`` (``D`` the larger displacement of a segment's two vertices
    from ``x_ref`` to ``P``) is not evaluated: every point of a segment moves by at most ``D``, so on
    the straight way from ``x_ref`` to ``P`` the centre lines stay more than the thickness apart,
    never meet, and the row is positive: it adds exactly 0 (so the sum is the same bit for bit).
    ``ee`` scratch: (pairs (K, 2), normals (K, 3), verts (K, 4), coef (K, 4, 3), values (K,),
    normals (K, 3)); ``move`` (N,) scratch."""
    if _ruled_out(E, inv_mu, 0.0, armijo, phi0, round_off):
        return np.inf
    kept_pairs, kept_nref, verts, coef, value, normal = ee
    for j in range(P.shape[0]):
        d0 = P[j, 0] - x_ref[j, 0]
        d1 = P[j, 1] - x_ref[j, 1]
        d2 = P[j, 2] - x_ref[j, 2]
        move[j] = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    K = 0
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        reach = max(move[edge_v0[a]], move[edge_v1[a]]) + max(move[edge_v0[b]], move[edge_v1[b]])
        if gap_ref[k] > reach + APART_MARGIN * (edge_radius[a] + edge_radius[b]):
            continue
        kept_pairs[K, 0] = a
        kept_pairs[K, 1] = b
        for c in range(3):
            kept_nref[K, c] = normal_ref[k, c]
        K += 1
    ineq = 0.0
    for k0 in range(0, K, RULED_OUT_CHUNK):
        k1 = min(k0 + RULED_OUT_CHUNK, K)
        edge_edge_kernel(P, x_ref, edge_v0, edge_v1, edge_radius, kept_pairs[k0:k1], kept_nref[k0:k1], verts[k0:k1],
                         coef[k0:k1], value[k0:k1], normal[k0:k1])
        for k in range(k0, k1):
            ineq += max(0.0, -value[k])
        if _ruled_out(E, inv_mu, ineq, armijo, phi0, round_off):
            return np.inf
    eq = 0.0
    for k in range(lin_verts.shape[0]):
        c = 0.0
        for v in range(4):
            j = lin_verts[k, v]
            for a in range(3):
                c += lin_coef[k, v, a] * (P[j, a] - lin_ref[k, v, a])
        eq += abs(c)
    return ineq + eq


@njit(**JIT)
def world_rows(P, x_ref, edge_v0, edge_v1, edge_radius, pairs, normal_ref, lin_verts, lin_coef, lin_ref, verts, coef,
               value):
    """Every row of a step without obstacle candidates at ``P`` (N, 3), in one call: the edge-edge
    rows of ``pairs`` (:func:`edge_edge_kernel`, reference ``x_ref``, ``normal_ref``) first, then
    the linear equality rows ``C = sum_v coef_v . (P[v] - ref_v)`` (clamps, stick rows), written
    into ``verts`` (K + L, 4), ``coef`` (K + L, 4, 3), ``value`` (K + L,)."""
    K = pairs.shape[0]
    edge_edge_kernel(P, x_ref, edge_v0, edge_v1, edge_radius, pairs, normal_ref, verts[:K], coef[:K], value[:K],
                     np.empty((K, 3)))
    for k in range(lin_verts.shape[0]):
        c = 0.0
        for v in range(4):
            j = lin_verts[k, v]
            verts[K + k, v] = j
            for a in range(3):
                coef[K + k, v, a] = lin_coef[k, v, a]
                c += lin_coef[k, v, a] * (P[j, a] - lin_ref[k, v, a])
        value[K + k] = c


@njit(**JIT)
def row_violation(value, n_eq):
    """Of row values ``value`` (K,) [m] whose last ``n_eq`` are equality rows: the largest
    violation (inequality rows below zero, equality rows either way; 0 without rows) and
    ``|C_A|_1`` of Eq. 11 (violated inequality rows plus every equality row)."""
    K = value.shape[0]
    for k in range(K):
        if not value[k] == value[k]:
            return np.nan, np.nan  # as numpy's max and sum: a NaN row is never taken for feasible
    worst = 0.0
    ineq = 0.0
    for k in range(K - n_eq):
        if -value[k] > worst:
            worst = -value[k]
        ineq += max(0.0, -value[k])
    eq = 0.0
    for k in range(K - n_eq, K):
        worst = max(worst, abs(value[k]))
        eq += abs(value[k])
    return worst, ineq + eq


@njit(**JIT)
def world_line_search(S, d, steps, phi0, slope, inv_mu, qref, p_pred, p_t, q_t, th_pred, a_in, a_d, vstart, lengths,
                      masses, Jr, lbar, Kh, ubar, gravity, pf_rod, pf_vertex, pf_force, edge_v0, edge_v1, edge_radius,
                      pairs, normal_ref, gap_ref, lin_verts, lin_coef, lin_ref, S_try, P_try):
    """Backtracking on ``phi = E + inv_mu |C_A|_1`` (Eq. 11) from the full step ``d``: at most
    ``steps`` trials ``S + alpha d``, ``alpha = 1, 1/2, ...``, accepting the first with
    ``phi <= phi0 + 1e-4 alpha min(slope, 0)`` (Armijo) or ``phi - phi0 <= 1e-14 sum|E parts|``
    (no decrease left above round-off). ``gap_ref`` (K,) [m]: each pair's gap at the step's start
    ``p_t`` (:func:`world_infeasibility` leaves out the pairs that stay apart). Writes the last
    trial into ``S_try``, ``P_try`` (N, 3). Returns (accepted, alpha)."""
    N = S.shape[0]
    R = vstart.shape[0] - 1
    M = max(N - R, 1)
    Q = np.empty((M, 4))
    scratch = (np.empty((N, 3)), np.empty((M, 4)), np.empty(N), np.empty((M, 4, 4)),
               np.empty((max(N - 2 * R, 1), 4, 4)), np.empty((M, 3, 3)), np.empty((M, 4, 3)))
    comps = np.empty((R, 4))
    K = pairs.shape[0]
    ee = (np.empty((K, 2), dtype=np.int64), np.empty((K, 3)), np.empty((K, 4), dtype=np.int64), np.empty((K, 4, 3)),
          np.empty(K), np.empty((K, 3)))
    move = np.empty(N)
    mode = steps - steps  # value only; a runtime 0, not a literal (see world_energy)
    alpha = 1.0
    for _ in range(steps):
        for j in range(N):
            for c in range(3):
                S_try[j, c] = S[j, c] + alpha * d[j, c]
        E_try, mag = world_energy(S_try, qref, p_pred, p_t, q_t, th_pred, a_in, a_d, vstart, lengths, masses, Jr, lbar,
                                  Kh, ubar, gravity, pf_rod, pf_vertex, pf_force, P_try, Q, scratch, mode, comps)
        armijo = phi0 + 1e-4 * alpha * min(slope, 0.0)
        phi = E_try + inv_mu * world_infeasibility(P_try, p_t, edge_v0, edge_v1, edge_radius, pairs, normal_ref, gap_ref,
                                                   lin_verts, lin_coef, lin_ref, ee, move, E_try, inv_mu, armijo, phi0,
                                                   1e-14 * mag)
        if phi <= armijo or phi - phi0 <= 1e-14 * mag:
            return True, alpha
        alpha *= 0.5
    return False, alpha


__all__ = ["APART_MARGIN", "CROSSING_FRACTION", "RULED_OUT_CHUNK", "RodConstants", "centre_lines_met", "edge_edge_kernel", "row_violation", "world_energy",
           "world_infeasibility", "world_line_search", "world_rows"]
