"""MPRGP with every preconditioner on the lower band layout (the reference implementation; see
:mod:`rodlab.inverse.qp` for the algorithm and :mod:`.mprgp_fast` for the compiled fast path)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...geometry._vec import JIT
from ...linalg.banded_ldlt import band_matvec
from .box import _feasible_step, _state, norm_bound
from .preconditioners import PC_ASCS, SCHUR_CAP, apply_pc, schur_apply


@njit(**JIT)
def _precond(pc, A, L, D, free, lo, hi, r, z, tmp, Y, slot, act, st, C, w):
    if pc == PC_ASCS:
        schur_apply(L, D, free, lo, hi, r, z, Y, slot, act, st, C, w)
    else:
        apply_pc(pc, A, L, D, free, r, z, tmp)


@njit(**JIT)
def mprgp_core(A, b, lo, hi, x, pc, L, D, rtol, atol, maxit, hist, counts, gamma):
    """MPRGP (module docstring) from ``x`` (projected first), in place. ``L``, ``D``: the factor from
    :func:`prepare_pc` (ignored by non-Cholesky preconditioners). Returns ``(iterations, residual)``
    with residual the norm of the projected gradient ``phi + beta``. ``counts`` (4,) accumulates CG,
    expansion, proportioning and accepted preconditioned-expansion steps; ``gamma`` is the
    proportioning constant Gamma."""
    n = x.shape[0]
    abar = 1.9 / norm_bound(A)
    for i in range(n):
        if x[i] < lo[i]:
            x[i] = lo[i]
        elif x[i] > hi[i]:
            x[i] = hi[i]
    g = np.empty(n)
    band_matvec(A, x, g)
    for i in range(n):
        g[i] -= b[i]
    free = np.empty(n, dtype=np.bool_)
    phi = np.empty(n)
    beta = np.empty(n)
    phit = np.empty(n)
    z = np.empty(n)
    pdir = np.empty(n)
    Ap = np.empty(n)
    tmp = np.empty(n)
    cap = SCHUR_CAP if pc == PC_ASCS else 1
    Y = np.empty((cap, n))
    slot = np.full(n, -1, dtype=np.int64)
    act = np.full(cap, -1, dtype=np.int64)
    st = np.zeros(2, dtype=np.int64)
    C = np.empty((cap, cap))
    w = np.empty(cap)
    r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
    res0 = math.sqrt(r2)
    tol = max(atol, rtol * res0)
    _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
    pdir[:] = z
    it = 0
    res = res0
    while it < maxit:
        res = math.sqrt(r2)
        if it < hist.shape[0]:
            hist[it] = res
        if res <= tol:
            break
        it += 1
        if bb <= gamma * gamma * pp:
            band_matvec(A, pdir, Ap)
            pAp = 0.0
            gz = 0.0
            for i in range(n):
                pAp += pdir[i] * Ap[i]
                gz += g[i] * pdir[i]
            if not pAp > 0.0:
                break
            acg = gz / pAp
            af = _feasible_step(x, pdir, lo, hi)
            if acg <= af:
                counts[0] += 1
                for i in range(n):
                    x[i] -= acg * pdir[i]
                    g[i] -= acg * Ap[i]
                r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
                _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
                zAp = 0.0
                for i in range(n):
                    zAp += z[i] * Ap[i]
                gam = zAp / pAp
                for i in range(n):
                    pdir[i] = z[i] - gam * pdir[i] if free[i] else 0.0
            else:
                counts[1] += 1
                for i in range(n):
                    x[i] -= af * pdir[i]
                    g[i] -= af * Ap[i]
                    if x[i] < lo[i]:
                        x[i] = lo[i]
                    elif x[i] > hi[i]:
                        x[i] = hi[i]
                # snap the blocking entries onto their bound
                for i in range(n):
                    if pdir[i] > 0.0 and x[i] - lo[i] <= 1e-14 * (1.0 + abs(x[i])):
                        x[i] = lo[i]
                    elif pdir[i] < 0.0 and hi[i] - x[i] <= 1e-14 * (1.0 + abs(x[i])):
                        x[i] = hi[i]
                r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
                # expansion. Ours: the projected preconditioned step P(x - a M_F^{-1} phi), a = 1, 1/2, 1/4,
                # accepted as soon as it lowers the objective; otherwise Dostal and Schoberl's projected
                # gradient step of fixed length abar. f(x) = x.(g - b)/2 needs no product with A, and
                # the product computed for the candidate becomes the new gradient.
                fx = 0.0
                for i in range(n):
                    fx += 0.5 * x[i] * (g[i] - b[i])
                _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
                a = 1.0
                accepted = False
                for trial in range(3):
                    for i in range(n):
                        xi = x[i] - a * z[i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        pdir[i] = xi
                    band_matvec(A, pdir, Ap)
                    ft = 0.0
                    for i in range(n):
                        ft += pdir[i] * (0.5 * Ap[i] - b[i])
                    if ft < fx:
                        counts[3] += 1
                        accepted = True
                        for i in range(n):
                            x[i] = pdir[i]
                            g[i] = Ap[i] - b[i]
                        break
                    a *= 0.5
                if not accepted:
                    for i in range(n):
                        xi = x[i] - abar * phi[i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        x[i] = xi
                    band_matvec(A, x, g)
                    for i in range(n):
                        g[i] -= b[i]
                r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
                _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
                pdir[:] = z
        else:
            # proportioning along the chopped gradient
            counts[2] += 1
            band_matvec(A, beta, Ap)
            dAd = 0.0
            gd = 0.0
            for i in range(n):
                dAd += beta[i] * Ap[i]
                gd += g[i] * beta[i]
            a = gd / dAd
            af = _feasible_step(x, beta, lo, hi)
            if af < a:
                a = af
            for i in range(n):
                x[i] -= a * beta[i]
                g[i] -= a * Ap[i]
                if x[i] < lo[i]:
                    x[i] = lo[i]
                elif x[i] > hi[i]:
                    x[i] = hi[i]
            r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
            _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
            pdir[:] = z
    return it, math.sqrt(r2) if it > 0 else res


@njit(**JIT)
def mprgp(A, b, lo, hi, x, pc, L, D, rtol, atol, maxit, hist):
    """:func:`mprgp_core` with ``Gamma = 1`` and no step counters (every preconditioner, band layout). The
    fast path of ASC/IC/MIC/ASC-Schur is :func:`mprgp_fast_solve` / :class:`MprgpWorkspace` (kept out of this function
    so that its callers do not compile both)."""
    counts = np.zeros(4)
    return mprgp_core(A, b, lo, hi, x, pc, L, D, rtol, atol, maxit, hist, counts, 1.0)
