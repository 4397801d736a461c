"""Projected Gauss-Seidel for a box-constrained QP on the lower band layout."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...geometry._vec import JIT
from ...linalg.banded_ldlt import band_matvec
from .box import _state


@njit(**JIT)
def pgs(A, b, lo, hi, x, rtol, atol, maxit, hist):
    """Projected Gauss-Seidel sweeps; residual = projected-gradient norm after each sweep."""
    n = x.shape[0]
    p = A.shape[1] - 1
    g = np.empty(n)
    free = np.empty(n, dtype=np.bool_)
    phi = np.empty(n)
    beta = np.empty(n)
    phit = np.empty(n)
    for i in range(n):
        x[i] = min(max(x[i], lo[i]), hi[i])
    band_matvec(A, x, g)
    for i in range(n):
        g[i] -= b[i]
    r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, 1.0, phit)
    res0 = math.sqrt(r2)
    tol = max(atol, rtol * res0)
    it = 0
    res = res0
    while it < maxit:
        if it < hist.shape[0]:
            hist[it] = res
        if res <= tol:
            break
        it += 1
        for i in range(n):
            s = A[i, 0] * x[i]
            k0 = p if i >= p else i
            for k in range(1, k0 + 1):
                s += A[i, k] * x[i - k]
            kmax = n - 1 - i
            if kmax > p:
                kmax = p
            for k in range(1, kmax + 1):
                s += A[i + k, k] * x[i + k]
            xi = x[i] - (s - b[i]) / A[i, 0]
            x[i] = min(max(xi, lo[i]), hi[i])
        band_matvec(A, x, g)
        for i in range(n):
            g[i] -= b[i]
        r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, 1.0, phit)
        res = math.sqrt(r2)
    return it, res
