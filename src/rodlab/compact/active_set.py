"""Constraints for the compact rod: SQP (Zhao et al., Alg. 1) with an active-set QP (Alg. 2).

Equality constraints (always in the active set ``C_A``) and inequality constraints (inserted when
they block, removed when their multiplier turns negative) on ``x = T(s)``:

* :class:`FixedVertex` -- a vertex held at a point or moved along a prescribed path ``target(t)``;
* :class:`SlideAlongAxis` -- a vertex that may only slide along a line (2 rows);
* :class:`ClampFrame` -- a segment's material frame held at (or moved along) a quaternion (3 rows:
  ``vec(conj(q_target) q_i) = 0``);
* :class:`Floor` -- half-space ``n . p_j - offset - radius >= 0`` for every vertex;
* :class:`Sphere` -- ``|p_j - c| - R - radius >= 0`` for every vertex;
* :class:`Cylinder` -- distance to an axis minus ``R + radius >= 0`` for every vertex;
* :class:`Capsule` -- distance to a segment minus ``R + radius >= 0`` for every vertex.

Coordinate Dirichlet conditions on ``s`` (root position, segment-0 rotation) are eliminated as in
:mod:`rodlab.compact.sqp`. Each Newton iteration solves the QP of Eq. 12 by a primal active-set
method: every equality-constrained sub-problem (Eq. 13) is solved through the Schur complement
(Eq. 14), ``(G A^-1 G^T) lambda = G A^-1 b - c``, ``ds = A^-1 (G^T lambda - b)``, with one PCG
solve per constraint row (cached while ``A`` is unchanged) plus one for ``b``. Steps are
backtracked on the merit function ``phi = E + |C|_1 / mu`` (Eq. 11) with ``1/mu`` slightly above
the largest multiplier. Collision candidates are gathered once per time step (vertices within a
proximity margin), as the paper does with its discrete detection.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..model import check_damping_scheme
from .chain import chain_forward, jac_mul, jac_t_mul
from .energies import eval_energy, reduced_hessian
from .pcg import PRECONDITIONERS, pcg_solve
from .sqp import (CompactModel, CompactState, SolverOptions, StepStats, Workspace, finish_step,
                  prepare_preconditioner, split_damping, tension_stiffness)

log = logging.getLogger(__name__)


def _target(value, t):
    return np.asarray(value(t) if callable(value) else value, dtype=float)


@dataclass(frozen=True)
class FixedVertex:
    """Vertex ``vertex`` at ``target`` [m] (array, or function of time for prescribed motion)."""

    vertex: int
    target: np.ndarray | Callable

    def rows(self, p, q, t):
        k = self.vertex % p.shape[0]
        c = p[k] - _target(self.target, t)
        return [("p", k, np.eye(3)[a], c[a]) for a in range(3)]


@dataclass(frozen=True)
class SlideAlongAxis:
    """Vertex ``vertex`` stays on the line through ``point`` along ``axis`` (it may slide along it)."""

    vertex: int
    point: np.ndarray
    axis: np.ndarray

    def rows(self, p, q, t):
        from ..geometry.curves import any_perpendicular

        k = self.vertex % p.shape[0]
        a = np.asarray(self.axis, dtype=float)
        a = a / np.linalg.norm(a)
        e1 = np.asarray(any_perpendicular(a), dtype=float)
        e2 = np.cross(a, e1)
        d = p[k] - np.asarray(self.point, dtype=float)
        return [("p", k, e1, float(d @ e1)), ("p", k, e2, float(d @ e2))]


@dataclass(frozen=True)
class ClampFrame:
    """Segment ``segment``'s frame held at quaternion ``target`` (array or function of time)."""

    segment: int
    target: np.ndarray | Callable

    def rows(self, p, q, t):
        i = self.segment % q.shape[0]
        qt = _target(self.target, t)
        qt = qt / np.linalg.norm(qt)
        if qt @ q[i] < 0:
            qt = -qt
        from .energies import C_MATS

        out = []
        for k in range(3):
            g = C_MATS[k].T @ qt  # d/dq of qt^T C_k q
            out.append(("q", i, g, float(qt @ C_MATS[k] @ q[i])))
        return out


@dataclass(frozen=True)
class Floor:
    """Half-space ``normal . p >= offset + rod radius`` (unit ``normal``)."""

    normal: np.ndarray = (0.0, 0.0, 1.0)
    offset: float = 0.0

    def values(self, p, radius):
        nrm = np.asarray(self.normal, dtype=float)
        nrm = nrm / np.linalg.norm(nrm)
        return p @ nrm - self.offset - radius, np.broadcast_to(nrm, p.shape)


@dataclass(frozen=True)
class Sphere:
    """Solid sphere obstacle of ``radius`` [m] at ``center``."""

    center: np.ndarray
    radius: float

    def values(self, p, radius):
        d = p - np.asarray(self.center, dtype=float)
        r = np.linalg.norm(d, axis=1)
        return r - self.radius - radius, d / np.maximum(r, 1e-300)[:, None]


@dataclass(frozen=True)
class Cylinder:
    """Solid infinite cylinder of ``radius`` [m] around the line through ``point`` along ``axis``."""

    point: np.ndarray
    axis: np.ndarray
    radius: float

    def values(self, p, radius):
        a = np.asarray(self.axis, dtype=float)
        a = a / np.linalg.norm(a)
        rel = p - np.asarray(self.point, dtype=float)
        radial = rel - np.outer(rel @ a, a)
        r = np.linalg.norm(radial, axis=1)
        return r - self.radius - radius, radial / np.maximum(r, 1e-300)[:, None]


@dataclass(frozen=True)
class Capsule:
    """Solid capsule: the points within ``radius`` [m] of the segment ``a``-``b`` (a finite
    cylinder with hemispherical caps). Distance and normal from each vertex's closest point on
    the segment."""

    a: np.ndarray
    b: np.ndarray
    radius: float

    def values(self, p, radius):
        a = np.asarray(self.a, dtype=float)
        ab = np.asarray(self.b, dtype=float) - a
        s = np.clip(((p - a) @ ab) / float(ab @ ab), 0.0, 1.0)
        rel = p - (a + s[:, None] * ab)
        r = np.linalg.norm(rel, axis=1)
        return r - self.radius - radius, rel / np.maximum(r, 1e-300)[:, None]


@dataclass(frozen=True)
class ConstrainedStats(StepStats):
    active_constraints: int = 0
    qp_iterations: int = 0
    max_violation: float = 0.0


class ConstrainedSolver:
    """Implicit Euler with equality and inequality constraints (Zhao et al., Alg. 1 + Alg. 2).
    ``damping_scheme``: as for :class:`rodlab.compact.sqp.CompactSolver` (docs/damping.md)."""

    def __init__(self, model: CompactModel, options: SolverOptions = SolverOptions(), *, fixed=None,
                 equalities=(), obstacles=(), gravity=(0.0, 0.0, 0.0), damping: float = 0.0,
                 root_motion=None, proximity: float | None = None, max_qp_iterations: int = 100,
                 damping_scheme: str = "implicit"):
        self.model = model
        self.options = options
        n = model.n
        self.free = np.ones((n, 3))
        if fixed is not None:
            fixed = np.asarray(fixed, dtype=bool)
            if fixed.shape != (n, 3):
                raise ValueError(f"fixed must have shape ({n}, 3) (got {fixed.shape})")
            self.free[fixed] = 0.0
        self.equalities = tuple(equalities)
        self.obstacles = tuple(obstacles)
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        if not (math.isfinite(damping) and damping >= 0):
            raise ValueError(f"damping must be >= 0 1/s (got {damping})")
        if proximity is not None and not proximity >= 0:
            raise ValueError(f"proximity must be >= 0 m (got {proximity})")
        if max_qp_iterations < 1:
            raise ValueError(f"max_qp_iterations must be >= 1 (got {max_qp_iterations})")
        self.damping = float(damping)
        self.damping_scheme = check_damping_scheme(damping_scheme)
        self.root_motion = root_motion
        self.proximity = proximity
        self.max_qp = int(max_qp_iterations)
        self.kind = PRECONDITIONERS[options.precond]
        self.ws = Workspace(n, direct=self.kind == 4, exact=self.kind == 5)
        self._active_prev: set = set()

    # ---- linear algebra helpers ---------------------------------------------------------------
    def _solve_a(self, rhs, ctx):
        ws, o = self.ws, self.options
        x = np.zeros_like(rhs)
        it, res, ok = pcg_solve(ws.Dj, ws.Hp, ws.Bd, ws.Bo, self.free, self.kind, ws.sinv, ws.W, ws.L,
                                np.ascontiguousarray(rhs), x, o.pcg_rtol, o.pcg_atol, o.pcg_maxiter,
                                ws.r, ws.zz, ws.d, ws.Ad, ws.y, ws.tp, ws.s_try)
        ctx["pcg"] += it
        ctx["solves"] += 1
        if not ok:
            ctx["pcg_fail"] = True
        return x

    def _row_gradient(self, row):
        """``grad_s`` of one constraint row: ``J^T grad_x`` (O(n)), Dirichlet-projected."""
        ws = self.ws
        n, m = self.model.n, self.model.m
        yp = np.zeros((n, 3))
        yq = np.zeros((m, 4))
        kind, idx, g, _ = row
        if kind == "p":
            yp[idx] = g
        else:
            yq[idx] = g
        out = np.empty((n, 3))
        jac_t_mul(ws.Dj, ws.Qj, yp, yq, out)
        return out * self.free

    # ---- constraint evaluation ------------------------------------------------------------------
    def _rows(self, p, q, t, candidates):
        """Equality rows and inequality candidate rows at x = (p, q): lists of (key, row)."""
        eq = []
        for ci, c in enumerate(self.equalities):
            for ri, row in enumerate(c.rows(p, q, t)):
                eq.append((("e", ci, ri), row))
        ineq = []
        r = self.model.radius
        for oi, ob in enumerate(self.obstacles):
            vals, grads = ob.values(p, r)
            for j in candidates[oi]:
                ineq.append((("i", oi, int(j)), ("p", int(j), np.array(grads[j]), float(vals[j]))))
        return eq, ineq

    def _merit_violation(self, p, q, t, candidates):
        eq, ineq = self._rows(p, q, t, candidates)
        return sum(abs(r[3]) for _, r in eq) + sum(max(0.0, -r[3]) for _, r in ineq)

    def _energy(self, s, qref, pred, mode):
        md, ws = self.model, self.ws
        chain_forward(s, md.lengths, qref, ws.p, ws.q, ws.Dj, ws.Qj, mode >= 1)
        return eval_energy(ws.p, ws.q, pred[0], pred[1], pred[2], pred[3], md.masses, md.Jr, md.lbar, md.Kh, md.ubar,
                           self.gravity, pred[4], pred[5], ws.gp, ws.gq, ws.Hp, ws.Hqd, ws.Hqo, min(mode, 1), ws.comps)

    # ---- the QP of Eq. 12 by a primal active-set method (Alg. 2) ---------------------------------
    def _solve_qp(self, b, eq, ineq, ctx):
        """min 1/2 d^T A d + b^T d  s.t. G_e d + c_e = 0, G_i d + c_i >= 0. Returns (d, lam dict, active keys)."""
        cache = ctx.setdefault("cache", {})
        grads = ctx.setdefault("grads", {})
        z = self._solve_a(-b, ctx)  # A^-1 (-b)

        def gradient(key, row):
            if key not in grads:
                grads[key] = self._row_gradient(row)
            return grads[key]

        def column(key, row):
            """(grad_s C_row, A^-1 grad_s C_row): one PCG solve per row, cached while A is fixed."""
            if key not in cache:
                g = gradient(key, row)
                cache[key] = (g, self._solve_a(g, ctx))
            return cache[key]

        rows = dict(eq)
        rows.update(ineq)
        eq_keys = [k for k, _ in eq]
        ineq_keys = [k for k, _ in ineq]
        # vectorised linearised inequality rows: c + g . (J d)_vertex  (one prefix sum per check)
        n, m = self.model.n, self.model.m
        cand_v = np.array([rows[k][1] for k in ineq_keys], dtype=np.int64)
        cand_g = np.array([rows[k][2] for k in ineq_keys]).reshape(-1, 3)
        cand_c = np.array([rows[k][3] for k in ineq_keys])
        dp, dq = np.empty((n, 3)), np.empty((m, 4))
        # start: previously active, violated or touching inequality rows
        W = [k for k in ineq_keys if k in self._active_prev or rows[k][3] <= 0.0]
        W_set = set(W)
        inW = np.array([k in W_set for k in ineq_keys], dtype=bool)
        index = {k: i for i, k in enumerate(ineq_keys)}
        d = z
        lam = {}
        for qp_it in range(self.max_qp):
            ctx["qp"] += 1
            keys = eq_keys + W
            if keys:
                cols = [column(k, rows[k]) for k in keys]
                Gm = np.stack([c[0].ravel() for c in cols])
                Y = np.stack([c[1].ravel() for c in cols], axis=1)
                cvec = np.array([rows[k][3] for k in keys])
                S = Gm @ Y
                # G (z + Y lam) + c = 0  ->  S lam = -(G z + c)
                try:
                    lam_v = np.linalg.solve(S, -(Gm @ z.ravel() + cvec))
                except np.linalg.LinAlgError:
                    lam_v = np.linalg.lstsq(S, -(Gm @ z.ravel() + cvec), rcond=None)[0]
                d = (z.ravel() + Y @ lam_v).reshape(z.shape)
                lam = dict(zip(keys, lam_v))
            else:
                d = z
                lam = {}
            # feasibility of the inactive inequality rows at d
            if len(ineq_keys):
                jac_mul(self.ws.Dj, self.ws.Qj, np.ascontiguousarray(d), dp, dq)
                vals = cand_c + np.einsum("ij,ij->i", cand_g, dp[cand_v])
                vals[inW] = np.inf
                j = int(np.argmin(vals))
                if vals[j] < -1e-12:
                    W.append(ineq_keys[j])  # add the tightest blocking constraint (Alg. 2)
                    inW[j] = True
                    continue
            # all feasible: drop the loosest constraint with a negative multiplier (sign: -b + G^T lam = A d)
            neg = [(lam[k], k) for k in W if lam[k] < -1e-12 * (1.0 + max(abs(v) for v in lam.values()))]
            if neg:
                k = min(neg)[1]
                W.remove(k)
                inW[index[k]] = False
                continue
            break
        return d, lam, W

    # ---- one time step ----------------------------------------------------------------------------
    def step(self, state: CompactState, dt: float) -> ConstrainedStats:
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be > 0 s (got {dt})")
        md, o, ws = self.model, self.options, self.ws
        t1 = state.t + dt
        p_t, q_t = state.p.copy(), state.q.copy()
        s_backup, qref_backup = state.s.copy(), state.qref.copy()
        a_d = 0.0 if self.damping_scheme == "exponential" else self.damping / dt
        pred = (p_t + dt * state.v, p_t, q_t, dt * state.omega, 1.0 / dt**2, a_d)
        if self.root_motion is not None:
            state.s[0] = np.asarray(self.root_motion(t1), dtype=float)
        # proximity candidates, once per step (discrete detection as in the paper)
        speed = float(np.max(np.linalg.norm(state.v, axis=1))) if state.v.size else 0.0
        margin = self.proximity if self.proximity is not None else 2.0 * md.radius + 3.0 * speed * dt + 0.5 * float(md.lengths.max())
        candidates = []
        for ob in self.obstacles:
            vals, _ = ob.values(state.p, md.radius)
            candidates.append(np.nonzero(vals < margin)[0])
        ctx = {"pcg": 0, "solves": 0, "qp": 0, "pcg_fail": False}
        s = state.s
        converged = False
        it = 0
        resid = math.inf
        E = 0.0
        W = []
        while it < o.max_newton:
            E = self._energy(s, state.qref, pred, 2)
            eq, ineq = self._rows(ws.p, ws.q, t1, candidates)
            b = np.empty((md.n, 3))
            jac_t_mul(ws.Dj, ws.Qj, ws.gp, ws.gq, b)
            b *= self.free
            reduced_hessian(ws.q, pred[2], ws.Qj, md.masses, md.Jr, md.lbar, md.Kh, pred[4], pred[5], ws.Hp, ws.Bd, ws.Bo)
            if o.tension_stiffness:
                tension_stiffness(s, md.lengths, ws.q, ws.gp, ws.Bd)
            ok = prepare_preconditioner(self.kind, ws.Dj, ws.Hp, ws.Bd, ws.Bo, self.free, ws.diag, ws.off, ws.sinv,
                                        ws.W, ws.suffix, ws.A, ws.L)
            if not ok:
                ctx["pcg_fail"] = True
                break
            ctx["cache"] = {}
            ctx["grads"] = {}
            d, lam, W = self._solve_qp(b, eq, ineq, ctx)
            # KKT residual |b - G^T lam| and violation of the active rows (Alg. 1 test)
            g_lam = np.zeros_like(b)
            for k, v in lam.items():
                g_lam += v * ctx["cache"][k][0]
            rows = dict(eq)
            rows.update(ineq)
            viol = max([abs(rows[k][3]) for k in lam] + [0.0])
            resid = float(np.linalg.norm(b - g_lam))
            if resid < o.tol and viol < 1e-10:
                converged = True
                break
            inv_mu = 1.1 * max([abs(v) for v in lam.values()] + [0.0]) + 1e-12
            phi0 = E + inv_mu * self._merit_violation(ws.p, ws.q, t1, candidates)
            slope = float(np.sum(b * d)) - inv_mu * sum(abs(rows[k][3]) if k[0] == "e" else max(0.0, -rows[k][3]) for k in rows)
            alpha, accepted = 1.0, False
            s_try = np.empty_like(s)
            for _ in range(o.line_search_steps):
                s_try[:] = s + alpha * d
                E_try = self._energy(s_try, state.qref, pred, 0)
                phi = E_try + inv_mu * self._merit_violation(ws.p, ws.q, t1, candidates)
                e_round = 1e-14 * float(np.sum(np.abs(ws.comps)))
                if phi <= phi0 + 1e-4 * alpha * min(slope, 0.0) or phi - phi0 <= e_round:
                    accepted = True
                    break
                alpha *= 0.5
            it += 1
            if not accepted:
                break
            s[:] = s_try
        self._active_prev = {k for k in W}
        chain_forward(s, md.lengths, state.qref, ws.p, ws.q, ws.Dj, ws.Qj, False)
        eq, ineq = self._rows(ws.p, ws.q, t1, candidates)
        max_viol = max([abs(r[3]) for _, r in eq] + [max(0.0, -r[3]) for _, r in ineq] + [0.0])
        if not np.all(np.isfinite(ws.p)):
            state.s[:] = s_backup
            state.qref[:] = qref_backup
            return ConstrainedStats(False, "non-finite state; step rejected", it, ctx["pcg"], ctx["solves"], resid, E)
        state.p[:] = ws.p
        state.q[:] = ws.q
        finish_step(state.s, state.qref, state.p, state.q, p_t, q_t, state.v, state.omega, dt)
        split_damping(state, self.damping, self.damping_scheme, dt)
        state.t = t1
        msg = "converged" if converged else ("PCG did not converge" if ctx["pcg_fail"] else "newton iteration limit reached")
        return ConstrainedStats(not ctx["pcg_fail"], msg, it, ctx["pcg"], ctx["solves"], resid, E,
                                active_constraints=len(W), qp_iterations=ctx["qp"], max_violation=max_viol)
