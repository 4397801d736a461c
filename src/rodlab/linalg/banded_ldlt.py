"""Sqrt-free banded LDL^T factorization and solves for symmetric (positive definite) matrices.

Storage ("lower band"): ``band[i, k] = A[i, i - k]`` for ``k = 0..p`` (``p`` the half bandwidth),
shape ``(N, p + 1)``; entries with ``i - k < 0`` are ignored. The factor overwrites the band:
``band[i, k] = L[i, i - k]`` for ``k >= 1`` (unit lower ``L``) and ``D[i]`` holds the pivots.

Two variants:

* ``ldlt_factor_band10`` / ``ldlt_solve_band10``: half bandwidth fixed at 10 at compile time
  (the bandwidth of the implicit DER Hessian on interleaved DOFs ``[x_0, theta_0, x_1, ...]``,
  whose 4D bending stencil spans 11 consecutive unknowns). Unrolled by LLVM; the hot path
  of ``rodlab.der_implicit``.
* ``ldlt_factor_band`` / ``ldlt_solve_band``: any half bandwidth (the sag-free optimization's
  parameter Hessian has half bandwidth 18; a copy specialised to 18 was only ~7 % faster and was
  dropped to save compilation time).

Pivots smaller than ``pivot_eps * max(|A_ii|, tiny)`` (tiny or negative, which SPD matrices only
produce through round-off) are clamped to that value; the number of clamped pivots is returned
so callers can report it (Takahashi and Batty, "sqrt-free Cholesky", Sec. V-A3).
"""
from __future__ import annotations

import numpy as np
from numba import njit

JIT = dict(cache=True, error_model="numpy")

BW10 = 10


@njit(**JIT)
def ldlt_factor_band(band, D, pivot_eps):
    """In-place banded LDL^T of the lower band ``band`` (N, p+1); pivots into ``D``. Returns #clamped pivots.

    Right-looking (column by column, rank-1 update of the trailing band triangle): the updates of
    one column are independent, so the loop is throughput- rather than latency-bound.
    """
    n = band.shape[0]
    p = band.shape[1] - 1
    t = np.empty(p + 1)
    for i in range(n):
        D[i] = band[i, 0]
    clamped = 0
    for j in range(n):
        ref = abs(D[j])
        if ref < 1e-300:
            ref = 1e-300
        d = band[j, 0]
        if not d > pivot_eps * ref:
            d = pivot_eps * ref
            clamped += 1
        D[j] = d
        inv = 1.0 / d
        amax = n - 1 - j
        if amax > p:
            amax = p
        for a in range(1, amax + 1):
            t[a] = band[j + a, a]
            band[j + a, a] = t[a] * inv
        for a in range(1, amax + 1):
            ta = t[a] * inv
            for b in range(1, a + 1):
                band[j + a, a - b] -= ta * t[b]
    return clamped


@njit(**JIT)
def ldlt_solve_band(band, D, b):
    """Solve ``L D L^T x = b`` in place in ``b`` with the factor from :func:`ldlt_factor_band`."""
    n = band.shape[0]
    p = band.shape[1] - 1
    for j in range(n):
        bj = b[j]
        amax = n - 1 - j
        if amax > p:
            amax = p
        for a in range(1, amax + 1):
            b[j + a] -= band[j + a, a] * bj
    for i in range(n):
        b[i] /= D[i]
    for i in range(n - 1, -1, -1):
        bi = b[i]
        kmax = i if i < p else p
        for k in range(1, kmax + 1):
            b[i - k] -= band[i, k] * bi


@njit(**JIT)
def ldlt_factor_band10(band, D, pivot_eps):
    """:func:`ldlt_factor_band` with the half bandwidth fixed at 10 (compile-time constant loops)."""
    n = band.shape[0]
    t = np.empty(BW10 + 1)
    for i in range(n):
        D[i] = band[i, 0]
    clamped = 0
    for j in range(n):
        ref = abs(D[j])
        if ref < 1e-300:
            ref = 1e-300
        d = band[j, 0]
        if not d > pivot_eps * ref:
            d = pivot_eps * ref
            clamped += 1
        D[j] = d
        inv = 1.0 / d
        if j + BW10 < n:
            for a in range(1, BW10 + 1):
                t[a] = band[j + a, a]
                band[j + a, a] = t[a] * inv
            for a in range(1, BW10 + 1):
                ta = t[a] * inv
                for b in range(1, a + 1):
                    band[j + a, a - b] -= ta * t[b]
        else:
            amax = n - 1 - j
            for a in range(1, amax + 1):
                t[a] = band[j + a, a]
                band[j + a, a] = t[a] * inv
            for a in range(1, amax + 1):
                ta = t[a] * inv
                for b in range(1, a + 1):
                    band[j + a, a - b] -= ta * t[b]
    return clamped


@njit(**JIT)
def ldlt_solve_band10(band, D, b):
    """:func:`ldlt_solve_band` with the half bandwidth fixed at 10."""
    n = band.shape[0]
    for j in range(n):
        bj = b[j]
        if j + BW10 < n:
            for a in range(1, BW10 + 1):
                b[j + a] -= band[j + a, a] * bj
        else:
            for a in range(1, n - j):
                b[j + a] -= band[j + a, a] * bj
    for i in range(n):
        b[i] /= D[i]
    for i in range(n - 1, -1, -1):
        bi = b[i]
        if i >= BW10:
            for k in range(1, BW10 + 1):
                b[i - k] -= band[i, k] * bi
        else:
            for k in range(1, i + 1):
                b[i - k] -= band[i, k] * bi


@njit(**JIT)
def band_matvec(band, x, out):
    """``out = A x`` for the symmetric matrix whose lower band is ``band``."""
    n = band.shape[0]
    p = band.shape[1] - 1
    for i in range(n):
        out[i] = band[i, 0] * x[i]
    for i in range(n):
        k0 = p if i >= p else i
        s = 0.0
        xi = x[i]
        for k in range(1, k0 + 1):
            a = band[i, k]
            s += a * x[i - k]
            out[i - k] += a * xi
        out[i] += s


def band_to_dense(band: np.ndarray) -> np.ndarray:
    """Dense symmetric matrix from its lower band (tests and small problems)."""
    n, w = band.shape
    A = np.zeros((n, n))
    for k in range(w):
        idx = np.arange(k, n)
        A[idx, idx - k] = band[k:, k]
        A[idx - k, idx] = band[k:, k]
    return A


def dense_to_band(A: np.ndarray, p: int) -> np.ndarray:
    """Lower band (N, p+1) of a symmetric dense matrix."""
    n = A.shape[0]
    band = np.zeros((n, p + 1))
    for k in range(p + 1):
        idx = np.arange(k, n)
        band[k:, k] = A[idx, idx - k]
    return band
