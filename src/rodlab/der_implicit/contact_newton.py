"""One compiled call per implicit step of der-implicit with barrier contact and lagged friction (IPC).

The Newton loop of :mod:`.contact_step` (Li et al., "Incremental Potential Contact:
Intersection- and Inversion-free, Large-Deformation Dynamics", ACM TOG 2020, Alg. 1) as one
compiled function, :func:`newton_contact_step`: per iteration the contact table
(:func:`.contact_table.contact_table`), the incremental potential's gradient and Hessian
(:func:`phi`: each rod's elastic band, inertia and damping, the PSD-projected barrier stencils and
the lagged friction of :mod:`.contact`, scattered straight into the lower band and a list of the
entries outside it), the linear solve (:func:`solve_banded_plus`), the CCD-capped step
(:func:`.contact_table.earliest_impact`) and the Armijo backtracking with re-detection at every
trial.

The linear solve: the Hessian is banded (half bandwidth 10: each rod's elastic stencils, and every
obstacle contact, which only couples a vertex with itself or its segment's other end) except for
the entries of rod-rod and self contacts between unknowns more than 10 apart. Without such entries
it is one banded LDL^T (:mod:`rodlab.linalg.banded_ldlt`, the factor of the contact-free step).
With them, the unknowns those entries touch (the *interface*, ``m`` of them) are ordered last:
the rest ``A`` is still banded (taking rows and columns out of a band keeps it a band), and
``H = [A B; B^T C]`` is solved through the Schur complement ``S = C - B^T A^{-1} B`` (dense,
``m x m``, by LAPACK's LU). Each column of ``B`` couples an interface unknown to its 20 band
neighbours, so ``A^{-1} B``'s columns are found by substitutions that stop where the solution
stays zero (a rod's unknowns are not coupled to the next rod's through ``A``): ``O(m n_rod)``
work, not ``O(m D)``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from .batch import (I_BENDING, I_BRANCH, I_EXACT, I_NROD, I_ROD, ROD_COLS, S_EDGE_A1, S_EDGE_A1_BASE, S_EDGE_KS,
                    S_EDGE_LBAR, S_EDGE_LEN, S_EDGE_TAN, S_EDGE_TAN_BASE, S_JOINT_MREF, S_JOINT_MREF_BASE,
                    S_VERTEX_KBEND, S_VERTEX_KTWIST, S_VERTEX_LVOR, S_VERTEX_MBAR, S_VERTEX_WBAR, S_VERTEX_WBAR2,
                    _fsec, _fsec2)
from .contact import N_MOVING, barrier_eval, friction_eval, friction_setup
from .contact_solve import solve_banded_plus
from .contact_table import contact_table, earliest_impact
from .energies import BANDWIDTH, edge_geometry, update_frames
from .stepper import _elastic

OK, NONFINITE_PHI, NONFINITE_STEP = 0, 1, 2
"""Status codes of :func:`newton_contact_step`."""


class NewtonStatics(NamedTuple):
    """Per world, fixed: ``vertex_dof`` (N, 3) and ``theta_dof`` (E,) rows of the global unknowns;
    ``fixed`` (F,) held unknowns and ``dof_is_fixed`` (D,); ``dof_rod_start`` (D,) the first unknown
    of each unknown's rod; ``step_scale`` (D,) the weights of the stopping test (1 on positions,
    the largest contact radius [m] on angles); ``kappa_min`` [N/m]; ``eps_v`` [m/s] friction's
    sliding speed; ``tol`` [m/s]; ``max_iters``; ``ls_max`` (most halvings); ``friction``; ``auto``
    (adaptive stiffness)."""

    vertex_dof: np.ndarray
    theta_dof: np.ndarray
    fixed: np.ndarray
    dof_is_fixed: np.ndarray
    dof_rod_start: np.ndarray
    step_scale: np.ndarray
    kappa_min: float
    eps_v: float
    tol: float
    max_iters: int
    ls_max: int
    friction: bool
    auto: bool


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


# ---- gradient and Hessian ------------------------------------------------------------------------
@njit(**JIT)
def _positions(q, vertex_dof):
    N = vertex_dof.shape[0]
    x = np.empty((N, 3))
    for i in range(N):
        for c in range(3):
            x[i, c] = q[vertex_dof[i, c]]
    return x


@njit(**JIT)
def _local_dofs(ptype, pv, ns):
    """Global unknown of each local row ``3 i + c`` of every contact's moving points (K, 12); -1 for
    fixed points, held unknowns and unused rows."""
    K = ptype.shape[0]
    idx = np.full((K, 12), -1, dtype=np.int64)
    for k in range(K):
        for i in range(N_MOVING[ptype[k]]):
            for c in range(3):
                d = ns.vertex_dof[pv[k, i], c]
                if not ns.dof_is_fixed[d]:
                    idx[k, 3 * i + c] = d
    return idx


@njit(**JIT)
def _scatter(idx, lg, lh, hscale, grad, band, extra, n_extra):
    """Add contact gradients ``lg`` (K, 12) into ``grad`` and Hessians ``hscale lh`` (K, 12, 12) into
    the lower band ``band`` or, more than 10 apart, the rows of ``extra`` (row, column, value; row
    > column) from ``n_extra`` on. Returns the new count."""
    for k in range(idx.shape[0]):
        for a in range(12):
            ia = idx[k, a]
            if ia < 0:
                continue
            grad[ia] += lg[k, a]
            for b in range(12):
                ib = idx[k, b]
                if ib < 0 or ib > ia:
                    continue
                val = hscale * lh[k, a, b]
                if val == 0.0:
                    continue
                d = ia - ib
                if d <= BANDWIDTH:
                    band[ia, d] += val
                else:
                    if n_extra == extra.shape[0]:
                        grown = np.empty((2 * n_extra + 16, 3))
                        grown[:n_extra] = extra[:n_extra]
                        extra = grown
                    extra[n_extra, 0] = ia
                    extra[n_extra, 1] = ib
                    extra[n_extra, 2] = val
                    n_extra += 1
    return extra, n_extra


class Step(NamedTuple):
    """The step's data that :func:`phi` reads: inertia ``a_in`` = 1/h^2 [1/s^2], ``a_dmp`` (D,)
    damping / h, ``q0`` (D,) the step's start (friction's reference), ``qhat`` (D,) the predictor,
    ``x0`` (N, 3) its positions, ``dof_mass`` (D,), ``dof_fext`` (D,) [N], ``eps`` = eps_v h [m],
    ``h`` [s] the step (``beta h`` for BDF2)."""

    a_in: float
    a_dmp: np.ndarray
    q0: np.ndarray
    qhat: np.ndarray
    x0: np.ndarray
    dof_mass: np.ndarray
    dof_fext: np.ndarray
    eps: float
    h: float


@njit(**JIT)
def phi(ib, fb, q, want, tab, fr, kappa, sp, ns, dhat, grad, g_free, gb, band, extra):
    """The incremental potential (module docstring of :mod:`.contact_step`) at ``q``. ``want`` 2:
    its gradient into ``grad`` (D,), the part without barrier into ``g_free`` and the barrier's (per
    unit kappa) into ``gb``, its Hessian into the lower band ``band`` (D, 11) and ``extra``.
    Returns ``(Phi, extra, n_extra, gaps)``."""
    D = q.shape[0]
    if want >= 2:
        grad[:] = 0.0
        band[:, :] = 0.0
    E = rods_elastic(ib, fb, q, want, grad, band)
    Ei = 0.0
    for i in range(D):
        d1 = q[i] - sp.qhat[i]
        d0 = q[i] - sp.q0[i]
        m = sp.dof_mass[i]
        Ei += m * (0.5 * sp.a_in * d1 * d1 + 0.5 * sp.a_dmp[i] * d0 * d0) - sp.dof_fext[i] * q[i]
        if want >= 2:
            grad[i] += m * (sp.a_in * d1 + sp.a_dmp[i] * d0) - sp.dof_fext[i]
            band[i, 0] += m * (sp.a_in + sp.a_dmp[i])
    E += Ei
    x = _positions(q, ns.vertex_dof)
    K = tab[0].shape[0]
    gaps = np.empty(K)
    lg = np.zeros((K if want >= 2 else 0, 12))
    lh = np.zeros((K if want >= 2 else 0, 12, 12))
    Eb = barrier_eval(tab[0], tab[1], tab[2], tab[3], x, dhat, 1.0, want, lg, lh, gaps)
    E += kappa * Eb
    Kf = fr[0].shape[0]
    fg = np.zeros((Kf if want >= 2 else 0, 12))
    fh = np.zeros((Kf if want >= 2 else 0, 12, 12))
    if Kf:
        E += friction_eval(fr[0], fr[1], fr[2], fr[3], fr[4], x, sp.x0, sp.eps, want, fg, fh)
    if want < 2:
        return E, extra, 0, gaps
    # held unknowns: gradient 0, Hessian rows and columns the identity; no band entry across rods
    for f in range(ns.fixed.shape[0]):
        grad[ns.fixed[f]] = 0.0
    for i in range(D):
        for k in range(BANDWIDTH + 1):
            j = i - k
            if j < ns.dof_rod_start[i] or ns.dof_is_fixed[i] or ns.dof_is_fixed[j]:
                band[i, k] = 0.0
        if ns.dof_is_fixed[i]:
            band[i, 0] = 1.0
    n_extra = 0
    gb[:] = 0.0
    if Kf:
        extra, n_extra = _scatter(_local_dofs(fr[0], fr[1], ns), fg, fh, 1.0, grad, band, extra, n_extra)
    g_free[:] = grad
    extra, n_extra = _scatter(_local_dofs(tab[0], tab[1], ns), lg, lh, kappa, gb, band, extra, n_extra)
    for i in range(D):
        grad[i] += kappa * gb[i]
    return E, extra, n_extra, gaps


# ---- the Newton loop -----------------------------------------------------------------------------
@njit(**JIT)
def friction_table(x, tab, dhat, kappa):
    """The lagged friction table ``(ptype, pv, c, basis, mu lambda)`` of the contacts ``tab`` at
    positions ``x`` (:func:`.contact.friction_setup`): the contacts with a normal force only."""
    K = tab[0].shape[0]
    fc = np.zeros((K, 4))
    basis = np.zeros((K, 3, 2))
    weight = np.zeros(K)
    friction_setup(tab[0], tab[1], tab[2], tab[3], tab[4], x, dhat, kappa, fc, basis, weight)
    on = weight > 0
    return tab[0][on], tab[1][on], fc[on], basis[on], weight[on]


@njit(**JIT)
def newton_contact_step(ib, fb, q, kappa, sp, ns, g, ts):
    """One implicit step's Newton solve (:mod:`.contact_step` module docstring) of the global unknowns
    ``q`` (D,), in place, from the stiffness ``kappa`` [N/m]; ``sp`` the step's :class:`Step`, ``ns``
    the world's :class:`NewtonStatics`, ``g`` its :class:`rodlab.contact.ContactGeometry`, ``ts`` its
    :class:`.contact_table.TableStatics`. Returns ``(status, iterations, kappa, active contacts, min
    gap over the contacts within dhat or inf, line-search failures)``; ``status``
    :data:`NONFINITE_PHI` when the potential is not finite (a gap reached zero),
    :data:`NONFINITE_STEP` when the Newton step is not (``q`` then holds the last iterate)."""
    D = q.shape[0]
    dhat = ts.dhat
    grad = np.zeros(D)
    g_free = np.zeros(D)
    gb = np.zeros(D)
    band = np.zeros((D, BANDWIDTH + 1))
    extra = np.zeros((64, 3))
    balanced = not ns.auto
    x = _positions(q, ns.vertex_dof)
    tab = contact_table(x, g, ts)
    fr = (np.empty(0, dtype=np.int64), np.empty((0, 4), dtype=np.int64), np.empty((0, 4)), np.empty((0, 3, 2)),
          np.empty(0))  # no friction until the first iterate lags it
    its = 0
    ls_fail = 0
    status = OK
    for it in range(ns.max_iters):
        x = _positions(q, ns.vertex_dof)
        E, extra, n_extra, gaps = phi(ib, fb, q, 2, tab, fr, kappa, sp, ns, dhat, grad, g_free, gb, band, extra)
        redo = False
        if not balanced and tab[0].shape[0] and np.any(gb != 0.0):
            balanced = True
            k_bal = -(g_free @ gb) / (gb @ gb)
            k_new = min(max(k_bal, ns.kappa_min), 100.0 * ns.kappa_min)
            if k_new > kappa:
                kappa = k_new
                redo = True
        if it == 0 and ns.friction:
            # lagged friction: normal forces, closest points and bases of the step's start
            fr = friction_table(x, tab, dhat, kappa)
            redo = redo or fr[0].shape[0] > 0
        if redo:
            E, extra, n_extra, gaps = phi(ib, fb, q, 2, tab, fr, kappa, sp, ns, dhat, grad, g_free, gb, band, extra)
        if not math.isfinite(E):
            status = NONFINITE_PHI
            break
        rhs = -grad
        dq = solve_banded_plus(band, extra, n_extra, rhs)
        its += 1
        if not np.all(np.isfinite(dq)):
            status = NONFINITE_STEP
            break
        dmax = 0.0
        for i in range(D):
            dmax = max(dmax, abs(dq[i]) * ns.step_scale[i])
        if dmax <= ns.tol * sp.h:
            break
        x1 = np.empty_like(x)
        for i in range(x.shape[0]):
            for c in range(3):
                x1[i, c] = x[i, c] + dq[ns.vertex_dof[i, c]]
        toi = earliest_impact(x, x1, g, ts)
        alpha = 1.0 if toi > 1.0 else 0.9 * toi
        slope = grad @ dq
        ok = False
        qt = q.copy()
        for ls in range(ns.ls_max):
            for i in range(D):
                qt[i] = q[i] + alpha * dq[i]
            tab_t = contact_table(_positions(qt, ns.vertex_dof), g, ts)
            Et = phi(ib, fb, qt, 0, tab_t, fr, kappa, sp, ns, dhat, grad, g_free, gb, band, extra)[0]
            if Et <= E + 1e-4 * alpha * slope + 1e-12 * (abs(E) + abs(Et)):
                ok = True
                break
            alpha *= 0.5
        if not ok:
            ls_fail += 1
            break
        q[:] = qt
        tab = tab_t  # the accepted trial's contacts are q's
    x = _positions(q, ns.vertex_dof)
    tab = contact_table(x, g, ts)
    K = tab[0].shape[0]
    gaps = np.empty(K)
    barrier_eval(tab[0], tab[1], tab[2], tab[3], x, dhat, 1.0, 0, np.zeros((0, 12)), np.zeros((0, 12, 12)), gaps)
    active = 0
    gmin = math.inf
    for k in range(K):
        if gaps[k] < dhat:
            active += 1
        gmin = min(gmin, gaps[k])
    if ns.auto and gmin < 0.01 * dhat:
        kappa = min(2.0 * kappa, 100.0 * ns.kappa_min)
    return status, its, kappa, active, gmin, ls_fail
