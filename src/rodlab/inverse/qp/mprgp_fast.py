"""The compiled fast path of MPRGP for the filtered-factor preconditioners (ASC, IC, MIC) and the
Schur-corrected ASC (``asc-schur``) on the row-aligned layout (:mod:`rodlab.linalg.banded_rows`):
:func:`mprgp_fast`, the one-call solvers :func:`mprgp_fast_solve` / :func:`mprgp_rows_solve` /
:func:`mprgp_asc_solve` and the reusable scratch :class:`MprgpWorkspace`. Same algorithm, steps and
tests as :func:`.mprgp.mprgp_core` (see :mod:`rodlab.inverse.qp`)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...geometry._vec import JIT
from ...linalg.banded_rows import rband_matvec
from .fast_preconditioners import _apply, _schur_fast, prepare_fast, prepare_rows, rfiltered_apply
from .preconditioners import PC_ASCS, SCHUR_CAP

NWS = 9  # padded work vectors of mprgp_fast


@njit(**JIT)
def _state_fast(x, g, lo, hi, free, phi, beta, abar, bp):
    """:func:`_state` without storing the reduced free gradient (only its product with ``phi`` is used);
    ``beta`` is written into the padded ``beta`` at offset ``bp``."""
    n = x.shape[0]
    r2 = 0.0
    bb = 0.0
    pp = 0.0
    for i in range(n):
        gi = g[i]
        if x[i] <= lo[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if (gi < 0.0 and hi[i] > lo[i]) else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        elif x[i] >= hi[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if gi > 0.0 else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        else:
            free[i] = True
            phi[i] = gi
            beta[bp + i] = 0.0
            if gi > 0.0:
                v = (x[i] - lo[i]) / abar
                pt = v if v < gi else gi
            else:
                v = (x[i] - hi[i]) / abar
                pt = v if v > gi else gi
            r2 += gi * gi
            pp += pt * gi
    return r2, bb, pp


@njit(**JIT)
def _move_state(x, g, pd, Ap, step, lo, hi, free, phi, beta, abar, bp):
    """The CG move ``x -= step p``, ``g -= step A p`` (padded ``pd``, ``Ap`` at offset ``bp``) fused with
    :func:`_state_fast` in one pass (the same operations per entry). The per-entry logic is written out
    in both on purpose: moving it into a shared per-entry function returning a tuple made the hard-QP
    solve 5x slower (0.13 -> 0.61-0.67 ms, numba 0.68, with or without ``inline="always"``)."""
    n = x.shape[0]
    r2 = 0.0
    bb = 0.0
    pp = 0.0
    for i in range(n):
        xi = x[i] - step * pd[bp + i]
        gi = g[i] - step * Ap[bp + i]
        x[i] = xi
        g[i] = gi
        if xi <= lo[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if (gi < 0.0 and hi[i] > lo[i]) else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        elif xi >= hi[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if gi > 0.0 else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        else:
            free[i] = True
            phi[i] = gi
            beta[bp + i] = 0.0
            if gi > 0.0:
                v = (xi - lo[i]) / abar
                pt = v if v < gi else gi
            else:
                v = (xi - hi[i]) / abar
                pt = v if v > gi else gi
            r2 += gi * gi
            pp += pt * gi
    return r2, bb, pp


@njit(**JIT)
def _curvature_slope_reach(d, Ad, g, x, lo, hi, p):
    """Along the padded direction ``d`` (offset ``p``) with ``Ad = A d``: the curvature ``d.A d``, the
    slope ``g.d`` and the largest feasible step ``x - a d`` in ``[lo, hi]`` (a CG or proportioning step)."""
    n = x.shape[0]
    dAd = 0.0
    gd = 0.0
    reach = np.inf
    for i in range(n):
        di = d[p + i]
        dAd += di * Ad[p + i]
        gd += g[i] * di
        if di > 0.0:
            a = (x[i] - lo[i]) / di
            if a < reach:
                reach = a
        elif di < 0.0:
            a = (x[i] - hi[i]) / di
            if a < reach:
                reach = a
    return dAd, gd, reach


@njit(**JIT)
def mprgp_fast(Ar, Lf, anorm, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, ws, free, pexp, sch, fm, Y, C, w, iw):
    """:func:`mprgp_core` for the filtered-factor preconditioners (ASC, IC, MIC) on the row-aligned
    layout: the same algorithm, the same steps and tests in the same order, with fused passes (CG move
    and free-set update in one pass; the CG coefficient ``z.Ap`` accumulated by the backward
    substitution; ``p.Ap``, ``g.p`` and the feasible step in one pass) and no allocation: ``ws``
    (``NWS``, n + 2p) and ``free`` (n,) are caller-provided, reusable across calls (their contents on
    entry do not matter). ``Ar``, ``Lf``, ``anorm``: from :func:`prepare_fast`. Returns ``(iterations,
    residual)`` like :func:`mprgp_core`. ``pexp=False`` leaves out our preconditioned expansion candidate
    (module docstring): every expansion is then Dostal and Schoberl's fixed-length projected gradient step,
    as in the paper, and costs one product with ``A`` instead of up to four plus a preconditioner
    application. ``sch``: apply the complete factor ``Lf`` exactly on the free set (:func:`_schur_fast`,
    ``PC_ASCS``; scratch ``fm``, ``Y``, ``C``, ``w``, ``iw``, reset here) instead of the filtered
    substitution; the scratch is not touched (and may be empty) otherwise."""
    n = x.shape[0]
    p = Lf.shape[2] - 1
    abar = 1.9 / anorm
    pd = ws[0]
    Ap = ws[1]
    yp = ws[2]
    zp = ws[3]
    cand = ws[4]
    beta = ws[5]
    g = ws[6]
    phi = ws[7]
    e = ws[8]
    for k in range(NWS):
        for j in range(p):
            ws[k, j] = 0.0
            ws[k, n + p + j] = 0.0
    if sch:
        # a new factor: no cached column, empty active list; e = 0, fm = all true
        for i in range(n):
            e[i] = 0.0
            fm[i] = True
            iw[i] = -1
            iw[n + i] = -1
        iw[2 * n + Y.shape[0]] = 0
        iw[2 * n + Y.shape[0] + 1] = 0
    for i in range(n):
        if x[i] < lo[i]:
            x[i] = lo[i]
        elif x[i] > hi[i]:
            x[i] = hi[i]
        cand[p + i] = x[i]
    rband_matvec(Ar, cand, Ap)
    for i in range(n):
        g[i] = Ap[p + i] - b[i]
    r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
    res0 = math.sqrt(r2)
    tol = max(atol, rtol * res0)
    it = 0
    res = res0
    cg = False
    pAp = 1.0
    while True:
        # one application per iteration, at a single call site (keeps the compiled code small): after a
        # CG step the conjugate direction continues, after any other step (or at the start) it restarts
        if sch:
            zAp = _schur_fast(Lf, free, lo, hi, phi, yp, zp, Ap, fm, e, Y, C, w, iw)
        else:
            zAp = _apply(Lf, free, phi, yp, zp, Ap)
        if cg:
            gam = zAp / pAp
            for i in range(n):
                pd[p + i] = zp[p + i] - gam * pd[p + i] if free[i] else 0.0
        else:
            for i in range(n):
                pd[p + i] = zp[p + i]
        if it >= maxit:
            break
        res = math.sqrt(r2)
        if it < hist.shape[0]:
            hist[it] = res
        if res <= tol:
            break
        it += 1
        cg = False
        pAp = 1.0
        if bb <= gamma * gamma * pp:
            rband_matvec(Ar, pd, Ap)
            pAp, gz, af = _curvature_slope_reach(pd, Ap, g, x, lo, hi, p)
            if not pAp > 0.0:
                break
            acg = gz / pAp
            if acg <= af:
                counts[0] += 1
                r2, bb, pp = _move_state(x, g, pd, Ap, acg, lo, hi, free, phi, beta, abar, p)
                cg = True
            else:
                counts[1] += 1
                for i in range(n):
                    di = pd[p + i]
                    xi = x[i] - af * di
                    g[i] -= af * Ap[p + i]
                    if xi < lo[i]:
                        xi = lo[i]
                    elif xi > hi[i]:
                        xi = hi[i]
                    # snap the blocking entries onto their bound
                    if di > 0.0 and xi - lo[i] <= 1e-14 * (1.0 + abs(xi)):
                        xi = lo[i]
                    elif di < 0.0 and hi[i] - xi <= 1e-14 * (1.0 + abs(xi)):
                        xi = hi[i]
                    x[i] = xi
                r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
                # expansion (see mprgp_core): projected preconditioned step, a = 1, 1/2, 1/4 (if pexp),
                # else the fixed-length projected gradient step
                accepted = False
                fx = 0.0
                if pexp:
                    for i in range(n):
                        fx += 0.5 * x[i] * (g[i] - b[i])
                    if sch:
                        _schur_fast(Lf, free, lo, hi, phi, yp, zp, zp, fm, e, Y, C, w, iw)
                    else:
                        # (the generic substitution: one inlined copy of the band-18 kernel is enough)
                        rfiltered_apply(Lf[0], free, phi, yp, zp, zp)
                a = 1.0
                for trial in range(3 if pexp else 0):
                    for i in range(n):
                        xi = x[i] - a * zp[p + i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        cand[p + i] = xi
                    rband_matvec(Ar, cand, Ap)
                    ft = 0.0
                    for i in range(n):
                        ft += cand[p + i] * (0.5 * Ap[p + i] - b[i])
                    if ft < fx:
                        counts[3] += 1
                        accepted = True
                        for i in range(n):
                            x[i] = cand[p + i]
                            g[i] = Ap[p + i] - b[i]
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
                        cand[p + i] = xi
                    rband_matvec(Ar, cand, Ap)
                    for i in range(n):
                        g[i] = Ap[p + i] - b[i]
                r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
        else:
            # proportioning along the chopped gradient
            counts[2] += 1
            rband_matvec(Ar, beta, Ap)
            dAd, gd, af = _curvature_slope_reach(beta, Ap, g, x, lo, hi, p)
            a = gd / dAd
            if af < a:
                a = af
            for i in range(n):
                xi = x[i] - a * beta[p + i]
                g[i] -= a * Ap[p + i]
                if xi < lo[i]:
                    xi = lo[i]
                elif xi > hi[i]:
                    xi = hi[i]
                x[i] = xi
            r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
    return it, math.sqrt(r2) if it > 0 else res


@njit(**JIT)
def mprgp_fast_solve(pc, A, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Ar, Lb, Lf, D, ws, free, pexp, fm, Y, C, w,
                     iw):
    """Factor and solve in one compiled call: :func:`prepare_fast` then :func:`mprgp_fast` for ``pc`` in
    ``FAST_PCS`` or ``PC_ASCS`` (the Schur-corrected application :func:`_schur_fast`, scratch ``fm``, ``Y``,
    ``C``, ``w``, ``iw``; unused, and may be empty, for the others). All scratch caller-provided, see
    :class:`MprgpWorkspace`. Returns ``(iterations, residual, #clamped pivots)``."""
    clamped, anorm = prepare_fast(pc, A, Ar, Lb, Lf, D)
    it, res = mprgp_fast(Ar, Lf, anorm, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, ws, free, pexp, pc == PC_ASCS,
                         fm, Y, C, w, iw)
    return it, res, clamped


@njit(**JIT)
def mprgp_rows_solve(pc, Ar, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Lb, Lf, D, ws, free, pexp, fm, Y, C, w, iw):
    """:func:`mprgp_fast_solve` for a caller that provides ``A`` as full rows ``Ar`` (:func:`prepare_rows`;
    saves the band conversion). Returns ``(iterations, residual, #clamped pivots)``."""
    clamped, anorm = prepare_rows(pc, Ar, Lb, Lf, D)
    it, res = mprgp_fast(Ar, Lf, anorm, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, ws, free, pexp, pc == PC_ASCS,
                         fm, Y, C, w, iw)
    return it, res, clamped


def schur_scratch(n: int, p: int, cap: int = SCHUR_CAP):
    """Scratch ``(fm, Y, C, w, iw)`` of the Schur-corrected fast path for ``n`` unknowns, half bandwidth ``p``
    and at most ``cap`` active (non-pinned) bounds with an exact application (beyond: filtered)."""
    cap = max(1, min(cap, n))
    return (np.ones(n, dtype=np.bool_), np.zeros((cap, n + 2 * p)), np.zeros((cap, cap)), np.zeros(cap),
            np.full(2 * n + cap + 2, -1, dtype=np.int64))


@njit(**JIT)
def mprgp_asc_solve(pc, A, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Ar, Lb, Lf, D, ws, free, pexp):
    """:func:`mprgp_fast_solve` without the Schur scratch (allocated here for ``PC_ASCS``, empty otherwise);
    the signature of the filtered-factor fast path before ``asc-schur`` had one."""
    n = x.shape[0]
    cap = 0
    if pc == PC_ASCS:
        cap = min(SCHUR_CAP, n)
    fm = np.ones(n if cap > 0 else 0, dtype=np.bool_)
    Y = np.zeros((cap, ws.shape[1]))
    C = np.zeros((cap, cap))
    w = np.zeros(cap)
    iw = np.full(2 * n + cap + 2 if cap > 0 else 0, -1, dtype=np.int64)
    return mprgp_fast_solve(pc, A, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Ar, Lb, Lf, D, ws, free, pexp, fm, Y, C,
                            w, iw)


class MprgpWorkspace:
    """Scratch of :func:`mprgp_fast_solve` for ``n`` unknowns and half bandwidth ``p``, reusable across solves
    (ASC, IC, MIC and the Schur-corrected ASC)."""

    def __init__(self, n: int, p: int, cap: int = SCHUR_CAP):
        self.Ar = np.zeros((n, 2 * p + 1))
        self.Lb = np.zeros((n, p + 1))
        self.Lf = np.zeros((2, n, p + 1))
        self.D = np.zeros(n)
        self.ws = np.zeros((NWS, n + 2 * p))
        self.free = np.zeros(n, dtype=np.bool_)
        self.counts = np.zeros(4)
        self.fm, self.Y, self.C, self.w, self.iw = schur_scratch(n, p, cap)

    @property
    def schur(self):
        """The Schur scratch as passed to :func:`mprgp_fast_solve`: ``(fm, Y, C, w, iw)``."""
        return self.fm, self.Y, self.C, self.w, self.iw

    def solve(self, pc, A, b, lo, hi, x, rtol=1e-8, atol=1e-14, maxit=10000, hist=None, gamma=1.0, pexp=True):
        """Factor ``A`` (lower band) and solve the box QP from ``x`` (in place); ``(iterations, residual, #clamped)``.
        ``counts`` accumulates the step counts (see :func:`mprgp_core`)."""
        h = np.zeros(0) if hist is None else hist
        return mprgp_fast_solve(int(pc), A, b, lo, hi, x, float(rtol), float(atol), int(maxit), h, self.counts, float(gamma),
                                self.Ar, self.Lb, self.Lf, self.D, self.ws, self.free, bool(pexp), *self.schur)
