"""Banded LU factorization with partial pivoting inside the band (numba).

Storage follows LAPACK's ``dgbtrf`` layout, transposed so that one *column* of the matrix is one
contiguous row of the array: ``ab[j, kl + ku + i - j] = A[i, j]`` for ``max(0, j - ku) <= i <=
min(n - 1, j + kl)``; ``ab`` has shape ``(n, 2 kl + ku + 1)``. The first ``kl`` entries of each
stored column are workspace for the fill-in that row interchanges create in U (U gets upper
bandwidth ``kl + ku``). Cost: about ``2 n kl (kl + ku)`` flops for the factorization and
``2 n (2 kl + ku)`` per solve.

Kernels: :func:`band_index` (where A[i, j] lives), :func:`gbtrf` (factor in place),
:func:`gbtrs` (solve with the factors, in place), :func:`gbtrs_multi` (several right-hand
sides), :func:`gbsv` (both). The result of a singular
factorization is reported by the return value (index of the first zero pivot + 1, 0 if fine),
never by an exception, so compiled callers can react.
"""
from __future__ import annotations

import numpy as np
from numba import njit

JIT = dict(cache=True, error_model="numpy", fastmath=False)


@njit(inline="always", **JIT)
def band_index(i, j, kl, ku):
    """Column offset of ``A[i, j]`` inside ``ab[j, :]``."""
    return kl + ku + i - j


def band_storage(n: int, kl: int, ku: int) -> np.ndarray:
    """A zeroed array for an ``n x n`` matrix with ``kl`` sub- and ``ku`` super-diagonals."""
    return np.zeros((n, 2 * kl + ku + 1))


def dense_to_band(a: np.ndarray, kl: int, ku: int) -> np.ndarray:
    """Pack a dense matrix (entries outside the band are ignored) into :func:`band_storage` layout."""
    n = a.shape[0]
    ab = band_storage(n, kl, ku)
    for j in range(n):
        for i in range(max(0, j - ku), min(n, j + kl + 1)):
            ab[j, kl + ku + i - j] = a[i, j]
    return ab


@njit(**JIT)
def gbtrf(ab, kl, ku, ipiv):
    """Factor ``P A = L U`` in place (partial pivoting within the ``kl`` rows below the diagonal).

    ``ab``: (n, 2 kl + ku + 1) band storage, overwritten by the multipliers of L (below the
    diagonal) and by U (upper bandwidth ``kl + ku``). ``ipiv`` (n,) int64: row swapped with row k
    at step k. Returns 0, or ``k + 1`` if the pivot of column k is exactly zero.
    """
    n = ab.shape[0]
    d = kl + ku  # diagonal position inside a stored column
    kv = kl + ku  # upper bandwidth of U
    info = 0
    # zero the fill-in workspace
    for j in range(n):
        for t in range(kl):
            ab[j, t] = 0.0
    for k in range(n):
        # pivot search in column k, rows k..k+kl
        last = min(n - 1, k + kl)
        p = k
        best = abs(ab[k, d])
        for i in range(k + 1, last + 1):
            v = abs(ab[k, d + i - k])
            if v > best:
                best = v
                p = i
        ipiv[k] = p
        if best == 0.0:
            if info == 0:
                info = k + 1
            continue
        jlast = min(n - 1, k + kv)
        if p != k:
            for j in range(k, jlast + 1):
                a = ab[j, d + k - j]
                ab[j, d + k - j] = ab[j, d + p - j]
                ab[j, d + p - j] = a
        inv = 1.0 / ab[k, d]
        for i in range(k + 1, last + 1):
            ab[k, d + i - k] *= inv
        # rank-1 update of the trailing band
        for j in range(k + 1, jlast + 1):
            akj = ab[j, d + k - j]
            if akj != 0.0:
                base = d - j
                for i in range(k + 1, last + 1):
                    ab[j, base + i] -= ab[k, d + i - k] * akj
    return info


@njit(**JIT)
def gbtrs(ab, kl, ku, ipiv, b):
    """Solve ``A x = b`` in place (``b`` (n,)) with the factors from :func:`gbtrf`."""
    n = ab.shape[0]
    d = kl + ku
    kv = kl + ku
    # forward: apply P and L
    for k in range(n):
        p = ipiv[k]
        if p != k:
            t = b[k]
            b[k] = b[p]
            b[p] = t
        bk = b[k]
        if bk != 0.0:
            last = min(n - 1, k + kl)
            for i in range(k + 1, last + 1):
                b[i] -= ab[k, d + i - k] * bk
    # backward: U
    for j in range(n - 1, -1, -1):
        b[j] /= ab[j, d]
        bj = b[j]
        first = max(0, j - kv)
        for i in range(first, j):
            b[i] -= ab[j, d + i - j] * bj


@njit(**JIT)
def gbtrs_multi(ab, kl, ku, ipiv, B):
    """Solve ``A X = B`` in place for several right-hand sides, ``B`` (n, m) row-major (each
    band entry is loaded once for all m columns)."""
    n = ab.shape[0]
    m = B.shape[1]
    d = kl + ku
    kv = kl + ku
    for k in range(n):
        p = ipiv[k]
        if p != k:
            for c in range(m):
                t = B[k, c]
                B[k, c] = B[p, c]
                B[p, c] = t
        nz = False
        for c in range(m):
            if B[k, c] != 0.0:
                nz = True
                break
        if nz:
            last = min(n - 1, k + kl)
            for i in range(k + 1, last + 1):
                lik = ab[k, d + i - k]
                for c in range(m):
                    B[i, c] -= lik * B[k, c]
    for j in range(n - 1, -1, -1):
        inv = 1.0 / ab[j, d]
        for c in range(m):
            B[j, c] *= inv
        first = max(0, j - kv)
        for i in range(first, j):
            uij = ab[j, d + i - j]
            for c in range(m):
                B[i, c] -= uij * B[j, c]


@njit(**JIT)
def gbsv(ab, kl, ku, ipiv, b):
    """Factor and solve in place; returns the :func:`gbtrf` status."""
    info = gbtrf(ab, kl, ku, ipiv)
    if info == 0:
        gbtrs(ab, kl, ku, ipiv, b)
    return info


def solve_banded_lu(a_or_ab: np.ndarray, b: np.ndarray, kl: int, ku: int, *, packed: bool = False) -> np.ndarray:
    """Convenience wrapper: solve ``A x = b`` for a dense (or already packed) banded matrix.

    Raises ``np.linalg.LinAlgError`` naming the zero pivot if A is singular.
    """
    ab = np.array(a_or_ab, dtype=float) if packed else dense_to_band(np.asarray(a_or_ab, dtype=float), kl, ku)
    x = np.array(b, dtype=float)
    ipiv = np.zeros(ab.shape[0], dtype=np.int64)
    info = gbsv(ab, kl, ku, ipiv, x)
    if info != 0:
        raise np.linalg.LinAlgError(f"banded LU: zero pivot in column {info - 1}")
    return x
