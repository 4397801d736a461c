"""Sqrt-free banded LDL^T factorization and solves for symmetric (positive definite) matrices.

Storage ("lower band"): ``band[i, k] = A[i, i - k]`` for ``k = 0..p`` (``p`` the half bandwidth),
shape ``(N, p + 1)``; entries with ``i - k < 0`` are ignored. The factor overwrites the band:
``band[i, k] = L[i, i - k]`` for ``k >= 1`` (unit lower ``L``) and ``D[i]`` holds the pivots.
This is the one band layout of :mod:`rodlab.linalg` for symmetric matrices (the row- and column-aligned
copies of :mod:`.banded_rows` are made from it inside hot loops).

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

from ..geometry._vec import JIT

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
    """:func:`ldlt_factor_band` with the half bandwidth fixed at 10, two columns per pass.

    Interior columns are taken in pairs ``(j, j + 1)``: column j's ten entries and multipliers, then
    column j+1 updated by column j, are held in registers (``t``, ``l``, ``u``, ``m``), and every entry
    of the trailing triangle is loaded and stored once for both rank-1 updates (column j's first,
    then column j+1's, as in :func:`ldlt_factor_band`: the result is bitwise identical, which
    ``tests/test_der_implicit_energies.py`` checks, clamped pivots included). The straight-line
    code is unrolled by hand from the loop form (a scratch array instead would be reloaded after every
    store into the band, since the compiler cannot tell them apart; the right-looking update is bound
    by its stores, and the pairing removes ~40 % of them): factor 18.5 -> ~13.5 us at N = 799.
    """
    n = band.shape[0]
    t = np.empty(BW10 + 1)
    for i in range(n):
        D[i] = band[i, 0]
    clamped = 0
    j = 0
    while j < n:
        ref = abs(D[j])
        if ref < 1e-300:
            ref = 1e-300
        d = band[j, 0]
        if not d > pivot_eps * ref:
            d = pivot_eps * ref
            clamped += 1
        D[j] = d
        inv = 1.0 / d
        if j + BW10 + 1 < n:
            # column j: entries t_a = A[j+a, j] (a = 1..10) and l_a = t_a / d
            t1 = band[j + 1, 1]
            t2 = band[j + 2, 2]
            t3 = band[j + 3, 3]
            t4 = band[j + 4, 4]
            t5 = band[j + 5, 5]
            t6 = band[j + 6, 6]
            t7 = band[j + 7, 7]
            t8 = band[j + 8, 8]
            t9 = band[j + 9, 9]
            t10 = band[j + 10, 10]
            l1 = t1 * inv
            l2 = t2 * inv
            l3 = t3 * inv
            l4 = t4 * inv
            l5 = t5 * inv
            l6 = t6 * inv
            l7 = t7 * inv
            l8 = t8 * inv
            l9 = t9 * inv
            l10 = t10 * inv
            band[j + 1, 1] = l1
            band[j + 2, 2] = l2
            band[j + 3, 3] = l3
            band[j + 4, 4] = l4
            band[j + 5, 5] = l5
            band[j + 6, 6] = l6
            band[j + 7, 7] = l7
            band[j + 8, 8] = l8
            band[j + 9, 9] = l9
            band[j + 10, 10] = l10
            # column j + 1 after column j's update: u_b = A[j+1+b, j+1] - l_(1+b) t_1
            d = band[j + 1, 0] - l1 * t1
            u1 = band[j + 2, 1] - l2 * t1
            u2 = band[j + 3, 2] - l3 * t1
            u3 = band[j + 4, 3] - l4 * t1
            u4 = band[j + 5, 4] - l5 * t1
            u5 = band[j + 6, 5] - l6 * t1
            u6 = band[j + 7, 6] - l7 * t1
            u7 = band[j + 8, 7] - l8 * t1
            u8 = band[j + 9, 8] - l9 * t1
            u9 = band[j + 10, 9] - l10 * t1
            u10 = band[j + 11, 10]
            band[j + 1, 0] = d
            ref = abs(D[j + 1])
            if ref < 1e-300:
                ref = 1e-300
            if not d > pivot_eps * ref:
                d = pivot_eps * ref
                clamped += 1
            D[j + 1] = d
            inv = 1.0 / d
            m1 = u1 * inv
            m2 = u2 * inv
            m3 = u3 * inv
            m4 = u4 * inv
            m5 = u5 * inv
            m6 = u6 * inv
            m7 = u7 * inv
            m8 = u8 * inv
            m9 = u9 * inv
            m10 = u10 * inv
            band[j + 2, 1] = m1
            band[j + 3, 2] = m2
            band[j + 4, 3] = m3
            band[j + 5, 4] = m4
            band[j + 6, 5] = m5
            band[j + 7, 6] = m6
            band[j + 8, 7] = m7
            band[j + 9, 8] = m8
            band[j + 10, 9] = m9
            band[j + 11, 10] = m10
            # rank-2 update of rows j+2 .. j+11 (columns j+2 .. row), column j first, then column j+1
            band[j + 2, 0] = (band[j + 2, 0] - l2 * t2) - m1 * u1
            band[j + 3, 1] = (band[j + 3, 1] - l3 * t2) - m2 * u1
            band[j + 3, 0] = (band[j + 3, 0] - l3 * t3) - m2 * u2
            band[j + 4, 2] = (band[j + 4, 2] - l4 * t2) - m3 * u1
            band[j + 4, 1] = (band[j + 4, 1] - l4 * t3) - m3 * u2
            band[j + 4, 0] = (band[j + 4, 0] - l4 * t4) - m3 * u3
            band[j + 5, 3] = (band[j + 5, 3] - l5 * t2) - m4 * u1
            band[j + 5, 2] = (band[j + 5, 2] - l5 * t3) - m4 * u2
            band[j + 5, 1] = (band[j + 5, 1] - l5 * t4) - m4 * u3
            band[j + 5, 0] = (band[j + 5, 0] - l5 * t5) - m4 * u4
            band[j + 6, 4] = (band[j + 6, 4] - l6 * t2) - m5 * u1
            band[j + 6, 3] = (band[j + 6, 3] - l6 * t3) - m5 * u2
            band[j + 6, 2] = (band[j + 6, 2] - l6 * t4) - m5 * u3
            band[j + 6, 1] = (band[j + 6, 1] - l6 * t5) - m5 * u4
            band[j + 6, 0] = (band[j + 6, 0] - l6 * t6) - m5 * u5
            band[j + 7, 5] = (band[j + 7, 5] - l7 * t2) - m6 * u1
            band[j + 7, 4] = (band[j + 7, 4] - l7 * t3) - m6 * u2
            band[j + 7, 3] = (band[j + 7, 3] - l7 * t4) - m6 * u3
            band[j + 7, 2] = (band[j + 7, 2] - l7 * t5) - m6 * u4
            band[j + 7, 1] = (band[j + 7, 1] - l7 * t6) - m6 * u5
            band[j + 7, 0] = (band[j + 7, 0] - l7 * t7) - m6 * u6
            band[j + 8, 6] = (band[j + 8, 6] - l8 * t2) - m7 * u1
            band[j + 8, 5] = (band[j + 8, 5] - l8 * t3) - m7 * u2
            band[j + 8, 4] = (band[j + 8, 4] - l8 * t4) - m7 * u3
            band[j + 8, 3] = (band[j + 8, 3] - l8 * t5) - m7 * u4
            band[j + 8, 2] = (band[j + 8, 2] - l8 * t6) - m7 * u5
            band[j + 8, 1] = (band[j + 8, 1] - l8 * t7) - m7 * u6
            band[j + 8, 0] = (band[j + 8, 0] - l8 * t8) - m7 * u7
            band[j + 9, 7] = (band[j + 9, 7] - l9 * t2) - m8 * u1
            band[j + 9, 6] = (band[j + 9, 6] - l9 * t3) - m8 * u2
            band[j + 9, 5] = (band[j + 9, 5] - l9 * t4) - m8 * u3
            band[j + 9, 4] = (band[j + 9, 4] - l9 * t5) - m8 * u4
            band[j + 9, 3] = (band[j + 9, 3] - l9 * t6) - m8 * u5
            band[j + 9, 2] = (band[j + 9, 2] - l9 * t7) - m8 * u6
            band[j + 9, 1] = (band[j + 9, 1] - l9 * t8) - m8 * u7
            band[j + 9, 0] = (band[j + 9, 0] - l9 * t9) - m8 * u8
            band[j + 10, 8] = (band[j + 10, 8] - l10 * t2) - m9 * u1
            band[j + 10, 7] = (band[j + 10, 7] - l10 * t3) - m9 * u2
            band[j + 10, 6] = (band[j + 10, 6] - l10 * t4) - m9 * u3
            band[j + 10, 5] = (band[j + 10, 5] - l10 * t5) - m9 * u4
            band[j + 10, 4] = (band[j + 10, 4] - l10 * t6) - m9 * u5
            band[j + 10, 3] = (band[j + 10, 3] - l10 * t7) - m9 * u6
            band[j + 10, 2] = (band[j + 10, 2] - l10 * t8) - m9 * u7
            band[j + 10, 1] = (band[j + 10, 1] - l10 * t9) - m9 * u8
            band[j + 10, 0] = (band[j + 10, 0] - l10 * t10) - m9 * u9
            band[j + 11, 9] -= m10 * u1
            band[j + 11, 8] -= m10 * u2
            band[j + 11, 7] -= m10 * u3
            band[j + 11, 6] -= m10 * u4
            band[j + 11, 5] -= m10 * u5
            band[j + 11, 4] -= m10 * u6
            band[j + 11, 3] -= m10 * u7
            band[j + 11, 2] -= m10 * u8
            band[j + 11, 1] -= m10 * u9
            band[j + 11, 0] -= m10 * u10

            j += 2
        else:
            amax = n - 1 - j
            if amax > BW10:
                amax = BW10
            for a in range(1, amax + 1):
                t[a] = band[j + a, a]
                band[j + a, a] = t[a] * inv
            for a in range(1, amax + 1):
                ta = t[a] * inv
                for b in range(1, a + 1):
                    band[j + a, a - b] -= ta * t[b]
            j += 1
    return clamped


@njit(**JIT)
def ldlt_solve_band10(band, D, b):
    """:func:`ldlt_solve_band` with the half bandwidth fixed at 10.

    Both substitutions keep the ten pending right-hand-side entries in registers (a sliding window
    ``s1..s10``, shifted after every row), so the dependency from one row to the next is a single
    multiply-subtract instead of a store and a reload through memory (2x faster at N = 799). Same
    operations in the same order as :func:`ldlt_solve_band`: identical results.
    """
    n = band.shape[0]
    if n <= BW10 + 1:
        ldlt_solve_band(band, D, b)
        return
    # forward L y = b: sliding window s1..s10 = pending b[j+1..j+10] (registers)
    s1, s2, s3, s4, s5 = b[1], b[2], b[3], b[4], b[5]
    s6, s7, s8, s9, s10 = b[6], b[7], b[8], b[9], b[10]
    y = b[0]
    m = n - BW10
    for j in range(m):
        s1 -= band[j + 1, 1] * y
        s2 -= band[j + 2, 2] * y
        s3 -= band[j + 3, 3] * y
        s4 -= band[j + 4, 4] * y
        s5 -= band[j + 5, 5] * y
        s6 -= band[j + 6, 6] * y
        s7 -= band[j + 7, 7] * y
        s8 -= band[j + 8, 8] * y
        s9 -= band[j + 9, 9] * y
        s10 -= band[j + 10, 10] * y
        b[j] = y
        y = s1
        s1, s2, s3, s4, s5, s6, s7, s8, s9 = s2, s3, s4, s5, s6, s7, s8, s9, s10
        s10 = b[j + 11] if j + 11 < n else 0.0
    # tail: rows m .. n-1; pending values in y, s1.. (n - 1 - m = BW10 - 1 of them)
    b[m] = y
    b[m + 1] = s1
    b[m + 2] = s2
    b[m + 3] = s3
    b[m + 4] = s4
    b[m + 5] = s5
    b[m + 6] = s6
    b[m + 7] = s7
    b[m + 8] = s8
    b[m + 9] = s9
    for j in range(m, n):
        bj = b[j]
        for a in range(1, n - j):
            b[j + a] -= band[j + a, a] * bj
    for i in range(n):
        b[i] /= D[i]
    # backward L^T x = y / D: window t1..t10 = pending x[i-1..i-10]
    x = b[n - 1]
    t1, t2, t3, t4, t5 = b[n - 2], b[n - 3], b[n - 4], b[n - 5], b[n - 6]
    t6, t7, t8, t9, t10 = b[n - 7], b[n - 8], b[n - 9], b[n - 10], b[n - 11]
    for i in range(n - 1, BW10, -1):
        t1 -= band[i, 1] * x
        t2 -= band[i, 2] * x
        t3 -= band[i, 3] * x
        t4 -= band[i, 4] * x
        t5 -= band[i, 5] * x
        t6 -= band[i, 6] * x
        t7 -= band[i, 7] * x
        t8 -= band[i, 8] * x
        t9 -= band[i, 9] * x
        t10 -= band[i, 10] * x
        b[i] = x
        x = t1
        t1, t2, t3, t4, t5, t6, t7, t8, t9 = t2, t3, t4, t5, t6, t7, t8, t9, t10
        t10 = b[i - 11] if i >= 11 else 0.0
    # i = BW10: x is final for row BW10, t1..t10 pending for rows BW10-1 .. 0
    b[BW10] = x
    b[BW10 - 1] = t1
    b[BW10 - 2] = t2
    b[BW10 - 3] = t3
    b[BW10 - 4] = t4
    b[BW10 - 5] = t5
    b[BW10 - 6] = t6
    b[BW10 - 7] = t7
    b[BW10 - 8] = t8
    b[BW10 - 9] = t9
    b[BW10 - 10] = t10
    for i in range(BW10, -1, -1):
        bi = b[i]
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
