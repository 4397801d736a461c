"""The implicit-Euler step of implicit DER with barrier contact and lagged friction (IPC).

One step minimises, over every rod's interleaved unknowns together,

``Phi(q) = sum_rods [1/(2 h^2) |q - q_t - h v_t|_M^2 + c/(2h) |q - q_t|_M^2 + E(q) - f_ext . q]
+ sum_contacts kappa b(g_k(x)) + sum_contacts mu_k lambda_k f0(|u_k(x)|)``

(:mod:`.stepper` for the first line, :mod:`.contact` for the barrier and friction terms) by
Newton's method as in Li et al., "Incremental Potential Contact" (2020), Alg. 1:

1. the contact set (primitives closer than ``dhat``) is detected at every iterate with the shared
   broadphase (:func:`rodlab.contact.detect`) and turned into barrier primitives (:meth:`ContactStep.table`);
2. the Hessian (each rod's banded elastic Hessian, projected contact stencils, friction) couples
   the rods: it is assembled as one sparse matrix and factored by SuperLU
   (:func:`scipy.sparse.linalg.spsolve`);
3. the search direction's step is capped by continuous collision detection
   (:func:`rodlab.contact.impacts`, conservative advancement) at 0.9 of the earliest time of impact,
   so no iterate ever has a negative gap; then backtracking (Armijo) on ``Phi``;
4. the loop ends when the Newton step's max-norm (positions, and angles times the largest radius)
   is below ``tol h`` (IPC's velocity-scaled criterion; with friction ``tol`` is at most
   ``eps_v / 10``, see :meth:`ContactStep.__init__`) or after ``max_iters`` iterations.

Friction is lagged once per step: normal forces, closest points and tangent bases from the step's
start (IPC Sec. 5.3, one lagging iteration).

Stiffness ``kappa`` [N/m], ``"auto"`` (IPC Sec. 4.3, adapted to a barrier on the gap):
``kappa_min = mean vertex mass / h^2`` (the barrier's curvature at half ``dhat`` is then about 3.6
times the inertia term of one vertex); at the first iterate of a step that has contacts, ``kappa``
is raised to the value that best balances the barrier's gradient against the rest,
``-(grad_E . grad_B) / |grad_B|^2`` (over free unknowns), clamped to ``[kappa_min, 100 kappa_min]``;
after a step whose smallest gap is below ``dhat / 100`` it doubles (at most to
``100 kappa_min``). ``kappa`` only grows and is kept in ``state.solver["contact_kappa"]``.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve
from numba import njit

from ..contact import NO_IMPACT, OBSTACLE, SEGMENT, detect, from_arrays, impacts, min_gap
from ..contact.detect import _obstacle_table
from ..contact.narrowphase import CAPSULE, CYLINDER, MESH, PLANE, SPHERE
from ..geometry._vec import JIT
from .batch import (BDF2_BETA, I_BENDING, I_BRANCH, I_EXACT, I_NROD, I_ROD, ROD_COLS, S_EDGE_A1, S_EDGE_A1_BASE,
                    S_EDGE_KS, S_EDGE_LBAR, S_EDGE_LEN, S_EDGE_TAN, S_EDGE_TAN_BASE, S_JOINT_MREF, S_JOINT_MREF_BASE,
                    S_VERTEX_KBEND, S_VERTEX_KTWIST, S_VERTEX_LVOR, S_VERTEX_MBAR, S_VERTEX_WBAR, S_VERTEX_WBAR2,
                    _fsec, _fsec2, _impose_drives)
from .contact import (SEG_FIXPT, SEG_FIXSEG, SEG_SEG, VERT_FIXTRI, VERT_PLANE, barrier_eval, friction_eval,
                      friction_setup)
from .energies import BANDWIDTH, edge_geometry, update_frames
from .stepper import _elastic


@njit(**JIT)
def rods_elastic(ib, fb, q, want, g, band):
    """Elastic energy [J] of every rod at global unknowns ``q`` (frames transported from the base
    sections of ``fb``); ``want`` 1 / 2 accumulates the gradient into ``g`` and Hessian into the
    lower band ``band`` (D, 11)."""
    nrod = ib[I_NROD]
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (nrod + 1)].reshape((nrod + 1, ROD_COLS))
    E = 0.0
    for r in range(nrod):
        vs, es, js, ds = rod[r, 0], rod[r, 1], rod[r, 2], rod[r, 3]
        nv = rod[r + 1, 0] - vs
        ne = rod[r + 1, 1] - es
        nj = rod[r + 1, 2] - js
        n = rod[r + 1, 3] - ds
        qr = q[ds:ds + n]
        tan = _fsec2(fb, S_EDGE_TAN, es, ne, 3)
        elen = _fsec(fb, S_EDGE_LEN, es, ne)
        a1w = _fsec2(fb, S_EDGE_A1, es, ne, 3)
        mrefw = _fsec(fb, S_JOINT_MREF, js, nj)
        update_frames(qr, _fsec2(fb, S_EDGE_TAN_BASE, es, ne, 3), _fsec2(fb, S_EDGE_A1_BASE, es, ne, 3),
                      _fsec(fb, S_JOINT_MREF_BASE, js, nj), tan, elen, a1w, mrefw)
        E += _elastic(ib[I_BENDING], qr, tan, elen, a1w, mrefw, _fsec(fb, S_EDGE_KS, es, ne),
                      _fsec(fb, S_EDGE_LBAR, es, ne), _fsec(fb, S_VERTEX_KBEND, vs, nv),
                      _fsec2(fb, S_VERTEX_WBAR, vs, nv, 4), _fsec(fb, S_VERTEX_KTWIST, vs, nv),
                      _fsec(fb, S_VERTEX_MBAR, vs, nv), _fsec(fb, S_VERTEX_LVOR, vs, nv),
                      _fsec2(fb, S_VERTEX_WBAR2, vs, nv, 2), ib[I_BRANCH], ib[I_EXACT], want, g[ds:ds + n],
                      band[ds:ds + n])
    return E


@njit(**JIT)
def rods_base_frames(ib, fb, q, to_work):
    """``to_work`` 0: base tangents of every rod from ``q`` (the step's start; base directors and
    reference twists must already be set); 1: transport the base frames to ``q`` and make them the
    new base (the step's end)."""
    nrod = ib[I_NROD]
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (nrod + 1)].reshape((nrod + 1, ROD_COLS))
    for r in range(nrod):
        es, js, ds = rod[r, 1], rod[r, 2], rod[r, 3]
        ne = rod[r + 1, 1] - es
        nj = rod[r + 1, 2] - js
        n = rod[r + 1, 3] - ds
        tanr = _fsec2(fb, S_EDGE_TAN_BASE, es, ne, 3)
        elen = _fsec(fb, S_EDGE_LEN, es, ne)
        if to_work == 0:
            edge_geometry(q[ds:ds + n], tanr, elen)
            continue
        a1 = _fsec2(fb, S_EDGE_A1_BASE, es, ne, 3)
        mref = _fsec(fb, S_JOINT_MREF_BASE, js, nj)
        tan = _fsec2(fb, S_EDGE_TAN, es, ne, 3)
        a1w = _fsec2(fb, S_EDGE_A1, es, ne, 3)
        mrefw = _fsec(fb, S_JOINT_MREF, js, nj)
        update_frames(q[ds:ds + n], tanr, a1, mref, tan, elen, a1w, mrefw)
        tanr[:, :] = tan
        a1[:, :] = a1w
        mref[:] = mrefw


class ContactStep:
    """Implicit-Euler steps of a contact world (module docstring) on a simulator's
    :class:`rodlab.der_implicit.batch.RodBatch` (its model sections; its work sections are scratch).

    ``world``: the :class:`rodlab.world.World`; ``batch``; ``vertex_dof`` (N, 3), ``theta_dof`` (E,)
    rows of the global unknowns; ``fixed`` (F,) held unknowns; ``drives`` the batch's driven clamps;
    ``h`` [s]; ``dhat`` [m]; ``kappa`` [N/m] or ``None`` (auto); ``eps_v`` [m/s]; ``tol`` [m/s];
    ``max_iters``; ``line_search`` (max halvings)."""

    def __init__(self, world, batch, vertex_dof, theta_dof, fixed, *, h, dhat, kappa, eps_v, tol, max_iters,
                 line_search):
        self.world, self.batch, self.h = world, batch, float(h)
        self.vertex_dof, self.theta_dof = vertex_dof, theta_dof
        self.dhat, self.kappa_fixed, self.eps_v = float(dhat), kappa, float(eps_v)
        # with friction the static branch is a spring so stiff that a Newton step from rest moves less
        # than eps_v h / 2 even when the rod must slide: the step-size test must be below that
        self.tol = min(float(tol), 0.1 * self.eps_v) if world.contact.has_friction else float(tol)
        self.max_iters, self.ls_max = int(max_iters), int(line_search)
        c = world.contact
        radius = np.asarray(world.rod_radius, dtype=float) if c.thickness is None else \
            np.full(world.n_rods, float(c.thickness))
        self.edge_radius = np.repeat(radius, np.diff(world.rod_edge_start))
        self.geometry = from_arrays(world.rod_vertex_start, world.rod_closed, self.edge_radius,
                                    obstacles=world.obstacles, skip=c.skip, edge_rest_length=world.edge_rest_length)
        self.rods = bool(c.rods)
        self.rod_mu = c.rod_friction_table(world.n_rods)
        self.obstacle_mu = np.array([world.obstacle_friction(m) for m in range(len(world.obstacles))], dtype=float)
        self.has_friction = bool(c.has_friction)
        self.radius_max = float(self.edge_radius.max())
        D = int(batch.starts["dof"][-1])
        self.n = D
        self.dof_is_fixed = np.zeros(D, dtype=bool)
        self.dof_is_fixed[fixed] = True
        self.fixed = np.asarray(fixed, dtype=np.int64)
        self.has_drive = bool(batch.n_drive)
        # band -> sparse pattern: entry (i, i - k) of the global lower band, within one rod
        rows = np.repeat(np.arange(D), BANDWIDTH + 1)
        cols = rows - np.tile(np.arange(BANDWIDTH + 1), D)
        dstart = batch.starts["dof"]
        rod_of_dof = np.repeat(np.arange(world.n_rods), np.diff(dstart))
        ok = (cols >= dstart[rod_of_dof[rows]]) & ~self.dof_is_fixed[rows] & ~self.dof_is_fixed[np.maximum(cols, 0)]
        self._band_keep = ok
        self._band_rows, self._band_cols = rows[ok], cols[ok]
        self._offdiag = self._band_rows != self._band_cols
        self.kappa_min = float(np.mean(world.vertex_mass)) / self.h**2
        # meshes: triangle corners and vertex ids per (obstacle, local triangle)
        self._mesh_tris = {m: (np.asarray(ob.vertices, dtype=float), np.asarray(ob.triangles, dtype=np.int64))
                           for m, ob in enumerate(world.obstacles) if self.geometry.obstacle_kind[m] == MESH}
        self.line_search_failures = 0
        kinds = self.geometry.obstacle_kind
        infinite = ~np.isfinite(self.geometry.obstacle_param[:, 7])
        self._has_infinite_cylinder = bool(np.any((kinds == CYLINDER) & infinite))
        # a vertex's radius: that of an edge it belongs to
        self._vertex_edge = np.empty(world.n_vertices, dtype=np.int64)
        self._vertex_edge[self.geometry.edge_v1] = np.arange(self.geometry.n_edges)
        self._vertex_edge[self.geometry.edge_v0] = np.arange(self.geometry.n_edges)

    # ---- contact table --------------------------------------------------------------------------
    def table(self, x):
        """Barrier primitives (``ptype``, ``pv``, ``pfix``, ``prsum``, ``pmu``) of every pair with gap
        <= ``dhat`` at positions ``x`` (N, 3) (:mod:`.contact` module docstring)."""
        g = self.geometry
        cs = detect(g, x, self.dhat)
        rows = []  # (ptype, v0, v1, v2, v3, fix (4, 3), rsum, mu)
        ev0, ev1, er = g.edge_v0, g.edge_v1, self.edge_radius
        seg = np.flatnonzero(cs.kind == SEGMENT) if self.rods else np.zeros(0, dtype=np.int64)
        K0 = seg.shape[0]
        ptype = [np.full(K0, SEG_SEG, dtype=np.int64)]
        a, b = cs.pair_a[seg], cs.pair_b[seg]
        pv = [np.stack([ev0[a], ev1[a], ev0[b], ev1[b]], axis=1)]
        pfix = [np.zeros((K0, 4, 3))]
        prsum = [er[a] + er[b]]
        pmu = [self.rod_mu[g.edge_rod[a], g.edge_rod[b]]]
        obs = np.flatnonzero(cs.kind == OBSTACLE)
        e_all, m_all = cs.pair_a[obs], cs.pair_b[obs]
        kind_all = g.obstacle_kind[m_all]
        M = max(g.n_obstacles, 1)
        # planes: each vertex of a touching segment once per plane
        pl = kind_all == PLANE
        if np.any(pl):
            key = np.unique(np.concatenate([ev0[e_all[pl]], ev1[e_all[pl]]]) * M + np.tile(m_all[pl], 2))
            v, m = key // M, key % M
            prm = g.obstacle_param[m]
            f = np.zeros((v.shape[0], 4, 3))
            f[:, 1] = prm[:, 0:3]
            f[:, 2] = prm[:, 3:6] / np.linalg.norm(prm[:, 3:6], axis=1)[:, None]
            vid = np.full((v.shape[0], 4), -1, dtype=np.int64)
            vid[:, 0] = v
            self._append(ptype, pv, pfix, prsum, pmu, VERT_PLANE, vid, f, er[self._vertex_edge[v]],
                         self.obstacle_mu[m])
        for kind in (SPHERE, CAPSULE, CYLINDER):
            sel = kind_all == kind
            if not np.any(sel):
                continue
            e, m = e_all[sel], m_all[sel]
            prm = g.obstacle_param[m]
            f = np.zeros((e.shape[0], 4, 3))
            vid = np.full((e.shape[0], 4), -1, dtype=np.int64)
            vid[:, 0], vid[:, 1] = ev0[e], ev1[e]
            if kind == SPHERE:
                f[:, 2] = prm[:, 0:3]
                self._append(ptype, pv, pfix, prsum, pmu, SEG_FIXPT, vid, f, prm[:, 3] + er[e], self.obstacle_mu[m])
                continue
            if kind == CAPSULE:
                f[:, 2], f[:, 3] = prm[:, 0:3], prm[:, 3:6]
                self._append(ptype, pv, pfix, prsum, pmu, SEG_FIXSEG, vid, f, prm[:, 6] + er[e], self.obstacle_mu[m])
                continue
            u = prm[:, 3:6] / np.linalg.norm(prm[:, 3:6], axis=1)[:, None]
            p, half = prm[:, 0:3].copy(), prm[:, 7].copy()
            inf = ~np.isfinite(half)  # infinite: an axis segment far longer than the gap, about the segment
            mid = 0.5 * (x[ev0[e]] + x[ev1[e]])
            p[inf] += np.sum((mid - p)[inf] * u[inf], axis=1)[:, None] * u[inf]
            half[inf] = 10.0 * (np.linalg.norm(x[ev1[e]] - x[ev0[e]], axis=1) + prm[:, 6] + self.dhat + er[e])[inf]
            f[:, 2], f[:, 3] = p - half[:, None] * u, p + half[:, None] * u
            self._append(ptype, pv, pfix, prsum, pmu, SEG_FIXSEG, vid, f, prm[:, 6] + er[e], self.obstacle_mu[m])
        seen = set()
        for k in obs[kind_all == MESH]:
            e, m = int(cs.pair_a[k]), int(cs.pair_b[k])
            v0, v1, r, mu = int(ev0[e]), int(ev1[e]), float(er[e]), float(self.obstacle_mu[m])
            verts, tris = self._mesh_tris[m]
            tri = tris[int(cs.element_b[k])]
            for v in (v0, v1):
                key = ("t", v, m, int(cs.element_b[k]))
                if key not in seen:
                    seen.add(key)
                    f = np.zeros((4, 3))
                    f[1:4] = verts[tri]
                    rows.append((VERT_FIXTRI, v, -1, -1, -1, f, r, mu))
            for i, j in ((0, 1), (1, 2), (2, 0)):
                key = ("e", e, m, min(tri[i], tri[j]), max(tri[i], tri[j]))
                if key not in seen:
                    seen.add(key)
                    f = np.zeros((4, 3))
                    f[2], f[3] = verts[tri[i]], verts[tri[j]]
                    rows.append((SEG_FIXSEG, v0, v1, -1, -1, f, r, mu))
        if rows:
            ptype.append(np.array([row[0] for row in rows], dtype=np.int64))
            pv.append(np.array([row[1:5] for row in rows], dtype=np.int64))
            pfix.append(np.array([row[5] for row in rows]))
            prsum.append(np.array([row[6] for row in rows], dtype=float))
            pmu.append(np.array([row[7] for row in rows], dtype=float))
        return (np.concatenate(ptype), np.concatenate(pv), np.concatenate(pfix), np.concatenate(prsum),
                np.concatenate(pmu))

    def _refresh_cylinders(self, tab):
        """``tab`` for reuse at its own positions; ``None`` (re-detect) when it holds infinite-cylinder
        axis segments, which are placed about the segment positions of the detection."""
        return None if self._has_infinite_cylinder else tab

    @staticmethod
    def _append(ptype, pv, pfix, prsum, pmu, kind, vid, fix, rsum, mu):
        ptype.append(np.full(vid.shape[0], kind, dtype=np.int64))
        pv.append(vid)
        pfix.append(fix)
        prsum.append(np.asarray(rsum, dtype=float))
        pmu.append(np.asarray(mu, dtype=float))

    # ---- pieces of Phi ---------------------------------------------------------------------------
    def _x(self, q):
        return q[self.vertex_dof]

    def _local_dofs(self, pv, ptype):
        from .contact import N_MOVING
        K = pv.shape[0]
        idx = np.full((K, 12), -1, dtype=np.int64)
        nm = N_MOVING[ptype]
        for i in range(4):
            on = nm > i
            idx[on, 3 * i:3 * i + 3] = self.vertex_dof[pv[on, i]]
        idx[idx >= 0] = np.where(self.dof_is_fixed[idx[idx >= 0]], -1, idx[idx >= 0])
        return idx

    def _phi(self, q, want, tab, fr, kappa):
        """``Phi`` at ``q``; ``want`` 2: also its gradient (D,) and sparse Hessian; returns
        ``(Phi, g, H, gaps, barrier_grad)``."""
        b = self.batch
        D = self.n
        g = np.zeros(D)
        band = np.zeros((D, BANDWIDTH + 1))
        E = rods_elastic(b.ibuf, b.fbuf, q, want, g, band)
        m = b.dof_mass
        d1 = q - self._qhat
        d0 = q - self._q0
        E += float(np.sum(m * (0.5 * self._a_in * d1 * d1 + 0.5 * self._a_dmp * d0 * d0) - b.dof_fext * q))
        x = self._x(q)
        K = tab[0].shape[0]
        gaps = np.empty(K)
        lg = np.zeros((K, 12))
        lh = np.zeros((K, 12, 12))
        Eb = barrier_eval(tab[0], tab[1], tab[2], tab[3], x, self.dhat, 1.0, want, lg, lh, gaps)
        E += kappa * Eb
        fg = fh = None
        if fr is not None:
            fg = np.zeros((fr[0].shape[0], 12))
            fh = np.zeros((fr[0].shape[0], 12, 12))
            E += friction_eval(fr[0], fr[1], fr[2], fr[3], fr[4], x, self._x(self._q0), self.eps_v * self._hs, want,
                               fg, fh)
        if want == 0:
            return E, None, None, gaps, None
        g += m * (self._a_in * d1 + self._a_dmp * d0) - b.dof_fext
        g[self.fixed] = 0.0
        idx = self._local_dofs(tab[1], tab[0])
        gb = np.zeros(D)
        on = idx >= 0
        np.add.at(gb, idx[on], lg[on])
        diag = m * (self._a_in + self._a_dmp)
        band[:, 0] += diag
        vals = band.reshape(-1)[self._band_keep]
        r_, c_ = self._band_rows, self._band_cols
        rows = [r_, c_[self._offdiag], self.fixed]
        cols = [c_, r_[self._offdiag], self.fixed]
        data = [vals, vals[self._offdiag], np.ones(self.fixed.shape[0])]
        blocks = [(idx, kappa * lh)]
        if fr is not None:
            fidx = self._local_dofs(fr[1], fr[0])
            fon = fidx >= 0
            np.add.at(g, fidx[fon], fg[fon])
            blocks.append((fidx, fh))
        for bi, bh in blocks:
            ii = np.broadcast_to(bi[:, :, None], bh.shape)
            jj = np.broadcast_to(bi[:, None, :], bh.shape)
            keep = (ii >= 0) & (jj >= 0) & (bh != 0.0)
            rows.append(ii[keep])
            cols.append(jj[keep])
            data.append(bh[keep])
        H = sp.csc_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))), shape=(D, D))
        g_free = g.copy()
        g += kappa * gb
        return E, g, H, gaps, (g_free, gb)

    def friction_table(self, x, tab, kappa):
        """The lagged friction table ``(ptype, pv, c, basis, mu lambda)`` of the contacts ``tab`` at
        positions ``x`` (:func:`.contact.friction_setup`), or ``None`` when no contact carries a
        normal force."""
        K = tab[0].shape[0]
        if not K:
            return None
        fc, basis, weight = np.zeros((K, 4)), np.zeros((K, 3, 2)), np.zeros(K)
        friction_setup(tab[0], tab[1], tab[2], tab[3], tab[4], x, self.dhat, kappa, fc, basis, weight)
        on = weight > 0
        return (tab[0][on], tab[1][on], fc[on], basis[on], weight[on]) if np.any(on) else None

    # ---- one step --------------------------------------------------------------------------------
    def step(self, q, v, kappa, damping, decay, prev=None):
        """One implicit step of the global unknowns ``q``, velocities ``v`` (D,) in place,
        ``damping`` [1/s] and ``decay`` per unknown (D,)
        (base frames of the batch set to ``q``'s start by the caller). ``prev``: ``None`` (backward
        Euler) or the previous step's unknowns and velocities ``(q_prev, v_prev)`` (BDF2: the same
        minimisation about the BDF2 predictor with ``beta h`` in place of ``h``, the friction's
        displacement measured from the extrapolation ``4/3 q - 1/3 q_prev``;
        :mod:`rodlab.der_implicit.batch`). Returns ``(iterations, kappa, active contacts, min gap
        over the contacts within dhat or inf)``."""
        if prev is None:
            h = self.h
            self._q0 = q.copy()
            self._qhat = q + h * v
        else:
            h = BDF2_BETA * self.h
            self._q0 = q + (q - prev[0]) / 3.0
            self._qhat = self._q0 + h * (v + (v - prev[1]) / 3.0)
        self._hs = h
        self._qhat[self.fixed] = q[self.fixed]
        self._a_in, self._a_dmp = 1.0 / h**2, np.asarray(damping) / h
        b = self.batch
        if self.has_drive:
            ds = b.starts["dof"]
            es = b.starts["edge"]
            for r in sorted({d[0] for d in b.drives}):
                _impose_drives(r, b.ibuf, b.fbuf, q[ds[r]:ds[r + 1]], b.edge_tan_base[es[r]:es[r + 1]],
                               b.edge_a1_base[es[r]:es[r + 1]])
        auto = self.kappa_fixed is None
        balanced = not auto
        fr = None
        its = 0
        scale = np.ones(self.n)
        scale[self.theta_dof] = self.radius_max
        tab_t = None
        for it in range(self.max_iters):
            x = self._x(q)
            tab = self.table(x) if tab_t is None else tab_t  # the accepted trial's contacts are q's
            E, g, H, gaps, (g_free, gb) = self._phi(q, 2, tab, fr, kappa)
            redo = False
            if not balanced and tab[0].shape[0] and np.any(gb != 0.0):
                balanced = True
                k_bal = -float(g_free @ gb) / float(gb @ gb)
                k_new = min(max(k_bal, self.kappa_min), 100.0 * self.kappa_min)
                if k_new > kappa:
                    kappa, redo = k_new, True
            if it == 0 and self.has_friction:
                # lagged friction: normal forces, closest points and bases of the step's start
                fr = self.friction_table(x, tab, kappa)
                redo = redo or fr is not None
            if redo:
                E, g, H, gaps, _ = self._phi(q, 2, tab, fr, kappa)
            if not np.isfinite(E):
                raise FloatingPointError("non-finite incremental potential (a gap reached zero)")
            dq = spsolve(H, -g, permc_spec="NATURAL")
            its += 1
            if not np.all(np.isfinite(dq)):
                raise FloatingPointError("non-finite Newton step")
            if float(np.max(np.abs(dq) * scale)) <= self.tol * h:
                break
            dx = dq[self.vertex_dof]
            hits = impacts(self.geometry, x, x + dx)
            toi = float(hits.toi.min()) if self.rods and hits.toi.shape[0] else \
                float(hits.toi[hits.kind == OBSTACLE].min(initial=NO_IMPACT))
            alpha = 1.0 if toi > 1.0 else 0.9 * toi
            slope = float(g @ dq)
            ok = False
            for ls in range(self.ls_max):
                qt = q + alpha * dq
                tab_t = self.table(self._x(qt))
                Et = self._phi(qt, 0, tab_t, fr, kappa)[0]
                if Et <= E + 1e-4 * alpha * slope + 1e-12 * (abs(E) + abs(Et)):
                    ok = True
                    break
                alpha *= 0.5
            if not ok:
                self.line_search_failures += 1
                break
            q[:] = qt
            tab_t = self._refresh_cylinders(tab_t)
        x = self._x(q)
        tab = self.table(x)
        gaps = np.empty(tab[0].shape[0])
        barrier_eval(tab[0], tab[1], tab[2], tab[3], x, self.dhat, 1.0, 0, np.zeros((0, 12)),
                     np.zeros((0, 12, 12)), gaps)
        active = int(np.count_nonzero(gaps < self.dhat))
        gmin = float(gaps.min()) if gaps.shape[0] else math.inf
        if auto and gmin < 0.01 * self.dhat:
            kappa = min(2.0 * kappa, 100.0 * self.kappa_min)
        v[:] = decay * (q - self._q0) / h
        return its, kappa, active, gmin

    def min_gap(self, x) -> float:
        """The smallest gap [m] at positions ``x``: exact (:func:`rodlab.contact.min_gap`) with rod
        contact; without it, over the analytic obstacles (meshes farther than ``dhat`` are not
        measured: ``inf`` when only they are present)."""
        if self.rods:
            return min_gap(self.geometry, x, obstacles=True)
        g = self.geometry
        if np.any(g.obstacle_kind != MESH):
            gaps = _obstacle_table(g, x)[3]
            return float(gaps[:, g.obstacle_kind != MESH].min())
        return math.inf


__all__ = ["ContactStep", "rods_base_frames", "rods_elastic"]
