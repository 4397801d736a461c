"""Sag-free parameter optimization of one DER strand (Takahashi and Batty, "Optimizing Parameters for
Static Equilibrium of Discrete Elastic Rods with Active-Set Cholesky").

Given a groomed strand shape ``x*`` (root edge clamped), find rest shape and stiffness parameters
``p`` (see :mod:`.kernels` for the interleaved layout) such that the net force on every free DOF of
the implicit DER model (:mod:`rodlab.der_implicit`) vanishes at ``x*``:

``min_p 1/2 |p - p0|_W^2  s.t.  c(p) = 0,  lo <= p <= hi``   (Eq. 9)

solved by the augmented Lagrangian method with one Gauss-Newton step per primal subproblem, each
step a box-constrained QP solved by MPRGP preconditioned with the active-set Cholesky factor, a
backtracking line search and the multiplier update ``lam <- lam - rho c`` (Eqs. 10-13, 20-23).

Schemes (Sec. VI-D): ``alm`` (rest shape + stiffness, hard constraint), ``penalty`` (rest shape +
stiffness, quadratic penalty: ``lam`` kept at 0), ``rest`` (rest shape only, quadratic penalty, the
formulation of Takahashi and Batty's earlier paper).

Bounds (Eqs. 16-19): rest-length ratios and stiffness scales ``>= eps`` (stiffness unbounded above),
rest curvature within ``kbar0 +- delta``, rest twist within ``mbar0 +- delta`` (``delta_m = delta_k``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..der_implicit.energies import unpack_dofs
from ..der_implicit.stepper import DERImplicitModel, DERImplicitState, build_rod, with_params
from ..model import require
from . import kernels as K
from .qp import PC_NAMES

SCHEMES = ("alm", "penalty", "rest")
QP_SOLVERS = {"mprgp": K.QP_MPRGP, "pgs": K.QP_PGS, "ipm": K.QP_IPM, "penalty-box": K.QP_PENALTY}


@dataclass(frozen=True)
class SagFreeOptions:
    """Options of :func:`optimize_strand`.

    ``rho``: augmented-Lagrangian / penalty weight on the scaled constraint; ``w_stiff``, ``w_rest``:
    diagonal of ``W`` for stiffness scales and for rest-shape values (stiffness changes cost more, so
    rest shape moves first); ``tol``: target of the weight-scaled force residual (net force over the
    vertex weight, torques over weight times edge length); ``qp``: ``mprgp`` | ``pgs`` | ``ipm`` |
    ``penalty-box``; ``precond`` (MPRGP): ``none`` | ``diag`` | ``wj`` | ``ssor`` | ``ic`` | ``mic`` | ``asc``
    (the paper's active-set Cholesky: the once-per-Newton-step LDL^T applied by filtered substitution) |
    ``asc-schur`` (default, our extension: the same factor applied exactly on the current face through a
    Schur-complement correction over the active bounds, see :mod:`.qp`; 2.3x faster than ``asc`` on
    the horizontal strand, the same where no bound is active, see docs/sagfree.md). ASC, IC, MIC and
    ASC-Schur run the compiled fast path :func:`.qp.mprgp_fast_solve` with the paper's fixed-length
    expansion.
    """

    scheme: str = "alm"
    delta: float = 0.4
    rho: float = 1e4
    rho_growth: float = 10.0
    rho_max: float = 1e7
    w_stiff: float = 1.0
    w_rest: float = 1e-2
    eps: float = 1e-3
    tol: float = 1e-9
    max_iters: int = 200
    qp: str = "mprgp"
    precond: str = "asc-schur"
    qp_rtol: float = 1e-4
    qp_atol: float = 1e-14
    qp_maxit: int = 500
    warm_start: bool = False
    box_mu: float = 1e4

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)} (got {self.scheme!r})")
        if self.qp not in QP_SOLVERS:
            raise ValueError(f"qp must be one of {', '.join(QP_SOLVERS)} (got {self.qp!r})")
        if self.precond not in PC_NAMES:
            raise ValueError(f"precond must be one of {', '.join(PC_NAMES)} (got {self.precond!r})")
        for name in ("delta", "rho", "w_stiff", "w_rest", "eps", "box_mu"):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number > 0 (got {v})")
        if not (self.tol >= 0):
            raise ValueError(f"tol must be >= 0 (got {self.tol})")
        if self.max_iters < 0 or self.qp_maxit < 1:
            raise ValueError("max_iters must be >= 0 and qp_maxit >= 1")


@dataclass(frozen=True, eq=False)
class SagFreeProblem:
    """A strand at its groomed shape with everything the optimization needs (see :func:`make_problem`)."""

    model: DERImplicitModel
    state: DERImplicitState
    p0: np.ndarray
    Ks: float
    Kb: float
    Kt: float
    l0: np.ndarray
    tan: np.ndarray
    elen: np.ndarray
    W0: np.ndarray
    JWv: np.ndarray
    GM: np.ndarray
    MT: np.ndarray
    dW: np.ndarray
    S: np.ndarray
    inv_cw: np.ndarray
    strand_length: float
    residual_floor: float = 0.0

    @property
    def nv(self) -> int:
        return self.l0.shape[0] + 1

    @property
    def nparams(self) -> int:
        return self.p0.shape[0]


@dataclass(frozen=True, eq=False)
class SagFreeResult:
    """Outcome of :func:`optimize_strand`. ``residual``: largest net force over the vertex weight
    (torques over weight times edge length) after optimization; ``status`` 1 converged, 0 iteration cap,
    -1 line search failed, -2 stationary with the constraint violated (the penalty schemes' failure)."""

    success: bool
    message: str
    status: int
    iterations: int
    qp_iterations: int
    qp_iterations_max: int
    residual: float
    initial_residual: float
    residual_history: np.ndarray
    params: np.ndarray
    params0: np.ndarray
    lam: np.ndarray
    model: DERImplicitModel
    wall_s: float
    stiffness_change_max: float
    rest_change_max: float
    bounds_ok: bool
    clamped_pivots: int = 0
    cpu_s: float = 0.0

    @property
    def qp_iterations_mean(self) -> float:
        return self.qp_iterations / max(self.iterations, 1)


def make_problem(x: np.ndarray, *, radius: float, E: float, G: float, rho: float, gravity=(0.0, 0.0, -9.81),
                 theta: np.ndarray | None = None, u0=None) -> SagFreeProblem:
    """Set up the strand through ``x`` (n, 3), root edge ``x_0 x_1`` clamped, naive initialization (rest = groomed)."""
    from .kernels import sf_geometry

    model, state = build_rod(x, radius=radius, E=E, G=G, rho=rho, gravity=gravity, theta=theta, u0=u0)
    nv = model.nv
    W0 = np.zeros((nv, 4))
    JWv = np.zeros((nv, 4, 11))
    GM = np.zeros((nv, 11))
    MT = np.zeros(nv)
    tan = state.tan.copy()
    elen = model.lbar.copy()
    sf_geometry(state.q, tan, elen, state.a1, state.mref, W0, JWv, GM, MT)
    Ks = float(model.ks[0])
    Kb = float(model.kbend[1])
    Kt = float(model.ktwist[1])
    l0 = model.lbar.copy()
    P = 7 * (nv - 2)
    p0 = np.empty(P)
    dW = np.zeros((nv, 2))
    for i in range(1, nv - 1):
        b = 7 * (i - 1)
        p0[b:b + 2] = W0[i, 0:2]
        dW[i] = W0[i, 2:4] - W0[i, 0:2]
        p0[b + 2] = 1.0
        p0[b + 3] = MT[i]
        p0[b + 4] = 1.0
        p0[b + 5] = 1.0
        p0[b + 6] = 1.0
    N = 4 * nv - 1
    S = np.zeros(N)
    lam_v = np.zeros(nv)
    lam_v[:-1] += 0.5 * l0
    lam_v[1:] += 0.5 * l0
    g = float(np.linalg.norm(gravity))
    area = math.pi * radius**2
    inv_cw = np.zeros(N - K.NFIX)
    for a in range(N):
        v = a // 4
        if a % 4 == 3:
            S[a] = l0[v] / Kb
            fw = rho * area * l0[v] * g * l0[v]
        else:
            S[a] = lam_v[v] ** 2 / Kb
            fw = model.mass[a] * g
        if a >= K.NFIX:
            inv_cw[a - K.NFIX] = 1.0 / (S[a] * fw) if fw > 0 else 1.0
    # round-off floor of the weight-scaled residual: positions carry a relative error of ~1e-16 of
    # their magnitude, so an edge length, and with it a stretching force ks (l/lbar - 1), is only
    # known to ~ks * 4 eps |x| / l; relative to the lightest vertex weight
    xmax = float(np.abs(x).max()) + float(l0.max())
    wmin = float(model.mass[8::4].min()) * g if g > 0 else 1.0
    # (the bound assumes every rounding error adds up; the residuals reached in practice are ~50 times
    # smaller, hence the calibration factor 0.02)
    floor = 0.02 * 4.0 * 2.2e-16 * Ks * xmax / float(l0.min()) / wmin if g > 0 else 0.0
    return SagFreeProblem(model, state, p0, Ks, Kb, Kt, l0, tan, elen, W0, JWv, GM, MT, dW, S, inv_cw, float(l0[1:].sum()),
                          floor)


def bounds(problem: SagFreeProblem, options: SagFreeOptions) -> tuple[np.ndarray, np.ndarray]:
    """Box ``lo <= p <= hi`` (Eqs. 16-19); the ``rest`` scheme pins the stiffness scales at their initial values."""
    p0 = problem.p0
    lo = np.empty_like(p0)
    hi = np.empty_like(p0)
    P = p0.shape[0]
    for b in range(0, P, 7):
        lo[b:b + 2] = p0[b:b + 2] - options.delta
        hi[b:b + 2] = p0[b:b + 2] + options.delta
        lo[b + 3] = p0[b + 3] - options.delta
        hi[b + 3] = p0[b + 3] + options.delta
        for k in (2, 4, 6):
            if options.scheme == "rest":
                lo[b + k] = hi[b + k] = p0[b + k]
            else:
                lo[b + k] = options.eps
                hi[b + k] = np.inf
        lo[b + 5] = options.eps
        hi[b + 5] = np.inf
    return lo, hi


def weights(problem: SagFreeProblem, options: SagFreeOptions) -> np.ndarray:
    W = np.full(problem.nparams, options.w_rest)
    W[2::7] = options.w_stiff
    W[4::7] = options.w_stiff
    W[6::7] = options.w_stiff
    return W


def constraint(problem: SagFreeProblem, p: np.ndarray, want_J: bool = False):
    """``(f, c, J)``: net force (4n-1,), scaled constraint (4n-8,), Jacobian windows (4n-8, 19) at ``p``."""
    N = problem.S.shape[0]
    cs = np.empty(N, dtype=np.int64)
    K.sf_window_starts(problem.nv, cs)
    f = np.empty(N)
    c = np.empty(N - K.NFIX)
    J = np.zeros((N - K.NFIX, K.JW))
    K.sf_constraint(np.ascontiguousarray(p, dtype=float), want_J, problem.tan, problem.elen, problem.l0, problem.Ks,
                    problem.Kb, problem.Kt, problem.model.lvor, problem.W0, problem.JWv, problem.GM, problem.MT,
                    problem.dW, problem.model.fext, problem.S, cs, f, c, J)
    return f, c, J


def jacobian_dense(problem: SagFreeProblem, J: np.ndarray) -> np.ndarray:
    N = problem.S.shape[0]
    cs = np.empty(N, dtype=np.int64)
    K.sf_window_starts(problem.nv, cs)
    P = problem.nparams
    out = np.zeros((N - K.NFIX, P))
    for r in range(N - K.NFIX):
        c0 = cs[r + K.NFIX]
        for k in range(K.JW):
            if 0 <= c0 + k < P:
                out[r, c0 + k] = J[r, k]
    return out


def model_from_params(problem: SagFreeProblem, p: np.ndarray) -> DERImplicitModel:
    """The forward-simulation model with parameters ``p`` (same energies as the constraint)."""
    m = problem.model
    nv = problem.nv
    ks = np.full(nv - 1, problem.Ks)
    lbar = problem.l0.copy()
    kbend = m.kbend.copy()
    ktwist = m.ktwist.copy()
    wbar = m.wbar.copy()
    mbar = m.mbar.copy()
    for i in range(1, nv - 1):
        b = 7 * (i - 1)
        wbar[i, 0:2] = p[b:b + 2]
        wbar[i, 2:4] = p[b:b + 2] + problem.dW[i]
        kbend[i] = problem.Kb * p[b + 2]
        mbar[i] = p[b + 3]
        ktwist[i] = problem.Kt * p[b + 4]
        lbar[i] = problem.l0[i] * p[b + 5]
        ks[i] = problem.Ks * p[b + 6]
    return with_params(m, ks=ks, lbar=lbar, kbend=kbend, wbar=wbar, ktwist=ktwist, mbar=mbar)


def optimize_strand(problem: SagFreeProblem, options: SagFreeOptions = SagFreeOptions(), *,
                    lam0: np.ndarray | None = None, p_init: np.ndarray | None = None,
                    capture_at: int = -1, capture: dict | None = None) -> SagFreeResult:
    """Run the optimization (module docstring). ``p_init``/``lam0`` warm-start parameters and multipliers.
    ``capture_at``/``capture``: copy that iteration's QP into ``capture`` (keys H, b, lo, hi)."""
    lo, hi = bounds(problem, options)
    W = weights(problem, options)
    p = problem.p0.copy() if p_init is None else np.clip(np.asarray(p_init, dtype=float).copy(), lo, hi)
    m = problem.S.shape[0] - K.NFIX
    lam = np.zeros(m) if lam0 is None else np.asarray(lam0, dtype=float).copy()
    hist = np.full(options.max_iters + 1, np.nan)
    stats = np.zeros(7)
    P = problem.nparams
    capH = np.zeros((P, K.HBW + 1))
    capb = np.zeros(P)
    caplo = np.zeros(P)
    caphi = np.zeros(P)
    update_dual = options.scheme == "alm"
    tol = max(options.tol, problem.residual_floor)
    t0 = time.perf_counter()
    c0 = time.process_time()
    K.sf_optimize(p, problem.p0, lo, hi, W, lam, float(options.rho), float(options.rho_growth), float(options.rho_max), update_dual, int(options.max_iters), float(tol),
                  QP_SOLVERS[options.qp], PC_NAMES[options.precond], float(options.qp_rtol), float(options.qp_atol),
                  int(options.qp_maxit), bool(options.warm_start), float(options.box_mu), problem.tan, problem.elen,
                  problem.l0, problem.Ks, problem.Kb, problem.Kt, problem.model.lvor, problem.W0, problem.JWv,
                  problem.GM, problem.MT, problem.dW, problem.model.fext, problem.S, problem.inv_cw, hist, stats,
                  int(capture_at), capH, capb, caplo, caphi)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if capture is not None and capture_at >= 0:
        capture.update(H=capH, b=capb, lo=caplo, hi=caphi)
    its = int(stats[0])
    status = int(stats[2])
    res = float(stats[3])
    stiff = np.r_[p[2::7] - 1.0, p[4::7] - 1.0, p[6::7] - 1.0]
    rest = np.r_[(p[0::7] - problem.p0[0::7]), (p[1::7] - problem.p0[1::7]), (p[3::7] - problem.p0[3::7]), (p[5::7] - 1.0)]
    tol_b = 1e-12
    bounds_ok = bool(np.all(p >= lo - tol_b * (1 + np.abs(lo))) and np.all(p <= hi + tol_b * (1 + np.abs(np.where(np.isfinite(hi), hi, 0)))))
    success = status == 1
    if status == 1:
        msg = f"converged in {its} iterations (residual {res:.3e} <= {tol:.1e})"
    elif status == 0:
        msg = f"not converged: iteration cap {options.max_iters} reached (residual {res:.3e} > {tol:.1e})"
    elif status == -1:
        msg = f"stopped after {its} iterations: line search failed (residual {res:.3e})"
    else:
        msg = f"stopped after {its} iterations: stationary point of the subproblem with the force constraint violated (residual {res:.3e})"
    return SagFreeResult(success, msg, status, its, int(stats[1]), int(stats[4]), res, float(hist[0]), hist[: its + 1].copy(),
                         p, problem.p0.copy(), lam, model_from_params(problem, p), wall, float(np.abs(stiff).max(initial=0.0)),
                         float(np.abs(rest).max(initial=0.0)), bounds_ok, int(stats[5]), cpu)


def strand_world(problem: SagFreeProblem, model: DERImplicitModel):
    """The strand of ``problem`` with the parameters of ``model`` (:func:`model_from_params`, or the
    naive ``problem.model``) as a :class:`rodlab.World`, for the ``der-implicit`` simulator.

    Returns ``(world, x, theta)``: the world and the groomed positions (n, 3) [m] and material angles
    (n - 1,) [rad] to start from. The world's rod: rest polyline along the groomed edges with the
    model's rest lengths; root edge clamped; per-edge stretching stiffness, per-joint bending and
    twisting stiffness (``joint_bending``, ``joint_twisting``), rest curvature and rest twist; the
    groomed reference directors as ``rest_d1``. The model keeps its Voronoi weights from the groomed
    edge lengths; the world's come from its rest lengths, so the joint stiffness is scaled by their
    ratio (the energies are equal). Linear density per edge ``rho A l0 / lbar`` keeps the groomed
    masses, gravity is read from the model's external force. Same energies, masses and loads as
    ``model`` to round-off."""
    from ..world import WorldBuilder

    x, theta = unpack_dofs(problem.state.q)
    nv = x.shape[0]
    l0, lbar = problem.l0, np.asarray(model.lbar, dtype=float)
    vm = model.mass[0::4]
    rho_a = 2.0 * float(vm[0]) / float(l0[0])
    lumped = np.zeros(nv)
    lumped[:-1] += 0.5 * rho_a * l0
    lumped[1:] += 0.5 * rho_a * l0
    radius = math.sqrt(2.0 * float(model.mass[3]) / (rho_a * float(l0[0])))
    g = model.fext[0:3] / float(vm[0])
    fext = np.zeros_like(model.fext)
    for c in range(3):
        fext[c::4] = vm * g[c]
    require(bool(np.allclose(vm, lumped, rtol=1e-12, atol=0.0) and np.allclose(model.mass[3::4], rho_a * 0.5 * radius**2 * l0,
                                                                          rtol=1e-12, atol=0.0)),
            "model must have the masses of the problem's uniform strand (model_from_params or problem.model)")
    require(bool(np.allclose(model.fext, fext, rtol=1e-12, atol=1e-300)), "model's external force must be gravity only")
    clamp = np.zeros(model.fixed.shape, dtype=bool)
    clamp[0:7] = True
    require(bool(np.array_equal(model.fixed, clamp)), "model must hold the root edge only (x_0, x_1, theta_0)")
    require(bool(np.allclose(model.lvor, problem.model.lvor, rtol=1e-14, atol=0.0)),
            "model must keep the problem's Voronoi weights lvor")
    t = np.diff(x, axis=0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    xr = np.vstack([x[:1], x[0] + np.cumsum(t * lbar[:, None], axis=0)])
    lvor = lbar[:-1] + lbar[1:]
    scale = lvor / model.lvor[1:-1]
    b = WorldBuilder(gravity=tuple(g), damping=float(model.damping))
    r = b.add_rod(xr, joint_bending=model.kbend[1:-1] * scale, joint_twisting=model.ktwist[1:-1] * scale,
                  linear_density=rho_a * l0 / lbar, stretching=np.asarray(model.ks, dtype=float), radius=radius,
                  rest_d1=problem.state.a1, rest_curvature=model.wbar[1:-1], rest_twist=model.mbar[1:-1])
    b.clamp(r, "start")
    return b.build(), x, theta


def forward_drift(problem: SagFreeProblem, model: DERImplicitModel, t_end: float, *, fps: float = 60.0, substeps: int = 4,
                  newton_iters: int = 1, record: int = 0, integrator: str = "backward-euler"):
    """Simulate from the groomed state with ``model`` (the paper's setting: 60 fps, 4 substeps, one Newton
    iteration) through the ``der-implicit`` simulator on :func:`strand_world` and
    :func:`rodlab.experiment.record` (one chunk of ``substeps`` steps per frame); returns ``(max vertex
    displacement over the frames / strand length, frames (t, x))``, about ``record`` frames kept
    besides the first (0: the first only). ``integrator``: the simulator's option (backward-euler or bdf2)."""
    from ..experiment import record as record_frames
    from ..solvers import make_simulator

    require(math.isfinite(fps) and fps > 0, f"fps must be > 0 (got {fps})")
    require(isinstance(substeps, (int, np.integer)) and substeps >= 1, f"substeps must be an integer >= 1 (got {substeps})")
    world, x0, theta = strand_world(problem, model)
    sim = make_simulator(world, "der-implicit", dt=1.0 / (fps * substeps), newton_iters=int(newton_iters),
                         bending="2d-average" if model.curv2d else "4d", line_search_failures="count",
                         integrator=integrator)
    state = sim.initial_state()
    state.vertex_x[...] = x0
    state.edge_theta[...] = theta
    nframes = int(round(t_end * fps))
    rec = record_frames(sim, state, nframes * int(substeps), frames=max(nframes, 1))
    drift = float(np.linalg.norm(rec.x[1:] - x0, axis=2).max()) if nframes > 0 else 0.0
    keep = [0]
    if record:
        every = max(nframes // record, 1)
        keep += [k + 1 for k in range(nframes) if k % every == 0 or k == nframes - 1]
    return drift / problem.strand_length, (rec.t[keep], rec.x[keep])
