"""Baselines that Zhao et al. compare against (Sec. 4.1): the same rod in Cartesian coordinates
``x = (p, q)`` (positions + quaternions, 7n - 4 unknowns) with the intrinsic constraints
(Eq. 1-3) handled either by a penalty (Sec. 4.1.1) or by a direct KKT solve (Sec. 4.1.2).

Both minimise the same implicit-Euler objective ``E(x)`` as the compact method
(:func:`rodlab.compact.energies.eval_energy`; Gauss-Newton Hessian for the penalty method, exact
Hessian for the KKT method, whose matrix is indefinite anyway) and use sparse direct
solves (SciPy SuperLU). Constraint rows per segment ``i`` (our choice of form, see docs):

* inextensibility (Eq. 1): ``|p_{i+1} - p_i| - l_i``;
* unit quaternion (Eq. 2): ``|q_i|^2 - 1``;
* alignment (Eq. 3): ``d(q_i) - (p_{i+1} - p_i)/l_i`` with the quadratic
  ``d(q) = (2(xz + wy), 2(yz - wx), w^2 - x^2 - y^2 + z^2)`` (equal to ``R(q) e_3`` for unit q;
  dividing by ``l_i`` instead of ``|p_{i+1} - p_i|`` is the same on the constraint set).

Penalty: minimise ``E(x) + w/2 |c(x)|^2`` by Gauss-Newton (``H + w J_c^T J_c``) with a
backtracking line search. Direct KKT: SQP steps from ``[[H, J_c^T], [J_c, 0]] [dx; -lam] = [-g; -c]``
(full steps; ``H`` plus the constraint curvature ``-sum lam grad^2 c`` -- without it the full steps
diverge, the rotational inertia being tiny; rows: unit + alignment, which imply Eq. 1).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .energies import eval_energy
from .sqp import CompactModel

QD = np.zeros((3, 4, 4))  # d_k(q) = q^T QD[k] q
QD[0, 1, 3] = QD[0, 3, 1] = 1.0
QD[0, 0, 2] = QD[0, 2, 0] = 1.0
QD[1, 2, 3] = QD[1, 3, 2] = 1.0
QD[1, 0, 1] = QD[1, 1, 0] = -1.0
QD[2, 0, 0] = 1.0
QD[2, 1, 1] = QD[2, 2, 2] = -1.0
QD[2, 3, 3] = 1.0


def quad_director(q):
    """``d(q)`` for (m, 4) quaternions, quadratic form (unit q: third column of R(q))."""
    return np.einsum("mi,kij,mj->mk", q, QD, q)


@dataclass
class CartesianState:
    t: float
    p: np.ndarray
    q: np.ndarray
    v: np.ndarray
    omega: np.ndarray


@dataclass(frozen=True)
class CartesianStats:
    success: bool
    message: str
    newton_iters: int
    residual: float
    energy: float


class CartesianSolver:
    """Implicit Euler in Cartesian coordinates with penalty (``method='penalty'``, weight
    ``weight``) or direct KKT (``method='kkt'``) constraints. ``fixed_vertices`` and
    ``fixed_segments`` are held (Dirichlet, eliminated)."""

    def __init__(self, model: CompactModel, *, method: str = "penalty", weight: float = 1e6, max_newton: int = 5,
                 tol: float = 1e-5, gravity=(0.0, 0.0, 0.0), damping: float = 0.0, fixed_vertices=(), fixed_segments=()):
        if method not in ("penalty", "kkt"):
            raise ValueError(f"method must be 'penalty' or 'kkt' (got {method!r})")
        if not weight > 0:
            raise ValueError(f"weight must be > 0 (got {weight})")
        self.model = model
        self.method = method
        self.weight = float(weight)
        self.max_newton = int(max_newton)
        self.tol = float(tol)
        self.gravity = np.asarray(gravity, dtype=float)
        self.damping = float(damping)
        n, m = model.n, model.m
        free = np.ones(3 * n + 4 * m, dtype=bool)
        for v in fixed_vertices:
            free[3 * (v % n):3 * (v % n) + 3] = False
        for s_ in fixed_segments:
            free[3 * n + 4 * (s_ % m):3 * n + 4 * (s_ % m) + 4] = False
        self.free_idx = np.nonzero(free)[0]
        self.n, self.m = n, m
        fv = free[:3 * n].reshape(n, 3).any(1)
        fs = free[3 * n:].reshape(m, 4).any(1)
        seg_free = fv[:-1] | fv[1:] | fs
        self._kkt_rows = np.array([5 * i + r for i in range(m) if seg_free[i] for r in (1, 2, 3, 4)], dtype=int)
        self._build_static_patterns()

    def _build_static_patterns(self):
        n, m = self.n, self.m
        # sparse pattern of H (p: diagonal; q: block tridiagonal 4x4)
        rows, cols = [np.arange(3 * n)], [np.arange(3 * n)]
        o = 3 * n
        bi, bj = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
        for i in range(m):
            rows.append((o + 4 * i + bi).ravel())
            cols.append((o + 4 * i + bj).ravel())
        for i in range(m - 1):
            rows.append((o + 4 * i + bi).ravel())
            cols.append((o + 4 * i + 4 + bj).ravel())
            rows.append((o + 4 * i + 4 + bj).ravel())
            cols.append((o + 4 * i + bi).ravel())
        self._hr = np.concatenate(rows)
        self._hc = np.concatenate(cols)

    # ---- pieces ----------------------------------------------------------------------------------
    def _energy(self, p, q, pred, mode):
        md = self.model
        gp, gq = np.zeros((self.n, 3)), np.zeros((self.m, 4))
        Hp, Hd, Ho = np.zeros(self.n), np.zeros((self.m, 4, 4)), np.zeros((max(self.m - 1, 0), 4, 4))
        comps = np.zeros(4)
        E = eval_energy(p, q, pred[0], pred[1], pred[2], pred[3], md.masses, md.Jr, md.lbar, md.Kh, md.ubar,
                        self.gravity, pred[4], pred[5], gp, gq, Hp, Hd, Ho, mode, comps)
        g = np.concatenate([gp.ravel(), gq.ravel()])
        H = None
        if mode >= 2:
            vals = [np.repeat(Hp, 3)]
            vals += [Hd[i].ravel() for i in range(self.m)]
            for i in range(self.m - 1):
                vals.append(Ho[i].ravel())  # upper block (i, i+1): rows o+4i+a, cols o+4i+4+b
                vals.append(Ho[i].ravel())  # lower block, same values at (o+4i+4+b, o+4i+a)
            N = 3 * self.n + 4 * self.m
            H = sp.csr_matrix((np.concatenate(vals), (self._hr, self._hc)), shape=(N, N))
        return E, g, H

    def constraints(self, p, q, jacobian=True):
        """Rows c (5m,) ordered per segment [length, unit, align x3] and (optionally) sparse J_c."""
        n, m = self.n, self.m
        l = self.model.lengths
        e = p[1:] - p[:-1]
        el = np.linalg.norm(e, axis=1)
        t = e / el[:, None]
        d = quad_director(q)
        c = np.empty((m, 5))
        c[:, 0] = el - l
        c[:, 1] = np.sum(q * q, axis=1) - 1.0
        c[:, 2:] = d - e / l[:, None]
        if not jacobian:
            return c.ravel(), None
        R, C, V = [], [], []
        seg = np.arange(m)
        for a in range(3):  # length row: -t on p_i, +t on p_{i+1}
            R += [5 * seg, 5 * seg]
            C += [3 * seg + a, 3 * (seg + 1) + a]
            V += [-t[:, a], t[:, a]]
        for a in range(4):  # unit row: 2 q
            R.append(5 * seg + 1)
            C.append(3 * n + 4 * seg + a)
            V.append(2 * q[:, a])
        for k in range(3):  # align rows
            dq = 2 * np.einsum("ij,mj->mi", QD[k], q)
            for a in range(4):
                R.append(5 * seg + 2 + k)
                C.append(3 * n + 4 * seg + a)
                V.append(dq[:, a])
            R += [5 * seg + 2 + k, 5 * seg + 2 + k]
            C += [3 * seg + k, 3 * (seg + 1) + k]
            V += [1.0 / l, -1.0 / l]
        J = sp.csr_matrix((np.concatenate(V), (np.concatenate(R), np.concatenate(C))), shape=(5 * m, 3 * n + 4 * m))
        return c.ravel(), J

    # ---- stepping ----------------------------------------------------------------------------------
    def step(self, state: CartesianState, dt: float) -> CartesianStats:
        n, m = self.n, self.m
        p_t, q_t = state.p.copy(), state.q.copy()
        pred = (p_t + dt * state.v, p_t, q_t, dt * state.omega, 1.0 / dt**2, self.damping / dt)
        x = np.concatenate([p_t.ravel(), q_t.ravel()])
        F = self.free_idx
        w = self.weight
        it = 0
        res = math.inf
        E = 0.0
        converged = False
        lam = np.zeros(len(self._kkt_rows))

        def unpack(x):
            return x[:3 * n].reshape(n, 3), x[3 * n:].reshape(m, 4)

        def penalty_obj(x):
            p, q = unpack(x)
            E_, _, _ = self._energy(p, q, pred, 0)
            c, _ = self.constraints(p, q, False)
            return E_ + 0.5 * w * c @ c

        while it < self.max_newton:
            p, q = unpack(x)
            E, g, H = self._energy(p, q, pred, 3 if self.method == "kkt" else 2)
            c, Jc = self.constraints(p, q)
            if self.method == "penalty":
                grad = g + w * (Jc.T @ c)
                res = float(np.linalg.norm(grad[F]))
                if res < self.tol:
                    converged = True
                    break
                K = (H + w * (Jc.T @ Jc)).tocsc()[F][:, F]
                dx = np.zeros_like(x)
                dx[F] = spla.spsolve(K.tocsc(), -grad[F])
                phi0 = E + 0.5 * w * c @ c
                slope = float(grad[F] @ dx[F])
                alpha = 1.0
                for _ in range(30):
                    if penalty_obj(x + alpha * dx) <= phi0 + 1e-4 * alpha * slope:
                        break
                    alpha *= 0.5
                x = x + alpha * dx
            else:
                # KKT rows: unit + alignment (4 per segment, independent; they imply the length
                # row), only for segments with a free unknown
                JF = Jc[self._kkt_rows][:, F]
                c = c[self._kkt_rows]
                res = float(np.linalg.norm(g[F] - JF.T @ lam)) + float(np.abs(c).max())
                if res < self.tol:
                    converged = True
                    break
                # Lagrangian Hessian: H - sum lam_r grad^2 c_r (unit and alignment rows are quadratic in q)
                lam_full = np.zeros(5 * m)
                lam_full[self._kkt_rows] = lam
                lam_full = lam_full.reshape(m, 5)
                blocks = -2.0 * (lam_full[:, 1, None, None] * np.eye(4)[None] + np.einsum("mk,kij->mij", lam_full[:, 2:], QD))
                o = 3 * n
                Hc = sp.csr_matrix((blocks.ravel(), ((o + 4 * np.arange(m)[:, None, None] + np.arange(4)[None, :, None] + 0 * np.arange(4)[None, None, :]).ravel(),
                                                     (o + 4 * np.arange(m)[:, None, None] + 0 * np.arange(4)[None, :, None] + np.arange(4)[None, None, :]).ravel())),
                                   shape=H.shape)
                K = sp.bmat([[(H + Hc).tocsc()[F][:, F], JF.T], [JF, None]], format="csc")
                rhs = np.concatenate([-g[F], -c])
                sol = spla.spsolve(K, rhs)
                dx = np.zeros_like(x)
                dx[F] = sol[:len(F)]
                lam = -sol[len(F):]
                x = x + dx
            it += 1
        p, q = unpack(x)
        state.v = (p - p_t) / dt
        # body-frame angular velocity from the quaternion increment (as in the compact method)
        a, b = q_t, q
        state.omega = 2.0 / dt * np.stack([
            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0] - a[:, 2] * b[:, 3] + a[:, 3] * b[:, 2],
            a[:, 0] * b[:, 2] - a[:, 2] * b[:, 0] - a[:, 3] * b[:, 1] + a[:, 1] * b[:, 3],
            a[:, 0] * b[:, 3] - a[:, 3] * b[:, 0] - a[:, 1] * b[:, 2] + a[:, 2] * b[:, 1]], axis=1)
        state.p, state.q = p.copy(), q.copy()
        state.t += dt
        ok = bool(np.all(np.isfinite(x)))
        return CartesianStats(ok, "converged" if converged else ("non-finite" if not ok else "newton iteration limit reached"),
                              it, res, E)


def cartesian_state_at_rest(model: CompactModel) -> CartesianState:
    return CartesianState(0.0, np.array(model.rest_p), np.array(model.rest_q), np.zeros((model.n, 3)), np.zeros((model.m, 3)))


def cartesian_kinetic_energy(model: CompactModel, st: CartesianState) -> float:
    return float(0.5 * np.sum(model.masses * np.sum(st.v**2, axis=1)) + 0.5 * np.sum(model.Jr * st.omega**2))


def run_cartesian(model, solver, dt, n_steps, *, metrics_every=1):
    """Step a Cartesian baseline; returns dict of per-frame arrays: t, inextensibility, alignment,
    kinetic_energy, newton_iters, ms (wall time per step)."""
    from .sqp import alignment_violation, inextensibility_violation

    st = cartesian_state_at_rest(model)
    out = {k: [] for k in ("t", "inextensibility", "alignment", "kinetic_energy", "newton_iters", "ms", "x")}
    for k in range(n_steps):
        t0 = time.perf_counter()
        stats = solver.step(st, dt)
        dtm = time.perf_counter() - t0
        if not stats.success:
            break
        out["t"].append(st.t)
        out["inextensibility"].append(abs(inextensibility_violation(st.p, model.lengths)))
        out["alignment"].append(alignment_violation(st.p, st.q))
        out["kinetic_energy"].append(cartesian_kinetic_energy(model, st))
        out["newton_iters"].append(stats.newton_iters)
        out["ms"].append(1e3 * dtm)
        out["x"].append(st.p.copy())
    return {k: np.array(v) for k, v in out.items()}
