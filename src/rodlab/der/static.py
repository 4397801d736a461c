"""Static equilibrium of a DER rod: minimise the reduced energy under inextensibility.

The reduced energy ``E(x) = E_elastic(x, theta*(x)) - f_ext . x`` has the quasistatic twist
eliminated (Bergou 2008, Sec. 5), so its gradient is minus the centerline force of Sec. 7.1.
Newton in the null space of the constraint Jacobian, with the Hessian from central differences
of that analytic gradient (the twist couples the whole rod, so the reduced Hessian is dense),
eigenvalues folded to positive ("saddle-free" Newton: it never steps toward a maximum), a step
capped to a trust radius, and a backtracking line search on ``E`` over iterates projected back
onto the constraints. Large loads are reached by continuation: the load is ramped in and each
stage starts from the last equilibrium; a stage that fails is split in two.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from . import kernels as K
from .stepper import DERStepper
from ..state import RodState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StaticResult:
    state: RodState
    success: bool
    message: str
    iterations: int
    """Newton iterations over all load stages"""
    residual: float
    """largest component of the constraint-tangent force, relative to the force scale"""
    energy: float
    load_stages: int


def solve_static(stepper: DERStepper, state: RodState, *, tol: float = 1e-8, max_iter: int = 40,
                 load_stages: int = 1, max_stages: int = 200, extra_forces: np.ndarray | None = None) -> StaticResult:
    """Static equilibrium nearest ``state`` (not modified) under the stepper's loads.

    tol: stop when the largest constraint-tangent force component is below ``tol`` times the
    force scale (largest external vertex force, or the bending force scale without loads), or
    when Newton's progress reaches round-off. load_stages: initial number of equal load
    increments (each failed increment is halved, up to ``max_stages`` in all).
    extra_forces: (nv, 3) additional constant forces [N].
    """
    solver = _NewtonSolver(stepper, state, extra_forces)
    s = solver.start
    total_iters = 0
    done = 0.0
    step = 1.0 / load_stages
    stages = 0
    last = None
    while done < 1.0 - 1e-12 and stages < max_stages:
        target = min(1.0, done + step)
        res = solver.solve(s, target, tol, max_iter)
        total_iters += res[2]
        stages += 1
        last = res
        if res[0]:
            s = res[1]
            done = target
            # adapt the load increment to how hard Newton found this one
            if res[2] <= 6:
                step = min(1.0, 2.0 * step)
            elif res[2] > 15:
                step *= 0.5
        else:
            step *= 0.25
    success = done >= 1.0 - 1e-12 and last is not None and last[0]
    residual = last[3] if last else np.inf
    energy = last[4] if last else np.nan
    message = (f"converged: tangent force {residual:.2e} of the force scale, {stages} load stage(s)" if success
               else f"no equilibrium found: reached load factor {done:.3g} after {stages} stages "
                    f"({last[5] if last else ''})")
    if not success:
        log.warning("DER static solve: %s", message)
    return StaticResult(s, success, message, total_iters, residual, energy, stages)


class _NewtonSolver:
    def __init__(self, stepper: DERStepper, state: RodState, extra_forces):
        self.stepper = st = stepper
        s = state.copy()
        s.v[:] = 0.0
        self.free = st.inv_mass > 0
        self.idx = np.flatnonzero(self.free)
        nv = s.x.shape[0]
        ne = st.rest_lengths.shape[0]
        self.ends = np.stack([np.arange(ne), (np.arange(ne) + 1) % nv], axis=1)
        self.cons = np.flatnonzero(self.free[self.ends].any(axis=1)) if st.options.inextensible else np.array([], dtype=int)
        self.f_ext = st.external_forces(s.t) + (0.0 if extra_forces is None else np.asarray(extra_forces, dtype=float))
        # forces come from differences of unit tangents: their round-off is ~eps B / l^3
        self.noise = 1e3 * np.finfo(float).eps * float(st.bend_k.max() / st.rest_lengths.min() ** 3)
        self.scale = max(float(np.abs(self.f_ext).max()), self.noise, 1e-300)
        self.h = 1e-5 * float(st.rest_lengths.mean())  # central differences: h^2 truncation vs eps/h round-off
        self.trust = 0.1 * float(st.rest_lengths.sum())
        self.clamp_m1 = np.array([st._clamp_m1(j, s.t) for j in st.clamp_edges]).reshape(-1, 3)
        self.twist_tol = st.options.twist_tol * max(1.0, float(st.twist_k.max() / st.lbar.min()))
        self._settle(s)
        if self.cons.size:  # start on the constraint manifold (a guess may be slightly off it)
            s = self.moved(s, self.project(s.x.copy()))
        self.start = s

    def _settle(self, q: RodState) -> None:
        self.stepper._refresh(q)
        self.stepper._solve_twist(q)

    def moved(self, base: RodState, x_new: np.ndarray) -> RodState:
        q = base.copy()
        _move_frames(self.stepper, q, x_new)
        self._settle(q)
        return q

    def energy(self, q: RodState, load: float) -> float:
        return self.stepper.elastic_energy(q) - load * float(np.sum(self.f_ext * q.x))

    def gradient(self, q: RodState, load: float) -> np.ndarray:
        return -(self.stepper.elastic_forces(q) + load * self.f_ext)[self.idx].ravel()

    def tangent_basis(self, q: RodState) -> np.ndarray:
        return self._basis_and_jacobian(q)[0]

    def _basis_and_jacobian(self, q: RodState):
        nv = q.x.shape[0]
        n = 3 * self.idx.size
        if self.cons.size == 0:
            return np.eye(n), np.zeros((0, n))
        A = np.zeros((self.cons.size, 3 * nv))
        for r, j in enumerate(self.cons):
            a, b = self.ends[j]
            e = q.x[b] - q.x[a]
            A[r, 3 * b : 3 * b + 3] = 2 * e
            A[r, 3 * a : 3 * a + 3] = -2 * e
        cols = (3 * self.idx[:, None] + np.arange(3)[None, :]).ravel()
        A = A[:, cols]
        Q, R = scipy.linalg.qr(A.T, mode="full")
        m = self.cons.size
        self._range = (Q[:, :m], R[:m])
        return Q[:, m:], A

    def constraint_curvature(self, A: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``-sum_j lambda_j grad^2 C_j`` with ``grad E = A^T lambda`` (least squares): the term
        that turns the energy Hessian into the Lagrangian's; without it Newton on the
        constraint manifold converges only linearly."""
        n = g.size
        out = np.zeros((n, n))
        if A.shape[0] == 0:
            return out
        Q1, R1 = self._range  # A^T = Q1 R1 from the basis computation
        lam = scipy.linalg.solve_triangular(R1, Q1.T @ g)
        where = -np.ones(self.stepper.rod.n_vertices, dtype=int)
        where[self.idx] = np.arange(self.idx.size)
        eye = np.eye(3)
        for r, j in enumerate(self.cons):
            a, b = where[self.ends[j]]
            c = -2.0 * lam[r]
            for p_, q_, sign in ((a, a, 1), (b, b, 1), (a, b, -1), (b, a, -1)):
                if p_ >= 0 and q_ >= 0:
                    out[3 * p_ : 3 * p_ + 3, 3 * q_ : 3 * q_ + 3] += sign * c * eye
        return out

    def project(self, x_new: np.ndarray) -> np.ndarray:
        st = self.stepper
        x_new = np.ascontiguousarray(x_new)
        if self.cons.size:
            ne = st.rest_lengths.shape[0]
            K.fast_projection(x_new, self.free.astype(float), st.rest_lengths, st.closed, 1e-14, 50, np.zeros((ne, 3)),
                              np.zeros(ne), np.zeros(ne), np.zeros(ne), np.zeros(ne, dtype=bool), np.zeros(ne),
                              *K.no_sliders())
        if not np.all(np.isfinite(x_new)):
            raise ValueError("projection diverged")
        return x_new

    def hessian(self, s: RodState, load: float) -> np.ndarray:
        st = self.stepper
        n = 3 * self.idx.size
        H = np.empty((n, n))
        st._refresh(s)
        _, _, tangents, _, _ = st._buffers()
        K.fd_reduced_hessian(s.x, self.idx, self.h, st.closed, tangents.copy(), s.ref_d1, s.ref_twist, s.theta,
                             st.clamp_edges, self.clamp_m1, st.free_theta, st.uniform_twist, st.rest_lengths, st.lbar,
                             st.omega_bar, st.bend_k, st.twist_bar, st.twist_k, st.stretch_k, self.twist_tol,
                             st.options.twist_max_iter, H)
        return 0.5 * (H + H.T)

    def solve(self, s: RodState, load: float, tol: float, max_iter: int):
        """Returns (success, state, iterations, residual, energy, message)."""
        e_cur = self.energy(s, load)
        stalls = 0
        residual = np.inf
        for it in range(1, max_iter + 1):
            g = self.gradient(s, load)
            Z, A = self._basis_and_jacobian(s)
            r = Z.T @ g
            absolute = float(np.abs(Z @ r).max())
            residual = absolute / max(load * self.scale, self.noise)
            log.debug("static it %d load %.3g: tangent force %.3e (relative %.3e), energy %.15g", it, load, absolute, residual, e_cur)
            if residual <= tol or absolute <= self.noise or stalls >= 2:
                return True, s, it - 1, residual, e_cur, "converged"
            Hr = Z.T @ (self.hessian(s, load) + self.constraint_curvature(A, g)) @ Z
            lam, Q = np.linalg.eigh(Hr)
            # floor only against exact zeros: (L/l)^4 makes the bending Hessian this ill-conditioned
            lam = np.maximum(np.abs(lam), 1e-14 * max(np.abs(lam).max(), 1e-300))
            dz = -Q @ ((Q.T @ r) / lam)
            dx = np.zeros_like(s.x)
            dx[self.idx] = (Z @ dz).reshape(-1, 3)
            big = np.abs(dx).max()
            if big > self.trust:
                dx *= self.trust / big
                dz *= self.trust / big
            slope = float(r @ dz)
            alpha = 1.0
            accepted = False
            for _ in range(30):
                try:
                    trial = self.moved(s, self.project(s.x + alpha * dx))
                    e_new = self.energy(trial, load)
                except ValueError:  # an edge folded back: the step was too long
                    alpha *= 0.5
                    continue
                roundoff = abs(e_new - e_cur) <= 1e-13 * max(abs(e_cur), 1e-300)
                if np.isfinite(e_new) and (e_new <= e_cur + 1e-4 * alpha * slope or roundoff):
                    accepted = True
                    stalls = stalls + 1 if roundoff else 0
                    break
                alpha *= 0.5
            if not accepted:
                return False, s, it, residual, e_cur, f"line search failed at iteration {it}, tangent force {residual:.2e}"
            s, e_cur = trial, e_new
        g = self.gradient(s, load)
        Z = self.tangent_basis(s)
        residual = float(np.abs(Z @ (Z.T @ g)).max() / (load * self.scale if load > 0 else self.scale))
        ok = residual <= tol
        return ok, s, max_iter, residual, e_cur, "converged" if ok else f"{max_iter} iterations, tangent force {residual:.2e}"


def _move_frames(stepper: DERStepper, q: RodState, x_new: np.ndarray) -> None:
    """Move ``q`` to ``x_new`` carrying its reference frames by time-parallel transport."""
    from ..geometry.curves import reference_twist, time_parallel_update
    from .stepper import _tangents

    t_old = _tangents(q.x, stepper.closed)
    t_new = _tangents(x_new, stepper.closed)
    time_parallel_update(t_old, t_new, q.ref_d1)
    previous = q.ref_twist.copy()
    q.x = np.ascontiguousarray(x_new, dtype=float)
    reference_twist(t_new, q.ref_d1, stepper.closed, previous, q.ref_twist)
