"""Rigid bodies welded to rod end edges inside the batched DER step (Bergou et al. 2008, Sec. 8).

Any number of bodies, each welded to any number of end edges of different rods (or of one rod).
A weld puts the end edge's two vertices at ``x_k = r_b + R(q_b) p_k`` and its material
director at ``m1 = R(q_b) m1^0`` (body-frame offsets ``p_k`` and ``m1^0`` fixed when the world is
set up). The weld is eliminated, not projected: welded vertices are *placed* from their body's
pose, so they hold to round-off. The lumped masses of welded vertices are not part of the
dynamics (the body's mass and inertia stand for everything rigidly attached to it), as in the
former single-rod coupling stepper these kernels replaced (docs/coupling.md).

One step for the rods welded to bodies ("coupled rods"; other rods step on their own,
:func:`rodlab.der.batch.advance_rod`), Bergou 2008, Algorithm 1 with steps 4, 5 and 8:

(a) per rod: elastic forces ``-dE/dx`` at the quasistatic twist, ``dE/dtheta`` (Eq. 7), external
    forces (point forces, wind); per weld the rod's force and torque on its body: the forces on
    the two welded vertices (wind drag ``-drag l_k v_k`` included), their moments about the
    centre of mass, and the explicit twist torque ``-(dE/dtheta_w) t_w`` of Sec. 8.2; then
    ``v += h (F / m + g)`` (damping and wind drag by the batch's velocity factors), ``x += h v``
    on the free vertices, clamped vertices set;
(b) per body: the welds' wrenches plus ``M g``; symplectic Euler ``V += h F / M``,
    ``w += h I^-1 (tau_b - w x I w)`` (body frame, gyroscopic term), ``r += h V``,
    ``q <- q exp(h w / 2)``; the world's damping as the velocity factor of the rods;
(c) inextensibility by fast projection (Goldenthal et al. 2007, "Efficient simulation of
    inextensible cloth") in the generalized mass metric of Sec. 8.1 (rod masses, body mass ``M``
    and world inertia ``I_w = R I R^T``), every rod and body of a connected group at once, with
    welded vertices placed from their bodies;
(d) velocities from positions (``V = (r - r0)/h``, ``w = log(q0* q)/h``), frames carried in
    time, clamped and welded material angles set, quasistatic twist.
The per-rod phases run in parallel over rods (``prange`` over chunks of rods balanced by
vertex count, one unpack of the packed groups per chunk); the bodies' phases are serial. A
rod's finish (d) and its next step's forces (a) share one parallel pass. Constants and ``prange``
indices passed to compiled functions are wrapped (``np.int64``, ``np.bool_``) so that numba
compiles each callee once (:mod:`rodlab.der.batch`, "Compile time").

Projection (c): Newton's method on ``C(q) = 0`` (``C_j = e_j.e_j - ebar_j^2`` per active edge)
where each iteration solves the linearised system of the whole coupled group *exactly*,
``A dlam = C`` with ``A = J M~^-1 J^T``, and moves every unknown by ``-M~^-1 J^T dlam``; so a
handful of iterations reach the tolerance, as the single-rod fast projection does. A welded
vertex moves with its body, ``dx = dr + dphi x rho`` (``rho = x - r_b``), and a weld ``k``
touches one constraint row: its contact edge ``c`` joining the welded vertex to the free rod
(``grad_x C_c = s 2 e_c`` there, ``s = +1`` for the edge's second vertex, else -1), through
``u_k = s 2 (e_c, rho x e_c)`` (a body displacement ``(dr, dphi)`` changes ``C_c`` by
``u_k.(dr, dphi)``). So ``A = T + sum_b E_b W_b E_b^T`` exactly: ``T`` is ``J M^-1 J^T`` with
welded vertices immovable (tridiagonal per rod), ``E_b`` picks the contact rows of body ``b``'s
``n_b`` welds and ``W_b[k, l] = u_k.Mb^-1 u_l`` (``Mb = diag(M Id, I_w)``). ``T`` alone is
singular for a straight rod between two welds (its inextensible chain is locked to first order:
the nearly straight case is nearly singular), so the split keeps a bound of the bodies in the
rod blocks: ``Delta_b = diag(2 n_b W_b[k, k]) >= 2 W_b`` (Cauchy-Schwarz:
``W_b <= n_b diag(W_b)``), ``T' = T + sum_b E_b Delta_b E_b^T`` (still tridiagonal per rod, and
positive definite: ``Delta`` holds every contact row, and every active edge keeps a free vertex,
which the simulator checks), and

    A = T' - V P V^T,   P = blockdiag_b(Delta_b - W_b)  (positive definite, n_b x n_b),

``V`` the contact rows' unit vectors. Woodbury then gives, exactly,

    H w = V^T T'^-1 C,   H = P^-1 - V^T T'^-1 V,   dlam = T'^-1 C + T'^-1 V w,

and ``H`` is positive definite because ``A`` is (``H`` and ``A`` are the two Schur complements
of ``[T' V; V^T P^-1]``). On the contact rows ``dlam_c = P^-1 w``, so body ``b`` moves by
``-Mb^-1 U_b^T dlam_c`` without waiting for the rods. A body with a single weld needs no
correction: ``W_b`` is its own ``1 x 1`` block and sits in ``T'`` exactly (so one rod with its
bodies is projected exactly as the single-rod fast projection in the metric of Sec. 8.1); such a
body is moved by its rod's thread. Per iteration: per rod (parallel) ``T'`` factored,
``y = T'^-1 C`` and ``Z_k = T'^-1 e_c`` per weld of a multi-weld body; serially ``P_b^-1``,
``H`` (entries ``P^-1`` within a body, ``-Z_l[c_k]`` within a rod) and its sparse Cholesky in an
elimination order fixed at setup (minimum degree on the graph of welds sharing a body or a rod,
with its fill pattern: none for tree-like groups such as the ``tree`` scene, where ``H``'s size
is the number of welds and its factorisation costs ``O(welds)``); bodies moved by their exact
displacement (centre by ``dr``, orientation by the exponential map of ``dphi``, so they stay
rigid); then per rod (parallel) ``dlam = y + sum_k Z_k w_k``, free vertices moved, welded
vertices placed and ``C`` measured again. Iterations run per connected group of rods and
bodies until its largest ``|C_j| / ebar_j^2`` is within the tolerance (a converged group is
left alone). Every update is an internal impulse, equal and opposite along each edge, so linear
momentum is kept to round-off; like the rods' own fast projection, the constraint directions
of the iterate, not of the step's start, make angular momentum drift at first order in dt.

Quaternions are (w, x, y, z) body -> world; angular velocities are in body coordinates.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..geometry.rotations import quat_matrix_into
from ..geometry.rotations import quat_mul_scalar as _qmul
from ..geometry.rotations import quat_normalize_into as _normalize_into
from ..geometry.rotations import quat_to_rotvec_scalar as _quat_log
from ..geometry.rotations import rotvec_to_quat_scalar as _rotvec_quat
from ..geometry._vec import JIT
from . import batch as B
from . import kernels as K
from .body_projection import _bodies_solve, _rod_measure, _work_views, place_welded


class BodyModel(NamedTuple):
    """Constant data of bodies and welds (``W`` welds grouped by rod in ``rod_weld_start`` order;
    ``body_weld`` lists them again grouped by body). Local indices count from the rod's start."""

    body_mass: np.ndarray             # (B,) [kg]
    body_inertia: np.ndarray          # (3 B, 3) [kg m^2] body frame, rows 3 b .. 3 b + 2
    body_inv_inertia: np.ndarray      # (3 B, 3) [1/(kg m^2)]
    body_weld_start: np.ndarray       # (B + 1,) into body_weld
    body_weld: np.ndarray             # (W,) weld indices grouped by body
    body_load: np.ndarray             # (B,) load part of the energy scale [J]
    rod_weld_start: np.ndarray        # (R + 1,) into the weld arrays
    rod_coupled: np.ndarray           # (R,) 1 when the rod has a weld
    weld_body: np.ndarray             # (W,)
    weld_edge: np.ndarray             # (W,) local end edge
    weld_p: np.ndarray                # (W, 6) body-frame offsets of the edge's two vertices [m]
    weld_m1: np.ndarray               # (W, 3) body-frame material director
    weld_drag: np.ndarray             # (W, 2) wind drag coefficient drag * l of the two vertices [N s/m]
    vertex_body: np.ndarray           # (N,) body of a welded vertex, else -1
    vertex_free_mass: np.ndarray      # (N,) [kg] lumped mass, 0 on welded vertices
    option_float: np.ndarray          # (1,) body velocity factor per step (damping)
    option_int: np.ndarray            # (1,) energy check of the coupled group (0 / 1)
    weld_row: np.ndarray              # (W,) local contact edge: the edge joining the welded edge to the free rod
    weld_vertex: np.ndarray           # (W,) local welded vertex on the contact edge
    weld_sign: np.ndarray             # (W,) +1 if the welded vertex is the contact edge's second vertex, else -1
    weld_z_start: np.ndarray          # (W + 1,) into weld_z (the weld's rod's edge count each)
    rod_comp: np.ndarray              # (R,) connected component of a coupled rod, else -1
    body_comp: np.ndarray             # (B,) connected component of each body
    body_multi: np.ndarray            # (B,) 1 when the body has two or more welds (it joins the capacitance system)
    weld_cap: np.ndarray              # (W,) position of a multi-body weld in the elimination order, else -1
    cap_weld: np.ndarray              # (W_m,) weld at each position
    cap_pattern_start: np.ndarray     # (W_m + 1,) into cap_pattern
    cap_pattern: np.ndarray           # (P,) positions i > p of the nonzero entries L[i, p] of the capacitance factor
    body_sq_start: np.ndarray         # (B + 1,) into body_pinv (n_b^2 per body, n_b its welds)
    chunk_start: np.ndarray           # (T + 1,) into chunk_rod
    chunk_rod: np.ndarray             # (R_c,) coupled rods by parallel chunk (balanced by vertex count)
    free_rod: np.ndarray              # (R_f,) rods without a weld


class BodyWork(NamedTuple):
    """Scratch of the bodies: holds nothing between calls."""

    weld_wrench: np.ndarray           # (W, 6) force and torque of the rod on the body [N, N m]
    body_old: np.ndarray              # (B, 7) centre and quaternion at the step's start
    body_snap: np.ndarray             # (B, 13) x, q, v, w at the call's start
    edge_active: np.ndarray           # (E,) the edge's length constraint is active
    group_energy: np.ndarray          # (4,) energy gain, energy scale, start energy [J], failed flag
    weld_u: np.ndarray                # (W, 6) the weld's column of U: 2 s [e_c, rho x e_c] [m, m^2]
    weld_z: np.ndarray                # (sum,) T^-1 of the unit vector at each weld's contact row (its rod's rows)
    cap_val: np.ndarray               # (W_m + P,) capacitance matrix H (diagonal, then the pattern) and its factor
    cap_w: np.ndarray                 # (W_m,) right-hand side / solution of H w = V^T T'^-1 C by position
    body_pinv: np.ndarray             # (sum n_b^2,) (Delta_b - W_b)^-1 per multi-weld body, row-major
    rod_viol: np.ndarray              # (R,) constraint violation of each coupled rod at the last measure
    comp_state: np.ndarray            # (K,) 1 while the component iterates, 0 once projected
    comp_iters: np.ndarray            # (K,) the component's projection iterations in this step


_F1, _F2, _I1, _B1 = (0, 1), (0, 2), (1, 1), (2, 1)
_MODEL_KINDS = (_F1, _F2, _F2, _I1, _I1, _F1, _I1, _I1, _I1, _I1, _F2, _F2, _F2, _I1, _F1, _F1, _I1, _I1, _I1, _F1,
                _I1, _I1, _I1, _I1, _I1, _I1, _I1, _I1, _I1, _I1, _I1, _I1)
_WORK_KINDS = (_F2, _F2, _F2, _B1, _F1, _F2, _F1, _F1, _F1, _F1, _F1, _I1, _F1)
assert len(_MODEL_KINDS) == len(BodyModel._fields) and len(_WORK_KINDS) == len(BodyWork._fields)


def pack_bodies(model: BodyModel, work: BodyWork):
    """Pack the body groups like :func:`rodlab.der.batch.pack`."""
    packed, views = B.pack_arrays(list(model) + list(work), _MODEL_KINDS + _WORK_KINDS)
    nm = len(_MODEL_KINDS)
    return packed, BodyModel(*views[:nm]), BodyWork(*views[nm:])


_unpack_body_model = B.make_unpacker(BodyModel, _MODEL_KINDS, 0)
_unpack_body_work = B.make_unpacker(BodyWork, _WORK_KINDS, len(_MODEL_KINDS))


@njit(**B.JIT_INNER)
def unpack_bodies(f, i, b, L):
    """The body groups as borrowed views of their packed buffers (:func:`rodlab.der.batch.make_unpacker`);
    compiled code only, the views must not outlive the call that passed the buffers."""
    return _unpack_body_model(f, i, b, L), _unpack_body_work(f, i, b, L)


# --------------------------------------------------------------------------------------------
# energies (the per-rod views and the exact coupled projection, phase (d), live in
# rodlab.der.body_projection)
# --------------------------------------------------------------------------------------------
@njit(**JIT)
def coupled_energy(m, w, bm, X, V, TH, D1, TW, BX, BQ, BV, BW):
    """Mechanical energy of the coupled group (the geometry buffers must be current): rods'
    free-vertex kinetic + elastic - (m g + F).x, bodies' kinetic + rotational - M g.x. Returns
    ``(total, kinetic, elastic)`` [J]."""
    total = 0.0
    kinetic = 0.0
    elastic = 0.0
    for r in range(bm.rod_coupled.shape[0]):
        if bm.rod_coupled[r] == 0:
            continue
        vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
        el = K.elastic_energy(kb, D1[es:ee], e3[3], TH[es:ee], TW[js:je], s[0], m.edge_rest_length[es:ee],
                              m.joint_voronoi_length[js:je], m.joint_rest_curvature[js:je], m.edge_bend_stiffness[es:ee],
                              m.joint_rest_twist[js:je], m.joint_twist_stiffness[js:je], m.edge_stretch_stiffness[es:ee],
                              e3[4], e3[5], omega)
        tot, kin = B.mechanical_energy(X[vs:ve], V[vs:ve], bm.vertex_free_mass[vs:ve], m.world_gravity,
                                       m.vertex_force[vs:ve], el)
        total += tot
        kinetic += kin
        elastic += el
    g = m.world_gravity
    for b in range(bm.body_mass.shape[0]):
        M = bm.body_mass[b]
        I = bm.body_inertia[3 * b:3 * b + 3]
        ke = 0.5 * M * (BV[b, 0] ** 2 + BV[b, 1] ** 2 + BV[b, 2] ** 2)
        for a in range(3):
            for c in range(3):
                ke += 0.5 * BW[b, a] * I[a, c] * BW[b, c]
        kinetic += ke
        total += ke - M * (g[0] * BX[b, 0] + g[1] * BX[b, 1] + g[2] * BX[b, 2])
    return total, kinetic, elastic


# --------------------------------------------------------------------------------------------
# the phases of one step
# --------------------------------------------------------------------------------------------
@njit(**B.JIT_INNER)
def _begin(m, w, bm, bw, X, V, TH, D1, TW, BX, BQ, BV, BW):
    """Geometry of the state as it is now, snapshots, active constraints, start energy."""
    for r in range(bm.rod_coupled.shape[0]):
        if bm.rod_coupled[r] == 0:
            continue
        vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
        w.rod_status[r] = B.ROD_OK
        for k in range(6):
            w.rod_diag[r, k] = 0.0
        K.refresh_geometry(X[vs:ve], np.bool_(False), D1[es:ee], TW[js:je], np.bool_(False), e3[0], s[0], e3[1], kb,
                           e3[3])
        # loops, not slice assignments (rodlab.der.batch's compile-time notes)
        B._copy2(w.vertex_snap_x[vs:ve], X[vs:ve])
        B._copy2(w.vertex_snap_v[vs:ve], V[vs:ve])
        B._copy1(w.edge_snap_theta[es:ee], TH[es:ee])
        B._copy2(w.edge_snap_ref_d1[es:ee], D1[es:ee])
        B._copy1(w.joint_snap_ref_twist[js:je], TW[js:je])
        for c in range(m.rod_presc_start[r], m.rod_presc_start[r + 1]):
            for d in range(3):
                w.presc_x[c, d] = X[vs + m.presc_vertex[c], d]
        for j in range(ee - es):
            a, b = vs + j, vs + j + 1
            rigid = bm.vertex_body[a] >= 0 and bm.vertex_body[a] == bm.vertex_body[b]
            held = m.vertex_inv_mass[a] == 0.0 and m.vertex_inv_mass[b] == 0.0 and bm.vertex_body[a] < 0 and bm.vertex_body[b] < 0
            bw.edge_active[es + j] = not (rigid or held)
    for b in range(BX.shape[0]):
        for d in range(3):
            bw.body_snap[b, d] = BX[b, d]
            bw.body_snap[b, 7 + d] = BV[b, d]
            bw.body_snap[b, 10 + d] = BW[b, d]
        for d in range(4):
            bw.body_snap[b, 3 + d] = BQ[b, d]
    bw.group_energy[3] = 0.0
    if bm.option_int[0] != 0:
        e0, k0, el0 = coupled_energy(m, w, bm, X, V, TH, D1, TW, BX, BQ, BV, BW)
        scale = k0 + abs(el0) + 1e-300
        for r in range(bm.rod_coupled.shape[0]):
            if bm.rod_coupled[r] != 0:
                scale += m.rod_energy_load[r]
        for b in range(BX.shape[0]):
            scale += bm.body_load[b]
        bw.group_energy[1] = scale
        bw.group_energy[2] = e0


@njit(**B.JIT_INNER)
def _rod_forces(m, w, bm, bw, r, step, X, V, TH, D1, TW, BX, call_timed):
    """(a) forces on rod ``r`` and its welds' wrenches on their bodies."""
    vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
    x, v = X[vs:ve], V[vs:ve]
    forces, tangents, ref_d2, m1, m2 = v3[0], e3[1], e3[3], e3[4], e3[5]
    K.elastic_forces(kb, tangents, s[0], m.edge_rest_length[es:ee], D1[es:ee], ref_d2, TH[es:ee], TW[js:je],
                     m.joint_voronoi_length[js:je], m.joint_rest_curvature[js:je], m.edge_bend_stiffness[es:ee],
                     m.joint_rest_twist[js:je], m.joint_twist_stiffness[js:je], m.edge_stretch_stiffness[es:ee],
                     m1, m2, omega, forces)
    grad = s[1]
    K.twist_gradient_hessian(kb, D1[es:ee], ref_d2, TH[es:ee], TW[js:je], m.joint_voronoi_length[js:je],
                             m.joint_rest_curvature[js:je], m.edge_bend_stiffness[es:ee], m.joint_rest_twist[js:je],
                             m.joint_twist_stiffness[js:je], m1, m2, omega, grad, s[2], s[3])
    ext = w.vertex_ext_force[vs:ve]
    for i in range(ve - vs):
        for d in range(3):
            ext[i, d] = m.vertex_force[vs + i, d] + w.vertex_wind_force[vs + i, d]
    if m.rod_flag[r, B.FLAG_TIMED] != 0:
        for k in range(m.rod_timed_start[r], m.rod_timed_start[r + 1]):
            for d in range(3):
                ext[m.timed_vertex[k], d] += call_timed[step, k, d]
    for wd in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
        b = bm.weld_body[wd]
        j = bm.weld_edge[wd]
        for c in range(6):
            bw.weld_wrench[wd, c] = 0.0
        for sl in range(2):
            k = j + sl
            f0 = forces[k, 0] + ext[k, 0] - bm.weld_drag[wd, sl] * v[k, 0]
            f1 = forces[k, 1] + ext[k, 1] - bm.weld_drag[wd, sl] * v[k, 1]
            f2 = forces[k, 2] + ext[k, 2] - bm.weld_drag[wd, sl] * v[k, 2]
            r0, r1, r2 = x[k, 0] - BX[b, 0], x[k, 1] - BX[b, 1], x[k, 2] - BX[b, 2]
            bw.weld_wrench[wd, 0] += f0
            bw.weld_wrench[wd, 1] += f1
            bw.weld_wrench[wd, 2] += f2
            bw.weld_wrench[wd, 3] += r1 * f2 - r2 * f1
            bw.weld_wrench[wd, 4] += r2 * f0 - r0 * f2
            bw.weld_wrench[wd, 5] += r0 * f1 - r1 * f0
        for d in range(3):  # the explicit twist torque of Sec. 8.2
            bw.weld_wrench[wd, 3 + d] -= grad[j] * tangents[j, d]


@njit(**B.JIT_INNER)
def _bodies_step(m, bm, bw, h, BX, BQ, BV, BW):
    """(b) symplectic Euler of every body under its welds' wrenches and gravity."""
    Rm = np.empty((3, 3))
    F = np.empty(3)
    T = np.empty(3)
    tau = np.empty(3)
    Iw = np.empty(3)
    bdamp = bm.option_float[0]
    g = m.world_gravity
    for b in range(BX.shape[0]):
        for d in range(3):
            F[d] = 0.0
            T[d] = 0.0
        for k in range(bm.body_weld_start[b], bm.body_weld_start[b + 1]):
            wd = bm.body_weld[k]
            for d in range(3):
                F[d] += bw.weld_wrench[wd, d]
                T[d] += bw.weld_wrench[wd, 3 + d]
        for d in range(3):
            bw.body_old[b, d] = BX[b, d]
        for d in range(4):
            bw.body_old[b, 3 + d] = BQ[b, d]
        M = bm.body_mass[b]
        for d in range(3):
            F[d] += M * g[d]
        I = bm.body_inertia[3 * b:3 * b + 3]
        Iinv = bm.body_inv_inertia[3 * b:3 * b + 3]
        quat_matrix_into(BQ[b], Rm)
        for d in range(3):
            tau[d] = Rm[0, d] * T[0] + Rm[1, d] * T[1] + Rm[2, d] * T[2]
        for d in range(3):
            Iw[d] = I[d, 0] * BW[b, 0] + I[d, 1] * BW[b, 1] + I[d, 2] * BW[b, 2]
        tau[0] -= BW[b, 1] * Iw[2] - BW[b, 2] * Iw[1]
        tau[1] -= BW[b, 2] * Iw[0] - BW[b, 0] * Iw[2]
        tau[2] -= BW[b, 0] * Iw[1] - BW[b, 1] * Iw[0]
        for d in range(3):
            acc = Iinv[d, 0] * tau[0] + Iinv[d, 1] * tau[1] + Iinv[d, 2] * tau[2]
            Iw[d] = (BW[b, d] + h * acc) * bdamp
        for d in range(3):
            BW[b, d] = Iw[d]
            BV[b, d] = (BV[b, d] + h * F[d] / M) * bdamp
            BX[b, d] += h * BV[b, d]
        dq0, dq1, dq2, dq3 = _rotvec_quat(h * BW[b, 0], h * BW[b, 1], h * BW[b, 2])
        q0, q1, q2, q3 = _qmul(BQ[b, 0], BQ[b, 1], BQ[b, 2], BQ[b, 3], dq0, dq1, dq2, dq3)
        BQ[b, 0] = q0
        BQ[b, 1] = q1
        BQ[b, 2] = q2
        BQ[b, 3] = q3
        _normalize_into(BQ[b])




@njit(**B.JIT_INNER)
def _rod_positions(m, w, r, step, h, X, V, call_presc):
    """(a) unconstrained update of rod ``r``'s free vertices; clamped vertices set (welded ones
    are placed from their bodies by the projection)."""
    vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
    x, v = X[vs:ve], V[vs:ve]
    forces, x_old = v3[0], v3[1]
    ext = w.vertex_ext_force[vs:ve]
    g = m.world_gravity
    for i in range(ve - vs):
        im = m.vertex_inv_mass[vs + i]
        damp = m.vertex_damp[vs + i]
        for d in range(3):
            x_old[i, d] = x[i, d]
            if im > 0.0:
                v[i, d] = (v[i, d] + h * (im * (forces[i, d] + ext[i, d]) + g[d])) * damp
                x[i, d] += h * v[i, d]
    ps, pe = m.rod_presc_start[r], m.rod_presc_start[r + 1]
    moving = m.rod_flag[r, B.FLAG_MOVING] != 0
    for c in range(ps, pe):
        for d in range(3):
            x[m.presc_vertex[c], d] = call_presc[step, c, d] if moving else w.presc_x[c, d]


@njit(**B.JIT_INNER)
def _bodies_velocities(bw, h, BX, BQ, BV, BW):
    """(e) ``V = (r - r0)/h``, ``w = log(q0* q)/h``; returns False if a body became non-finite."""
    inv_h = 1.0 / h
    ok = True
    for b in range(BX.shape[0]):
        for d in range(3):
            BV[b, d] = (BX[b, d] - bw.body_old[b, d]) * inv_h
        p0, p1, p2, p3 = _qmul(bw.body_old[b, 3], -bw.body_old[b, 4], -bw.body_old[b, 5], -bw.body_old[b, 6],
                               BQ[b, 0], BQ[b, 1], BQ[b, 2], BQ[b, 3])
        w0, w1, w2 = _quat_log(p0, p1, p2, p3)
        BW[b, 0] = w0 * inv_h
        BW[b, 1] = w1 * inv_h
        BW[b, 2] = w2 * inv_h
        probe = BX[b, 0] + BX[b, 1] + BX[b, 2] + BQ[b, 0] + BQ[b, 1] + BQ[b, 2] + BQ[b, 3]
        if not math.isfinite(probe):
            ok = False
    return ok


@njit(**B.JIT_INNER)
def _rod_finish(m, w, bm, r, step, h, X, V, TH, D1, TW, BQ, call_m1):
    """(e) velocities, frames, clamped and welded angles, quasistatic twist of rod ``r``.
    Returns False if the rod became non-finite."""
    vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
    x, v, theta, ref_d1, ref_twist = X[vs:ve], V[vs:ve], TH[es:ee], D1[es:ee], TW[js:je]
    x_old = v3[1]
    probe = 0.0
    for i in range(ve - vs):
        for d in range(3):
            probe += x[i, d] - x[i, d]
    if probe != 0.0:
        return False
    inv_h = 1.0 / h
    for i in range(ve - vs):
        for d in range(3):
            v[i, d] = (x[i, d] - x_old[i, d]) * inv_h
    edges, tangents, ref_d2, lengths = e3[0], e3[1], e3[3], s[0]
    K.refresh_geometry(x, np.bool_(False), ref_d1, ref_twist, np.bool_(True), edges, lengths, tangents, kb, ref_d2)
    cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
    if m.rod_flag[r, B.FLAG_MOVING] != 0:
        K.clamp_material_angles(ref_d1, ref_d2, tangents, theta, m.clamp_edge[cs:ce], call_m1[step, cs:ce])
    else:
        K.clamp_material_angles(ref_d1, ref_d2, tangents, theta, m.clamp_edge[cs:ce], m.clamp_m1[cs:ce])
    Rm = np.empty((3, 3))
    dirs = np.empty((1, 3))
    edge = np.empty(1, dtype=np.int64)
    for wd in range(bm.rod_weld_start[r], bm.rod_weld_start[r + 1]):
        quat_matrix_into(BQ[bm.weld_body[wd]], Rm)
        for d in range(3):
            dirs[0, d] = Rm[d, 0] * bm.weld_m1[wd, 0] + Rm[d, 1] * bm.weld_m1[wd, 1] + Rm[d, 2] * bm.weld_m1[wd, 2]
        edge[0] = bm.weld_edge[wd]
        K.clamp_material_angles(ref_d1, ref_d2, tangents, theta, edge, dirs)
    it, gn = K.update_twist(kb, ref_d1, ref_d2, tangents, theta, ref_twist, lengths, m.edge_rest_length[es:ee],
                            m.joint_voronoi_length[js:je], m.joint_rest_curvature[js:je], m.edge_bend_stiffness[es:ee],
                            m.joint_rest_twist[js:je], m.joint_twist_stiffness[js:je], m.edge_stretch_stiffness[es:ee],
                            m.edge_free_theta[es:ee], np.bool_(False), m.rod_flag[r, B.FLAG_UNIFORM] != 0,
                            m.rod_twist_tol[r], m.option_int[1], e3[4], e3[5], omega, s[1], s[2], s[3], s[4])
    w.rod_diag[r, 2] = max(w.rod_diag[r, 2], it)
    w.rod_diag[r, 3] = max(w.rod_diag[r, 3], gn)
    return True


@njit(**B.JIT_INNER)
def _mark(bm, w, status):
    for r in range(bm.rod_coupled.shape[0]):
        if bm.rod_coupled[r] != 0 and w.rod_status[r] == B.ROD_OK:
            w.rod_status[r] = status


# --------------------------------------------------------------------------------------------
# parallel phases over rods and the step loop
# --------------------------------------------------------------------------------------------
_PH_FORCES, _PH_MEASURE, _PH_FINISH, _PH_VELOCITY = 0, 1, 2, 3


@njit(**B.JIT_INNER)
def _rod_phase(m, w, bm, bw, r, kind, step, it, solve, more, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc,
               call_m1, call_timed):
    """Rod ``r``'s part of a parallel phase: ``_PH_FORCES`` (a) of step ``step``;
    ``_PH_MEASURE`` one projection visit; ``_PH_FINISH`` (d) of step ``step`` and, if ``more``, (a)
    of the next step; ``_PH_VELOCITY`` one visit of RATTLE's velocity projection. A failure sets
    the rod's status."""
    try:
        if kind == _PH_MEASURE or kind == _PH_VELOCITY:
            if bw.comp_state[bm.rod_comp[r]] != 0:
                _rod_measure(m, w, bm, bw, r, it, solve, kind == _PH_VELOCITY, X, V, BX, BQ, BV, BW)
            return
        nxt = step
        if kind == _PH_FINISH:
            nxt = step + 1
            if not _rod_finish(m, w, bm, r, step, h, X, V, TH, D1, TW, BQ, call_m1):
                w.rod_status[r] = B.ROD_NONFINITE
                return
        if more:
            _rod_forces(m, w, bm, bw, r, nxt, X, V, TH, D1, TW, BX, call_timed)
            _rod_positions(m, w, r, nxt, h, X, V, call_presc)
    except Exception:  # a singular twist system: the geometry degenerated
        w.rod_status[r] = B.ROD_DEGENERATE


@njit(**B.JIT_INNER)
def _chunk(f, i, b, L, bf, bi, bb, bL, c, kind, step, it, solve, more, h, X, V, TH, D1, TW, BX, BQ, BV, BW,
           call_presc, call_m1, call_timed):
    m, w = B.unpack(f, i, b, L)
    bm, bw = unpack_bodies(bf, bi, bb, bL)
    for k in range(bm.chunk_start[c], bm.chunk_start[c + 1]):
        _rod_phase(m, w, bm, bw, bm.chunk_rod[k], kind, step, it, solve, more, h, X, V, TH, D1, TW, BX, BQ, BV, BW,
                   call_presc, call_m1, call_timed)


@njit(parallel=True, **JIT)
def _phase(f, i, b, L, bf, bi, bb, bL, kind, step, it, solve, more, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc,
           call_m1, call_timed, serial):
    """One per-rod phase over every coupled rod, in parallel over the chunks of rods (the
    parallel loop sees only the packed buffers; each chunk unpacks them once). ``serial``:
    ``None``, or ``True`` for a plain loop over the chunks instead (numba prunes the other
    branch: no parallel loop is compiled, which the ahead-of-time build needs, rodlab.aot;
    the chunks touch disjoint rods, so the results are bitwise the same)."""
    if serial is None:
        for c in prange(bL[29, 1] - 1):  # chunk_start has one entry per chunk + 1
            _chunk(f, i, b, L, bf, bi, bb, bL, np.int64(c), kind, step, it, solve, more, h, X, V, TH, D1, TW, BX, BQ,
                   BV, BW, call_presc, call_m1, call_timed)
    else:
        for c in range(bL[29, 1] - 1):
            _chunk(f, i, b, L, bf, bi, bb, bL, np.int64(c), kind, step, it, solve, more, h, X, V, TH, D1, TW, BX, BQ,
                   BV, BW, call_presc, call_m1, call_timed)


@njit(**B.JIT_INNER)
def _coupled_failed(bm, w):
    for r in range(bm.rod_coupled.shape[0]):
        if bm.rod_coupled[r] != 0 and w.rod_status[r] != B.ROD_OK:
            return w.rod_status[r]
    return B.ROD_OK


@njit(**B.JIT_INNER)
def _project(f, i, b, L, bf, bi, bb, bL, m, w, bm, bw, step, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1,
             call_timed, serial):
    """(c) Newton iterations of every group until its violation is within ``projection_tol``
    (at most ``projection_max_iter`` solves). Returns False if ``T`` or ``S`` lost definiteness."""
    tol, max_iter = m.option_float[0], m.option_int[0]
    nk = bw.comp_state.shape[0]
    comp_viol = np.zeros(nk)
    for k in range(nk):
        bw.comp_state[k] = 1
        bw.comp_iters[k] = 0.0
    for it in range(max_iter + 1):
        _phase(f, i, b, L, bf, bi, bb, bL, np.int64(_PH_MEASURE), step, it, it < max_iter, np.bool_(False), h, X, V,
               TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1, call_timed, serial)
        comp_viol[:] = 0.0
        for r in range(bm.rod_coupled.shape[0]):
            k = bm.rod_comp[r]
            if k >= 0 and bw.comp_state[k] != 0:
                if math.isnan(bw.rod_viol[r]):
                    return False
                comp_viol[k] = max(comp_viol[k], bw.rod_viol[r])
        iterating = False
        for k in range(nk):
            if bw.comp_state[k] != 0:
                if comp_viol[k] <= tol:
                    bw.comp_state[k] = 0
                else:
                    iterating = True
        if not iterating or it == max_iter:
            return True
        if not _bodies_solve(m, w, bm, bw, np.bool_(False), BX, BQ, BV, BW):
            return False
        for k in range(nk):
            if bw.comp_state[k] != 0:
                bw.comp_iters[k] += 1.0
    return True


@njit(**B.JIT_INNER)
def _project_velocities(f, i, b, L, bf, bi, bb, bL, m, w, bm, bw, step, h, X, V, TH, D1, TW, BX, BQ, BV, BW,
                        call_presc, call_m1, call_timed, serial):
    """RATTLE's velocity step for every coupled group: one exact solve of the coupled system with
    ``dC/dt`` as right-hand side (:func:`rodlab.der.body_projection._rod_measure`), the velocities
    of free vertices and bodies corrected, welded vertices' velocities set from their bodies.
    Returns False if a matrix lost definiteness."""
    for k in range(bw.comp_state.shape[0]):
        bw.comp_state[k] = 1
    _phase(f, i, b, L, bf, bi, bb, bL, np.int64(_PH_VELOCITY), step, np.int64(0), np.bool_(True), np.bool_(False), h,
           X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1, call_timed, serial)
    for r in range(bm.rod_coupled.shape[0]):
        if bm.rod_comp[r] >= 0 and math.isnan(bw.rod_viol[r]):
            return False
    if not _bodies_solve(m, w, bm, bw, np.bool_(True), BX, BQ, BV, BW):
        return False
    _phase(f, i, b, L, bf, bi, bb, bL, np.int64(_PH_VELOCITY), step, np.int64(1), np.bool_(False), np.bool_(False), h,
           X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1, call_timed, serial)
    return True


@njit(**B.JIT_INNER)
def _advance_coupled(f, i, b, L, bf, bi, bb, bL, nsteps, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1,
                     call_timed, serial):
    """Advance the coupled rods and every body by ``nsteps`` steps of ``h`` [s] (module
    docstring); statuses and diagnostics go to ``w.rod_status`` / ``w.rod_diag`` of the coupled
    rods (the caller restores on failure). Returns the steps completed."""
    m, w = B.unpack(f, i, b, L)
    bm, bw = unpack_bodies(bf, bi, bb, bL)
    R = bm.rod_coupled.shape[0]
    _begin(m, w, bm, bw, X, V, TH, D1, TW, BX, BQ, BV, BW)
    fail = m.option_float[1]
    symplectic = m.option_int[3] != 0
    done = 0
    if nsteps > 0:
        _phase(f, i, b, L, bf, bi, bb, bL, np.int64(_PH_FORCES), np.int64(0), np.int64(0), np.bool_(False),
               np.bool_(True), h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1, call_timed, serial)
    for step in range(nsteps):
        bad = _coupled_failed(bm, w)
        if bad != B.ROD_OK:
            _mark(bm, w, bad)
            break
        _bodies_step(m, bm, bw, h, BX, BQ, BV, BW)
        if not _project(f, i, b, L, bf, bi, bb, bL, m, w, bm, bw, step, h, X, V, TH, D1, TW, BX, BQ, BV, BW,
                        call_presc, call_m1, call_timed, serial):
            _mark(bm, w, np.int64(B.ROD_DEGENERATE))
            break
        worst = 0.0
        for r in range(R):
            k = bm.rod_comp[r]
            if k >= 0:
                w.rod_diag[r, 0] = max(w.rod_diag[r, 0], bw.comp_iters[k])
                w.rod_diag[r, 1] = max(w.rod_diag[r, 1], bw.rod_viol[r])
                worst = max(worst, bw.rod_viol[r])
        if not worst <= fail:
            for r in range(R):
                if bm.rod_coupled[r] != 0 and not bw.rod_viol[r] <= fail:
                    w.rod_status[r] = B.ROD_PROJECTION
            _mark(bm, w, np.int64(B.ROD_PROJECTION))
            break
        if not _bodies_velocities(bw, h, BX, BQ, BV, BW):
            _mark(bm, w, np.int64(B.ROD_NONFINITE))
            break
        more = step + 1 < nsteps
        _phase(f, i, b, L, bf, bi, bb, bL, np.int64(_PH_FINISH), step, np.int64(0), np.bool_(False),
               more and not symplectic, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1, call_timed, serial)
        if symplectic and _coupled_failed(bm, w) == B.ROD_OK:
            if not _project_velocities(f, i, b, L, bf, bi, bb, bL, m, w, bm, bw, step, h, X, V, TH, D1, TW, BX, BQ, BV,
                                       BW, call_presc, call_m1, call_timed, serial):
                _mark(bm, w, np.int64(B.ROD_DEGENERATE))
                break
            if more:
                _phase(f, i, b, L, bf, bi, bb, bL, np.int64(_PH_FORCES), step + 1, np.int64(0), np.bool_(False),
                       np.bool_(True), h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1, call_timed, serial)
        bad = _coupled_failed(bm, w)
        if bad != B.ROD_OK:
            _mark(bm, w, bad)
            break
        done += 1
    for r in range(R):
        if bm.rod_coupled[r] != 0:
            w.rod_diag[r, 4] = done
    if done == nsteps and bm.option_int[0] != 0 and nsteps > 0:
        for r in range(R):
            if bm.rod_coupled[r] != 0:
                vs, ve, es, ee, js, je, v3, e3, s, kb, omega = _work_views(m, w, r)
                K.refresh_geometry(X[vs:ve], np.bool_(False), D1[es:ee], TW[js:je], np.bool_(False), e3[0], s[0],
                                   e3[1], kb, e3[3])
        e1, k1, el1 = coupled_energy(m, w, bm, X, V, TH, D1, TW, BX, BQ, BV, BW)
        bw.group_energy[0] = e1 - bw.group_energy[2]
        if bw.group_energy[0] > 0.5 * bw.group_energy[1]:
            bw.group_energy[3] = 1.0
            _mark(bm, w, np.int64(B.ROD_ENERGY))
    return done


@njit(**B.JIT_INNER)
def restore_bodies(bw, BX, BQ, BV, BW):
    for b in range(BX.shape[0]):
        for d in range(3):
            BX[b, d] = bw.body_snap[b, d]
            BV[b, d] = bw.body_snap[b, 7 + d]
            BW[b, d] = bw.body_snap[b, 10 + d]
        for d in range(4):
            BQ[b, d] = bw.body_snap[b, 3 + d]


@njit(parallel=True, **JIT)
def _advance_free_rods(f, i, b, L, free, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed):
    for k in prange(free.shape[0]):
        B._advance_rod_packed(f, i, b, L, free[k], nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed)


@njit(**JIT)
def advance_world(f, i, b, L, bf, bi, bb, bL, free_rod, nsteps, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc,
                  call_m1, call_timed, serial):
    """One call for a world with bodies: rods without welds step on their own, in parallel
    (:func:`rodlab.der.batch.advance_rod`), then the coupled rods and the bodies step together
    (module docstring). On any failure every rod and body is restored to the call's start.
    Returns the result code (``rodlab.der.batch.STATUS_*`` bits). ``free_rod``: the rods without
    a weld (``BodyModel.free_rod``), or ``None`` where every rod is welded: the free rods' step
    (the whole single-rod call tree, ~40 s of a cold start's compile CPU) is then not compiled.
    ``serial``: ``None`` (the coupled rods' phases in parallel over chunks of rods), or ``True``
    (a plain loop over the chunks: :func:`_phase`; the ahead-of-time entry, rodlab.aot)."""
    bm, bw = unpack_bodies(bf, bi, bb, bL)
    if free_rod is not None:
        _advance_free_rods(f, i, b, L, free_rod, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed)
    _advance_coupled(f, i, b, L, bf, bi, bb, bL, nsteps, h, X, V, TH, D1, TW, BX, BQ, BV, BW, call_presc, call_m1,
                     call_timed, serial)
    m, w = B.unpack(f, i, b, L)
    code = B._finish(m, w, X, V, TH, D1, TW)
    if code & B.STATUS_FAILED:
        restore_bodies(bw, BX, BQ, BV, BW)
    return code


__all__ = ["BodyModel", "BodyWork", "advance_world", "coupled_energy", "pack_bodies", "place_welded", "unpack_bodies"]
