"""Relaxation procedure for the dynamic Cosserat rod (GA paper, Algorithm 1).

One time step: Newton's method on the block-banded system Eq. 21 (segment residuals of Eq. 18,
exact Jacobian from :mod:`rodlab.galpha.residual`), a banded LU with partial pivoting
(:mod:`rodlab.linalg.banded_lu`), under-relaxation ``x <- x + mu dx`` (fixed, or adaptive:
halve mu while the residual grows, grow it back after a success), orientations by Rodrigues'
formula (Eq. 23) and the boundary values (with end loads and end velocities converted to the
current end frames) refreshed after every update (Algorithm 1, lines 16-18). After convergence
the time derivatives follow from Eq. 19 and the positions are integrated (line 24).

Statics (:meth:`GAlphaSolver.solve_static`) use the same machinery with the inertial terms
dropped (``M xdot = 0``), by continuation in the load factor.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..linalg.banded_lu import block_lu
from ..model import ModelError, check_steps, require
from .boundary import Boundary, TipLoad, column_map, free_mask
from .model import BACKWARD_EULER, Coefficients, GAlphaRod
from .residual import NV, P_STATIC, inv_one_plus_skew, node_terms, old_terms, residual_blocks, tip_sensitivity
from .state import (GAlphaState, _cayley, _expm, advance_velocity_positions, energies, integrate_frames,
                    integrate_positions)
from numba import njit
from ..linalg.banded_lu import JIT

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GAlphaOptions:
    """Solver options.

    time / space: generalized-alpha coefficients in time and in space (Eq. 17-20); the spatial
    ones must satisfy ``gamma_s = 1 - beta_s`` (true for every Chung-Hulbert choice), which makes
    Eq. 20 local and the Jacobian exactly block-banded. Defaults: ``rho_inf = 0.5`` in time,
    ``rho_inf = 1`` (box scheme, non-dissipative, second order) in space.
    tol: Newton stops when the row-scaled residual (inf-norm) is below ``tol``.
    relaxation: under-relaxation factor mu in (0, 1] (Sec. 4.3); adaptive: halve mu on a residual
    increase (down to ``min_relaxation``), double it back after an accepted iterate.
    constraints_at_new_time: enforce the inextensibility constraint Eq. 14d at t_i only instead
    of its (1 - beta_t, beta_t) time average (the paper averages every row).
    exact_end_loads: differentiate the tip values (end force/torque or end velocities given in
    world coordinates) through the tip frame (Woodbury update); False lags them by one iterate
    as Algorithm 1 does.
    reuse_jacobian: keep the LU factors across iterations and steps while each iterate still
    reduces the residual by the factor ``reuse_ratio`` (chord Newton); refactor otherwise.
    init: "euler" (first step by backward Euler, which needs no initial xdot -- default) or
    "paper" (xdot^0 from Eq. 15 at the nodes with x_s from Eq. 20 and n_t = 0, Algorithm 1 lines 2-6).
    orientation: "cayley" (default; consistent with the g field, 10x smaller error in the
    elastica check) or "rodrigues" (Eq. 23, with the segment-midpoint Darboux vector).
    """

    time: Coefficients = field(default_factory=lambda: Coefficients.from_rho_inf(0.5))
    space: Coefficients = field(default_factory=lambda: Coefficients.from_rho_inf(1.0))
    tol: float = 1e-8
    max_iter: int = 40
    relaxation: float = 1.0
    adaptive: bool = True
    min_relaxation: float = 1.0 / 64
    init: str = "euler"
    orientation: str = "cayley"
    reuse_jacobian: bool = True
    exact_end_loads: bool = True
    constraints_at_new_time: bool = False
    reuse_ratio: float = 0.1

    def __post_init__(self):
        require(abs(self.space.gamma - (1.0 - self.space.beta)) < 1e-12,
                f"space coefficients need gamma_s = 1 - beta_s (got beta_s={self.space.beta}, gamma_s={self.space.gamma}); "
                "otherwise Eq. 20 couples every node to all upstream nodes")
        require(self.tol > 0, f"tol must be > 0 (got {self.tol})")
        require(self.max_iter >= 1, f"max_iter must be >= 1 (got {self.max_iter})")
        require(0 < self.relaxation <= 1, f"relaxation must be in (0, 1] (got {self.relaxation})")
        require(0 < self.min_relaxation <= self.relaxation, f"min_relaxation must be in (0, relaxation] (got {self.min_relaxation})")
        require(self.init in ("euler", "paper"), f"init must be 'euler' or 'paper' (got {self.init!r})")
        require(self.orientation in ("rodrigues", "cayley"), f"orientation must be 'rodrigues' or 'cayley' (got {self.orientation!r})")


@dataclass(frozen=True)
class StepResult:
    """Outcome of one time step (or one static solve)."""

    success: bool
    iterations: int
    residual: float
    message: str
    relaxation: float = 1.0


@njit(**JIT)
def apply_bc(x, R, kind, vals, khat, K, gw):
    """Write the boundary values into x (GA paper, Sec. 3.4.1), kinematic root: see
    :func:`apply_bc_kinds` with ``root_kind = 0``."""
    apply_bc_kinds(x, R, 0, kind, vals, khat, K, gw)


@njit(**JIT)
def apply_bc_kinds(x, R, root_kind, kind, vals, khat, K, gw):
    """Write the boundary values into x (GA paper, Sec. 3.4.1). Root: g(0) = R0^T gw; u = R0^T
    vals[0] (world velocity); kinematic root (root_kind 0): omega = R0^T vals[1]; pinned root
    (1): kappa = khat (no end couple). Tip: natural (kind 1) n = R^T vals[2], kappa = khat +
    K^-1 R^T vals[3]; kinematic (0) u = R^T vals[2], omega = R^T vals[3]; pin (2) u = R^T
    vals[2], kappa = khat + K^-1 R^T vals[3]; slide (3) u1, u2 = (R^T vals[2])_1,2, omega = R^T
    vals[3], n3 = vals[4, 0]."""
    N = x.shape[0]
    for q in range(3):
        x[0, q] = R[0, 0, q] * vals[0, 0] + R[0, 1, q] * vals[0, 1] + R[0, 2, q] * vals[0, 2]
        if root_kind == 1:
            x[0, 6 + q] = khat[0, q]
        else:
            x[0, 3 + q] = R[0, 0, q] * vals[1, 0] + R[0, 1, q] * vals[1, 1] + R[0, 2, q] * vals[1, 2]
        x[0, 12 + q] = R[0, 0, q] * gw[0] + R[0, 1, q] * gw[1] + R[0, 2, q] * gw[2]
    L = N - 1
    for q in range(3):
        a = R[L, 0, q] * vals[2, 0] + R[L, 1, q] * vals[2, 1] + R[L, 2, q] * vals[2, 2]
        b = R[L, 0, q] * vals[3, 0] + R[L, 1, q] * vals[3, 1] + R[L, 2, q] * vals[3, 2]
        if kind == 1:
            x[L, 9 + q] = a
            x[L, 6 + q] = khat[L, q] + b / K[q]
        elif kind == 0:
            x[L, q] = a
            x[L, 3 + q] = b
        elif kind == 2:
            x[L, q] = a
            x[L, 6 + q] = khat[L, q] + b / K[q]
        else:
            if q < 2:
                x[L, q] = a
            x[L, 3 + q] = b
    if kind == 3:
        x[L, 11] = vals[4, 0]


@njit(**JIT)
def root_pin_frame(x, rootinfo, R0):
    """Pinned root: ``R0 = R0_old cay(h)``, ``h = c_new omega(0) + h_old`` (rootinfo: [root kind,
    c_new, h_old (3), R0_old (9, row-major)])."""
    c = rootinfo[1]
    E = np.empty((3, 3))
    _cayley(c * x[0, 3] + rootinfo[2], c * x[0, 4] + rootinfo[3], c * x[0, 5] + rootinfo[4], E)
    for a in range(3):
        for b in range(3):
            R0[a, b] = (rootinfo[5 + 3 * a] * E[0, b] + rootinfo[6 + 3 * a] * E[1, b]
                        + rootinfo[7 + 3 * a] * E[2, b])


@njit(**JIT)
def root_pin_jacobian(x, rootinfo, gw, Jb):
    """Chain rule for the pinned root: ``g(0) = R0^T gw = cay(-h) p`` (p = R0_old^T gw) depends
    on omega(0) through h; ``(I + [h]/2) dg = [(p + g)/2]x dh`` (differentiating ``(I + [h]/2)
    g = (I - [h]/2) p``), ``dh = c_new d omega(0)``. Adds ``J_g dg/domega`` to the omega(0)
    columns of segment 0's block (g(0) only enters segment 0)."""
    c = rootinfo[1]
    h0 = 0.5 * (c * x[0, 3] + rootinfo[2])
    h1 = 0.5 * (c * x[0, 4] + rootinfo[3])
    h2 = 0.5 * (c * x[0, 5] + rootinfo[4])
    p = np.empty(3)
    for q in range(3):
        p[q] = rootinfo[5 + q] * gw[0] + rootinfo[8 + q] * gw[1] + rootinfo[11 + q] * gw[2]
    m0 = 0.5 * (p[0] + x[0, 12])
    m1 = 0.5 * (p[1] + x[0, 13])
    m2 = 0.5 * (p[2] + x[0, 14])
    Minv = np.empty((3, 3))
    inv_one_plus_skew(h0, h1, h2, Minv)
    G = np.empty((3, 3))
    for r in range(3):
        G[r, 0] = c * (Minv[r, 1] * m2 - Minv[r, 2] * m1)
        G[r, 1] = c * (-Minv[r, 0] * m2 + Minv[r, 2] * m0)
        G[r, 2] = c * (Minv[r, 0] * m1 - Minv[r, 1] * m0)
    blk = Jb[0]
    for r in range(blk.shape[0]):
        for q in range(3):
            blk[r, 3 + q] += blk[r, 12] * G[0, q] + blk[r, 13] * G[1, q] + blk[r, 14] * G[2, q]


@njit(**JIT)
def init_gravity_field(x, R0, gw, ds):
    """g field consistent with the discrete kinematics: g[0] = R0^T gw, then the Cayley step
    ``g[j] = cay(-kappa_mid ds) g[j-1]`` that solves the g rows of the residual exactly."""
    N = x.shape[0]
    E = np.empty((3, 3))
    for q in range(3):
        x[0, 12 + q] = R0[0, q] * gw[0] + R0[1, q] * gw[1] + R0[2, q] * gw[2]
    for j in range(1, N):
        _cayley(-0.5 * (x[j - 1, 6] + x[j, 6]) * ds, -0.5 * (x[j - 1, 7] + x[j, 7]) * ds,
                -0.5 * (x[j - 1, 8] + x[j, 8]) * ds, E)
        for q in range(3):
            x[j, 12 + q] = E[q, 0] * x[j - 1, 12] + E[q, 1] * x[j - 1, 13] + E[q, 2] * x[j - 1, 14]


@njit(**JIT)
def _update_free(x, colmap, delta, mu):
    """x_free += mu delta; returns max |mu delta_i| / max(|x_i|, 1e-300 + |mu delta_i|) (relative step)."""
    flat = x.reshape(-1)
    rel = 0.0
    for i in range(flat.size):
        c = colmap[i]
        if c >= 0:
            d = mu * delta[c]
            flat[i] += d
            a = abs(d) / (abs(flat[i]) + abs(d) + 1e-300)
            if a > rel:
                rel = a
    return rel


# block LU for the Newton matrix: 15 unknowns per node, 9 of them (u, omega, g) fixed at the root
_LU_FACTOR, _LU_SOLVE, _LU_SOLVE1 = block_lu(NV, 9, 6)  # 6 right-hand sides: the Woodbury term

# integer / float option slots of newton_kernel
I_MAXIT, I_ADAPT, I_EXACT, I_NEEDF, I_COUPLED, I_KIND, I_CAY = range(7)
F_TOL, F_RELAX, F_MINRELAX, F_REUSE = range(4)
# return codes
NEWTON_CONVERGED, NEWTON_CONVERGED_STEP, NEWTON_MAXIT, NEWTON_SINGULAR = range(4)
# what the chord Newton's factors are (GAlphaSolver.bind_factors): valid (1/0), carry a Woodbury
# term (1/0), the tip kind and the step parameters (_prm, 11 values) they were made with
M_VALID, M_COUPLED, M_KIND, M_PRM = range(4)
META_SIZE = M_PRM + 11


@njit(**JIT)
def _inv_small(A, Ainv):
    """Gauss-Jordan inverse with partial pivoting of a small dense matrix; False if singular."""
    n = A.shape[0]
    M = A.copy()
    for i in range(n):
        for j in range(n):
            Ainv[i, j] = 1.0 if i == j else 0.0
    for k in range(n):
        p = k
        best = abs(M[k, k])
        for i in range(k + 1, n):
            if abs(M[i, k]) > best:
                best = abs(M[i, k])
                p = i
        if best == 0.0 or not np.isfinite(best):
            return False
        if p != k:
            for j in range(n):
                t = M[k, j]; M[k, j] = M[p, j]; M[p, j] = t
                t = Ainv[k, j]; Ainv[k, j] = Ainv[p, j]; Ainv[p, j] = t
        inv = 1.0 / M[k, k]
        for j in range(n):
            M[k, j] *= inv
            Ainv[k, j] *= inv
        for i in range(n):
            if i != k:
                f = M[i, k]
                if f != 0.0:
                    for j in range(n):
                        M[i, j] -= f * M[k, j]
                        Ainv[i, j] -= f * Ainv[k, j]
    return True


@njit(**JIT)
def _woodbury_kernel(x, R, ds, vals, kind, colmap, K, tipblock, W, piv, T, tpiv, D, C, Y, Cz, Sinv):
    """Exact coupling of the end loads / end velocities through the tip frame R_L (which
    depends on every kappa): Newton matrix ``A + C D`` with A the block Jacobian, C = dF/d(tip
    values) (last segment rows only) and D = d(tip values)/d kappa (:func:`tip_sensitivity`);
    prepares the Sherman-Morrison-Woodbury solve: ``Y = A^-1 C`` (6 block solves) and
    ``Sinv = (I + D Y)^-1``. Returns False if ``I + D Y`` is singular."""
    N = x.shape[0]
    tip_sensitivity(x, R, ds, vals[2:4], colmap, D)
    C[:, :] = 0.0
    r0 = NV * (N - 2)
    for r in range(NV):
        for q in range(3):
            if kind == 1:
                C[r0 + r, q] = tipblock[r, 9 + q]
                C[r0 + r, 3 + q] = tipblock[r, 6 + q] / K[q]
            elif kind == 2:
                C[r0 + r, q] = tipblock[r, q]
                C[r0 + r, 3 + q] = tipblock[r, 6 + q] / K[q]
            else:
                C[r0 + r, q] = tipblock[r, q] if (kind == 0 or q < 2) else 0.0
                C[r0 + r, 3 + q] = tipblock[r, 3 + q]
    _LU_SOLVE(W, piv, T, tpiv, C, Y, Cz)
    Smat = np.zeros((6, 6))
    for a in range(6):
        Smat[a, a] = 1.0
        for b in range(6):
            acc = 0.0
            for i in range(D.shape[1]):
                acc += D[a, i] * Y[i, b]
            Smat[a, b] += acc
    return _inv_small(Smat, Sinv)


@njit(**JIT)
def newton_kernel(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, R0, vals, gw, colmap, root_free, tip_free,
                  iopt, fopt, P, dP, F, Jb, tipblock, R, W, piv, T, tpiv, rhs, delta, zwork, D, C, Y, Cz, Sinv,
                  x_base, out, rootinfo):
    """Newton iterations of one step (GA paper, Algorithm 1, lines 10-23), all in compiled code.

    Per iteration: frames (Eq. 23), boundary values (Sec. 3.4.1), residual and (when needed)
    block Jacobian, block LU (:func:`rodlab.linalg.banded_lu.make_block_lu`), Woodbury term for
    the tip frame, ``x <- x + mu dx`` with adaptive under-relaxation (Sec. 4.3). The LU factors
    (W, piv, T, tpiv, and D, Y, Sinv of the Woodbury term) are reused across iterations -- and
    across calls if ``iopt[I_NEEDF] == 0`` -- while each iterate still reduces the residual by the
    factor ``fopt[F_REUSE]`` (chord Newton); otherwise the Jacobian is refactored.

    iopt (int64): max_iter, adaptive, exact_end_loads, need_factor (in), coupled (in/out: the
    current factors carry a Woodbury term), tip kind, cayley. fopt: tol, relaxation,
    min_relaxation, reuse_ratio. out (float64, 6): iterations, residual, relaxation,
    factorizations, factors valid (1/0), zero-pivot column. rootinfo: see
    :func:`root_pin_frame` (rootinfo[0] = 1: pinned root, R0 is recomputed from omega(0) in
    every iteration and written back; the Jacobian gets :func:`root_pin_jacobian`). Returns a
    NEWTON_* code.
    """
    pinned = rootinfo[0] == 1.0
    kind = iopt[I_KIND]
    cay = iopt[I_CAY] != 0
    max_iter = iopt[I_MAXIT]
    adaptive = iopt[I_ADAPT] != 0
    need_factor = iopt[I_NEEDF] != 0
    coupled = iopt[I_COUPLED] != 0
    tol = fopt[F_TOL]
    relax = fopt[F_RELAX]
    min_relax = fopt[F_MINRELAX]
    reuse_ratio = fopt[F_REUSE]
    ds = prm[0]
    n_all = delta.shape[0]
    xf = x.reshape(-1)
    xb = x_base.reshape(-1)
    Ff = F.reshape(-1)
    nr = Ff.shape[0]
    mu = relax
    for i in range(n_all):
        xb[i] = xf[i]
    f_base = np.inf
    fn = np.inf
    it = 0
    rejects = 0
    stale = False
    rel_step = 1.0
    nfact = 0
    valid = 1.0
    code = NEWTON_MAXIT
    dtmp = np.empty(6)
    etmp = np.empty(6)
    while True:
        if pinned:
            root_pin_frame(x, rootinfo, R0)
        integrate_frames(x, R0, ds, cay, R)
        apply_bc_kinds(x, R, 1 if pinned else 0, kind, vals, khat, K, gw)
        fn = residual_blocks(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, need_factor, F, Jb, tipblock)
        if pinned and need_factor:
            root_pin_jacobian(x, rootinfo, gw, Jb)
        if not np.isfinite(fn):
            fn = np.inf
        if fn < tol:
            code = NEWTON_CONVERGED
            break
        if it > 0 and rel_step < 1e-13 and fn < 1e3 * tol:
            code = NEWTON_CONVERGED_STEP
            break
        if it > 0 and fn > f_base:
            if stale:  # the stale factors gave a bad direction: redo from x_base with a fresh Jacobian
                for i in range(n_all):
                    xf[i] = xb[i]
                need_factor = True
                stale = False
                it += 1
                if it > max_iter:
                    break
                continue
            if adaptive and mu > min_relax and rejects < 8:
                mu *= 0.5
                rejects += 1
                for i in range(n_all):
                    xf[i] = xb[i]
                _update_free(x, colmap, delta, mu)
                continue
        if it >= max_iter:
            break
        if stale and fn > reuse_ratio * f_base and not need_factor:
            need_factor = True
            residual_blocks(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, np.bool_(True), F, Jb, tipblock)
            if pinned:
                root_pin_jacobian(x, rootinfo, gw, Jb)
        if adaptive and rejects == 0 and it > 0:
            mu = min(relax, 2.0 * mu)
        rejects = 0
        f_base = fn
        for i in range(n_all):
            xb[i] = xf[i]
        if need_factor:
            info = _LU_FACTOR(Jb, root_free, tip_free, W, piv, T, tpiv)
            nfact += 1
            if info != 0:
                valid = 0.0
                out[5] = info - 1
                code = NEWTON_SINGULAR
                break
            need_factor = False
            stale = False
            coupled = False
            if iopt[I_EXACT] != 0:
                for a in range(2, 4):
                    for q in range(3):
                        if vals[a, q] != 0.0:
                            coupled = True
            if coupled:
                coupled = _woodbury_kernel(x, R, ds, vals, kind, colmap, K, tipblock, W, piv, T, tpiv, D, C, Y, Cz,
                                           Sinv)
        else:
            stale = True
        for i in range(nr):
            rhs[i] = -Ff[i]
        _LU_SOLVE1(W, piv, T, tpiv, rhs, delta, zwork)
        if coupled:  # (A + C D)^-1 r = A^-1 r - Y S^-1 D A^-1 r
            for a in range(6):
                acc = 0.0
                for i in range(n_all):
                    acc += D[a, i] * delta[i]
                dtmp[a] = acc
            for a in range(6):
                acc = 0.0
                for b in range(6):
                    acc += Sinv[a, b] * dtmp[b]
                etmp[a] = acc
            for i in range(n_all):
                acc = 0.0
                for a in range(6):
                    acc += Y[i, a] * etmp[a]
                delta[i] -= acc
        rel_step = _update_free(x, colmap, delta, mu)
        it += 1
    iopt[I_COUPLED] = 1 if coupled else 0
    out[0] = it
    out[1] = fn
    out[2] = mu
    out[3] = nfact
    out[4] = valid
    return code


_FACTOR_ATTRS = (("W", "_W"), ("piv", "_piv"), ("T", "_T"), ("tpiv", "_tpiv"), ("D", "_D"), ("Y", "_Y"),
                 ("Sinv", "_Sinv"), ("meta", "_meta"))


class GAlphaSolver:
    """Stepper for one rod: ``solver.step(state, dt) -> StepResult`` advances ``state`` in place
    (or leaves it unchanged and reports failure)."""

    def __init__(self, model: GAlphaRod, boundary: Boundary | None = None, options: GAlphaOptions | None = None):
        self.model = model
        self.boundary = boundary or Boundary()
        self.options = options or GAlphaOptions()
        N = model.n_nodes
        self._root_kind = self.boundary.root_kind
        self._maps = {k: column_map(free_mask(N, k, self._root_kind)) for k in (0, 1, 2, 3)}
        self._masks = {k: free_mask(N, k, self._root_kind) for k in (0, 1, 2, 3)}
        self._rootinfo = np.zeros(14)
        # full node-major indexing for the block LU: every nodal unknown has a column, the
        # boundary values are pinned by identity rows (rodlab.linalg.banded_lu.make_block_lu)
        self._colfull = {k: np.where(self._masks[k].ravel(), np.arange(N * NV), -1).astype(np.int64) for k in (0, 1, 2, 3)}
        n_root_fixed = int((~self._masks[1][0]).sum())
        assert n_root_fixed == 9  # the compiled block LU (_LU_FACTOR) is built for 9 fixed root unknowns
        nf = N * NV
        nr = (N - 1) * NV
        self._P = np.zeros((N, 12))
        self._dP = np.zeros((N, 12, NV))
        self._Pw = np.zeros((N, 12))
        self._F = np.zeros((N - 1, NV))
        self._old = np.zeros((N - 1, NV))
        self._Jb = np.zeros((N - 1, NV, 2 * NV))
        self._W = np.zeros((N - 1, n_root_fixed + NV, 2 * NV))
        self._piv = np.zeros((N - 1, NV), dtype=np.int64)
        self._T = np.zeros((NV, NV))
        self._tpiv = np.zeros(NV, dtype=np.int64)
        self._zwork = np.zeros(nr)
        self._rhs = np.zeros(nr)
        self._R = np.zeros((N, 3, 3))
        self._rowscale = model.row_scales()
        self._K = np.ascontiguousarray(model.stiffness)
        self._J = np.ascontiguousarray(model.inertia)
        self._khat = np.ascontiguousarray(model.kappa_hat)
        self._cay = self.options.orientation == "cayley"
        self._delta = np.zeros(nf)
        self._tipblock = np.zeros((NV, NV))
        self._D = np.zeros((6, nf))
        self._C = np.zeros((nr, 6))
        self._Y = np.zeros((nf, 6))
        self._Cz = np.zeros((nr, 6))
        self._Sinv = np.eye(6)
        self._xbase = np.zeros((N, NV))
        o = self.options
        self._iopt = np.zeros(7, dtype=np.int64)
        self._iopt[I_MAXIT] = o.max_iter
        self._iopt[I_ADAPT] = 1 if o.adaptive else 0
        self._iopt[I_EXACT] = 1 if o.exact_end_loads else 0
        self._iopt[I_CAY] = 1 if o.orientation == "cayley" else 0
        self._fopt = np.array([o.tol, o.relaxation, o.min_relaxation, o.reuse_ratio])
        self._out = np.zeros(6)
        self._meta = np.zeros(META_SIZE)  # which factors W, piv, T, tpiv, D, Y, Sinv hold (bind_factors)
        self.factorizations = 0
        self.substeps = 0
        self.total_iterations = 0
        self.total_steps = 0
        self.solve_time = 0.0  # wall time inside step() [s]
        self.cpu_time = 0.0  # CPU time of this process inside step() [s] (time.process_time)

    def factor_shapes(self) -> dict:
        """Shapes and dtypes of the chord Newton's factors (:meth:`bind_factors`): ``W`` (N-1, 24,
        30) and ``piv`` (N-1, 15) the block LU, ``T`` (15, 15), ``tpiv`` (15,) its last block,
        ``D`` (6, 15 N), ``Y`` (15 N, 6), ``Sinv`` (6, 6) the Woodbury term of the end loads,
        ``meta`` (14,) what they were made for (``M_*`` slots)."""
        return {name: (getattr(self, attr).shape, getattr(self, attr).dtype) for name, attr in _FACTOR_ATTRS}

    def bind_factors(self, W, piv, T, tpiv, D, Y, Sinv, meta) -> None:
        """Keep the LU factors that the chord Newton reuses between steps (``reuse_jacobian``) in
        the given arrays (shapes of :meth:`factor_shapes`; C-contiguous, written in place), e.g. a
        simulator's state: a step's result then depends only on its inputs and these arrays, not
        on what this solver did before. ``meta[M_VALID] = 0``: no factors yet."""
        for (name, attr), a in zip(_FACTOR_ATTRS, (W, piv, T, tpiv, D, Y, Sinv, meta)):
            ref = getattr(self, attr)
            if a.shape != ref.shape or a.dtype != ref.dtype or not a.flags.c_contiguous:
                raise ModelError(f"bind_factors: {name} must be a C-contiguous {ref.dtype} array of shape {ref.shape} "
                                 f"(got {a.dtype} {a.shape})")
        self._W, self._piv, self._T, self._tpiv, self._D, self._Y, self._Sinv, self._meta = W, piv, T, tpiv, D, Y, Sinv, meta

    # ------------------------------------------------------------------------------------------
    def _prm(self, dt: float, coeffs: Coefficients, static: bool, damping: float | None = None) -> np.ndarray:
        m = self.model
        sp = self.options.space
        return np.array([m.ds, dt, m.rhoA, m.damping if damping is None else damping, coeffs.alpha, coeffs.beta,
                         coeffs.gamma, sp.alpha, sp.beta, 1.0 if static else 0.0,
                         1.0 if self.options.constraints_at_new_time else 0.0])

    def initial_state(self, kappa=None, n=None) -> GAlphaState:
        """Rod at rest in its rest shape (or with Darboux vector ``kappa`` (N, 3)), root at the
        model's root pose."""
        m = self.model
        N = m.n_nodes
        x = np.zeros((N, NV))
        x[:, 6:9] = m.kappa_hat if kappa is None else np.asarray(kappa, dtype=float)
        if n is not None:
            x[:, 9:12] = n
        # writable copies: the model's frozen arrays are another numba type (read-only), and the
        # kernels called with them would compile once more beside the stepping path's
        R0 = np.array(m.root_R, dtype=float)
        init_gravity_field(x, R0, np.array(m.gravity, dtype=float), m.ds)
        R = np.zeros((N, 3, 3))
        integrate_frames(x, R0, m.ds, self._cay, R)
        r = np.zeros((N, 3))
        integrate_positions(x, R, np.array(m.root_r, dtype=float), m.ds, r)
        return GAlphaState(0.0, x, np.zeros((N, NV)), R, r, r.copy(), 0)

    def energy(self, state: GAlphaState) -> tuple[float, float, float]:
        """(kinetic, elastic, gravitational) energy [J]."""
        m = self.model
        return energies(state.x, state.r, self._khat, self._K, self._J, m.rhoA, np.ascontiguousarray(m.gravity), m.ds)

    def _paper_initial_xdot(self, state: GAlphaState, dt: float) -> None:
        """Algorithm 1 lines 4-6: x_s from Eq. 20 (starting from the node-0 value that makes
        Eq. 15 hold with xdot = 0 there), then xdot = -M^-1 (Khat x_s + Lambda), n_t = 0."""
        m = self.model
        N = m.n_nodes
        sp = self.options.space
        prm = self._prm(dt, self.options.time, False)
        node_terms(state.x, self._khat, self._K, self._J, prm, self._Pw, self._dP, np.bool_(False))
        P = self._Pw
        x = state.x
        xs = np.zeros((N, 12))
        # Khat x_s rows: a = -n_s, b = -K(kappa_s - khat_s), c = -omega_s, d = -u_s
        def lam_to_xs(j, rhs):  # Khat xs = rhs -> xs in variable order (u, omega, kappa, n)
            out = np.zeros(12)
            out[9:12] = -rhs[0:3]
            out[6:9] = -rhs[3:6] / self._K
            out[3:6] = -rhs[6:9]
            out[0:3] = -rhs[9:12]
            return out
        xs[0] = lam_to_xs(0, -P[0])
        khs = np.zeros((N, 3))
        for j in range(1, N):
            xs[j] = (x[j, :12] - x[j - 1, :12]) / (sp.gamma * m.ds) - (1 - sp.gamma) / sp.gamma * xs[j - 1]
            khs[j] = (self._khat[j] - self._khat[j - 1]) / (sp.gamma * m.ds) - (1 - sp.gamma) / sp.gamma * khs[j - 1]
        xd = np.zeros((N, NV))
        for j in range(N):
            ks = np.concatenate([-xs[j, 9:12], -self._K * (xs[j, 6:9] - khs[j]), -xs[j, 3:6], -xs[j, 0:3]])
            rhs = -(ks + P[j])
            xd[j, 0:3] = rhs[0:3] / m.rhoA
            xd[j, 3:6] = rhs[3:6] / self._J
            xd[j, 6:9] = rhs[6:9]
        state.xdot[...] = xd

    # ------------------------------------------------------------------------------------------
    def _newton(self, x, xprev, xdotprev, prm, R0, kind, vals, gw, tol) -> StepResult:
        """Newton iterations (Algorithm 1, lines 10-23) in :func:`newton_kernel`, with
        under-relaxation and, if ``options.reuse_jacobian``, reuse of the last LU factors while
        they still contract the residual by at least a factor ``options.reuse_ratio`` per
        iteration (chord Newton), also across steps with the same parameters."""
        opts = self.options
        meta, key = self._meta, prm.tolist()
        mask = self._masks[kind]
        iopt = self._iopt
        reuse = opts.reuse_jacobian and meta[M_VALID] == 1.0 and meta[M_KIND] == kind and meta[M_PRM:].tolist() == key
        iopt[I_NEEDF] = 0 if reuse else 1
        iopt[I_COUPLED] = 1 if meta[M_COUPLED] != 0.0 else 0
        iopt[I_KIND] = kind
        fopt = self._fopt
        fopt[F_TOL] = tol
        out = self._out
        out[5] = -1.0
        code = newton_kernel(x, xprev, xdotprev, self._old, self._khat, self._K, self._J, prm, self._rowscale, R0,
                             vals, gw, self._colfull[kind], mask[0], mask[-1], iopt, fopt, self._P, self._dP, self._F,
                             self._Jb, self._tipblock, self._R, self._W, self._piv, self._T, self._tpiv, self._rhs,
                             self._delta, self._zwork, self._D, self._C, self._Y, self._Cz, self._Sinv, self._xbase,
                             out, self._rootinfo)
        it, fn, mu, nfact = int(out[0]), float(out[1]), float(out[2]), int(out[3])
        self.factorizations += nfact
        meta[M_COUPLED] = iopt[I_COUPLED]
        if out[4] == 0.0:
            meta[M_VALID] = 0.0
        elif nfact > 0:
            meta[M_VALID], meta[M_KIND] = 1.0, kind
            meta[M_PRM:] = prm
        if code == NEWTON_CONVERGED:
            return StepResult(True, it, fn, "converged", mu)
        if code == NEWTON_CONVERGED_STEP:
            return StepResult(True, it, fn, "converged (step at rounding level)", mu)
        if code == NEWTON_SINGULAR:
            col = int(out[5])
            names = ("u1", "u2", "u3", "omega1", "omega2", "omega3", "kappa1", "kappa2", "kappa3", "n1", "n2", "n3",
                     "g1", "g2", "g3")
            return StepResult(False, it, fn, f"singular Jacobian (zero pivot in column {col}: node {col // NV}, "
                              f"unknown {names[col % NV]})", mu)
        return StepResult(False, it, fn, f"Newton did not converge in {it} iterations (residual {fn:.3e} > tol {tol:.1e})", mu)

    def step(self, state: GAlphaState, dt: float) -> StepResult:
        """Advance ``state`` by ``dt`` [s] (Algorithm 1). On failure the state is left unchanged."""
        require(math.isfinite(dt) and dt > 0, f"dt must be > 0 s (got {dt})")
        m = self.model
        opts = self.options
        t0 = time.perf_counter()
        c0 = time.process_time()
        first = state.step == 0
        if first and opts.init == "paper":
            self._paper_initial_xdot(state, dt)
        coeffs = BACKWARD_EULER if (first and opts.init == "euler") else opts.time
        prm = self._prm(dt, coeffs, False)
        old_terms(state.x, state.xdot, self._khat, self._K, self._J, prm, self._Pw, self._old)
        t_new = state.t + dt
        kind, vals = self.boundary.values(t_new)
        v_old, _ = self.boundary.root.at(state.t)
        _, w_mid = self.boundary.root.at(state.t + 0.5 * dt)
        E = np.empty((3, 3))
        _expm(w_mid[0] * dt, w_mid[1] * dt, w_mid[2] * dt, E)
        R0 = np.ascontiguousarray(E @ state.R[0])
        ri = self._rootinfo
        ri[:] = 0.0
        if self._root_kind == 1:  # pinned root: R0 follows omega(0), midpoint rule (Euler in the first step)
            th = coeffs.gamma if coeffs is BACKWARD_EULER else 0.5
            ri[0] = 1.0
            ri[1] = th * dt
            ri[2:5] = (1.0 - th) * dt * state.x[0, 3:6]
            ri[5:14] = state.R[0].ravel()
        x = state.x.copy()
        res = self._newton(x, state.x, state.xdot, prm, R0, kind, vals, np.ascontiguousarray(m.gravity), opts.tol)
        self.total_iterations += res.iterations
        self.total_steps += 1
        if res.success:
            g = coeffs.gamma
            xdot = (x - state.x) / (g * dt) - (1.0 - g) / g * state.xdot
            R_old = state.R.copy()
            x_old = state.x.copy()
            integrate_frames(x, R0, m.ds, self._cay, state.R)
            r0 = state.r[0] + 0.5 * dt * (v_old + vals[0])
            integrate_positions(x, state.R, r0, m.ds, state.r)
            advance_velocity_positions(state.r_vel, R_old, x_old, state.R, x, dt)
            state.x[...] = x
            state.xdot[...] = xdot
            state.t = t_new
            state.step += 1
        else:
            log.warning("galpha step at t=%g failed: %s", t_new, res.message)
        self.solve_time += time.perf_counter() - t0
        self.cpu_time += time.process_time() - c0
        return res

    def step_robust(self, state: GAlphaState, dt: float, max_halvings: int = 4) -> StepResult:
        """:meth:`step`, and if Newton fails, the same interval in 2, 4, ... substeps (at most
        ``2**max_halvings``). Counts the substeps in ``self.substeps``."""
        res = self.step(state, dt)
        if res.success or max_halvings <= 0:
            return res
        backup = state.copy()
        for half in range(2):
            r = self.step_robust(state, 0.5 * dt, max_halvings - 1)
            if not r.success:
                state.assign(backup)
                return r
            self.substeps += 1
        return StepResult(True, r.iterations, r.residual, "converged in substeps", r.relaxation)

    def simulate(self, state: GAlphaState, dt: float, n_steps: int, *, record_every: int = 1, progress=None,
                 raise_on_failure: bool = True, robust: bool = False) -> dict:
        """Run ``n_steps`` steps; returns a trajectory dict (t, x, energy, kinetic, elastic,
        newton_iters, residual, frames = director matrices (F, N, 3, 3)) sampled every ``record_every`` steps (plus the initial state)."""
        n_steps = check_steps(n_steps, "n_steps")
        require(check_steps(record_every, "record_every") >= 1, f"record_every must be an integer >= 1 (got {record_every!r})")
        ts, xs, ek, ee, eg, its, rs, Rs = [], [], [], [], [], [], [], []

        def record(it, r):
            k, e, gr = self.energy(state)
            ts.append(state.t); xs.append(state.r.copy()); ek.append(k); ee.append(e); eg.append(gr)
            its.append(it); rs.append(r); Rs.append(state.R.copy())

        record(0, 0.0)
        for i in range(n_steps):
            res = self.step_robust(state, dt) if robust else self.step(state, dt)
            if not res.success:
                if raise_on_failure:
                    raise RuntimeError(f"galpha: step {i + 1} at t={state.t + dt:g} failed: {res.message}; state kept at t={state.t:g}")
                break
            if (i + 1) % record_every == 0 or i == n_steps - 1:
                record(res.iterations, res.residual)
            if progress is not None and (i % 16 == 0 or i == n_steps - 1):
                progress.update(i + 1, n_steps)
        ek = np.array(ek); ee = np.array(ee); eg = np.array(eg)
        return {"t": np.array(ts), "x": np.array(xs), "energy": ek + ee + eg, "kinetic": ek, "elastic": ee,
                "gravitational": eg, "newton_iters": np.array(its), "residual": np.array(rs),
                "frames": np.array(Rs)}

    # ------------------------------------------------------------------------------------------
    def solve_static(self, state: GAlphaState | None = None, *, load_steps: int = 8, max_load_steps: int = 256) -> tuple[GAlphaState, StepResult]:
        """Static equilibrium under gravity and the tip loads at ``state.t`` (natural tip only),
        by the same residual with ``M xdot`` dropped and Newton's method, continuing in the load
        factor from the given state (default: rest shape) with adaptive load increments."""
        m = self.model
        state = self.initial_state() if state is None else state.copy()
        kind, vals = self.boundary.values(state.t)
        if kind != 1 or self._root_kind != 0:
            raise ModelError("solve_static needs a kinematic root and a natural (TipLoad) tip condition")
        vals = vals.copy()
        vals[0:2] = 0.0
        state.x[:, 0:6] = 0.0
        prm = self._prm(1.0, self.options.time, True, damping=0.0)
        gw_full = np.ascontiguousarray(m.gravity)
        R0 = np.ascontiguousarray(state.R[0])
        lam, dlam = 0.0, 1.0 / load_steps
        total_it = 0
        steps = 0
        x = state.x.copy()
        res = StepResult(False, 0, math.inf, "not started")
        while lam < 1.0:
            steps += 1
            if steps > max_load_steps:
                return state, StepResult(False, total_it, res.residual, f"load continuation stalled at factor {lam:.4f}")
            target = min(1.0, lam + dlam)
            trial = x.copy()
            v = vals.copy(); v[2:] *= target
            res = self._newton(trial, x, x, prm, R0, kind, v, gw_full * target, self.options.tol)
            total_it += res.iterations
            if res.success:
                x = trial
                lam = target
                dlam = min(2 * dlam, 1.0)
            else:
                dlam *= 0.5
                if dlam < 1e-6:
                    return state, StepResult(False, total_it, res.residual, f"static solve failed at load factor {lam:.4f}: {res.message}")
        integrate_frames(x, R0, m.ds, self._cay, state.R)
        integrate_positions(x, state.R, state.r[0].copy(), m.ds, state.r)
        state.x[...] = x
        state.r_vel[...] = state.r
        return state, StepResult(True, total_it, res.residual, f"converged ({steps} load steps)")
