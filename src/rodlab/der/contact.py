"""Contact and Coulomb friction inside the explicit DER step, on the velocity level.

Bergou, Wardetzky, Robinson, Audoly, Grinspun, "Discrete Elastic Rods" (ACM TOG 2008) handle
contact in their explicit simulations (Table 1, Figs. 1, 9, 10) with impulses after the elastic
update; here, after each step of the unchanged compiled DER kernel (symplectic Euler, fast or
symplectic projection, quasistatic twist), the contact response runs, the steps of a call and
their responses in one compiled loop (:func:`rodlab.der.contact_steps.advance_contact_steps`; this module holds
its impulse, projection and frame kernels and :class:`DERContact`, the contact data):

1. **Rows.** Contacts are detected at the step's end positions ``x1`` (the kernels of
   :func:`rodlab.contact.detect`, serial: :func:`rodlab.der.contact_loop.detect_rows`; margin
   ``margin_factor`` times the smallest contact radius); when
   some vertex moved more than half the smallest contact radius in the step, or the world has a
   mesh, continuous detection (those of :func:`rodlab.contact.impacts`) from ``x0`` to ``x1`` adds every pair
   that touched during the step, with its normal and closest points taken *at the time of impact*
   (so a pair that passed through is pushed back to the side it came from). Each row ``k`` joins
   the points ``p_a = sum_i w_ai x_i`` (two vertices of segment a, barycentric weights) and
   ``p_b`` (two vertices of segment b, or a fixed obstacle point), normal ``n_k`` (b toward a) and
   gap ``g_k`` at ``x1``.
2. **Impulses** (projected Gauss-Seidel, compiled, :func:`solve_impulses`): velocity changes
   ``dv`` that make every row non-penetrating at the step's end to first order,
   ``g_k + h n_k . (dv_a - dv_b) >= 0`` (``v_a = sum_i w_ai v_i``), with normal impulses
   ``lambda_k >= 0`` applied through the lumped masses, ``dv_i = M_i^-1 w_ik lambda_k n_k``
   (effective inverse mass ``W_k = sum_i w_ik^2 / M_i``; clamped and pinned vertices have
   ``1 / M = 0``), and Coulomb friction: the tangential impulse that stops the relative
   tangential velocity is kept while within ``mu lambda_k`` (static), else it is cut to
   ``mu lambda_k`` against the slip (kinetic). Iterated until no row changes any velocity by
   more than ``tolerance`` [m/s]; where the sweeps crawl (nearly redundant rows), the clusters of
   rows that share vertices are solved by semismooth Newton on the same fixed point
   (:mod:`rodlab.der.contact_newton`) and the sweeps confirm it. Normal impulses are inelastic
   (no restitution): a resting contact ends the step at gap 0 with zero normal velocity.
3. **Positions.** ``x1 += h dv``; every touched rod is projected back onto inextensibility with
   the simulator's projection (fast projection, Goldenthal et al. 2007, as in Bergou et al. 2008
   Sec. 8.1; or, with ``projection="symplectic"``, the SHAKE correction along the constraint
   gradients at the positions before the displacement) and its velocity gets
   ``(x_projected - x1) / h``; rounds 1-3 repeat (with fresh detection) until a round finds no
   row violated by more than ``penetration_tol`` (or ``max_rounds``). With
   ``projection="symplectic"`` the touched rods' velocities are then projected onto the
   constraints' tangent space (RATTLE's velocity step, :func:`velocity_project_rods`).
4. **Frames.** Touched rods' reference frames are parallel transported in time to the corrected
   edges, reference twists recomputed, clamped angles re-set and the quasistatic twist re-solved
   (the same kernels as the DER step).

Rod-rod impulses are equal and opposite, so they conserve linear momentum exactly. Detection is
skipped while a clearance bound kept in the state proves that no pair can be within reach
(:func:`rodlab.der.contact_loop.respond`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..contact import OBSTACLE, detect, from_arrays, min_gap
from ..contact.detect import _obstacle_table
from ..contact.narrowphase import MESH
from ..geometry._vec import JIT
from ..geometry.curves import compute_edges, compute_tangents
from ..numba_views import borrow
from . import kernels as K
from .contact_newton import apply_impulse, contact_clusters, newton_cluster
from .projection import _mark_active, fast_projection, shake_projection, velocity_projection



# ---- compiled kernels -----------------------------------------------------------------------------
@njit(**JIT)
def copy_rows(dst, src, n):
    """``dst[:n] = src[:n]`` for 1-D or 2-D arrays, written as a loop: a slice assignment compiles
    numba's broadcasting error path once per pair of array types (~1.5 s each, measured in
    ``der/batch.py``)."""
    for k in range(n):
        dst[k] = src[k]


@njit(**JIT)
def copy_rows2(dst, src, n):
    """:func:`copy_rows` for 2-D arrays, element by element."""
    for k in range(n):
        for c in range(src.shape[1]):
            dst[k, c] = src[k, c]


@njit(inline="always", **JIT)
def _rel_velocity(k, v, va, vb, wa, wb, out):
    for c in range(3):
        out[c] = wa[k, 0] * v[va[k, 0], c] + wa[k, 1] * v[va[k, 1], c]
        if vb[k, 0] >= 0:
            out[c] -= wb[k, 0] * v[vb[k, 0], c] + wb[k, 1] * v[vb[k, 1], c]


@njit(**JIT)
def apply_impulses(va, vb, wa, wb, normal, inv_mass, v, lam_n, lam_t):
    """Every row's impulse ``lam_n[k] normal[k] + lam_t[k]`` [N s] applied to ``v`` (N, 3) [m/s]
    through the lumped masses (the rows of :func:`solve_impulses`)."""
    j = np.empty(3)
    for k in range(va.shape[0]):
        if lam_n[k] == 0.0 and lam_t[k, 0] == 0.0 and lam_t[k, 1] == 0.0 and lam_t[k, 2] == 0.0:
            continue
        for c in range(3):
            j[c] = lam_n[k] * normal[k, c] + lam_t[k, c]
        apply_impulse(k, v, inv_mass, va, vb, wa, wb, j)


@njit(**JIT)
def gauss_seidel(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, weff, order, max_iter, tolerance,
                 change, travel):
    """Sweeps of projected Gauss-Seidel on the contact rows ``order`` (in that order; rows of
    :func:`solve_impulses`, ``weff`` (K,) their effective inverse masses) (module docstring, step
    2), in place on ``v`` (N, 3) [m/s] and the accumulated impulses ``lam_n``, ``lam_t``, until
    a sweep changes no velocity by more than ``tolerance`` [m/s] or ``max_iter`` sweeps.
    ``change`` (K,) gets each swept row's largest velocity change [m/s] in the last sweep;
    ``travel`` (K,) accumulates the size of every impulse a row applies [N s] (the sum of its
    components' magnitudes: a bound on how far the row has moved its vertices, used by
    :func:`solve_impulses` to prove the rows it left out unaffected).
    Returns ``(sweeps, the last sweep's largest change [m/s])``."""
    vr = np.empty(3)
    j = np.empty(3)
    jt = np.empty(3)
    sweeps = 0
    worst = np.inf
    for it in range(max_iter):
        sweeps = it + 1
        worst = 0.0
        for q in range(order.shape[0]):
            k = order[q]
            w = weff[k]
            change[k] = 0.0
            if w <= 0.0:
                continue
            _rel_velocity(k, v, va, vb, wa, wb, vr)
            vn = vr[0] * normal[k, 0] + vr[1] * normal[k, 1] + vr[2] * normal[k, 2]
            new = max(lam_n[k] + (target[k] - vn) / w, 0.0)
            dl = new - lam_n[k]
            lam_n[k] = new
            if dl != 0.0:
                for c in range(3):
                    j[c] = dl * normal[k, c]
                apply_impulse(k, v, inv_mass, va, vb, wa, wb, j)
                change[k] = abs(dl) * w
                worst = max(worst, change[k])
                travel[k] += abs(j[0]) + abs(j[1]) + abs(j[2])
            # friction: the bound mu lambda_n is 0 on a row without normal impulse, so there (and with no
            # tangential impulse to take back) the update is a no-op and is skipped
            if (mu[k] > 0.0 and lam_n[k] > 0.0) or lam_t[k, 0] != 0.0 or lam_t[k, 1] != 0.0 or lam_t[k, 2] != 0.0:
                _rel_velocity(k, v, va, vb, wa, wb, vr)
                vn = vr[0] * normal[k, 0] + vr[1] * normal[k, 1] + vr[2] * normal[k, 2]
                for c in range(3):
                    jt[c] = lam_t[k, c] - (vr[c] - vn * normal[k, c]) / w
                # keep it tangential (the normal may have changed the slip direction only)
                jn = jt[0] * normal[k, 0] + jt[1] * normal[k, 1] + jt[2] * normal[k, 2]
                for c in range(3):
                    jt[c] -= jn * normal[k, c]
                size = math.sqrt(jt[0] ** 2 + jt[1] ** 2 + jt[2] ** 2)
                limit = mu[k] * lam_n[k]
                if size > limit:
                    scale = limit / size
                    for c in range(3):
                        jt[c] *= scale
                dmax = 0.0
                for c in range(3):
                    j[c] = jt[c] - lam_t[k, c]
                    lam_t[k, c] = jt[c]
                    dmax = max(dmax, abs(j[c]))
                if dmax > 0.0:
                    apply_impulse(k, v, inv_mass, va, vb, wa, wb, j)
                    change[k] = max(change[k], dmax * w)
                    worst = max(worst, change[k])
                    travel[k] += abs(j[0]) + abs(j[1]) + abs(j[2])
        if worst <= tolerance:
            break
    return sweeps, worst


@njit(**JIT)
def solve_impulses(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, max_iter, tolerance, newton_after,
                   newton_rows, newton_iter, dormant_reach, counts):
    """The impulses of the contact rows (module docstring, step 2), in place on ``v`` (N, 3)
    [m/s]. Row ``k``: vertices ``va[k]`` (2,) with weights ``wa[k]``, ``vb[k]`` likewise
    (``vb[k, 0] = -1``: a fixed obstacle), unit ``normal[k]``, the least normal relative velocity
    ``target[k]`` [m/s], Coulomb ``mu[k]``. Accumulated impulses [N s]: ``lam_n`` (K,) normal,
    ``lam_t`` (K, 3) tangential.

    Projected Gauss-Seidel (:func:`gauss_seidel`) until no row changes a velocity by more than
    ``tolerance`` [m/s] (``max_iter`` sweeps at most). When ``newton_after >= 0`` and the first
    ``newton_after`` sweeps have not converged, every cluster of 2 to ``newton_rows`` live rows
    (a normal impulse, or changed by the last sweep) that share vertices
    (:func:`rodlab.der.contact_newton.contact_clusters`; a lone row is solved exactly by one
    sweep) and that the last sweep still changed by more than ``tolerance`` is solved by
    semismooth Newton
    (:func:`rodlab.der.contact_newton.newton_cluster`, ``newton_iter`` iterations at most, to
    ``tolerance / 10``), and Gauss-Seidel goes on from there on each unconverged cluster alone
    (clusters share no vertex: sweeping one does not change another) with the same stopping test:
    the same fixed point, reached in a few iterations where the sweeps crawl on redundant rows.

    *Dormant rows* (docs/contact-der-speed.md, "H-plect"). A row without impulse whose normal
    relative velocity exceeds its target (slack ``s_k > 0``: a pair within the detection margin
    that is not approaching fast enough to close its gap in the step) is left out of the sweeps
    when its slack exceeds ``dormant_reach`` times the velocity change that the rows which must
    act (violated, or holding an impulse) would give its vertices alone (a prediction; 0: no row
    is left out):
    a sweep's visit of it is an exact no-op (its new normal impulse ``max(0, (target - v_n) / W)``
    is 0, its friction bound 0) for as long as ``v_n >= target``. Every impulse the solve applies
    is summed per row (``travel``, its components' magnitudes), which bounds how far any vertex's
    velocity has moved at any moment of the solve, ``|dv_i| <= M_i^-1 sum_k |w_ik| travel_k``,
    hence a left-out row's ``v_n`` by ``B_k = sum_i |w_ik| |dv_i|``. When every left-out row has
    ``s_k > B_k`` (with a margin for round-off) none of its skipped visits could have done
    anything: the result is the one of the sweeps over every row, bit for bit. Otherwise the solve
    is restarted from its start with the rows not so proven taken in (until all are proven, or
    none is left out). ``counts`` (4,) accumulates the Newton cluster solves, their iterations,
    the rows left out and the restarts. Returns the sweeps done (the first ones, then the most
    any cluster took)."""
    K_ = va.shape[0]
    weff = np.zeros(K_)
    for k in range(K_):
        w = wa[k, 0] ** 2 * inv_mass[va[k, 0]] + wa[k, 1] ** 2 * inv_mass[va[k, 1]]
        if vb[k, 0] >= 0:
            w += wb[k, 0] ** 2 * inv_mass[vb[k, 0]] + wb[k, 1] ** 2 * inv_mass[vb[k, 1]]
        weff[k] = w
    # the rows swept (in increasing order) and the dormant ones; a row without inverse mass is a no-op either way
    slack = np.empty(K_)
    scale = np.empty(K_)
    reach = np.zeros(v.shape[0])
    is_active = np.zeros(K_, dtype=np.bool_)
    active = np.empty(K_, dtype=np.int64)
    n_active = 0
    n_dormant = 0
    for k in range(K_):
        if weff[k] <= 0.0:
            continue
        vn = 0.0
        mag = abs(target[k])
        for c in range(3):
            vr = wa[k, 0] * v[va[k, 0], c] + wa[k, 1] * v[va[k, 1], c]
            mag += abs(wa[k, 0] * v[va[k, 0], c]) + abs(wa[k, 1] * v[va[k, 1], c])
            if vb[k, 0] >= 0:
                vr -= wb[k, 0] * v[vb[k, 0], c] + wb[k, 1] * v[vb[k, 1], c]
                mag += abs(wb[k, 0] * v[vb[k, 0], c]) + abs(wb[k, 1] * v[vb[k, 1], c])
            vn += vr * normal[k, c]
        slack[k] = vn - target[k]
        scale[k] = mag
        # a prediction of how far the rows that must act will move their vertices: dormant_reach times the
        # velocity change that closes each violated row alone, or holds its impulse
        push = max(-slack[k], 0.0) + (abs(lam_n[k]) + abs(lam_t[k, 0]) + abs(lam_t[k, 1]) + abs(lam_t[k, 2])) * weff[k]
        if push > 0.0:
            push *= dormant_reach / weff[k]
            for i in range(2):
                reach[va[k, i]] += inv_mass[va[k, i]] * abs(wa[k, i]) * push
                if vb[k, 0] >= 0:
                    reach[vb[k, i]] += inv_mass[vb[k, i]] * abs(wb[k, i]) * push
    for k in range(K_):
        if weff[k] <= 0.0:
            continue
        bound = abs(wa[k, 0]) * reach[va[k, 0]] + abs(wa[k, 1]) * reach[va[k, 1]]
        if vb[k, 0] >= 0:
            bound += abs(wb[k, 0]) * reach[vb[k, 0]] + abs(wb[k, 1]) * reach[vb[k, 1]]
        if (newton_after != 0 and dormant_reach > 0.0 and lam_n[k] == 0.0 and lam_t[k, 0] == 0.0 and lam_t[k, 1] == 0.0
                and lam_t[k, 2] == 0.0 and slack[k] > bound + 1e-12 * (scale[k] + bound)):
            n_dormant += 1
        else:
            is_active[k] = True
            active[n_active] = k
            n_active += 1
    change = np.zeros(K_)
    travel = np.zeros(K_)
    if n_dormant:  # the start, for a restart
        v_start = v.copy()
        lam_n_start = lam_n.copy()
        lam_t_start = lam_t.copy()
        counts_start = counts[:2].copy()
    else:
        v_start, lam_n_start, lam_t_start, counts_start = np.empty((0, 3)), np.empty(0), np.empty((0, 3)), np.empty(0)
    start = np.empty(K_ + 1, dtype=np.int64)
    members = np.empty(K_, dtype=np.int64)
    swept = np.empty(K_, dtype=np.int64)
    while True:
        order = active[:n_active]
        if newton_after < 0 or newton_after >= max_iter:
            sweeps, _ = gauss_seidel(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, weff, order,
                                     max_iter, tolerance, change, travel)
        else:
            sweeps, worst = gauss_seidel(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, weff, order,
                                         newton_after, tolerance, change, travel)
            if worst > tolerance:
                if sweeps == 0:
                    for k in range(K_):
                        change[k] = np.inf
                # Newton on the clusters of the live rows (a normal impulse, or still changing): rows resting at
                # zero impulse within the margin are left out, so a long line of contact splits into its pressed parts
                live_w = np.zeros(K_)
                for k in range(K_):
                    if lam_n[k] > 0.0 or change[k] > tolerance:
                        live_w[k] = weff[k]
                nc = contact_clusters(va, vb, live_w, inv_mass, v.shape[0], start, members)
                for c in range(nc):
                    rows = members[start[c]:start[c + 1]]
                    moving = 0.0
                    for q in range(rows.shape[0]):
                        moving = max(moving, change[rows[q]])
                    if moving > tolerance and 2 <= rows.shape[0] <= newton_rows:
                        counts[0] += 1
                        counts[1] += newton_cluster(rows, va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n,
                                                    lam_t, newton_iter, 0.1 * tolerance, travel)
                # Gauss-Seidel finishes each cluster of all rows (it is independent of the others): a sweep to
                # confirm Newton's roots, or the sweeps from where Newton stopped; its dormant rows are not swept
                nc = contact_clusters(va, vb, weff, inv_mass, v.shape[0], start, members)
                more = 0
                for c in range(nc):
                    moving = 0.0
                    n_swept = 0
                    for q in range(start[c], start[c + 1]):
                        k = members[q]
                        moving = max(moving, change[k])
                        if is_active[k]:
                            swept[n_swept] = k
                            n_swept += 1
                    if moving <= tolerance:
                        continue
                    done, _ = gauss_seidel(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, weff,
                                           swept[:n_swept], max_iter - sweeps, tolerance, change, travel)
                    more = max(more, done)
                sweeps += more
        if n_dormant == 0:
            return sweeps
        # the proof that no dormant row's visit could have acted: its v_n moved by less than its slack
        for i in range(reach.shape[0]):
            reach[i] = 0.0
        for q in range(n_active):
            k = active[q]
            if travel[k] == 0.0:
                continue
            for i in range(2):
                reach[va[k, i]] += inv_mass[va[k, i]] * abs(wa[k, i]) * travel[k]
                if vb[k, 0] >= 0:
                    reach[vb[k, i]] += inv_mass[vb[k, i]] * abs(wb[k, i]) * travel[k]
        unproven = 0
        for k in range(K_):
            if is_active[k] or weff[k] <= 0.0:
                continue
            bound = abs(wa[k, 0]) * reach[va[k, 0]] + abs(wa[k, 1]) * reach[va[k, 1]]
            if vb[k, 0] >= 0:
                bound += abs(wb[k, 0]) * reach[vb[k, 0]] + abs(wb[k, 1]) * reach[vb[k, 1]]
            if not slack[k] > (1.0 + 1e-9) * bound + 1e-12 * (scale[k] + bound):
                is_active[k] = True
                unproven += 1
        if unproven == 0:
            counts[2] += n_dormant
            return sweeps
        # restart from the start with the unproven rows swept too
        counts[3] += 1
        n_dormant -= unproven
        n_active = 0
        for k in range(K_):
            if is_active[k]:
                active[n_active] = k
                n_active += 1
        copy_rows2(v, v_start, v.shape[0])
        copy_rows(lam_n, lam_n_start, K_)
        copy_rows2(lam_t, lam_t_start, K_)
        counts[0] = counts_start[0]
        counts[1] = counts_start[1]
        for k in range(K_):
            change[k] = 0.0
            travel[k] = 0.0


@njit(**JIT)
def project_rods(rods, x, v, h, inv_mass, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
                 edge_rest_length, slide_vertex, slide_axis, slide_w, slide_edge, slide_side, tol, max_iter,
                 symplectic, x_ref, rod_viol):
    """Projection of each rod in ``rods`` onto inextensibility, in place on ``x``; the
    projection's displacement over ``h`` is added to ``v``. Fast projection (Goldenthal et al.
    2007), or with ``symplectic`` the SHAKE correction along the constraint gradients at
    ``x_ref`` (N, 3) (the positions before the correction's displacement, on the constraints:
    :func:`rodlab.der.projection.shake_projection`, the simulator's RATTLE step). ``rod_viol``
    (len(rods),) gets each rod's relative length violation left. Returns the largest."""
    worst = 0.0
    for q in range(rods.shape[0]):
        r = rods[q]
        vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
        es, ee = rod_edge_start[r], rod_edge_start[r + 1]
        ss, se = rod_slide_start[r], rod_slide_start[r + 1]
        ne = ee - es
        xr = x[vs:ve].copy()
        before = xr.copy()
        edges = np.empty((ne, 3))
        a_diag, a_lower, rhs, dlam = np.empty(ne), np.empty(ne), np.empty(ne), np.empty(ne)
        active = np.empty(ne, dtype=np.bool_)
        if symplectic:
            _, viol = shake_projection(xr, x_ref[vs:ve], inv_mass[vs:ve], edge_rest_length[es:ee], rod_closed[r], tol,
                                       max_iter, edges, np.empty((ne, 3)), a_diag, a_lower, rhs, active, dlam,
                                       slide_vertex[ss:se], slide_axis[ss:se], slide_w[ss:se], slide_edge[ss:se],
                                       slide_side[ss:se])
        else:
            _, viol = fast_projection(xr, inv_mass[vs:ve], edge_rest_length[es:ee], rod_closed[r], tol, max_iter,
                                      edges, a_diag, a_lower, rhs, active, dlam, slide_vertex[ss:se], slide_axis[ss:se],
                                      slide_w[ss:se], slide_edge[ss:se], slide_side[ss:se])
        worst = max(worst, viol)
        rod_viol[q] = viol
        inv_h = 1.0 / h
        for i in range(ve - vs):
            for c in range(3):
                v[vs + i, c] += (xr[i, c] - before[i, c]) * inv_h
                x[vs + i, c] = xr[i, c]
    return worst


@njit(**JIT)
def resolve(va, vb, wa, wb, normal, target, mu, inv_mass, x, v, lam_n, lam_t, warm, lam_n_first, lam_t_first, h, max_iter,
            tolerance, newton_after, newton_rows, newton_iter, dormant_reach, counts, gap_tol,
            max_outer, inextensible, vertex_rod, touched, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
            edge_rest_length, slide_vertex, slide_axis, slide_w, slide_edge, slide_side, proj_tol, proj_max_iter,
            symplectic):
    """Impulses and inextensibility together (module docstring, steps 2-3): the rows' impulses
    (:func:`solve_impulses` with ``max_iter``, ``tolerance``, ``newton_after``, ``newton_rows``,
    ``newton_iter``, ``dormant_reach``, ``counts``; accumulated impulses kept), ``x += h dv``, projection of
    the rods whose vertices moved (``touched`` (R,) marks them; fast projection, or SHAKE along
    the gradients at the round's start with ``symplectic``: :func:`project_rods`; a rod already
    projected to its tolerance in this call and not moved since is skipped, which is what its
    projection would do, bit for bit), repeated until every row holds
    within ``gap_tol`` [m] after the projection. With ``warm`` the impulses ``lam_n``, ``lam_t`` on
    entry (a warm start: tangential ones within their Coulomb bound) are applied first, as part of
    the first alternation's velocity change; else they must be zero. ``lam_n_first`` (K,),
    ``lam_t_first`` (K, 3) get the impulses of the first alternation (those of the rows alone,
    before any projection: the later ones also accumulate what the projection takes back). ``x = x_rows + h (v - v_rows)`` holds throughout,
    so the rows' first-order gaps are ``h (n . v_rel - target)``. Returns ``(outer iterations,
    largest row violation [m], Gauss-Seidel sweeps summed over them)``."""
    # borrowed views of the arguments (they outlive this call): no atomic reference counting below
    va, vb, wa, wb, normal, target, mu = (borrow(va), borrow(vb), borrow(wa), borrow(wb), borrow(normal),
                                          borrow(target), borrow(mu))
    inv_mass, x, v, lam_n, lam_t, lam_n_first, lam_t_first = (borrow(inv_mass), borrow(x), borrow(v), borrow(lam_n),
                                                              borrow(lam_t), borrow(lam_n_first), borrow(lam_t_first))
    counts, vertex_rod, touched, rod_vertex_start, rod_edge_start = (borrow(counts), borrow(vertex_rod),
                                                                     borrow(touched), borrow(rod_vertex_start),
                                                                     borrow(rod_edge_start))
    rod_slide_start, rod_closed, edge_rest_length, slide_vertex = (borrow(rod_slide_start), borrow(rod_closed),
                                                                   borrow(edge_rest_length), borrow(slide_vertex))
    slide_axis, slide_w, slide_edge, slide_side = (borrow(slide_axis), borrow(slide_w), borrow(slide_edge),
                                                   borrow(slide_side))
    nv = x.shape[0]
    v_prev = np.empty_like(v)
    x_ref = np.empty_like(x) if symplectic else np.empty((0, 3))
    # rods projected to the tolerance in this call and not moved since: their projection would return
    # at once without moving a vertex, so it is skipped
    settled = np.zeros(touched.shape[0], dtype=np.bool_)
    worst = 0.0
    sweeps = 0
    for outer in range(max_outer):
        copy_rows2(v_prev, v, nv)
        if symplectic:
            copy_rows2(x_ref, x, nv)
        if warm and outer == 0:
            apply_impulses(va, vb, wa, wb, normal, inv_mass, v, lam_n, lam_t)
        # cluster Newton in every alternation (in the first 4 only until 2026-12-07: the later ones' plain
        # sweeps ran to their limit where the alternation takes 6-10 rounds, e.g. hanging-chain near its break)
        sweeps += solve_impulses(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, max_iter, tolerance,
                                 newton_after, newton_rows, newton_iter, dormant_reach, counts)
        if outer == 0:
            copy_rows(lam_n_first, lam_n, lam_n.shape[0])
            copy_rows2(lam_t_first, lam_t, lam_t.shape[0])
        for i in range(nv):
            moved = False
            for c in range(3):
                d = v[i, c] - v_prev[i, c]
                if d != 0.0:
                    moved = True
                    x[i, c] += h * d
            if moved:
                touched[vertex_rod[i]] = True
                settled[vertex_rod[i]] = False
        if inextensible:
            n_rods = 0
            for r in range(touched.shape[0]):
                if touched[r] and not settled[r]:
                    n_rods += 1
            rods = np.empty(n_rods, dtype=np.int64)
            n_rods = 0
            for r in range(touched.shape[0]):
                if touched[r] and not settled[r]:
                    rods[n_rods] = r
                    n_rods += 1
            rod_viol = np.empty(n_rods)
            project_rods(rods, x, v, h, inv_mass, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
                         edge_rest_length, slide_vertex, slide_axis, slide_w, slide_edge, slide_side, proj_tol,
                         proj_max_iter, symplectic, x_ref, rod_viol)
            for q in range(n_rods):
                settled[rods[q]] = rod_viol[q] <= proj_tol
        # first-order row violations after the projection
        vr = np.empty(3)
        worst = 0.0
        for k in range(va.shape[0]):
            _rel_velocity(k, v, va, vb, wa, wb, vr)
            vn = vr[0] * normal[k, 0] + vr[1] * normal[k, 1] + vr[2] * normal[k, 2]
            worst = max(worst, h * (target[k] - vn))
        if worst <= gap_tol or not inextensible:
            return outer + 1, worst, sweeps
    return max_outer, worst, sweeps


@njit(**JIT)
def velocity_project_rods(rods, x, v, inv_mass, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
                          slide_vertex, slide_axis, slide_w, slide_edge, slide_side):
    """RATTLE's velocity step (:func:`rodlab.der.projection.velocity_projection`) for each rod in
    ``rods``: its velocities projected, in the mass metric, onto the tangent space of the length
    constraints at its positions ``x``."""
    for q in range(rods.shape[0]):
        r = rods[q]
        vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
        es, ee = rod_edge_start[r], rod_edge_start[r + 1]
        ss, se = rod_slide_start[r], rod_slide_start[r + 1]
        ne = ee - es
        edges = np.empty((ne, 3))
        compute_edges(x[vs:ve], rod_closed[r], edges)
        active = np.empty(ne, dtype=np.bool_)
        _mark_active(inv_mass[vs:ve], ve - vs, ne, slide_edge[ss:se], active)
        vr = v[vs:ve].copy()
        velocity_projection(vr, inv_mass[vs:ve], rod_closed[r], active, edges, np.empty(ne), np.empty(ne),
                            np.empty(ne), np.empty(ne), slide_vertex[ss:se], slide_axis[ss:se], slide_w[ss:se],
                            slide_edge[ss:se], slide_side[ss:se])
        for i in range(ve - vs):
            for c in range(3):
                v[vs + i, c] = vr[i, c]


@njit(**JIT)
def refresh_frames(rods, x_old, x, theta, ref_d1, ref_twist, rod_vertex_start, rod_edge_start, rod_joint_start,
                   rod_clamp_start, rod_closed, rod_uniform, rod_twist_free, clamp_edge, clamp_m1, edge_rest_length,
                   edge_bend_stiffness, edge_stretch_stiffness, edge_free_theta, joint_voronoi_length,
                   joint_rest_curvature, joint_rest_twist, joint_twist_stiffness, rod_twist_tol, twist_max_iter,
                   scratch_e3, scratch_s, scratch_kb, scratch_omega):
    """Reference frames of each rod in ``rods`` transported in time from the edges of ``x_old``
    to those of ``x``, reference twist recomputed, clamped angles set from ``clamp_m1`` and the
    quasistatic twist re-solved (the DER step's own kernels). The work arrays of a rod are its
    rows of the serial driver's scratch (``scratch_e3`` (18 E,), ``scratch_s`` (7 E,),
    ``scratch_kb`` (J, 3), ``scratch_omega`` (J, 4): :class:`rodlab.der.batch.BatchWork`'s
    ``serial_*``, laid out as the DER step lays them out), so that they end holding the geometry
    of the rod's new state (edges, lengths, tangents, second reference directors, curvature
    binormals), which is what the next step's refresh would compute from it.

    Nothing is allocated: the old tangents, the frames' working copies (written back to the state
    at the end, so that an error leaves the state's frames as they were) and the two-pass
    reference twist's scratch use the rows the step does not keep (``e3[2]``, ``e3[4]``,
    ``s[1:3]``, ``s[5:7]``; ``e3[4]`` and ``s[1:3]`` only until the twist solve takes them).
    The geometry is :func:`rodlab.der.kernels.refresh_geometry`'s with the frames transported,
    computed as the DER step computes it (:func:`rodlab.der.kernels.transported_geometry`),
    bitwise the same values."""
    for q in range(rods.shape[0]):
        r = rods[q]
        vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
        es, ee = rod_edge_start[r], rod_edge_start[r + 1]
        js, je = rod_joint_start[r], rod_joint_start[r + 1]
        cs, ce = rod_clamp_start[r], rod_clamp_start[r + 1]
        ne, nj = ee - es, je - js
        closed = rod_closed[r]
        e3 = scratch_e3[18 * es:18 * ee].reshape((6, ne, 3))
        s = scratch_s[7 * es:7 * ee].reshape((7, ne))
        edges, tangents, d1, ref_d2, m1, m2 = e3[0], e3[1], e3[2], e3[3], e3[4], e3[5]
        lengths, grad, h_diag, h_lower, step, th = s[0], s[1], s[2], s[3], s[4], s[5]
        tw = s[6, :nj]
        kb, omega = scratch_kb[js:je], scratch_omega[js:je]
        old = m1  # the old tangents, until the twist solve
        compute_edges(x_old[vs:ve], closed, edges)
        compute_tangents(edges, lengths, old)
        for j in range(ne):
            th[j] = theta[es + j]
            for c in range(3):
                d1[j, c] = ref_d1[es + j, c]
        for j in range(nj):
            tw[j] = ref_twist[js + j]
        compute_edges(x[vs:ve], closed, edges)
        K.transported_geometry(closed, d1, tw, edges, lengths, tangents, kb, ref_d2, old, grad, h_diag)
        if not rod_twist_free[r]:
            K.clamp_material_angles(d1, ref_d2, tangents, th, clamp_edge[cs:ce], clamp_m1[cs:ce])
            K.update_twist(kb, d1, ref_d2, tangents, th, tw, lengths, edge_rest_length[es:ee],
                           joint_voronoi_length[js:je], joint_rest_curvature[js:je], edge_bend_stiffness[es:ee],
                           joint_rest_twist[js:je], joint_twist_stiffness[js:je], edge_stretch_stiffness[es:ee],
                           edge_free_theta[es:ee], closed, rod_uniform[r], rod_twist_tol[r], twist_max_iter,
                           m1, m2, omega, grad, h_diag, h_lower, step)
        for j in range(ne):
            theta[es + j] = th[j]
            for c in range(3):
                ref_d1[es + j, c] = d1[j, c]
        for j in range(nj):
            ref_twist[js + j] = tw[j]


# ---- the step -------------------------------------------------------------------------------------
class DERContact:
    """Contact data of a :class:`rodlab.solvers.der.DERSimulator` whose world has obstacles or rod
    contact, for the compiled contact response :func:`rodlab.der.contact_steps.advance_contact_steps`
    (module docstring).

    Parameters
    ----------
    sim : DERSimulator
        The simulator (its world, ``model`` arrays, time step).
    margin_factor : float
        Detection margin at the step's end, in units of the smallest contact radius.
    tolerance : float
        Velocity tolerance [m/s] of the impulse iteration.
    max_iter : int
        Gauss-Seidel sweeps per round.
    max_rounds : int
        Impulse / projection rounds per step.
    warm_start : bool
        Start each step's impulses from the previous step's on the same pairs
        (``state.solver["der_contact_warm"]``; docs/contact-der.md, step 3). Off by default: it
        saves a third of the sweeps of ``trefoil-twist`` but moves ``hanging-chain``, whose
        Gauss-Seidel often stops at its sweep limit, by more than the solver tolerance.
    recheck : bool
        The check after the first round on its own pairs when no other pair can have come
        within reach (same result as a full detection; docs/contact-der.md, step 4).
    newton_after : int
        Gauss-Seidel sweeps after which the clusters of rows that share vertices are solved by
        semismooth Newton (:func:`solve_impulses`); -1: never.
    newton_rows : int
        The largest cluster of live rows solved by Newton; larger ones stay with Gauss-Seidel.
    newton_iter : int
        Newton iterations per cluster solve at most.
    pair_skin : float
        Skin of the kept list of candidate segment pairs, in units of the smallest contact radius
        (:func:`rodlab.der.contact_loop.listed_pairs`: the broadphase runs again only when a
        vertex has moved that far since the list was made); 0: the grid at every detection. The
        same pairs in the same order either way.
    dormant_reach : float
        Rows without impulse whose slack exceeds this many times the velocity change that the
        acting rows would give their vertices are left out of the Gauss-Seidel sweeps, and proven
        unaffected after the solve (:func:`solve_impulses`: bit for bit the same impulses; a
        solve whose proof fails is redone with those rows in); 0: every row is swept.
    """

    def __init__(self, sim, *, margin_factor=0.5, tolerance=1e-10, max_iter=500, max_rounds=6, warm_start=False,
                 recheck=True, newton_after=12, newton_rows=100, newton_iter=30, pair_skin=1.0, dormant_reach=8.0):
        w = sim.world
        self.world = w
        c = w.contact
        self.rods = bool(c.rods)
        radius = np.array([float(c.thickness) if c.thickness is not None else float(rod.radius) for rod in w.rods])
        if not np.all(radius > 0):
            from ..model import ModelError
            raise ModelError("method der: contact needs every rod's radius > 0 m (or world.contact.thickness)")
        self.geometry = g = from_arrays(w.rod_vertex_start, w.rod_closed, radius, obstacles=w.obstacles,
                                        skip=c.skip, edge_rest_length=w.edge_rest_length)
        self.radius_min = float(radius.min())
        self.margin = margin_factor * self.radius_min
        self.penetration_tol = 1e-3 * self.radius_min
        self.has_mesh = g.tri_x.shape[0] > 0
        self.rod_mu = np.ascontiguousarray(c.rod_friction_table(w.n_rods) if self.rods else np.zeros((w.n_rods, w.n_rods)),
                                           dtype=float)
        self.obstacle_mu = np.array([w.obstacle_friction(m) for m in range(len(w.obstacles))], dtype=float)
        # CCD tolerance: rodlab.contact.impacts' default
        ccd_tol = 1e-6 * float(g.edge_radius.min(initial=0.0))
        if not (math.isfinite(pair_skin) and pair_skin >= 0):
            raise ValueError(f"pair_skin must be a finite number >= 0 (smallest contact radii; got {pair_skin!r})")
        if not (math.isfinite(dormant_reach) and dormant_reach >= 0):
            raise ValueError(f"dormant_reach must be a finite number >= 0 (got {dormant_reach!r})")
        self.cfg = np.array([self.margin, self.radius_min, self.penetration_tol, float(tolerance), ccd_tol,
                             float(sim._dt), float(pair_skin) * self.radius_min, float(dormant_reach)])
        self.icfg = np.array([int(max_iter), int(max_rounds), 200, int(self.rods), int(self.has_mesh), int(warm_start),
                              int(recheck), int(newton_after), int(newton_rows), int(newton_iter)],
                             dtype=np.int64)
        # detections, impulse/projection alternations, rows, Gauss-Seidel sweeps, round-1 checks on round 0's pairs,
        # Newton cluster solves, Newton iterations, dormant rows left out of the sweeps, restarts of a solve
        # (solve_impulses)
        self.stats = np.zeros(9)
        m = sim.model
        self.vertex_rod = np.repeat(np.arange(w.n_rods, dtype=np.int64), np.diff(w.rod_vertex_start))
        self.rod_closed = np.asarray(m.rod_flag[:, 0] != 0)
        self.rod_uniform = np.asarray(m.rod_flag[:, 1] != 0)
        self.rod_twist_free = np.asarray(m.rod_flag[:, 2] != 0)
        from .contact_loop import ROW_COLUMNS

        self.rows = np.empty((64, ROW_COLUMNS))  # the compiled response's row table, kept between steps
        # the candidate segment pairs (contact_loop.listed_pairs) and the positions they were listed at
        self.near = np.zeros((65, 2), dtype=np.int64)
        self.near_x = np.zeros((w.n_vertices, 3))

    def min_gap(self, x) -> float:
        """Exact smallest gap [m] at ``x``: segment pairs (when rods collide) and obstacles."""
        if self.rods and self.geometry.n_obstacles == 0:  # one compiled call, the same number
            from .contact_loop import rod_min_gap

            return float(rod_min_gap(np.ascontiguousarray(x, dtype=float), self.geometry))
        if self.rods:
            return min_gap(self.geometry, np.ascontiguousarray(x), obstacles=True)
        if self.geometry.n_obstacles == 0:
            return math.inf
        best = math.inf
        if np.any(self.geometry.obstacle_kind != MESH):
            best = float(_obstacle_table(self.geometry, np.ascontiguousarray(x))[3].min())
        if self.has_mesh:
            found = detect(self.geometry, x, 4.0 * self.radius_min, obstacles=True)
            ob = found.kind == OBSTACLE
            if ob.any():
                best = min(best, float(found.gap[ob].min()))
        return best


__all__ = ["DERContact", "copy_rows", "copy_rows2", "project_rods", "refresh_frames", "resolve", "solve_impulses", "velocity_project_rods"]
