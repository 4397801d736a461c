"""Bookkeeping of a box-constrained QP shared by its solvers: free set, free and chopped gradients
(Dostal and Schoberl, "Minimizing quadratic functions subject to bound constraints with the rate of
convergence and finite termination", 2005), the largest feasible step, a norm bound of a banded matrix."""
from __future__ import annotations

import numpy as np
from numba import njit

from ...geometry._vec import JIT


@njit(**JIT)
def _state(x, g, lo, hi, free, phi, beta, abar, phit):
    """Free set, free gradient ``phi``, chopped gradient ``beta`` and reduced free gradient ``phit``;
    returns (|phi + beta|^2, beta.beta, phit.phi)."""
    n = x.shape[0]
    r2 = 0.0
    bb = 0.0
    pp = 0.0
    for i in range(n):
        gi = g[i]
        if x[i] <= lo[i]:
            free[i] = False
            phi[i] = 0.0
            phit[i] = 0.0
            beta[i] = gi if (gi < 0.0 and hi[i] > lo[i]) else 0.0
        elif x[i] >= hi[i]:
            free[i] = False
            phi[i] = 0.0
            phit[i] = 0.0
            beta[i] = gi if gi > 0.0 else 0.0
        else:
            free[i] = True
            phi[i] = gi
            beta[i] = 0.0
            if gi > 0.0:
                v = (x[i] - lo[i]) / abar
                phit[i] = v if v < gi else gi
            else:
                v = (x[i] - hi[i]) / abar
                phit[i] = v if v > gi else gi
        r2 += (phi[i] + beta[i]) ** 2
        bb += beta[i] * beta[i]
        pp += phit[i] * phi[i]
    return r2, bb, pp


@njit(**JIT)
def _feasible_step(x, d, lo, hi):
    """Largest ``a >= 0`` with ``lo <= x - a d <= hi``."""
    amax = np.inf
    for i in range(x.shape[0]):
        if d[i] > 0.0:
            a = (x[i] - lo[i]) / d[i]
            if a < amax:
                amax = a
        elif d[i] < 0.0:
            a = (x[i] - hi[i]) / d[i]
            if a < amax:
                amax = a
    return amax


@njit(**JIT)
def norm_bound(A):
    """Largest absolute row sum of the symmetric banded ``A`` (an upper bound of its 2-norm)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    rs = np.zeros(n)
    for i in range(n):
        rs[i] += abs(A[i, 0])
        k0 = p if i >= p else i
        for k in range(1, k0 + 1):
            a = abs(A[i, k])
            rs[i] += a
            rs[i - k] += a
    return rs.max()
