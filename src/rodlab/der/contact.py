"""Contact and Coulomb friction inside the explicit DER step, on the velocity level.

Bergou, Wardetzky, Robinson, Audoly, Grinspun, "Discrete Elastic Rods" (ACM TOG 2008) handle
contact in their explicit simulations (Table 1, Figs. 1, 9, 10) with impulses after the elastic
update; here, after each step of the unchanged compiled DER kernel (symplectic Euler, fast or
symplectic projection, quasistatic twist), :class:`DERContact` runs:

1. **Rows.** Contacts are detected at the step's end positions ``x1`` with
   :func:`rodlab.contact.detect` (margin ``margin_factor`` times the smallest contact radius); when
   some vertex moved more than half the smallest contact radius in the step, or the world has a
   mesh, continuous detection :func:`rodlab.contact.impacts` from ``x0`` to ``x1`` adds every pair
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
   more than ``tolerance`` [m/s]. Normal impulses are inelastic (no restitution): a resting
   contact ends the step at gap 0 with zero normal velocity.
3. **Positions.** ``x1 += h dv``; every touched rod is projected back onto inextensibility (fast
   projection, Goldenthal et al. 2007, as in Bergou et al. 2008 Sec. 8.1) and its velocity gets
   ``(x_projected - x1) / h``; rounds 1-3 repeat (with fresh detection) until a round finds no
   row violated by more than ``penetration_tol`` (or ``max_rounds``).
4. **Frames.** Touched rods' reference frames are parallel transported in time to the corrected
   edges, reference twists recomputed, clamped angles re-set and the quasistatic twist re-solved
   (the same kernels as the DER step).

Rod-rod impulses are equal and opposite, so they conserve linear momentum exactly. Detection is
skipped while a clearance bound kept in the state proves that no pair can be within reach
(:meth:`DERContact.respond`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..contact import OBSTACLE, SEGMENT, detect, from_arrays, impacts, min_gap
from ..contact.detect import _obstacle_table
from ..contact.narrowphase import MESH, point_obstacle, segment_obstacle, segment_segment, segment_triangle, vlerp, vrow
from ..geometry._vec import JIT
from ..geometry.curves import compute_edges, compute_tangents
from . import kernels as K
from .projection import fast_projection


# ---- compiled kernels -----------------------------------------------------------------------------
@njit(**JIT)
def impact_rows(x0, x1, kind, pair_a, pair_b, tri_flat, toi, edge_v0, edge_v1, edge_radius, obstacle_kind,
                obstacle_param, tri_x, s_out, t_out, point_out, normal_out, gap_out):
    """Contact rows of the impacts of a step: closest points and normal at the time of impact
    ``toi`` (positions interpolated linearly from ``x0`` to ``x1``), gap measured along that
    normal at ``x1`` with the same barycentric weights (negative when the pair passed through)."""
    for k in range(kind.shape[0]):
        a = pair_a[k]
        tau = min(max(toi[k], 0.0), 1.0)
        pa0 = vlerp(vrow(x0, edge_v0[a]), vrow(x1, edge_v0[a]), tau)
        pa1 = vlerp(vrow(x0, edge_v1[a]), vrow(x1, edge_v1[a]), tau)
        t = 0.0
        if kind[k] == 0:
            b = pair_b[k]
            qb0 = vlerp(vrow(x0, edge_v0[b]), vrow(x1, edge_v0[b]), tau)
            qb1 = vlerp(vrow(x0, edge_v1[b]), vrow(x1, edge_v1[b]), tau)
            s, t, _, n = segment_segment(pa0, pa1, qb0, qb1)
            q = vlerp(vrow(x1, edge_v0[b]), vrow(x1, edge_v1[b]), t)
            thick = edge_radius[a] + edge_radius[b]
        else:
            m = pair_b[k]
            if obstacle_kind[m] == MESH:
                f = tri_flat[k]
                s, _, q, n = segment_triangle(pa0, pa1, vrow(tri_x[f], 0), vrow(tri_x[f], 1), vrow(tri_x[f], 2))
            else:
                s, _, q, n = segment_obstacle(pa0, pa1, obstacle_kind[m], obstacle_param[m])
            thick = edge_radius[a]
        p = vlerp(vrow(x1, edge_v0[a]), vrow(x1, edge_v1[a]), s)
        s_out[k] = s
        t_out[k] = t
        gap_out[k] = (p[0] - q[0]) * n[0] + (p[1] - q[1]) * n[1] + (p[2] - q[2]) * n[2] - thick
        for c in range(3):
            point_out[k, c] = q[c]
            normal_out[k, c] = n[c]


@njit(**JIT)
def endpoint_rows(x, pair_a, pair_b, edge_v0, edge_v1, edge_radius, obstacle_kind, obstacle_param, s_out, normal_out,
                  gap_out):
    """Rows of both endpoints of each segment-obstacle contact (analytic obstacles; mesh rows
    get gap ``inf``): a segment lying along a surface then holds both its vertices, not only its
    middle (a middle-only row leaves the zigzag mode of the two vertices free). Row ``2k + i``:
    endpoint ``i`` of contact ``k``."""
    for k in range(pair_a.shape[0]):
        e = pair_a[k]
        m = pair_b[k]
        for i in range(2):
            r = 2 * k + i
            s_out[r] = float(i)
            if obstacle_kind[m] == MESH:
                gap_out[r] = np.inf
                for c in range(3):
                    normal_out[r, c] = 0.0
                continue
            p = vrow(x, edge_v0[e]) if i == 0 else vrow(x, edge_v1[e])
            d, _, n = point_obstacle(p, obstacle_kind[m], obstacle_param[m])
            gap_out[r] = d - edge_radius[e]
            for c in range(3):
                normal_out[r, c] = n[c]


@njit(**JIT)
def _rel_velocity(k, v, va, vb, wa, wb, out):
    for c in range(3):
        out[c] = wa[k, 0] * v[va[k, 0], c] + wa[k, 1] * v[va[k, 1], c]
        if vb[k, 0] >= 0:
            out[c] -= wb[k, 0] * v[vb[k, 0], c] + wb[k, 1] * v[vb[k, 1], c]


@njit(**JIT)
def _apply(k, v, inv_mass, va, vb, wa, wb, j):
    for i in range(2):
        ia = va[k, i]
        sa = inv_mass[ia] * wa[k, i]
        for c in range(3):
            v[ia, c] += sa * j[c]
        if vb[k, 0] >= 0:
            ib = vb[k, i]
            sb = inv_mass[ib] * wb[k, i]
            for c in range(3):
                v[ib, c] -= sb * j[c]


@njit(**JIT)
def solve_impulses(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, max_iter, tolerance):
    """Projected Gauss-Seidel on the contact rows (module docstring, step 2), in place on ``v``
    (N, 3) [m/s]. Row ``k``: vertices ``va[k]`` (2,) with weights ``wa[k]``, ``vb[k]`` likewise
    (``vb[k, 0] = -1``: a fixed obstacle), unit ``normal[k]``, the least normal relative velocity
    ``target[k]`` [m/s], Coulomb ``mu[k]``. Accumulated impulses [N s]: ``lam_n`` (K,) normal,
    ``lam_t`` (K, 3) tangential (start from zero). Returns the sweeps done."""
    K_ = va.shape[0]
    weff = np.zeros(K_)
    for k in range(K_):
        w = wa[k, 0] ** 2 * inv_mass[va[k, 0]] + wa[k, 1] ** 2 * inv_mass[va[k, 1]]
        if vb[k, 0] >= 0:
            w += wb[k, 0] ** 2 * inv_mass[vb[k, 0]] + wb[k, 1] ** 2 * inv_mass[vb[k, 1]]
        weff[k] = w
    vr = np.empty(3)
    j = np.empty(3)
    sweeps = 0
    for it in range(max_iter):
        sweeps = it + 1
        worst = 0.0
        for k in range(K_):
            w = weff[k]
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
                _apply(k, v, inv_mass, va, vb, wa, wb, j)
                worst = max(worst, abs(dl) * w)
            if mu[k] > 0.0 or lam_t[k, 0] != 0.0 or lam_t[k, 1] != 0.0 or lam_t[k, 2] != 0.0:
                _rel_velocity(k, v, va, vb, wa, wb, vr)
                vn = vr[0] * normal[k, 0] + vr[1] * normal[k, 1] + vr[2] * normal[k, 2]
                jt = np.empty(3)
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
                    _apply(k, v, inv_mass, va, vb, wa, wb, j)
                    worst = max(worst, dmax * w)
        if worst <= tolerance:
            break
    return sweeps


@njit(**JIT)
def project_rods(rods, x, v, h, inv_mass, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
                 edge_rest_length, slide_vertex, slide_axis, slide_w, slide_edge, slide_side, tol, max_iter):
    """Fast projection of each rod in ``rods`` onto inextensibility, in place on ``x``; the
    projection's displacement over ``h`` is added to ``v``. Returns the largest relative length
    violation left."""
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
        _, viol = fast_projection(xr, inv_mass[vs:ve], edge_rest_length[es:ee], rod_closed[r], tol, max_iter, edges,
                                  a_diag, a_lower, rhs, active, dlam, slide_vertex[ss:se], slide_axis[ss:se],
                                  slide_w[ss:se], slide_edge[ss:se], slide_side[ss:se])
        worst = max(worst, viol)
        inv_h = 1.0 / h
        for i in range(ve - vs):
            for c in range(3):
                v[vs + i, c] += (xr[i, c] - before[i, c]) * inv_h
                x[vs + i, c] = xr[i, c]
    return worst


@njit(**JIT)
def resolve(va, vb, wa, wb, normal, target, mu, inv_mass, x, v, lam_n, lam_t, h, max_iter, tolerance, gap_tol,
            max_outer, inextensible, vertex_rod, touched, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
            edge_rest_length, slide_vertex, slide_axis, slide_w, slide_edge, slide_side, proj_tol, proj_max_iter):
    """Impulses and inextensibility together (module docstring, steps 2-3): Gauss-Seidel on the
    rows (:func:`solve_impulses`, accumulated impulses kept), ``x += h dv``, fast projection of
    the rods whose vertices moved (``touched`` (R,) marks them), repeated until every row holds
    within ``gap_tol`` [m] after the projection. ``x = x_rows + h (v - v_rows)`` holds throughout,
    so the rows' first-order gaps are ``h (n . v_rel - target)``. Returns ``(outer iterations,
    largest row violation [m])``."""
    nv = x.shape[0]
    v_prev = np.empty_like(v)
    moved = np.zeros(nv, dtype=np.bool_)
    worst = 0.0
    for outer in range(max_outer):
        v_prev[:, :] = v
        solve_impulses(va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, max_iter, tolerance)
        for i in range(nv):
            moved[i] = False
            for c in range(3):
                d = v[i, c] - v_prev[i, c]
                if d != 0.0:
                    moved[i] = True
                    x[i, c] += h * d
            if moved[i] and not touched[vertex_rod[i]]:
                touched[vertex_rod[i]] = True
        if inextensible:
            rods = np.flatnonzero(touched).astype(np.int64)
            project_rods(rods, x, v, h, inv_mass, rod_vertex_start, rod_edge_start, rod_slide_start, rod_closed,
                         edge_rest_length, slide_vertex, slide_axis, slide_w, slide_edge, slide_side, proj_tol,
                         proj_max_iter)
        # first-order row violations after the projection
        vr = np.empty(3)
        worst = 0.0
        for k in range(va.shape[0]):
            _rel_velocity(k, v, va, vb, wa, wb, vr)
            vn = vr[0] * normal[k, 0] + vr[1] * normal[k, 1] + vr[2] * normal[k, 2]
            worst = max(worst, h * (target[k] - vn))
        if worst <= gap_tol or not inextensible:
            return outer + 1, worst
    return max_outer, worst


@njit(**JIT)
def refresh_frames(rods, x_old, x, theta, ref_d1, ref_twist, rod_vertex_start, rod_edge_start, rod_joint_start,
                   rod_clamp_start, rod_closed, rod_uniform, rod_twist_free, clamp_edge, clamp_m1, edge_rest_length,
                   edge_bend_stiffness, edge_stretch_stiffness, edge_free_theta, joint_voronoi_length,
                   joint_rest_curvature, joint_rest_twist, joint_twist_stiffness, rod_twist_tol, twist_max_iter):
    """Reference frames of each rod in ``rods`` transported in time from the edges of ``x_old``
    to those of ``x``, reference twist recomputed, clamped angles set from ``clamp_m1`` and the
    quasistatic twist re-solved (the DER step's own kernels)."""
    for q in range(rods.shape[0]):
        r = rods[q]
        vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
        es, ee = rod_edge_start[r], rod_edge_start[r + 1]
        js, je = rod_joint_start[r], rod_joint_start[r + 1]
        cs, ce = rod_clamp_start[r], rod_clamp_start[r + 1]
        ne, nj = ee - es, je - js
        closed = rod_closed[r]
        edges, tangents, ref_d2 = np.empty((ne, 3)), np.empty((ne, 3)), np.empty((ne, 3))
        m1, m2 = np.empty((ne, 3)), np.empty((ne, 3))
        lengths, grad, h_diag, h_lower, step = np.empty(ne), np.empty(ne), np.empty(ne), np.empty(ne), np.empty(ne)
        kb, omega = np.empty((nj, 3)), np.empty((nj, 4))
        compute_edges(x_old[vs:ve], closed, edges)
        compute_tangents(edges, lengths, tangents)
        d1 = ref_d1[es:ee].copy()
        tw = ref_twist[js:je].copy()
        th = theta[es:ee].copy()
        K.refresh_geometry(x[vs:ve], closed, d1, tw, True, edges, lengths, tangents, kb, ref_d2)
        if not rod_twist_free[r]:
            K.clamp_material_angles(d1, ref_d2, tangents, th, clamp_edge[cs:ce], clamp_m1[cs:ce])
            K.update_twist(kb, d1, ref_d2, tangents, th, tw, lengths, edge_rest_length[es:ee],
                           joint_voronoi_length[js:je], joint_rest_curvature[js:je], edge_bend_stiffness[es:ee],
                           joint_rest_twist[js:je], joint_twist_stiffness[js:je], edge_stretch_stiffness[es:ee],
                           edge_free_theta[es:ee], closed, rod_uniform[r], rod_twist_tol[r], twist_max_iter,
                           m1, m2, omega, grad, h_diag, h_lower, step)
        ref_d1[es:ee] = d1
        ref_twist[js:je] = tw
        theta[es:ee] = th


# ---- the step -------------------------------------------------------------------------------------
class DERContact:
    """Contact data of a :class:`rodlab.solvers.der.DERSimulator` whose world has obstacles or rod
    contact, and the per-step response :meth:`respond` (module docstring).

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
    """

    def __init__(self, sim, *, margin_factor=0.5, tolerance=1e-10, max_iter=500, max_rounds=6):
        w = sim.world
        self.sim = sim
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
        self.tolerance = float(tolerance)
        self.max_iter = int(max_iter)
        self.max_rounds = int(max_rounds)
        self.has_mesh = g.tri_x.shape[0] > 0
        self.rod_mu = c.rod_friction_table(w.n_rods) if self.rods else np.zeros((w.n_rods, w.n_rods))
        self.obstacle_mu = np.array([w.obstacle_friction(m) for m in range(len(w.obstacles))], dtype=float)
        # flat triangle id of (obstacle, local triangle)
        self.mesh_start = np.zeros(max(len(w.obstacles), 1), dtype=np.int64)
        for m in range(len(w.obstacles)):
            hit = np.flatnonzero(g.tri_obstacle == m)
            self.mesh_start[m] = hit[0] if hit.size else -1
        m = sim.model
        self.rod_closed = np.asarray(w.rod_closed, dtype=np.bool_)
        self.rod_uniform = np.array([bool(st.uniform_twist) for st in sim.steppers])
        self.rod_twist_free = np.asarray(m.rod_flag[:, 2] != 0)
        self.vertex_rod = np.repeat(np.arange(w.n_rods, dtype=np.int64), np.diff(w.rod_vertex_start))
        self.max_outer = 200
        self.stats = np.zeros(4)  # rounds, impulse/projection iterations, rows, seconds in detection

    # rows -------------------------------------------------------------------------------------
    def _rows(self, kind, pa, pb, s, t, normal, gap):
        g = self.geometry
        n = kind.shape[0]
        va = np.stack([g.edge_v0[pa], g.edge_v1[pa]], axis=1)
        wa = np.stack([1.0 - s, s], axis=1)
        seg = kind == SEGMENT
        vb = np.full((n, 2), -1, dtype=np.int64)
        wb = np.zeros((n, 2))
        vb[seg, 0] = g.edge_v0[pb[seg]]
        vb[seg, 1] = g.edge_v1[pb[seg]]
        wb[seg, 0] = 1.0 - t[seg]
        wb[seg, 1] = t[seg]
        mu = np.empty(n)
        mu[seg] = self.rod_mu[g.edge_rod[pa[seg]], g.edge_rod[pb[seg]]]
        mu[~seg] = self.obstacle_mu[pb[~seg]] if self.obstacle_mu.size else 0.0
        return va, vb, wa, wb, np.ascontiguousarray(normal), gap, mu

    def _detect_rows(self, x0, x1, ccd):
        g = self.geometry
        found = detect(g, x1, self.margin, obstacles=True)
        keep = np.ones(found.kind.shape[0], dtype=bool) if self.rods else found.kind == OBSTACLE
        parts = [self._rows(found.kind[keep], found.pair_a[keep], found.pair_b[keep], found.weight_a[keep],
                            found.weight_b[keep], found.normal[keep], found.gap[keep])]
        keys = [found.kind[keep].astype(np.int64) * (1 << 40) + found.pair_a[keep] * (1 << 20) + found.pair_b[keep]]
        ob = found.kind == OBSTACLE
        if ob.any():
            pa, pb = found.pair_a[ob], found.pair_b[ob]
            ne = 2 * pa.shape[0]
            s, n, gp = np.empty(ne), np.empty((ne, 3)), np.empty(ne)
            endpoint_rows(x1, pa, pb, g.edge_v0, g.edge_v1, g.edge_radius, g.obstacle_kind, g.obstacle_param, s, n, gp)
            two = np.repeat(np.arange(pa.shape[0]), 2)
            fin = np.isfinite(gp)
            parts.append(self._rows(np.full(ne, OBSTACLE, dtype=np.int8)[fin], pa[two][fin], pb[two][fin], s[fin],
                                    np.zeros(ne)[fin], n[fin], gp[fin]))
            keys.append(OBSTACLE * (1 << 40) + pa[two][fin] * (1 << 20) + pb[two][fin])
        if ccd:
            hits = impacts(g, x0, x1, obstacles=True)
            keep = np.ones(hits.kind.shape[0], dtype=bool) if self.rods else hits.kind == OBSTACLE
            kind, pa, pb, el, toi = (a[keep] for a in hits)
            nk = kind.shape[0]
            if nk:
                flat = np.where(el >= 0, self.mesh_start[np.where(kind == OBSTACLE, pb, 0)] + el, 0).astype(np.int64)
                s, t, q, n, gp = np.empty(nk), np.empty(nk), np.empty((nk, 3)), np.empty((nk, 3)), np.empty(nk)
                tri = g.tri_x if g.tri_x.shape[0] else np.zeros((1, 3, 3))
                impact_rows(x0, x1, kind.astype(np.int64), pa, pb, flat, toi, g.edge_v0, g.edge_v1, g.edge_radius,
                            g.obstacle_kind, g.obstacle_param, tri, s, t, q, n, gp)
                parts.append(self._rows(kind, pa, pb, s, t, n, gp))
                keys.append(kind.astype(np.int64) * (1 << 40) + pa * (1 << 20) + pb)
        rows = [np.concatenate([p[k] for p in parts]) for k in range(7)]
        return rows, np.concatenate(keys)

    # the response -----------------------------------------------------------------------------
    def respond(self, state, x0, x_step, m1_step):
        """Contact response after one DER step from ``x0`` (N, 3) to the state's positions (the
        kernel's result ``x_step``). Returns ``(active contacts, min gap at the end)``."""
        import time as _time

        sim, m, h = self.sim, self.sim.model, self.sim._dt
        x, v = state.vertex_x, state.vertex_v
        inv_mass = m.vertex_inv_mass
        rmin = self.radius_min
        touched = np.zeros(self.world.n_rods, dtype=bool)
        active_keys = []
        end_gap = math.inf
        # clearance bound kept in the state (no history outside it): after a detection that found
        # nothing within the margin every gap exceeded it; two points approach by at most the sum
        # of their displacements, so detection is skipped while twice the largest displacement
        # summed since stays below that margin (its key: the positions it was left at)
        clear = state.solver.get("der_contact_clear")
        if clear is not None and clear[0] > 0.0 and not self.has_mesh and clear[1] == float(x0.sum()):
            budget = clear[0] - 2.0 * float(np.sqrt(np.max(np.sum((x - x0) ** 2, axis=1))))
            if budget > 0.0:
                state.solver["der_contact_clear"] = np.array([budget, float(x.sum())])
                return 0, math.inf
        state.solver["der_contact_clear"] = np.array([0.0, 0.0])
        for rnd in range(self.max_rounds):
            t0 = _time.perf_counter()
            step = float(np.sqrt(np.max(np.sum((x - x0) ** 2, axis=1)))) if x.shape[0] else 0.0
            ccd = self.has_mesh or step > 0.5 * rmin
            (va, vb, wa, wb, normal, gap, mu), keys = self._detect_rows(x0, x, ccd)
            self.stats[3] += _time.perf_counter() - t0
            self.stats[0] += 1
            end_gap = float(gap.min()) if gap.size else math.inf
            if rnd == 0 and not gap.size:
                state.solver["der_contact_clear"] = np.array([self.margin, float(x.sum())])
            if not gap.size or end_gap >= -self.penetration_tol and rnd > 0:
                break
            # least normal relative velocity: g + h n . dv_rel >= 0
            vrel = (wa[:, :1] * v[va[:, 0]] + wa[:, 1:] * v[va[:, 1]])
            segb = vb[:, 0] >= 0
            vrel[segb] -= wb[segb, :1] * v[vb[segb, 0]] + wb[segb, 1:] * v[vb[segb, 1]]
            target = np.einsum("ij,ij->i", vrel, normal) - gap / h
            if not np.any(target > np.einsum("ij,ij->i", vrel, normal) + 1e-300) and not np.any(mu > 0):
                break
            lam_n = np.zeros(gap.shape[0])
            lam_t = np.zeros((gap.shape[0], 3))
            outer, _ = resolve(va, vb, wa, wb, normal, target, mu, inv_mass, x, v, lam_n, lam_t, h, self.max_iter,
                               self.tolerance, self.penetration_tol, self.max_outer, bool(sim._options.inextensible),
                               self.vertex_rod, touched, m.rod_vertex_start, m.rod_edge_start, m.rod_slide_start,
                               self.rod_closed, m.edge_rest_length, m.slide_vertex, m.slide_axis, m.slide_w,
                               m.slide_edge, m.slide_side, float(m.option_float[0]), int(m.option_int[0]))
            self.stats[1] += outer
            self.stats[2] += gap.shape[0]
            active_keys.append(keys[lam_n > 0])
        rods = np.flatnonzero(touched).astype(np.int64)
        if rods.size:
            refresh_frames(rods, x_step, x, state.edge_theta, state.edge_ref_d1, state.joint_ref_twist,
                           m.rod_vertex_start, m.rod_edge_start, m.rod_joint_start, m.rod_clamp_start, self.rod_closed,
                           self.rod_uniform, self.rod_twist_free, m.clamp_edge, m1_step, m.edge_rest_length,
                           m.edge_bend_stiffness, m.edge_stretch_stiffness, m.edge_free_theta,
                           m.joint_voronoi_length, m.joint_rest_curvature, m.joint_rest_twist,
                           m.joint_twist_stiffness, m.rod_twist_tol, int(m.option_int[1]))
        n_active = int(np.unique(np.concatenate(active_keys)).size) if active_keys else 0
        return n_active, end_gap

    def min_gap(self, x) -> float:
        """Exact smallest gap [m] at ``x``: segment pairs (when rods collide) and obstacles."""
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


__all__ = ["DERContact", "impact_rows", "project_rods", "refresh_frames", "solve_impulses"]
