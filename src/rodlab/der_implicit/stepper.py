"""Implicit-Euler DER stepper on interleaved DOFs (Bergou et al. 2010; Takahashi and Batty, Sec. III, VI).

One step of size ``h`` minimizes the incremental potential

``Phi(q) = 1/(2 h^2) |q - q_t - h v_t|_M^2 + c/(2h) |q - q_t|_M^2 + E(q) - f_ext . q``

(inertia, mass-proportional viscous damping ``-c M v`` taken implicitly, elastic energy, constant
external force) by Newton's method on the banded SPD Hessian (exact stretching Hessian projected
to SPD, Gauss-Newton bending and twisting; see :mod:`.energies`), a banded LDL^T solve
(:mod:`.hessian_ldlt`, the band-10 factor of :mod:`rodlab.linalg.banded_ldlt` cut to the stencil's
profile) and a backtracking (Armijo) line search on ``Phi``. The
reference frames are time-parallel: at every Newton iterate they are the parallel transport of
the step's initial frames to the current tangents. ``v_{t+h} = (q - q_t) / h``.

Clamped / fixed unknowns are held: their gradient entries are zeroed and their Hessian rows and
columns replaced by the identity. The paper's forward setting is one Newton iteration per step,
four steps per frame, 60 frames per second (``h = 1/240 s``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from ..model import check_damping_scheme, check_steps
from ..linalg.banded_ldlt import ldlt_solve_band10
from .hessian_ldlt import der_hessian_ldlt_factor
from .energies import (_E0, _WS_E, BANDWIDTH, WANT_DERIVATIVES, der_elastic, der_elastic_ws, edge_geometry,
                       update_frames)
from .slerp_bending import BRANCHES, GRADIENTS, _frames_at, slerp_elastic

from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)


@dataclass(frozen=True, eq=False)
class DERImplicitModel:
    """Immutable rod description on interleaved DOFs (SI units).

    Per edge (n-1,): ``ks`` stretching stiffness [N], ``lbar`` rest length [m].
    Per vertex (n,), interior entries used: ``kbend`` [N m^2], ``wbar`` (n, 4) rest 4D curvature,
    ``ktwist`` [N m^2], ``mbar`` rest twist [rad], ``lvor`` = ``lbar_{i-1} + lbar_i`` [m] (fixed
    Voronoi weights, kept from the initial rest lengths when rest lengths are optimized).
    ``mass`` (4n-1,): lumped vertex masses [kg] on positions, edge polar moments [kg m^2] on angles.
    ``fixed`` (4n-1,) bool: held unknowns. ``fext`` (4n-1,): constant external force [N] (gravity).
    """

    ks: np.ndarray
    lbar: np.ndarray
    kbend: np.ndarray
    wbar: np.ndarray
    ktwist: np.ndarray
    mbar: np.ndarray
    lvor: np.ndarray
    mass: np.ndarray
    fixed: np.ndarray
    fext: np.ndarray
    damping: float = 0.0
    curv2d: bool = False

    @property
    def nv(self) -> int:
        return self.lbar.shape[0] + 1

    def __post_init__(self):
        nv = self.lbar.shape[0] + 1
        n = 4 * nv - 1
        for name, arr, shape in (
            ("ks", self.ks, (nv - 1,)),
            ("lbar", self.lbar, (nv - 1,)),
            ("kbend", self.kbend, (nv,)),
            ("wbar", self.wbar, (nv, 4)),
            ("ktwist", self.ktwist, (nv,)),
            ("mbar", self.mbar, (nv,)),
            ("lvor", self.lvor, (nv,)),
            ("mass", self.mass, (n,)),
            ("fixed", self.fixed, (n,)),
            ("fext", self.fext, (n,)),
        ):
            if np.shape(arr) != shape:
                raise ValueError(f"{name} must have shape {shape} for {nv} vertices (got {np.shape(arr)})")
        if nv < 3:
            raise ValueError(f"need at least 3 vertices (got {nv})")
        if not np.all(self.lbar > 0):
            raise ValueError("rest lengths lbar must be > 0 m")
        if not np.all(self.lvor[1:-1] > 0):
            raise ValueError("Voronoi weights lvor must be > 0 m at interior vertices")
        if not (self.damping >= 0 and math.isfinite(self.damping)):
            raise ValueError(f"damping must be >= 0 1/s (got {self.damping})")


@dataclass
class DERImplicitState:
    """What changes every step: ``q`` (4n-1,), ``v`` (4n-1,), reference directors ``a1`` (n-1, 3)
    with the tangents ``tan`` they belong to, reference twist ``mref`` (n-2,), time ``t`` [s]."""

    q: np.ndarray
    v: np.ndarray
    a1: np.ndarray
    tan: np.ndarray
    mref: np.ndarray
    t: float = 0.0

    def copy(self) -> "DERImplicitState":
        return DERImplicitState(self.q.copy(), self.v.copy(), self.a1.copy(), self.tan.copy(), self.mref.copy(), self.t)


@dataclass(frozen=True)
class StepStats:
    """Counters of a call to :meth:`DERImplicitStepper.advance`."""

    steps: int
    newton_iters: int
    line_search_failures: int
    wall_s: float
    last_grad_norm: float
    success: bool = True
    message: str = "ok"


@njit(inline="always", **JIT)
def add_inertia(q, qhat, q0, mass, fext, a_in, a_dmp, E, g, band):
    """Add the implicit step's inertia, viscous damping and external load to the energy ``E``
    (returned), gradient ``g`` and banded Hessian ``band``: per unknown ``r``,
    ``m_r (a_in (q - qhat)^2 + a_dmp (q - q0)^2) / 2 - f_r q``, with ``a_in = 1 / h^2`` (or BDF2's
    coefficient) and ``a_dmp`` the damping's; the Hessian term goes on the band's diagonal."""
    for r in range(q.shape[0]):
        d1 = q[r] - qhat[r]
        d0 = q[r] - q0[r]
        E += mass[r] * (0.5 * a_in * d1 * d1 + 0.5 * a_dmp * d0 * d0) - fext[r] * q[r]
        g[r] += mass[r] * (a_in * d1 + a_dmp * d0) - fext[r]
        band[r, 0] += mass[r] * (a_in + a_dmp)
    return E


@njit(inline="always", **JIT)
def add_inertia_derivatives(q, qhat, q0, mass, fext, a_in, a_dmp, g, band):
    """:func:`add_inertia`'s gradient and Hessian terms alone (bitwise the same), without the energy's
    running sum: a loop without a dependency from one unknown to the next."""
    for r in range(q.shape[0]):
        d1 = q[r] - qhat[r]
        d0 = q[r] - q0[r]
        g[r] += mass[r] * (a_in * d1 + a_dmp * d0) - fext[r]
        band[r, 0] += mass[r] * (a_in + a_dmp)


@njit(**JIT)
def _hold_fixed(fixed_idx, g, band):
    p = band.shape[1] - 1
    n = band.shape[0]
    for t in range(fixed_idx.shape[0]):
        r = fixed_idx[t]
        g[r] = 0.0
        for k in range(p + 1):
            band[r, k] = 0.0
        for k in range(1, p + 1):
            if r + k < n:
                band[r + k, k] = 0.0
        band[r, 0] = 1.0


# bending models of the Newton loop (``bending`` argument)
BENDING_4D = 0          # 4D curvature, the paper's model [6]
BENDING_2D_AVERAGE = 1  # 2D curvature on averaged material frames [7] (Fig. 2)
BENDING_2D_SLERP = 2    # 2D curvature on slerped frames [41] (Fig. 3), see slerp_bending.py
NO_SLERP = np.zeros((0, 2))  # ``wbar2`` when the bending is not slerped


@njit(**JIT)
def _elastic(bending, q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, wbar2, branch, exact,
             want, g, band):
    """Elastic energy (and gradient / Gauss-Newton Hessian for ``want`` 1 / 2) of the chosen bending model.
    ``wbar2`` None: a caller without the slerped bending; numba then prunes the branch below on the None
    argument, and the slerped model (:func:`.slerp_bending.slerp_elastic`) is not compiled into it."""
    if wbar2 is None:
        return der_elastic(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor,
                           bending == BENDING_2D_AVERAGE, want, g, band)
    if bending == BENDING_2D_SLERP:
        return slerp_elastic(q, tan, elen, a1, mref, ks, lbar, kbend, wbar2, ktwist, mbar, lvor, branch, exact,
                             want, g, band)
    return der_elastic(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor,
                       bending == BENDING_2D_AVERAGE, want, g, band)


@njit(**JIT)
def _phi(q, qhat, q0, mass, a_in, a_dmp, fext, tan_b, a1_b, mref_b, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist,
         mbar, lvor, bending, wbar2, branch, exact, g, band):
    update_frames(q, tan_b, a1_b, mref_b, tan, elen, a1, mref)
    E = _elastic(bending, q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, wbar2, branch, exact,
                 np.int64(0), g, band)  # np.int64: not one compilation per literal
    for r in range(q.shape[0]):
        d1 = q[r] - qhat[r]
        d0 = q[r] - q0[r]
        E += mass[r] * (0.5 * a_in * d1 * d1 + 0.5 * a_dmp * d0 * d0) - fext[r] * q[r]
    return E


@njit(inline="always", **JIT)
def copy_vec(dst, src):
    """``dst[:] = src`` as a loop: a slice assignment between two arrays compiles numba's broadcasting
    checks and their error path (``ol_raise_with_shape_context``, about 1.5 s of compile time per pair
    of array types, measured on the der call tree, 2026-11-25). Same length assumed."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(inline="always", **JIT)
def copy_rows(dst, src):
    """``dst[:, :] = src`` as a loop (:func:`copy_vec`), for 2D arrays of one shape."""
    for i in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


# what newton_minimize's first iteration knows of the frames at ``q`` (its ``frames`` argument)
FRAMES_TRANSPORT = 0  # nothing: transport the base frames to q's tangents
FRAMES_BASE = 1  # the base frames are q's (tangents included): compute the edge lengths, copy the frames
FRAMES_WORK = 2  # the work frames (tan, elen, a1, mref) are q's and equal to the base: nothing to compute


@njit(**JIT)
def newton_minimize(q, qhat, q0, mass, a_in, a_dmp, fext, fixed_idx, tan_b, a1_b, mref_b,
                    ks, lbar, kbend, wbar, ktwist, mbar, lvor, bending, wbar2, branch, exact, max_iters, gtol, ls_max,
                    rebase, tan, elen, a1, mref, gs, bands, D, dq, qt, m1, m2, R, stats, frames, reuse, held):
    """Minimize ``Phi`` (module docstring) from ``q`` in place; returns ``(iterations, held)``.

    ``a_in = 1/h^2``, ``a_dmp = c/h`` (both 0 for statics). ``rebase``: after each accepted
    iterate, the current frames become the base of the next transport (statics); otherwise frames
    are always transported from the step's start (``tan_b``, ``a1_b``, ``mref_b``). ``stats`` (3,)
    accumulates iterations, line-search failures, and receives the last free-gradient max-norm.
    ``bending``: ``BENDING_*`` (``wbar2``, ``branch``, ``exact``: the slerped model's rest curvature
    and options, see slerp_bending.py; ``wbar2`` None: not the slerped model, which is then not compiled
    in, see :func:`_elastic`). ``ls_max = 0`` takes full Newton steps (no line search).
    ``frames``: ``FRAMES_BASE`` when the base frames belong to ``q`` itself (``tan_b`` are ``q``'s
    tangents: a time step that starts where the last one ended, no clamp moved in between), so the
    first iteration's frames are the base frames and only the edge lengths are computed (saves one
    transport); ``FRAMES_WORK`` when moreover the work frames ``tan``, ``elen``, ``a1``, ``mref`` hold
    them already (the step before ended by computing them at ``q``: nothing to compute);
    ``FRAMES_TRANSPORT`` otherwise. ``ls_max = 0``: no line search, the full step is taken in place.

    ``gs`` (2, n), ``bands`` (2, n, 11): gradient / Hessian buffers (only the first is used unless
    ``reuse``); ``m1``, ``m2`` (E, 3), ``R`` (``_WS_E + 1``): :func:`.energies.der_elastic_ws`'s
    workspace. ``reuse`` (4D and averaged 2D bending, ``rebase`` False: the batch driver): the
    first trial of the line search (the full Newton step) is assembled with its gradient and
    Hessian (``der_elastic_ws``, ``want = 2``) into the other buffer; when it is accepted, the next
    iteration, or the next step's first one (its base frames are then the trial's), starts at that
    very point with those very frames, so its elastic energy, gradient and Hessian are the trial's,
    bit for bit, and are not computed again. The Armijo test uses the trial's energy in the order of
    ``want = 0`` (``R[_E0]``), so every decision is that of the plain loop. ``held`` (-1, 0 or 1):
    the buffer that already holds the elastic part at ``q`` with the frames in ``tan``, ``elen``,
    ``a1``, ``mref`` (those the first iteration would compute), its energy [J] in ``R[_WS_E]``;
    the returned ``held`` is the buffer holding it at the new ``q`` (-1: none; always -1 without
    ``reuse``)."""
    n = q.shape[0]
    its = 0
    curv2d = bending == BENDING_2D_AVERAGE
    for it in range(max_iters):
        if held >= 0:
            cur = held
            g = gs[cur]
            band = bands[cur]
            E = R[_WS_E]
        else:
            cur = 0
            g = gs[0]
            band = bands[0]
            if it == 0 and frames == FRAMES_WORK:
                pass
            elif it == 0 and frames == FRAMES_BASE:
                edge_geometry(q, tan, elen)
                copy_rows(a1, a1_b)
                copy_vec(mref, mref_b)
            else:
                update_frames(q, tan_b, a1_b, mref_b, tan, elen, a1, mref)
            g[:] = 0.0
            band[:, :] = 0.0
            if reuse:  # (no line search: no energy is compared, none is computed)
                E = der_elastic_ws(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, curv2d,
                                   np.int64(2) if ls_max > 0 else np.int64(WANT_DERIVATIVES), g, band, m1, m2, R)
            else:
                E = _elastic(bending, q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, wbar2, branch,
                             exact, np.int64(2), g, band)
        held = -1
        if ls_max > 0:
            E = add_inertia(q, qhat, q0, mass, fext, a_in, a_dmp, E, g, band)
        else:  # the energy is not compared (full Newton steps)
            add_inertia_derivatives(q, qhat, q0, mass, fext, a_in, a_dmp, g, band)
        _hold_fixed(fixed_idx, g, band)
        gmax = 0.0
        for r in range(n):
            if abs(g[r]) > gmax:
                gmax = abs(g[r])
        stats[2] = gmax
        if gmax <= gtol:
            break
        der_hessian_ldlt_factor(band, D, 1e-13)
        for r in range(n):
            dq[r] = -g[r]
        ldlt_solve_band10(band, D, dq)
        ok = ls_max == 0
        if ok:  # the full Newton step, in place
            for r in range(n):
                q[r] = q[r] + dq[r]
        slope = 0.0
        if not ok:
            for r in range(n):
                slope += g[r] * dq[r]
        alpha = 1.0
        for ls in range(ls_max):
            for r in range(n):
                qt[r] = q[r] + alpha * dq[r]
            nxt = -1
            if reuse:
                update_frames(qt, tan_b, a1_b, mref_b, tan, elen, a1, mref)
                if ls == 0:
                    nxt = 1 - cur
                    gn = gs[nxt]
                    bn = bands[nxt]
                    gn[:] = 0.0
                    bn[:, :] = 0.0
                    Ekeep = der_elastic_ws(qt, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, curv2d,
                                           np.int64(2), gn, bn, m1, m2, R)
                else:
                    Ekeep = der_elastic_ws(qt, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, curv2d,
                                           np.int64(0), g, band, m1, m2, R)  # np.int64: one compilation
                Et = R[_E0]
                for r in range(n):
                    d1 = qt[r] - qhat[r]
                    d0 = qt[r] - q0[r]
                    Et += mass[r] * (0.5 * a_in * d1 * d1 + 0.5 * a_dmp * d0 * d0) - fext[r] * qt[r]
            else:
                Ekeep = 0.0
                Et = _phi(qt, qhat, q0, mass, a_in, a_dmp, fext, tan_b, a1_b, mref_b, tan, elen, a1, mref,
                          ks, lbar, kbend, wbar, ktwist, mbar, lvor, bending, wbar2, branch, exact, g, band)
            if Et <= E + 1e-4 * alpha * slope + 1e-12 * (abs(E) + abs(Et)):
                ok = True
                if nxt >= 0:
                    held = nxt
                    R[_WS_E] = Ekeep
                break
            alpha *= 0.5
        its += 1
        stats[0] += 1
        if not ok:
            stats[1] += 1
            break
        if ls_max > 0:
            for r in range(n):
                q[r] = qt[r]
        if rebase:
            update_frames(q, tan_b, a1_b, mref_b, tan, elen, a1, mref)
            copy_rows(tan_b, tan)
            copy_rows(a1_b, a1)
            copy_vec(mref_b, mref)
    return its, held


def newton_workspace(n: int, ne: int) -> tuple:
    """Fresh ``(gs, bands, m1, m2, R)`` for :func:`newton_minimize` with ``n`` unknowns and ``ne`` edges."""
    return np.empty((2, n)), np.empty((2, n, BANDWIDTH + 1)), np.empty((ne, 3)), np.empty((ne, 3)), np.empty(_WS_E + 1)


@njit(**JIT)
def implicit_euler_steps(q, v, a1, tanr, mref, mass, fext, fixed_idx, ks, lbar, kbend, wbar, ktwist, mbar, lvor,
                         bending, wbar2, branch, exact, h, damping, decay, nsteps, newton_iters, gtol, ls_max, stats):
    """``nsteps`` implicit-Euler steps in place on ``q, v, a1, tanr, mref`` (see :func:`newton_minimize`).
    ``damping`` [1/s] enters the step's solve (the implicit scheme); ``decay`` then scales the step's
    velocity (``exp(-c h)`` for the exponential scheme, 1 otherwise)."""
    n = q.shape[0]
    ne = tanr.shape[0]
    tan = np.empty((ne, 3))
    elen = np.empty(ne)
    a1w = np.empty((ne, 3))
    mrefw = np.empty(mref.shape[0])
    gs = np.empty((2, n))
    bands = np.empty((2, n, BANDWIDTH + 1))
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    R = np.empty(_WS_E + 1)
    D = np.empty(n)
    dq = np.empty(n)
    qt = np.empty(n)
    q0 = np.empty(n)
    qhat = np.empty(n)
    a_in = 1.0 / (h * h)
    a_dmp = damping / h
    for s in range(nsteps):
        for r in range(n):
            q0[r] = q[r]
            qhat[r] = q[r] + h * v[r]
        for t in range(fixed_idx.shape[0]):
            qhat[fixed_idx[t]] = q[fixed_idx[t]]
        frames = FRAMES_WORK if s > 0 else FRAMES_TRANSPORT  # (the frames at q, below)
        newton_minimize(q, qhat, q0, mass, a_in, a_dmp, fext, fixed_idx, tanr, a1, mref,
                        ks, lbar, kbend, wbar, ktwist, mbar, lvor, bending, wbar2, branch, exact, newton_iters, gtol,
                        ls_max, False, tan, elen, a1w, mrefw, gs, bands, D, dq, qt, m1, m2, R, stats, frames, False,
                        np.int64(-1))
        update_frames(q, tanr, a1, mref, tan, elen, a1w, mrefw)
        copy_rows(tanr, tan)
        copy_rows(a1, a1w)
        copy_vec(mref, mrefw)
        for r in range(n):
            v[r] = decay * (q[r] - q0[r]) / h


def _bending(model: DERImplicitModel) -> int:
    return BENDING_2D_AVERAGE if model.curv2d else BENDING_4D


def _fixed_idx(model: DERImplicitModel) -> np.ndarray:
    return np.flatnonzero(np.asarray(model.fixed, dtype=bool)).astype(np.int64)


class DERImplicitStepper:
    """Implicit Euler for :class:`DERImplicitModel` (module docstring).

    ``h`` [s] step, ``newton_iters`` per step (the paper: 1), ``gtol`` free-gradient max-norm [N] that
    ends the Newton loop early, ``line_search`` max halvings, ``damping_scheme`` how the model's
    viscous damping is discretised (:data:`rodlab.model.DAMPING_SCHEMES`, docs/damping.md).
    """

    def __init__(self, model: DERImplicitModel, *, h: float = 1.0 / 240.0, newton_iters: int = 1,
                 gtol: float = 0.0, line_search: int = 12, damping_scheme: str = "implicit"):
        if not (h > 0 and math.isfinite(h)):
            raise ValueError(f"time step h must be > 0 s (got {h})")
        if newton_iters < 1:
            raise ValueError(f"newton_iters must be >= 1 (got {newton_iters})")
        if line_search < 0:
            raise ValueError(f"line_search must be >= 0 (got {line_search})")
        self.model = model
        self.h = float(h)
        self.newton_iters = int(newton_iters)
        self.gtol = float(gtol)
        self.line_search = int(line_search)
        self.damping_scheme = check_damping_scheme(damping_scheme)
        self._fixed = _fixed_idx(model)
        # bending model of the Newton loop: the model's (4D or averaged 2D); SlerpStepper changes it
        self._bending, self._wbar2, self._branch, self._exact = _bending(model), NO_SLERP, 0, 0

    def _damping_terms(self) -> tuple[float, float]:
        """(rate in the step's solve, velocity factor after it) of the kernel."""
        c = float(self.model.damping)
        if self.damping_scheme == "exponential":
            return 0.0, math.exp(-c * self.h)
        return c, 1.0

    @classmethod
    def from_frame_rate(cls, model: DERImplicitModel, *, fps: float = 60.0, substeps: int = 4, newton_iters: int = 1,
                        **kwargs) -> "DERImplicitStepper":
        """The paper's setting by default: 60 frames per second, four substeps per frame, one Newton
        iteration per substep (``h = 1 / (fps * substeps)``)."""
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError(f"fps must be > 0 (got {fps})")
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1 (got {substeps})")
        st = cls(model, h=1.0 / (fps * substeps), newton_iters=newton_iters, **kwargs)
        st.substeps = int(substeps)
        return st

    def advance_frames(self, state: DERImplicitState, nframes: int) -> StepStats:
        """Advance by ``nframes`` frames of ``substeps`` steps each (see :meth:`from_frame_rate`)."""
        return self.advance(state, check_steps(nframes, "nframes") * getattr(self, "substeps", 1))

    def advance(self, state: DERImplicitState, nsteps: int) -> StepStats:
        """Advance ``state`` in place by ``nsteps`` steps (one compiled call)."""
        nsteps = check_steps(nsteps)
        m = self.model
        stats = np.zeros(3)
        t0 = time.perf_counter()
        implicit_euler_steps(state.q, state.v, state.a1, state.tan, state.mref, m.mass, m.fext, self._fixed,
                             m.ks, m.lbar, m.kbend, m.wbar, m.ktwist, m.mbar, m.lvor, self._bending, self._wbar2,
                             self._branch, self._exact, self.h,
                             *self._damping_terms(), int(nsteps), self.newton_iters, self.gtol, self.line_search, stats)
        wall = time.perf_counter() - t0
        state.t += nsteps * self.h
        ok = bool(np.all(np.isfinite(state.q)))
        return StepStats(int(nsteps), int(stats[0]), int(stats[1]), wall, float(stats[2]), ok,
                         "ok" if ok else "non-finite state")


class SlerpStepper(DERImplicitStepper):
    """:class:`DERImplicitStepper` with the model's bending replaced by the slerped-frame 2D model
    of [41] (slerp_bending.py; Fig. 3 of the sag-free paper).

    ``wbar2`` (n, 2): rest 2D curvature (:func:`.slerp_bending.rest_curvature2`); ``gradient``:
    ``"approx"`` ([41], frame held constant) or ``"exact"``; ``branch``: ``"twist"`` or ``"shortest"``;
    ``line_search``: max halvings of the Armijo search (0: full Newton steps). ``model.wbar`` and
    ``model.curv2d`` are not used."""

    def __init__(self, model: DERImplicitModel, wbar2: np.ndarray, *, gradient: str = "approx", branch: str = "twist",
                 h: float = 1.0 / 240.0, newton_iters: int = 1, line_search: int = 12):
        super().__init__(model, h=h, newton_iters=newton_iters, line_search=line_search)
        if gradient not in GRADIENTS:
            raise ValueError(f"gradient must be one of {GRADIENTS} (got {gradient!r})")
        if branch not in BRANCHES:
            raise ValueError(f"branch must be one of {BRANCHES} (got {branch!r})")
        wbar2 = np.ascontiguousarray(wbar2, dtype=float)
        if wbar2.shape != (model.nv, 2):
            raise ValueError(f"wbar2 must have shape {(model.nv, 2)} (got {wbar2.shape})")
        self.wbar2 = wbar2
        self._bending, self._wbar2 = BENDING_2D_SLERP, wbar2
        self._branch, self._exact = BRANCHES.index(branch), int(gradient == "exact")

    def elastic_energy(self, state: DERImplicitState) -> float:
        m = self.model
        tan, elen, a1, mref = _frames_at(state)
        n = state.q.size
        return float(slerp_elastic(state.q, tan, elen, a1, mref, m.ks, m.lbar, m.kbend, self.wbar2, m.ktwist, m.mbar,
                                   m.lvor, self._branch, self._exact, 0, np.zeros(n), np.zeros((n, BANDWIDTH + 1))))


@dataclass(frozen=True)
class StaticResult:
    success: bool
    message: str
    newton_iters: int
    grad_norm: float
    line_search_failures: int


def solve_static(model: DERImplicitModel, state: DERImplicitState, *, load_steps: int = 8, max_iters: int = 200,
                 gtol: float | None = None) -> StaticResult:
    """Static equilibrium ``grad E = f_ext`` from ``state`` (modified in place), gravity ramped in ``load_steps``.

    ``gtol`` [N]: free-gradient max-norm to reach (default ``1e-7`` times the largest external force,
    at least the round-off level ``1e-13`` times the largest stretching stiffness)."""
    if gtol is None:
        gtol = max(1e-7 * float(np.abs(model.fext).max()), 1e-13 * float(np.abs(model.ks).max()), 1e-12)
    stats = np.zeros(3)
    # a Python loop over the load levels around the compiled Newton loop (a compiled driver would be
    # one more large compilation unit for eight calls)
    n = state.q.shape[0]
    ne = state.tan.shape[0]
    tan, elen, a1w, mrefw = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(state.mref.shape[0])
    gs, bands, m1, m2, R = newton_workspace(n, ne)
    D, dq, qt = np.empty(n), np.empty(n), np.empty(n)
    zeros = np.zeros(n)
    fixed = _fixed_idx(model)
    for ls in range(1, int(load_steps) + 1):
        f = model.fext * (ls / load_steps)
        tol = float(gtol) if ls == load_steps else float(gtol) * 1e3
        newton_minimize(state.q, zeros, zeros, zeros, 0.0, 0.0, f, fixed, state.tan, state.a1, state.mref, model.ks,
                        model.lbar, model.kbend, model.wbar, model.ktwist, model.mbar, model.lvor, _bending(model),
                        NO_SLERP, 0, 0, int(max_iters), tol, 30, True, tan, elen, a1w, mrefw, gs, bands, D, dq, qt,
                        m1, m2, R, stats, FRAMES_TRANSPORT, False, -1)
    ok = stats[2] <= gtol
    msg = "converged" if ok else f"not converged after {int(stats[0])} Newton iterations (gradient {stats[2]:.3e} N > {gtol:.3e} N)"
    state.v[:] = 0.0
    return StaticResult(bool(ok), msg, int(stats[0]), float(stats[2]), int(stats[1]))


# ----------------------------------------------------------------------------- building models


def bishop_reference(x: np.ndarray, u0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Space-parallel reference directors (n-1, 3) and tangents of polyline ``x``."""
    from ..geometry.curves import any_perpendicular, bishop_frames

    x = np.ascontiguousarray(x, dtype=float)
    e = np.diff(x, axis=0)
    ln = np.linalg.norm(e, axis=1)
    if not np.all(ln > 0):
        raise ValueError("polyline has a zero-length edge")
    tan = e / ln[:, None]
    if u0 is None:
        u0 = any_perpendicular(tan[0])
    a1 = np.empty_like(tan)
    a2 = np.empty_like(tan)
    bishop_frames(tan, np.asarray(u0, dtype=float), False, a1, a2)
    return a1, tan


def build_rod(x: np.ndarray, *, radius: float, E: float, G: float, rho: float, gravity=(0.0, 0.0, -9.81),
              damping: float = 0.0, theta: np.ndarray | None = None, clamp_root: bool = True,
              rest_is_current: bool = True, curv2d: bool = False, u0=None) -> tuple[DERImplicitModel, DERImplicitState]:
    """A uniform circular rod through polyline ``x`` (n, 3), at rest in its initial shape.

    Stiffnesses: ``ks = E pi r^2``, ``kbend = E pi r^4 / 4``, ``ktwist = G pi r^4 / 2``; masses: vertex
    ``rho pi r^2`` times its Voronoi length, edge angle ``rho pi r^2 (r^2/2) lbar``. ``clamp_root`` holds
    ``x_0, x_1, theta_0`` (the root edge and its material frame). Frames: Bishop, ``theta = 0``.
    """
    for name, val in (("radius", radius), ("E", E), ("G", G), ("rho", rho)):
        if not (val > 0 and math.isfinite(val)):
            raise ValueError(f"{name} must be > 0 (got {val})")
    x = np.ascontiguousarray(x, dtype=float)
    nv = x.shape[0]
    if x.ndim != 2 or x.shape[1] != 3 or nv < 3:
        raise ValueError(f"x must have shape (n, 3) with n >= 3 (got {x.shape})")
    from .energies import material_curvature_all, pack_dofs

    a1, tan = bishop_reference(x, u0)
    th = np.zeros(nv - 1) if theta is None else np.asarray(theta, dtype=float)
    q = pack_dofs(x, th)
    lbar = np.linalg.norm(np.diff(x, axis=0), axis=1)
    area = math.pi * radius**2
    ks = np.full(nv - 1, E * area)
    kbend = np.full(nv, E * math.pi * radius**4 / 4.0)
    ktwist = np.full(nv, G * math.pi * radius**4 / 2.0)
    lvor = np.zeros(nv)
    lvor[1:-1] = lbar[:-1] + lbar[1:]
    mref = np.zeros(nv - 2)
    tan2 = np.empty_like(tan)
    elen = np.empty(nv - 1)
    a1c = np.empty_like(a1)
    mrefc = np.empty(nv - 2)
    update_frames(q, tan, a1, mref, tan2, elen, a1c, mrefc)
    wbar = np.zeros((nv, 4))
    mbar = np.zeros(nv)
    if rest_is_current:
        material_curvature_all(q, tan2, elen, a1c, mrefc, wbar, mbar)
    mass = np.zeros(4 * nv - 1)
    vm = np.zeros(nv)
    vm[:-1] += 0.5 * rho * area * lbar
    vm[1:] += 0.5 * rho * area * lbar
    for c in range(3):
        mass[c::4] = vm
    mass[3::4] = rho * area * 0.5 * radius**2 * lbar
    fext = np.zeros(4 * nv - 1)
    for c in range(3):
        fext[c::4] = vm * float(gravity[c])
    fixed = np.zeros(4 * nv - 1, dtype=bool)
    if clamp_root:
        fixed[0:7] = True
    model = DERImplicitModel(ks, lbar, kbend, wbar, ktwist, mbar, lvor, mass, fixed, fext, float(damping), bool(curv2d))
    state = DERImplicitState(q, np.zeros_like(q), a1c, tan2, mrefc, 0.0)
    return model, state


def with_params(model: DERImplicitModel, **changes) -> DERImplicitModel:
    """A copy of ``model`` with some arrays replaced (validated again)."""
    return replace(model, **changes)
