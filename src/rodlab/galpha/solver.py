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
from dataclasses import dataclass, field, fields

import numpy as np

from ..aot import kernel
from ..model import ModelError, check_steps, require
from .boundary import _TIPS, Boundary, column_map, free_mask
from .model import BACKWARD_EULER, Coefficients, GAlphaRod
from .newton import (  # noqa: F401  (apply_bc, the pinned root's kernels: imported from here by others; _LU_*: compiled callers only)
    _LU_FACTOR, _LU_SOLVE, _LU_SOLVE1, F_TOL, I_ADAPT, I_CAY, I_COUPLED, I_EXACT, I_KIND, I_MAXIT, I_NEEDF, M_COUPLED,
    M_KIND, M_PRM, M_VALID, META_SIZE, NEWTON_CONVERGED, NEWTON_CONVERGED_STEP, NEWTON_SINGULAR, apply_bc,
    apply_bc_kinds, init_gravity_field, initial_fields, newton_kernel, root_pin_frame, root_pin_jacobian)
from .residual import NV, node_terms
from .state import GAlphaState, energies, integrate_frames, integrate_positions
from .stepping import (B_KIND, B_VALS, B_VOLD, B_WMID, BC_SIZE, COUNTS_SIZE, I_CAYLEY, I_COLMAPS, I_FIRST_EULER,
                       I_PINNED, I_REUSE, K_FACTS, K_ITERS, K_STEPS, R_CODE, R_DONE, R_FACTS, R_ITERS, R_TIME, R_TRIED, advance_steps, float_buffer_size,
                       float_views)

log = logging.getLogger(__name__)

# Python calls of compiled kernels: their ahead-of-time entries where built (rodlab.aot; bitwise
# the JIT's results), else numba's dispatchers
_initial_fields, _energies = kernel(initial_fields), kernel(energies)


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



_new = object.__new__


def _step_result(code: int, out: np.ndarray, tol: float) -> StepResult:
    """The :class:`StepResult` of a Newton solve from :func:`newton_kernel`'s code and ``out``
    (a converged one built without the frozen dataclass's ``__init__``: 0.4 us instead of 2)."""
    it, fn, mu = out[:3].tolist()
    it = int(it)
    if code == NEWTON_CONVERGED:
        res = _new(StepResult)
        res.__dict__.update(success=True, iterations=it, residual=fn, message="converged", relaxation=mu)
        return res
    if code == NEWTON_CONVERGED_STEP:
        return StepResult(True, it, fn, "converged (step at rounding level)", mu)
    if code == NEWTON_SINGULAR:
        col = int(out[5])
        names = ("u1", "u2", "u3", "omega1", "omega2", "omega3", "kappa1", "kappa2", "kappa3", "n1", "n2", "n3",
                 "g1", "g2", "g3")
        return StepResult(False, it, fn, f"singular Jacobian (zero pivot in column {col}: node {col // NV}, "
                          f"unknown {names[col % NV]})", mu)
    return StepResult(False, it, fn, f"Newton did not converge in {it} iterations (residual {fn:.3e} > tol {tol:.1e})", mu)


def _time_independent(boundary: Boundary) -> bool:
    """No value of ``boundary`` (its tip choice, the ends' velocities, loads, axial force) is a
    function of time."""
    tip = boundary.tip
    if callable(tip) and not isinstance(tip, _TIPS):
        return False
    return not any(callable(getattr(end, f.name)) for end in (boundary.root, tip) for f in fields(end))


def _counter(slot: int, doc: str) -> property:
    """A running total of :class:`GAlphaSolver` kept in its ``_counts`` array (slot ``slot``), so
    that compiled calls (:func:`rodlab.galpha.batch.advance_rods`) add to it as Python does."""
    def get(self) -> int:
        return int(self._counts[slot])

    def put(self, value: int) -> None:
        self._counts[slot] = value
    return property(get, put, doc=doc)


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
        # full node-major indexing for the block LU: every nodal unknown has a column, the
        # boundary values are pinned by identity rows (rodlab.linalg.banded_lu.make_block_lu)
        self._colfull = {k: np.where(self._masks[k].ravel(), np.arange(N * NV), -1).astype(np.int64) for k in (0, 1, 2, 3)}
        n_root_fixed = int((~self._masks[1][0]).sum())
        assert n_root_fixed == 9  # the compiled block LU (_LU_FACTOR) is built for 9 fixed root unknowns
        nf = N * NV
        # model constants and scratch: views of one buffer (rodlab.galpha.stepping.float_views)
        self._fbuf = np.zeros(float_buffer_size(N))
        (self._khat, self._K, self._J, self._rowscale, self._gw, self._fopt, self._out, self._rootinfo, self._res,
         self._Pw, self._old, self._P, self._dP, self._F, self._Jb, self._tipblock, self._R, self._rhs, self._delta,
         self._zwork, self._C, self._Cz, self._xbase, self._xtrial, self._Rold) = float_views(self._fbuf, N)
        self._khat[...] = model.kappa_hat
        self._K[...] = model.stiffness
        self._J[...] = model.inertia
        self._rowscale[...] = model.row_scales()
        self._gw[...] = model.gravity
        self._cay = self.options.orientation == "cayley"
        o = self.options
        self._fopt[...] = (o.tol, o.relaxation, o.min_relaxation, o.reuse_ratio)
        # the chord Newton's factors (bind_factors): the solver's own until a state's are bound
        self._W = np.zeros((N - 1, n_root_fixed + NV, 2 * NV))
        self._piv = np.zeros((N - 1, NV), dtype=np.int64)
        self._T = np.zeros((NV, NV))
        self._tpiv = np.zeros(NV, dtype=np.int64)
        self._D = np.zeros((6, nf))
        self._Y = np.zeros((nf, 6))
        self._Sinv = np.eye(6)
        self._meta = np.zeros(META_SIZE)  # which factors W, piv, T, tpiv, D, Y, Sinv hold
        # int64 buffer (stepping.I_*): newton_kernel's iopt, the step flags, the column maps per tip kind
        self._ibuf = np.zeros(I_COLMAPS + 4 * nf, dtype=np.int64)
        self._iopt = self._ibuf[:7]
        self._iopt[I_MAXIT] = o.max_iter
        self._iopt[I_ADAPT] = 1 if o.adaptive else 0
        self._iopt[I_EXACT] = 1 if o.exact_end_loads else 0
        self._iopt[I_CAY] = 1 if o.orientation == "cayley" else 0
        self._ibuf[I_FIRST_EULER] = o.init == "euler"
        self._ibuf[I_REUSE] = o.reuse_jacobian
        self._ibuf[I_PINNED] = self._root_kind == 1
        self._ibuf[I_CAYLEY] = self._cay
        self._ibuf[I_COLMAPS:] = np.concatenate([self._colfull[k] for k in (0, 1, 2, 3)])
        # advance_steps' other inputs: the end nodes' free unknowns per tip kind, the step parameters
        # per dt, and the boundary row of a boundary that does not depend on time
        self._end_free = np.stack([np.stack([self._masks[k][0], self._masks[k][-1]]) for k in (0, 1, 2, 3)])
        self._prm_of_dt = {}
        self.static_boundary = _time_independent(self.boundary)
        self._boundary_row = None
        self._counts = np.zeros(COUNTS_SIZE)  # total_iterations, factorizations, total_steps (K_* slots)
        self.substeps = 0
        self.solve_time = 0.0  # wall time inside the compiled steps [s]
        self.cpu_time = 0.0  # CPU time of this process inside them [s], counted where cpu_clock is set
        self.cpu_clock = False  # time.process_time is a system call, ~2 us per call: off unless asked for

    total_iterations = _counter(K_ITERS, "Newton iterations of every step tried so far (failed tries included).")
    factorizations = _counter(K_FACTS, "LU factorizations of the Newton matrix so far.")
    total_steps = _counter(K_STEPS, "Compiled steps tried so far (failed tries included).")

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

    def place_buffers(self, fbuf: np.ndarray, ibuf: np.ndarray, counts: np.ndarray) -> None:
        """Move the model constants and scratch (:func:`rodlab.galpha.stepping.float_views`), the
        int64 buffer (flags, column maps) and the running totals (``K_*`` slots) into ``fbuf``,
        ``ibuf`` and ``counts`` (float64, int64, float64, of this solver's sizes; e.g. slices of the
        buffers of every rod of a simulator, :class:`rodlab.galpha.batch.RodsLayout`): their values
        are copied, the views re-made."""
        if fbuf.shape != self._fbuf.shape or fbuf.dtype != np.float64 or ibuf.shape != self._ibuf.shape \
                or ibuf.dtype != np.int64 or counts.shape != self._counts.shape or counts.dtype != np.float64:
            raise ModelError(f"place_buffers: need float64 {self._fbuf.shape}, int64 {self._ibuf.shape} and float64 "
                             f"{self._counts.shape} arrays (got {fbuf.dtype} {fbuf.shape}, {ibuf.dtype} {ibuf.shape} "
                             f"and {counts.dtype} {counts.shape})")
        fbuf[...] = self._fbuf
        ibuf[...] = self._ibuf
        counts[...] = self._counts
        self._fbuf, self._ibuf, self._iopt, self._counts = fbuf, ibuf, ibuf[:7], counts
        (self._khat, self._K, self._J, self._rowscale, self._gw, self._fopt, self._out, self._rootinfo, self._res,
         self._Pw, self._old, self._P, self._dP, self._F, self._Jb, self._tipblock, self._R, self._rhs, self._delta,
         self._zwork, self._C, self._Cz, self._xbase, self._xtrial, self._Rold) = float_views(fbuf, self.model.n_nodes)

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
        R = np.zeros((N, 3, 3))
        r = np.zeros((N, 3))
        _initial_fields(x, np.array(m.root_R, dtype=float), np.array(m.gravity, dtype=float), m.ds, self._cay, R,
                        np.array(m.root_r, dtype=float), r)
        return GAlphaState(0.0, x, np.zeros((N, NV)), R, r, r.copy(), 0)

    def energy(self, state: GAlphaState) -> tuple[float, float, float]:
        """(kinetic, elastic, gravitational) energy [J]."""
        m = self.model
        return _energies(state.x, state.r, self._khat, self._K, self._J, m.rhoA, np.ascontiguousarray(m.gravity), m.ds)

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
        nfact = int(out[3])
        self.factorizations += nfact
        meta[M_COUPLED] = iopt[I_COUPLED]
        if out[4] == 0.0:
            meta[M_VALID] = 0.0
        elif nfact > 0:
            meta[M_VALID], meta[M_KIND] = 1.0, kind
            meta[M_PRM:] = prm
        return _step_result(code, out, tol)

    def step_parameters(self, dt: float) -> np.ndarray:
        """(2, 11): :meth:`_prm` of a first backward Euler step and of every other step, for ``dt`` [s]."""
        prm = self._prm_of_dt.get(dt)
        if prm is None:
            if len(self._prm_of_dt) > 64:
                self._prm_of_dt.clear()
            prm = self._prm_of_dt[dt] = np.stack([self._prm(dt, BACKWARD_EULER, False),
                                                  self._prm(dt, self.options.time, False)])
        return prm

    def boundary_rows(self, t: float, dt: float, nsteps: int) -> np.ndarray:
        """:func:`rodlab.galpha.stepping.advance_steps`' boundary rows (``stepping.B_*`` slots) for
        ``nsteps`` steps of ``dt`` from ``t``: per step the tip kind and values at its end, the root
        velocity at its start and angular velocity at its middle (one row, made once, when nothing
        depends on t)."""
        if self.static_boundary and self._boundary_row is not None:
            return self._boundary_row
        rows = np.empty((1 if self.static_boundary else nsteps, BC_SIZE))
        root = self.boundary.root
        for k in range(rows.shape[0]):
            t_new = t + dt
            kind, vals = self.boundary.values(t_new)
            rows[k, B_KIND] = kind
            rows[k, B_VALS:B_VOLD] = vals.ravel()
            rows[k, B_VOLD:B_WMID] = root.at(t)[0]
            rows[k, B_WMID:] = root.at(t + 0.5 * dt)[1]
            t = t_new
        if self.static_boundary:
            self._boundary_row = rows
        return rows

    def _run(self, state: GAlphaState, dt: float, nsteps: int) -> tuple[int, StepResult]:
        """Up to ``nsteps`` steps in one compiled call (:func:`rodlab.galpha.stepping.advance_steps`),
        stopping at the first failed one (state left at the last good step): ``(steps taken, the
        last tried step's result)``."""
        t0 = time.perf_counter()
        c0 = time.process_time() if self.cpu_clock else 0.0
        o = self.options
        prm = self.step_parameters(dt)
        bc = self.boundary_rows(state.t, dt, nsteps)
        done = advance_steps(nsteps, state.t, dt, state.step, state.x, state.xdot, state.R, state.r, state.r_vel, self._W,
                             self._piv, self._T, self._tpiv, self._D, self._Y, self._Sinv, self._meta, bc, prm,
                             self._fbuf, self._ibuf, self._end_free)
        res = self._res.tolist()
        self.total_iterations += int(res[R_ITERS])
        self.factorizations += int(res[R_FACTS])
        self.total_steps += int(res[R_TRIED])
        state.t = res[R_TIME]
        state.step += done
        result = _step_result(int(res[R_CODE]), self._out, o.tol)
        if not result.success:
            log.warning("galpha step at t=%g failed: %s", state.t + dt, result.message)
        self.solve_time += time.perf_counter() - t0
        if self.cpu_clock:
            self.cpu_time += time.process_time() - c0
        return done, result

    def step(self, state: GAlphaState, dt: float) -> StepResult:
        """Advance ``state`` by ``dt`` [s] (Algorithm 1). On failure the state is left unchanged."""
        require(math.isfinite(dt) and dt > 0, f"dt must be > 0 s (got {dt})")
        if state.step == 0 and self.options.init == "paper":
            self._paper_initial_xdot(state, dt)
        return self._run(state, dt, 1)[1]

    def step_robust(self, state: GAlphaState, dt: float, max_halvings: int = 4) -> StepResult:
        """:meth:`step`, and if Newton fails, the same interval in 2, 4, ... substeps (at most
        ``2**max_halvings``). Counts the substeps in ``self.substeps``."""
        res = self.step(state, dt)
        if res.success or max_halvings <= 0:
            return res
        return self._in_substeps(state, dt, max_halvings)

    def _in_substeps(self, state: GAlphaState, dt: float, max_halvings: int) -> StepResult:
        """The interval ``dt`` of a failed step again in two :meth:`step_robust` halves (state put
        back if one fails)."""
        backup = state.copy()
        for half in range(2):
            r = self.step_robust(state, 0.5 * dt, max_halvings - 1)
            if not r.success:
                state.assign(backup)
                return r
            self.substeps += 1
        return StepResult(True, r.iterations, r.residual, "converged in substeps", r.relaxation)

    def advance(self, state: GAlphaState, dt: float, nsteps: int, max_halvings: int = 4) -> tuple[int, StepResult]:
        """``nsteps`` times :meth:`step_robust` with ``dt`` [s], the steps in compiled calls
        (:func:`rodlab.galpha.stepping.advance_steps`; a failed step is retried in substeps from
        Python, then the compiled run goes on): ``(steps taken, the last step's result)``; stops
        at a step that fails even in substeps (state at the last good step). Bitwise the same as
        the loop of :meth:`step_robust`."""
        if not (dt > 0 and math.isfinite(dt)):
            require(False, f"dt must be > 0 s (got {dt})")
        return self._advance_from(state, dt, nsteps, 0, None, max_halvings)

    def _advance_from(self, state: GAlphaState, dt: float, nsteps: int, done: int, res, max_halvings: int):
        """:meth:`advance` with ``done`` of the ``nsteps`` steps taken (``res``: the last one's result)."""
        while done < nsteps:
            if state.step == 0 and self.options.init == "paper":  # Algorithm 1's initial rates, in Python
                res = self.step_robust(state, dt, max_halvings)
                k = 1 if res.success else 0
            else:
                k, res = self._run(state, dt, nsteps - done)
                if not res.success and max_halvings > 0:  # the failed step's first try is taken
                    res = self._in_substeps(state, dt, max_halvings)
                    k += 1 if res.success else 0
            done += k
            if not res.success:
                break
        return done, res

    def failed_run(self, state: GAlphaState, dt: float) -> tuple[int, StepResult]:
        """After :func:`rodlab.galpha.batch.advance_rods` stopped this rod at a failed step of
        ``dt`` [s]: ``(its steps taken, the failed try's result)`` from the run's ``res`` and
        ``out`` views, ``state.t`` set to the time reached (the compiled run's own sum of steps)."""
        state.t = float(self._res[R_TIME])
        result = _step_result(int(self._res[R_CODE]), self._out, self.options.tol)
        log.warning("galpha step at t=%g failed: %s", state.t + dt, result.message)
        return int(self._res[R_DONE]), result

    def finish_failed_run(self, state: GAlphaState, dt: float, nsteps: int, done: int, failed: StepResult,
                          max_halvings: int = 4) -> tuple[int, StepResult]:
        """A compiled run of ``nsteps`` steps of ``dt`` [s] stopped after ``done`` steps at a failed
        one (``failed``: its first try; ``state`` at the last good step): that step again in
        substeps (at most ``2**max_halvings``), then the rest as :meth:`advance` does: ``(steps
        taken of the nsteps, the last step's result)``."""
        res = failed
        if max_halvings > 0:
            res = self._in_substeps(state, dt, max_halvings)
            done += 1 if res.success else 0
        if not res.success:
            return done, res
        return self._advance_from(state, dt, nsteps, done, res, max_halvings)

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
