"""Primal-dual interior point method for a box-constrained QP on the lower band layout (no Mehrotra
predictor, centering 0.1, fraction to the boundary 0.995), one banded LDL^T of ``A + Z_l/S_l + Z_u/S_u``
per iteration (:mod:`rodlab.linalg.banded_ldlt`)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...geometry._vec import JIT
from ...linalg.banded_ldlt import band_matvec, ldlt_factor_band, ldlt_solve_band
from .box import _state


@njit(**JIT)
def ipm(A, b, lo, hi, x, rtol, atol, maxit, hist):
    """Primal-dual interior point for the box QP; one banded LDL^T of ``A + Z_l/S_l + Z_u/S_u`` per iteration.
    Residual recorded: projected-gradient norm of the current (strictly interior) iterate."""
    n = x.shape[0]
    p = A.shape[1] - 1
    g = np.empty(n)
    zl = np.zeros(n)
    zu = np.zeros(n)
    hasl = np.empty(n, dtype=np.bool_)
    hasu = np.empty(n, dtype=np.bool_)
    pinned = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if lo[i] >= hi[i]:
            # a variable pinned by its bounds is fixed, not a barrier term (its slack would be zero)
            pinned[i] = True
            x[i] = lo[i]
            hasl[i] = False
            hasu[i] = False
            continue
        hasl[i] = math.isfinite(lo[i])
        hasu[i] = math.isfinite(hi[i])
        # strictly interior start
        if hasl[i] and hasu[i]:
            w = hi[i] - lo[i]
            x[i] = min(max(x[i], lo[i] + 0.1 * w), hi[i] - 0.1 * w)
        elif hasl[i]:
            x[i] = max(x[i], lo[i] + 1e-3 * (1.0 + abs(lo[i])))
        elif hasu[i]:
            x[i] = min(x[i], hi[i] - 1e-3 * (1.0 + abs(hi[i])))
        if hasl[i]:
            zl[i] = 1.0
        if hasu[i]:
            zu[i] = 1.0
    K = np.empty_like(A)
    D = np.empty(n)
    rhs = np.empty(n)
    dx = np.empty(n)
    free = np.empty(n, dtype=np.bool_)
    phi = np.empty(n)
    beta = np.empty(n)
    phit = np.empty(n)
    res0 = -1.0
    it = 0
    res = 0.0
    while it <= maxit:
        band_matvec(A, x, g)
        for i in range(n):
            g[i] -= b[i]
        # projected-gradient residual of the iterate (comparable with MPRGP)
        r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, 1.0, phit)
        mu = 0.0
        m = 0
        rd = 0.0
        for i in range(n):
            ri = g[i] - zl[i] + zu[i]
            if not pinned[i]:
                rd += ri * ri
            if hasl[i]:
                mu += (x[i] - lo[i]) * zl[i]
                m += 1
            if hasu[i]:
                mu += (hi[i] - x[i]) * zu[i]
                m += 1
        mu = mu / m if m > 0 else 0.0
        res = math.sqrt(rd) + mu * n  # KKT residual
        if res0 < 0.0:
            res0 = math.sqrt(r2) if r2 > 0 else res
        if it < hist.shape[0]:
            hist[it] = res
        if res <= max(atol, rtol * res0):
            break
        if it == maxit:
            break
        it += 1
        sigma = 0.1
        K[:, :] = A
        for i in range(n):
            rhs[i] = -(g[i] - zl[i] + zu[i])
            if hasl[i]:
                s = x[i] - lo[i]
                K[i, 0] += zl[i] / s
                rhs[i] += sigma * mu / s - zl[i]
            if hasu[i]:
                s = hi[i] - x[i]
                K[i, 0] += zu[i] / s
                rhs[i] += -sigma * mu / s + zu[i]
        for i in range(n):
            if pinned[i]:
                rhs[i] = 0.0
                for k in range(p + 1):
                    K[i, k] = 0.0
                for k in range(1, p + 1):
                    if i + k < n:
                        K[i + k, k] = 0.0
                K[i, 0] = 1.0
        ldlt_factor_band(K, D, 1e-14)
        dx[:] = rhs
        ldlt_solve_band(K, D, dx)
        # dual steps and fraction to the boundary
        ap = 1.0
        ad = 1.0
        for i in range(n):
            if hasl[i]:
                s = x[i] - lo[i]
                dzl = (sigma * mu - zl[i] * dx[i]) / s - zl[i]
                if dx[i] < 0.0:
                    ap = min(ap, -0.995 * s / dx[i])
                if dzl < 0.0:
                    ad = min(ad, -0.995 * zl[i] / dzl)
                phi[i] = dzl
            if hasu[i]:
                s = hi[i] - x[i]
                dzu = (sigma * mu + zu[i] * dx[i]) / s - zu[i]
                if dx[i] > 0.0:
                    ap = min(ap, 0.995 * s / dx[i])
                if dzu < 0.0:
                    ad = min(ad, -0.995 * zu[i] / dzu)
                beta[i] = dzu
        for i in range(n):
            x[i] += ap * dx[i]
            if hasl[i]:
                zl[i] += ad * phi[i]
            if hasu[i]:
                zu[i] += ad * beta[i]
    return it, res
