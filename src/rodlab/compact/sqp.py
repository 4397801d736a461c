"""Implicit Euler as a minimization, solved by SQP (Zhao et al., Sec. 3, Eq. 8-14, Alg. 1).

One time step minimizes ``E(T(s)) = V + T_p + T_q + G`` (Eq. 8a/10) over the compact coordinates
``s``. Each Newton iteration builds the quadratic model of Eq. 12 with the Gauss-Newton matrix
``A = J^T H J`` -- the term ``dJ/ds : dE/dx`` is dropped, as the paper does after [PBH15] -- and
``b = J^T dE/dx``, solves ``A ds = -b`` by PCG (never forming ``A``), then backtracks on the merit
function (Eq. 11). Termination as in Sec. 4: ``|b + grad C_A^T lambda|_2 < tol`` (default 1e-5) or
``max_newton`` iterations (default 5).

This module is the compiled fast path for Dirichlet conditions on coordinates of ``s`` (fixed or
prescribed root position, clamped or prescribed frames): they are eliminated, so the merit
function is ``E`` itself and the multipliers are not needed. General equality and inequality
constraints (Alg. 2) are in :mod:`rodlab.compact.active_set`.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from ..model import check_damping_scheme
from .chain import _left_jacobian_terms, chain_forward, frames_from_polyline, jac_t_mul, recenter
from .energies import darboux, eval_energy, reduced_hessian
from .augmented import factor_augmented, factor_rows
from .pcg import PRECONDITIONERS, build_block_preconditioner, build_dense_a, factor_preconditioner, pcg_solve

log = logging.getLogger(__name__)
from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)
from ..aot import kernel  # noqa: E402

# called from Python here: the ahead-of-time entries where built (rodlab.aot), else the dispatchers
_darboux = kernel(darboux)


# ---------------------------------------------------------------------------------------------
# model, state, options, results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CompactModel:
    """Immutable rod description for the compact method (SI units).

    lengths (m,) rest segment lengths [m]; masses (n,) lumped vertex masses [kg]; Jr (m, 3)
    segment rotational inertia ``rho l_i (I_1, I_2, I_1 + I_2)`` [kg m^2]; lbar (m-1,) hinge
    Voronoi lengths [m]; Kh (m-1, 3) hinge stiffness ``(E I_1, E I_2, G J)`` [N m^2]; ubar (m-1, 3)
    rest Darboux vectors [1/m]; rest_p (n, 3) [m]; rest_q (m, 4); radius [m].
    """

    lengths: np.ndarray
    masses: np.ndarray
    Jr: np.ndarray
    lbar: np.ndarray
    Kh: np.ndarray
    ubar: np.ndarray
    rest_p: np.ndarray
    rest_q: np.ndarray
    radius: float
    E: float
    G: float
    rho: float

    @property
    def n(self) -> int:
        return self.rest_p.shape[0]

    @property
    def m(self) -> int:
        return self.lengths.shape[0]

    @classmethod
    def from_polyline(cls, points, *, E: float, G: float, rho: float, radius: float, d1=None) -> "CompactModel":
        """Rod whose rest shape is the polyline ``points`` (n >= 3, distinct consecutive points),
        circular section of ``radius`` [m], Young's/shear moduli ``E``/``G`` [Pa], density ``rho``."""
        p = np.ascontiguousarray(points, dtype=float)
        for name, val in (("E", E), ("G", G), ("rho", rho), ("radius", radius)):
            if not (math.isfinite(val) and val > 0):
                raise ValueError(f"{name} must be finite and > 0 (got {val})")
        if p.ndim != 2 or p.shape[1] != 3 or p.shape[0] < 3:
            raise ValueError(f"points must have shape (n, 3) with n >= 3 (got {p.shape})")
        lengths = np.linalg.norm(np.diff(p, axis=0), axis=1)
        if not np.all(lengths > 0):
            raise ValueError("points has a zero-length segment")
        q = frames_from_polyline(p, d1)
        area = math.pi * radius**2
        I = math.pi * radius**4 / 4.0
        m = len(lengths)
        seg_mass = rho * area * lengths
        masses = np.zeros(m + 1)
        masses[:-1] += 0.5 * seg_mass
        masses[1:] += 0.5 * seg_mass
        Jr = rho * lengths[:, None] * np.array([I, I, 2 * I])[None, :]
        lbar = 0.5 * (lengths[:-1] + lengths[1:])
        Kh = np.tile([E * I, E * I, G * 2 * I], (m - 1, 1))
        ubar = np.empty((m - 1, 3))
        _darboux(q, lbar, ubar)
        arrs = [np.ascontiguousarray(a) for a in (lengths, masses, Jr, lbar, Kh, ubar, p, q)]
        for a in arrs:
            a.setflags(write=False)
        return cls(*arrs, radius=float(radius), E=float(E), G=float(G), rho=float(rho))


@dataclass
class CompactState:
    """Time-varying arrays. ``s`` (n,3) = [p_c, w_0..w_{m-1}] relative to ``qref`` (m,4);
    ``p`` (n,3), ``q`` (m,4) = T(s); ``v`` (n,3) [m/s]; ``omega`` (m,3) body-frame angular velocity [rad/s]."""

    t: float
    s: np.ndarray
    qref: np.ndarray
    p: np.ndarray
    q: np.ndarray
    v: np.ndarray
    omega: np.ndarray

    @classmethod
    def at_rest(cls, model: CompactModel) -> "CompactState":
        n, m = model.n, model.m
        s = np.zeros((n, 3))
        s[0] = model.rest_p[0]
        return cls(0.0, s, np.array(model.rest_q), np.array(model.rest_p), np.array(model.rest_q), np.zeros((n, 3)), np.zeros((m, 3)))

    def copy(self) -> "CompactState":
        return CompactState(self.t, *(np.array(a) for a in (self.s, self.qref, self.p, self.q, self.v, self.omega)))


@dataclass(frozen=True)
class SolverOptions:
    """precond: one of none, diagonal, block-diagonal, hybrid, direct, exact; max_newton (Sec. 4: 5);
    tol: stop when |b|_2 < tol (Sec. 4: 1e-5); PCG stops at |r|_2 <= max(pcg_atol, pcg_rtol |rhs|)
    (Sec. 4: absolute 1e-7; pass a relative ``pcg_rtol`` and ``pcg_atol=0`` for problems in other scales).
    tension_stiffness: add back the PSD tension part of the dropped term ``dJ/ds : dE/dx``
    (our addition, off by default as in the paper; see :func:`tension_stiffness`).
    recenter_every_iteration: fold ``w`` into the reference rotations after every Newton step
    (not only after every time step), so each quadratic model is built at ``w = 0``.
    warm_start: start Newton from the constant-velocity prediction (:func:`predict_start`)
    rather than from the previous configuration (our addition)."""

    precond: str = "hybrid"
    max_newton: int = 5
    tol: float = 1e-5
    pcg_rtol: float = 0.0
    pcg_atol: float = 1e-7
    pcg_maxiter: int = 2000
    line_search_steps: int = 30
    tension_stiffness: bool = False
    recenter_every_iteration: bool = False
    warm_start: bool = True

    def __post_init__(self):
        if self.precond not in PRECONDITIONERS:
            raise ValueError(f"precond must be one of {', '.join(PRECONDITIONERS)} (got {self.precond!r})")
        if self.max_newton < 1:
            raise ValueError(f"max_newton must be >= 1 (got {self.max_newton})")
        if not self.tol > 0 or not self.pcg_rtol >= 0 or not self.pcg_atol >= 0:
            raise ValueError("tol must be > 0 and pcg_rtol, pcg_atol >= 0")


@dataclass(frozen=True)
class StepStats:
    success: bool
    message: str
    newton_iters: int
    pcg_iters: int
    solves: int
    residual: float
    energy: float


# ---------------------------------------------------------------------------------------------
# workspace and the compiled SQP loop
# ---------------------------------------------------------------------------------------------
class Workspace:
    """Preallocated arrays for one rod size."""

    def __init__(self, n: int, direct: bool = False, exact: bool = False):
        m = n - 1
        z = np.zeros
        self.p, self.q = z((n, 3)), z((m, 4))
        self.Dj, self.Qj = z((m, 3, 3)), z((m, 4, 3))
        self.gp, self.gq = z((n, 3)), z((m, 4))
        self.Hp, self.Hqd, self.Hqo = z(n), z((m, 4, 4)), z((max(m - 1, 0), 4, 4))
        self.b, self.ds, self.s_try = z((n, 3)), z((n, 3)), z((n, 3))
        self.diag, self.off, self.sinv, self.W = z((n, 3, 3)), z((n - 1, 3, 3)), z((n, 3, 3)), z((n - 1, 3, 3))
        self.suffix, self.work = z(n), z((3, 3))
        N = 3 * n if direct else 1
        self.A, self.L = z((N, N)), z((N, N))
        if exact:  # the factor of the exact preconditioner (rodlab.compact.augmented)
            self.L = z((factor_rows(n), 6))
        self.r, self.zz, self.d, self.Ad, self.tv, self.tp, self.yp, self.y = (z((n, 3)) for _ in range(8))
        self.tq, self.yq = z((m, 4)), z((m, 4))
        self.comps = z(4)
        self.stats = z(8)
        self.G = z((n, 3, 3))
        self.Bd, self.Bo = z((n, 3, 3)), z((n - 1, 3, 3))


@njit(**JIT)
def tension_stiffness(s, lengths, q, gp, G):
    """PSD part of the term ``dJ/ds : dE/dx`` that Eq. 12 drops (block diagonal in ``w``).

    Rotating segment ``i`` by a world rotation vector ``v = J_l(w_i) dw`` moves every later vertex
    by ``l_i (v x d + 1/2 v x (v x d))``; against the force sum ``F = sum_{j>i} dE/dp_j`` the
    second-order energy is ``l_i v^T (sym(F d^T) - (F.d) I) v``. We keep its tension part
    ``T l_i (I - d d^T)`` with ``T = max(-F.d, 0)`` (always PSD, exact for a rod in pure tension:
    the pendulum stiffness of a hanging rod) and ADD ``G_i = J_l^T T l_i (I - d d^T) J_l`` to
    ``G[i + 1]`` (pass ``Bd`` to fold it into the diagonal blocks of ``B_q``)."""
    m = q.shape[0]
    F0 = 0.0
    F1 = 0.0
    F2 = 0.0
    for i in range(m - 1, -1, -1):
        F0 += gp[i + 1, 0]
        F1 += gp[i + 1, 1]
        F2 += gp[i + 1, 2]
        q0, q1, q2, q3 = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        d0 = 2.0 * (q1 * q3 + q0 * q2)
        d1 = 2.0 * (q2 * q3 - q0 * q1)
        d2 = 1.0 - 2.0 * (q1 * q1 + q2 * q2)
        T = -(F0 * d0 + F1 * d1 + F2 * d2)
        if not T > 0.0:
            continue
        w0, w1, w2 = s[i + 1, 0], s[i + 1, 1], s[i + 1, 2]
        t2 = w0 * w0 + w1 * w1 + w2 * w2
        bl, cl = _left_jacobian_terms(t2)
        # Jl = I + bl [w]x + cl [w]x^2
        J00 = 1.0 + cl * (w0 * w0 - t2)
        J11 = 1.0 + cl * (w1 * w1 - t2)
        J22 = 1.0 + cl * (w2 * w2 - t2)
        J01 = -bl * w2 + cl * w0 * w1
        J10 = bl * w2 + cl * w0 * w1
        J02 = bl * w1 + cl * w0 * w2
        J20 = -bl * w1 + cl * w0 * w2
        J12 = -bl * w0 + cl * w1 * w2
        J21 = bl * w0 + cl * w1 * w2
        # P J_l with P = I - d d^T, then G = T l (P J_l)^T (P J_l)
        c = T * lengths[i]
        P = np.empty((3, 3))
        for col in range(3):
            if col == 0:
                x0, x1, x2 = J00, J10, J20
            elif col == 1:
                x0, x1, x2 = J01, J11, J21
            else:
                x0, x1, x2 = J02, J12, J22
            dd = d0 * x0 + d1 * x1 + d2 * x2
            P[0, col] = x0 - dd * d0
            P[1, col] = x1 - dd * d1
            P[2, col] = x2 - dd * d2
        for a in range(3):
            for b in range(3):
                G[i + 1, a, b] += c * (P[0, a] * P[0, b] + P[1, a] * P[1, b] + P[2, a] * P[2, b])


@njit(inline="always", **JIT)
def prepare_preconditioner(kind, Dj, Hp, Bd, Bo, free, diag, off, sinv, W, suffix, A, L):
    """Build and factor preconditioner ``kind`` from ``Hp`` and the reduced blocks ``Bd``/``Bo``
    of ``B_q`` (see :func:`rodlab.compact.energies.reduced_hessian`); False if not positive definite
    (``exact``: a singular block, :func:`rodlab.compact.augmented.factor_augmented`) or if ``kind``
    is ``direct`` or ``exact`` and the dense storage ``A``, ``L`` is None (a compiled caller
    passing None never compiles those two kinds: numba prunes the branch)."""
    if kind >= 4:
        if L is None:
            return False
        if kind == 5:
            return factor_augmented(Dj, Hp, Bd, Bo, free, L)
        build_dense_a(Dj, Hp, Bd, Bo, free, A, suffix)
    elif kind >= 1:
        build_block_preconditioner(Dj, Hp, Bd, Bo, free, kind, diag, off, suffix)
    return factor_preconditioner(kind, diag, off, sinv, W, A, L)


class SqpRod(NamedTuple):
    """One rod's constants for :func:`sqp_solve` (rows of a :class:`CompactModel`): ``lengths``
    (m,) [m], ``masses`` (n,) [kg], ``Jr`` (m, 3) [kg m^2], ``lbar`` (m-1,) [m], ``Kh`` (m-1, 3)
    [N m^2], ``ubar`` (m-1, 3) [1/m]."""

    lengths: np.ndarray
    masses: np.ndarray
    Jr: np.ndarray
    lbar: np.ndarray
    Kh: np.ndarray
    ubar: np.ndarray


class SqpStep(NamedTuple):
    """What one time step minimises towards (Eq. 8a): the inertial predictions ``p_pred`` (n, 3)
    [m] and ``th_pred`` (m, 3) [rad], the step's start ``p_t`` (n, 3), ``q_t`` (m, 4), ``gravity``
    (3,) [m/s^2], ``a_in`` = 1/dt^2 (0 for statics) [1/s^2] and ``a_d`` = damping/dt [1/s^2]."""

    p_pred: np.ndarray
    p_t: np.ndarray
    q_t: np.ndarray
    th_pred: np.ndarray
    gravity: np.ndarray
    a_in: float
    a_d: float


class SqpOptions(NamedTuple):
    """Options of :func:`sqp_solve` (see :class:`SolverOptions`): preconditioner ``kind``
    (:data:`rodlab.compact.pcg.PRECONDITIONERS`), ``max_newton``, Newton ``tol``, PCG ``rtol``,
    ``atol``, ``maxiter``, ``line_search_steps``, ``tension_stiffness`` and
    ``recenter_every_iteration`` (bools)."""

    kind: int
    max_newton: int
    tol: float
    pcg_rtol: float
    pcg_atol: float
    pcg_maxiter: int
    line_search_steps: int
    tension_stiffness: bool
    recenter_every_iteration: bool


class SqpWork(NamedTuple):
    """Newton-level workspaces of :func:`sqp_solve` for one rod of n vertices, m = n - 1
    segments (the :class:`Workspace` fields of the same names): ``G`` (n, 3, 3) tension
    stiffness, ``p`` (n, 3), ``q`` (m, 4) = T(s) on return, the Jacobian blocks ``Dj``, ``Qj``,
    gradients ``gp``, ``gq``, Hessian blocks ``Hp``, ``Hqd``, ``Hqo``, ``b``, ``ds``, ``s_try``
    (n, 3), ``comps`` (4,) and ``stats`` (8,) (see :func:`sqp_solve`)."""

    G: np.ndarray
    p: np.ndarray
    q: np.ndarray
    Dj: np.ndarray
    Qj: np.ndarray
    gp: np.ndarray
    gq: np.ndarray
    Hp: np.ndarray
    Hqd: np.ndarray
    Hqo: np.ndarray
    b: np.ndarray
    ds: np.ndarray
    s_try: np.ndarray
    comps: np.ndarray
    stats: np.ndarray


class PcgWork(NamedTuple):
    """Preconditioner and PCG workspaces of :func:`sqp_solve` (the :class:`Workspace` fields of
    the same names): the blocks ``diag``, ``off``, their factor ``sinv``, ``W``, ``suffix``, the
    reduced blocks ``Bd``, ``Bo`` of ``B_q`` and the PCG vectors ``r``, ``zz``, ``d``, ``Ad``,
    ``tv``, ``tp``, ``y`` (n, 3)."""

    diag: np.ndarray
    off: np.ndarray
    sinv: np.ndarray
    W: np.ndarray
    suffix: np.ndarray
    Bd: np.ndarray
    Bo: np.ndarray
    r: np.ndarray
    zz: np.ndarray
    d: np.ndarray
    Ad: np.ndarray
    tv: np.ndarray
    tp: np.ndarray
    y: np.ndarray


def work_of(ws: "Workspace") -> tuple[SqpWork, PcgWork, tuple]:
    """The :class:`SqpWork`, :class:`PcgWork` and dense storage ``(A, L)`` of a :class:`Workspace`."""
    return (SqpWork(*(getattr(ws, name) for name in SqpWork._fields)),
            PcgWork(*(getattr(ws, name) for name in PcgWork._fields)), (ws.A, ws.L))


# inline="always": the drivers (rodlab.compact.batch) inline the whole SQP, so its call tree is
# optimised and code-generated once, in the driver, not once more at this level (cold start,
# issue #16); called from Python it compiles as a function of its own
@njit(inline="always", **JIT)
def sqp_solve(s, qref, free, rod, step, opts, ws, pw, dense):
    """Alg. 1 for Dirichlet-only constraints, entirely compiled. Updates ``s`` (n, 3) in place
    (relative to ``qref`` (m, 4); ``free`` (n, 3): 1 free, 0 held) and leaves ``ws.p, ws.q =
    T(s)``. ``rod``: :class:`SqpRod`; ``step``: :class:`SqpStep`; ``opts``: :class:`SqpOptions`;
    ``ws``: :class:`SqpWork`, whose ``stats`` = (newton iterations, PCG iterations, linear
    solves, |b| at the last evaluation, converged flag, energy, line-search failure flag, PCG
    failure flag); ``pw``: :class:`PcgWork`; ``dense``: the dense storage ``(A, L)`` of the
    ``direct`` preconditioner (``exact``: ``L`` its factor) or None (the kinds none .. hybrid:
    a compiled caller passing the constant None compiles neither dense kind)."""
    lengths, masses, Jr, lbar, Kh, ubar = rod
    p_pred, p_t, q_t, th_pred, gravity, a_in, a_d = step
    kind, max_newton, tol, pcg_rtol, pcg_atol, pcg_maxiter, ls_steps, use_g, recenter_each = opts
    G, p, q, Dj, Qj, gp, gq, Hp, Hqd, Hqo, b, ds, s_try, comps, stats = ws
    diag, off, sinv, W, suffix, Bd, Bo, r, zz, d, Ad, tv, tp, y = pw
    n = s.shape[0]
    total_pcg = 0
    n_solves = 0
    converged = False
    ls_fail = False
    pcg_fail = False
    rn = 0.0
    rn0 = 0.0
    dirty = False
    E = 0.0
    it = 0
    chain_forward(s, lengths, qref, p, q, Dj, Qj, np.bool_(True))
    E = eval_energy(p, q, p_pred, p_t, q_t, th_pred, masses, Jr, lbar, Kh, ubar, gravity,
                    a_in, a_d, gp, gq, Hp, Hqd, Hqo, 1, comps)
    while True:
        # roundoff level of E: below it the line search cannot see a decrease
        e_round = 1e-14 * (abs(comps[0]) + abs(comps[1]) + abs(comps[2]) + abs(comps[3]))
        jac_t_mul(Dj, Qj, gp, gq, b)  # b = J^T dE/dx  (Eq. 12)
        rn2 = 0.0
        for j in range(n):
            for c in range(3):
                b[j, c] *= free[j, c]
                rn2 += b[j, c] * b[j, c]
        rn = math.sqrt(rn2)
        if it == 0:
            rn0 = rn
        if rn < tol:
            converged = True
            break
        if it >= max_newton:
            break
        # A = J^T H J (Gauss-Newton, Eq. 12), kept as Hp and the 3x3 blocks of B_q
        reduced_hessian(q, q_t, Qj, masses, Jr, lbar, Kh, a_in, a_d, Hp, Bd, Bo)
        if use_g:
            tension_stiffness(s, lengths, q, gp, Bd)
        if dense is None:  # pruned by numba where ``dense`` is the constant None
            ok = prepare_preconditioner(kind, Dj, Hp, Bd, Bo, free, diag, off, sinv, W, suffix, None, None)
        else:
            ok = prepare_preconditioner(kind, Dj, Hp, Bd, Bo, free, diag, off, sinv, W, suffix, dense[0], dense[1])
        if not ok:
            pcg_fail = True
            break
        for j in range(n):
            for c in range(3):
                tv[j, c] = -b[j, c]
        if dense is None:
            iters, res, good = pcg_solve(Dj, Hp, Bd, Bo, free, kind, sinv, W, None, tv, ds,
                                         pcg_rtol, pcg_atol, pcg_maxiter, r, zz, d, Ad, y, tp, s_try)
        else:
            iters, res, good = pcg_solve(Dj, Hp, Bd, Bo, free, kind, sinv, W, dense[1], tv, ds,
                                         pcg_rtol, pcg_atol, pcg_maxiter, r, zz, d, Ad, y, tp, s_try)
        total_pcg += iters
        n_solves += 1
        if not good:
            pcg_fail = True
        slope = 0.0
        for j in range(n):
            for c in range(3):
                slope += b[j, c] * ds[j, c]
        if not slope < 0.0:
            ls_fail = True
            break
        # backtracking line search on the merit function (Eq. 11; here phi = E). Each trial
        # evaluates the Jacobian and gradient too, so an accepted trial is the next iterate.
        alpha = 1.0
        accepted = False
        E_try = E
        for _ in range(ls_steps):
            for j in range(n):
                for c in range(3):
                    s_try[j, c] = s[j, c] + alpha * ds[j, c]
            chain_forward(s_try, lengths, qref, p, q, Dj, Qj, np.bool_(True))
            E_try = eval_energy(p, q, p_pred, p_t, q_t, th_pred, masses, Jr, lbar, Kh, ubar, gravity,
                                a_in, a_d, gp, gq, Hp, Hqd, Hqo, 1, comps)
            if E_try <= E + 1e-4 * alpha * slope or E_try - E <= e_round:
                accepted = True
                break
            alpha *= 0.5
        it += 1
        if not accepted:
            dirty = True
            if rn <= 1e-8 * rn0:
                converged = True  # at the round-off floor of E: no decrease is measurable any more
            else:
                ls_fail = True
            break
        E = E_try
        for j in range(n):
            for c in range(3):
                s[j, c] = s_try[j, c]
        if recenter_each:
            recenter(q, qref, s)  # q = T(s_try) becomes the reference, w = 0: rebuild the Jacobian there
            chain_forward(s, lengths, qref, p, q, Dj, Qj, np.bool_(True))
    if dirty or pcg_fail or ls_fail:
        chain_forward(s, lengths, qref, p, q, Dj, Qj, np.bool_(False))  # p, q may hold a rejected trial
    stats[0] = it
    stats[1] = total_pcg
    stats[2] = n_solves
    stats[3] = rn
    stats[4] = 1.0 if converged else 0.0
    stats[5] = E
    stats[6] = 1.0 if ls_fail else 0.0
    stats[7] = 1.0 if pcg_fail else 0.0


@njit(**JIT)
def predict_start(s, q, v, omega, dt, free):
    """Start Newton from the constant-velocity prediction instead of the last state: free
    coordinates get ``p_c += dt v_0`` and ``w_i = dt R(q_i) omega_i`` (the body-frame angular
    velocity turned into a world rotation vector, as ``q = B(w) (x) qref`` is a left update)."""
    for c in range(3):
        if free[0, c] != 0.0:
            s[0, c] += dt * v[0, c]
    for i in range(q.shape[0]):
        q0, q1, q2, q3 = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        o0, o1, o2 = omega[i, 0] * dt, omega[i, 1] * dt, omega[i, 2] * dt
        # R(q) o = o + 2 q0 (qv x o) + 2 qv x (qv x o)
        c0 = q2 * o2 - q3 * o1
        c1 = q3 * o0 - q1 * o2
        c2 = q1 * o1 - q2 * o0
        r0 = o0 + 2.0 * (q0 * c0 + q2 * c2 - q3 * c1)
        r1 = o1 + 2.0 * (q0 * c1 + q3 * c0 - q1 * c2)
        r2 = o2 + 2.0 * (q0 * c2 + q1 * c1 - q2 * c0)
        if free[i + 1, 0] != 0.0:
            s[i + 1, 0] = r0
        if free[i + 1, 1] != 0.0:
            s[i + 1, 1] = r1
        if free[i + 1, 2] != 0.0:
            s[i + 1, 2] = r2


@njit(**JIT)
def finish_step(s, qref, p, q, p_t, q_t, v, omega, dt):
    """Velocities from the step (v = (p - p_t)/dt, omega = 2 vec(conj(q_t) q)/dt) and re-centering."""
    n = p.shape[0]
    for j in range(n):
        for c in range(3):
            v[j, c] = (p[j, c] - p_t[j, c]) / dt
    for i in range(q.shape[0]):
        a0, a1, a2, a3 = q_t[i, 0], q_t[i, 1], q_t[i, 2], q_t[i, 3]
        b0, b1, b2, b3 = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        omega[i, 0] = 2.0 * (a0 * b1 - a1 * b0 - a2 * b3 + a3 * b2) / dt
        omega[i, 1] = 2.0 * (a0 * b2 - a2 * b0 - a3 * b1 + a1 * b3) / dt
        omega[i, 2] = 2.0 * (a0 * b3 - a3 * b0 - a1 * b2 + a2 * b1) / dt
    recenter(q, qref, s)


def split_damping(state: "CompactState", damping: float, scheme: str, dt: float) -> None:
    """The exponential scheme's split-off decay (docs/damping.md): scale the step's velocities by
    ``exp(-damping dt)``; nothing for the implicit scheme, whose force is in the step's solve."""
    if scheme == "exponential" and damping > 0:
        decay = math.exp(-damping * dt)
        state.v *= decay
        state.omega *= decay


class CompactSolver:
    """Implicit Euler stepper of Zhao et al. for Dirichlet-only scenes (compiled SQP loop).

    ``fixed``: (n, 3) bool mask of coordinates of ``s`` held by Dirichlet conditions
    (``fixed[0]`` the root position p_c, ``fixed[1 + i]`` the rotation of segment i).
    ``root_motion(t) -> p_c`` and ``frame_motion(t) -> quaternion of segment 0`` prescribe them.
    ``damping`` [1/s]: viscous damping ``-damping M v`` (and ``-damping Jr omega``), discretised by
    ``damping_scheme`` (:data:`rodlab.model.DAMPING_SCHEMES`, docs/damping.md): ``"implicit"`` takes the
    force at the end of the step inside the SQP; ``"exponential"`` integrates the linear decay exactly
    and splits it off, scaling the step's velocities by ``exp(-damping dt)``.
    """

    def __init__(self, model: CompactModel, options: SolverOptions = SolverOptions(), *, fixed=None,
                 gravity=(0.0, 0.0, 0.0), damping: float = 0.0, root_motion=None, frame_motion=None,
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
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        if not (math.isfinite(damping) and damping >= 0):
            raise ValueError(f"damping must be >= 0 1/s (got {damping})")
        self.damping = float(damping)
        self.damping_scheme = check_damping_scheme(damping_scheme)
        self.root_motion = root_motion
        self.frame_motion = frame_motion
        self.kind = PRECONDITIONERS[options.precond]
        self.ws = Workspace(n, direct=self.kind == 4, exact=self.kind == 5)
        self._p_pred = np.zeros((n, 3))
        self._th_pred = np.zeros((model.m, 3))

    def apply_prescribed(self, state: CompactState, t: float) -> None:
        """Set prescribed root position / segment-0 frame at time ``t`` (Dirichlet values)."""
        if self.root_motion is not None:
            state.s[0] = np.asarray(self.root_motion(t), dtype=float)
        if self.frame_motion is not None:
            state.qref[0] = np.asarray(self.frame_motion(t), dtype=float)
            state.s[1] = 0.0

    def step(self, state: CompactState, dt: float, *, static: bool = False) -> StepStats:
        """Advance ``state`` by ``dt`` [s] in place (``static``: minimise V + G only)."""
        if not (isinstance(dt, (int, float, np.integer, np.floating)) and math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a finite number > 0 s (got {dt!r})")
        md, o, ws = self.model, self.options, self.ws
        p_t = state.p.copy()
        q_t = state.q.copy()
        s_backup = state.s.copy()
        qref_backup = state.qref.copy()
        np.multiply(state.v, dt, out=self._p_pred)
        self._p_pred += p_t
        np.multiply(state.omega, dt, out=self._th_pred)
        a_in = 0.0 if static else 1.0 / dt**2
        a_d = 0.0 if (static or self.damping_scheme == "exponential") else self.damping / dt
        if o.warm_start and not static:
            predict_start(state.s, state.q, state.v, state.omega, dt, self.free)
        self.apply_prescribed(state, state.t + dt)
        sqp_solve(state.s, state.qref, self.free, SqpRod(md.lengths, md.masses, md.Jr, md.lbar, md.Kh, md.ubar),
                  SqpStep(self._p_pred, p_t, q_t, self._th_pred, self.gravity, a_in, a_d),
                  SqpOptions(self.kind, o.max_newton, o.tol, o.pcg_rtol, o.pcg_atol, o.pcg_maxiter, o.line_search_steps,
                             o.tension_stiffness, o.recenter_every_iteration), *work_of(ws))
        st = ws.stats
        if not np.all(np.isfinite(ws.p)):
            state.s[:] = s_backup
            state.qref[:] = qref_backup
            return StepStats(False, "non-finite state; step rejected, last good state kept", int(st[0]), int(st[1]), int(st[2]), float(st[3]), float(st[5]))
        state.p[:] = ws.p
        state.q[:] = ws.q
        if static:
            state.v[:] = 0.0
            state.omega[:] = 0.0
            from .chain import recenter as _rc

            _rc(state.q, state.qref, state.s)
        else:
            finish_step(state.s, state.qref, state.p, state.q, p_t, q_t, state.v, state.omega, dt)
            split_damping(state, self.damping, self.damping_scheme, dt)
        state.t += dt
        if st[7]:
            msg = "PCG did not converge (or preconditioner not SPD)"
        elif st[4]:
            msg = "converged"
        elif st[6]:
            msg = "line search made no progress"
        else:
            msg = "newton iteration limit reached"
        if st[6] or st[7]:
            log.debug("compact step t=%.6g: %s (%d Newton iterations, |b| = %.3e)", state.t, msg, int(st[0]), float(st[3]))
        return StepStats(bool(st[4]) or (not st[6] and not st[7]), msg, int(st[0]), int(st[1]), int(st[2]), float(st[3]), float(st[5]))


# ---------------------------------------------------------------------------------------------
# metrics (Zhao et al., Sec. 4.1)
# ---------------------------------------------------------------------------------------------
def inextensibility_violation(p: np.ndarray, lengths: np.ndarray) -> float:
    """``sum_i |p_{i+1} - p_i| / sum_i l_i - 1`` (Sec. 4.1)."""
    return float(_inextensibility(np.ascontiguousarray(p, dtype=float), np.ascontiguousarray(lengths, dtype=float)))


def alignment_violation(p: np.ndarray, q: np.ndarray) -> float:
    """``sum_i |(p_{i+1} - p_i)/|p_{i+1} - p_i| - d(q_i)|`` (Sec. 4.1), ``q`` normalised first."""
    return float(_alignment_kernel(np.ascontiguousarray(p, dtype=float), np.ascontiguousarray(q, dtype=float)))


def kinetic_energy(model: CompactModel, state: CompactState) -> float:
    """``1/2 sum m v^2 + 1/2 sum omega^T Jr omega`` [J] (translational + rotational, Eq. 30/31)."""
    return float(_kinetic(model.masses, state.v, model.Jr, state.omega))


# compiled: the cantilever and the benchmarks evaluate these every step, where numpy's
# temporaries cost more than a Newton iteration's assembly
@njit(**JIT)
def _inextensibility(p, lengths):
    total = 0.0
    rest = 0.0
    for i in range(p.shape[0] - 1):
        total += math.sqrt((p[i + 1, 0] - p[i, 0]) ** 2 + (p[i + 1, 1] - p[i, 1]) ** 2 + (p[i + 1, 2] - p[i, 2]) ** 2)
        rest += lengths[i]
    return total / rest - 1.0


@njit(**JIT)
def _alignment(p, q):
    out = 0.0
    for i in range(q.shape[0]):
        e0, e1, e2 = p[i + 1, 0] - p[i, 0], p[i + 1, 1] - p[i, 1], p[i + 1, 2] - p[i, 2]
        el = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        qn = math.sqrt(q[i, 0] ** 2 + q[i, 1] ** 2 + q[i, 2] ** 2 + q[i, 3] ** 2)
        w, x, y, z = q[i, 0] / qn, q[i, 1] / qn, q[i, 2] / qn, q[i, 3] / qn
        d0, d1, d2 = 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)
        out += math.sqrt((e0 / el - d0) ** 2 + (e1 / el - d1) ** 2 + (e2 / el - d2) ** 2)
    return out


_alignment_kernel = kernel(_alignment)  # alignment_violation's call: the ahead-of-time entry where built


@njit(**JIT)
def _kinetic(masses, v, Jr, omega):
    ke = 0.0
    for i in range(v.shape[0]):
        ke += masses[i] * (v[i, 0] ** 2 + v[i, 1] ** 2 + v[i, 2] ** 2)
    for i in range(omega.shape[0]):
        for k in range(3):
            ke += Jr[i, k] * omega[i, k] ** 2
    return 0.5 * ke
