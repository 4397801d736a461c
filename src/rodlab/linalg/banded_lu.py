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

from ..geometry._vec import JIT, JIT_INNER


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



# ---------------------------------------------------------------------------------------------
# Block-bidiagonal ("staircase") LU for two-point boundary value problems.
#
# Equations come in segment blocks: block s (nb rows) couples the unknowns of node s and node
# s+1 (nb each), ``J[s] = [A_s | B_s]`` with shape (nb, 2 nb); there are S = N - 1 segments and
# N nodes. The nb S equations leave nb unknowns undetermined; boundary conditions "unknown =
# given" fix ``c`` unknowns of node 0 and ``nb - c`` of node N-1 (``root_free`` / ``tip_free``
# masks). The fixed unknowns stay in the system with identity rows (their columns are zeroed in
# J), which makes every elimination step the same:
#
#   step s: the c rows carried over from step s-1 (nonzero only in node s's columns) stacked on
#   block s's nb rows, a (c + nb) x 2 nb matrix; Gaussian elimination with partial pivoting over
#   all its rows removes node s's nb columns and leaves c rows in node s+1's columns (the carry).
#
# This is row-partial-pivoting Gaussian elimination of the whole matrix (rows of later blocks are
# zero in node s's columns, so they are no pivot candidates), without the fill-in space and the
# index arithmetic of a general band: about 2 S (c + nb) 2 nb nb flops on small dense contiguous
# blocks, with nb and c compile-time constants (loops fully unrolled/vectorized). The final carry
# plus the tip identity rows form a dense nb x nb system.
# ---------------------------------------------------------------------------------------------


def make_block_lu(nb: int, c: int, nrhs: int = 6, inner: bool = False):
    """Compiled (factor, solve, solve1) kernels for block size ``nb`` and ``c`` fixed root unknowns
    (compile-time constants); ``inner``: compiled with :data:`JIT_INNER` (callable from compiled
    code only, see there), else Python-callable:

    ``factor(J, root_free, tip_free, W, piv, T, tpiv) -> info``: J (S, nb, 2 nb) segment blocks
    (not modified); root_free, tip_free (nb,) bool (``nb - c`` and ``c`` of them True); W (S,
    c + nb, 2 nb) out: per step the eliminated matrix (U in rows 0..nb-1, multipliers below the
    diagonal of the left half); piv (S, nb) int64 out; T (nb, nb) out: LU of the final block,
    tpiv (nb,) int64. Returns 0, or 1 + the (full, node-major) column index of the first zero
    pivot.

    ``solve1(W, piv, T, tpiv, b, y, z)``: the same for one right-hand side, b (S nb,), y (N nb,),
    z (S nb,).

    ``solve(W, piv, T, tpiv, B, Y, Z)``: B (S nb, m) with m = ``nrhs`` (a compile-time constant
    too: 2.4x faster than a run-time m for m = 6) right-hand sides of the segment equations
    (the fixed unknowns' identity rows have right-hand side 0), Y (N nb, m) out: every nodal
    unknown (the fixed ones come out 0), Z (S nb, m) workspace.
    """
    NB = int(nb)
    C = int(c)
    MR = int(nrhs)
    M = C + NB
    if not (NB >= 1 and 0 <= C <= NB and MR >= 1):
        raise ValueError(f"make_block_lu: need nb >= 1, c in [0, nb], nrhs >= 1 (got nb={nb}, c={c}, nrhs={nrhs})")

    def factor(J, root_free, tip_free, W, piv, T, tpiv):
        S = J.shape[0]
        info = 0
        for s in range(S):
            Ws = W[s]
            if s == 0:
                for i in range(C):
                    for q in range(2 * NB):
                        Ws[i, q] = 0.0
                r = 0
                for q in range(NB):
                    if not root_free[q]:
                        Ws[r, q] = 1.0
                        r += 1
            else:
                Wp = W[s - 1]
                for i in range(C):
                    for q in range(NB):
                        Ws[i, q] = Wp[NB + i, NB + q]
                        Ws[i, NB + q] = 0.0
            Js = J[s]
            for i in range(NB):
                for q in range(2 * NB):
                    Ws[C + i, q] = Js[i, q]
            if s == 0:
                for q in range(NB):
                    if not root_free[q]:
                        for i in range(NB):
                            Ws[C + i, q] = 0.0
            if s == S - 1:
                for q in range(NB):
                    if not tip_free[q]:
                        for i in range(NB):
                            Ws[C + i, NB + q] = 0.0
            for k in range(NB):
                p = k
                best = abs(Ws[k, k])
                for i in range(k + 1, M):
                    v = abs(Ws[i, k])
                    if v > best:
                        best = v
                        p = i
                piv[s, k] = p
                if best == 0.0:
                    if info == 0:
                        info = s * NB + k + 1
                    continue
                if p != k:
                    for q in range(k, 2 * NB):
                        t = Ws[k, q]
                        Ws[k, q] = Ws[p, q]
                        Ws[p, q] = t
                inv = 1.0 / Ws[k, k]
                for i in range(k + 1, M):
                    lik = Ws[i, k] * inv
                    Ws[i, k] = lik
                    if lik != 0.0:
                        for q in range(k + 1, 2 * NB):
                            Ws[i, q] -= lik * Ws[k, q]
        Wl = W[S - 1]
        for i in range(C):
            for q in range(NB):
                T[i, q] = Wl[NB + i, NB + q]
        r = C
        for q in range(NB):
            if not tip_free[q]:
                for qq in range(NB):
                    T[r, qq] = 0.0
                T[r, q] = 1.0
                r += 1
        for k in range(NB):
            p = k
            best = abs(T[k, k])
            for i in range(k + 1, NB):
                v = abs(T[i, k])
                if v > best:
                    best = v
                    p = i
            tpiv[k] = p
            if best == 0.0:
                if info == 0:
                    info = S * NB + k + 1
                continue
            if p != k:
                for q in range(k, NB):
                    t = T[k, q]
                    T[k, q] = T[p, q]
                    T[p, q] = t
            inv = 1.0 / T[k, k]
            for i in range(k + 1, NB):
                lik = T[i, k] * inv
                T[i, k] = lik
                if lik != 0.0:
                    for q in range(k + 1, NB):
                        T[i, q] -= lik * T[k, q]
        return info

    def solve(W, piv, T, tpiv, B, Y, Z):
        S = W.shape[0]
        if B.shape[1] != MR or Y.shape[1] != MR or Z.shape[1] != MR:
            raise ValueError("block LU solve: B, Y, Z need exactly nrhs columns")
        m = MR
        v = np.empty((M, m))
        for i in range(C):
            for a in range(m):
                v[i, a] = 0.0
        zero = True  # leading zero right-hand-side blocks stay zero: skip their elimination
        for s in range(S):
            Ws = W[s]
            for i in range(NB):
                for a in range(m):
                    v[C + i, a] = B[s * NB + i, a]
                    if zero and B[s * NB + i, a] != 0.0:
                        zero = False
            if zero:
                for i in range(NB):
                    for a in range(m):
                        Z[s * NB + i, a] = 0.0
                continue
            for k in range(NB):
                p = piv[s, k]
                if p != k:
                    for a in range(m):
                        t = v[k, a]
                        v[k, a] = v[p, a]
                        v[p, a] = t
                for i in range(k + 1, M):
                    lik = Ws[i, k]
                    if lik != 0.0:
                        for a in range(m):
                            v[i, a] -= lik * v[k, a]
            for i in range(NB):
                for a in range(m):
                    Z[s * NB + i, a] = v[i, a]
            for i in range(C):
                for a in range(m):
                    v[i, a] = v[NB + i, a]
        o = S * NB
        for i in range(NB):
            for a in range(m):
                Y[o + i, a] = v[i, a] if i < C else 0.0
        for k in range(NB):
            p = tpiv[k]
            if p != k:
                for a in range(m):
                    t = Y[o + k, a]
                    Y[o + k, a] = Y[o + p, a]
                    Y[o + p, a] = t
            for i in range(k + 1, NB):
                lik = T[i, k]
                for a in range(m):
                    Y[o + i, a] -= lik * Y[o + k, a]
        for k in range(NB - 1, -1, -1):
            for q in range(k + 1, NB):
                tkq = T[k, q]
                for a in range(m):
                    Y[o + k, a] -= tkq * Y[o + q, a]
            inv = 1.0 / T[k, k]
            for a in range(m):
                Y[o + k, a] *= inv
        for s in range(S - 1, -1, -1):
            Ws = W[s]
            o = s * NB
            for k in range(NB - 1, -1, -1):
                for a in range(m):
                    Y[o + k, a] = Z[o + k, a]
                for q in range(NB):
                    w = Ws[k, NB + q]
                    for a in range(m):
                        Y[o + k, a] -= w * Y[o + NB + q, a]
                for q in range(k + 1, NB):
                    w = Ws[k, q]
                    for a in range(m):
                        Y[o + k, a] -= w * Y[o + q, a]
                inv = 1.0 / Ws[k, k]
                for a in range(m):
                    Y[o + k, a] *= inv

    def solve1(W, piv, T, tpiv, b, y, z):
        S = W.shape[0]
        v = np.empty(M)
        for i in range(C):
            v[i] = 0.0
        for s in range(S):
            Ws = W[s]
            for i in range(NB):
                v[C + i] = b[s * NB + i]
            for k in range(NB):
                p = piv[s, k]
                if p != k:
                    t = v[k]
                    v[k] = v[p]
                    v[p] = t
                vk = v[k]
                if vk != 0.0:
                    for i in range(k + 1, M):
                        v[i] -= Ws[i, k] * vk
            for i in range(NB):
                z[s * NB + i] = v[i]
            for i in range(C):
                v[i] = v[NB + i]
        o = S * NB
        for i in range(NB):
            y[o + i] = v[i] if i < C else 0.0
        for k in range(NB):
            p = tpiv[k]
            if p != k:
                t = y[o + k]
                y[o + k] = y[o + p]
                y[o + p] = t
            yk = y[o + k]
            for i in range(k + 1, NB):
                y[o + i] -= T[i, k] * yk
        for k in range(NB - 1, -1, -1):
            acc = y[o + k]
            for q in range(k + 1, NB):
                acc -= T[k, q] * y[o + q]
            y[o + k] = acc / T[k, k]
        for s in range(S - 1, -1, -1):
            Ws = W[s]
            o = s * NB
            for k in range(NB - 1, -1, -1):
                acc = z[o + k]
                for q in range(NB):
                    acc -= Ws[k, NB + q] * y[o + NB + q]
                for q in range(k + 1, NB):
                    acc -= Ws[k, q] * y[o + q]
                y[o + k] = acc / Ws[k, k]

    # one name per (nb, c, nrhs, inner): compiled symbols and cache files of different instances must not collide
    out = []
    for f in (factor, solve, solve1):
        f.__name__ = f"{f.__name__}_{NB}_{C}_{MR}"
        f.__qualname__ = f"block_lu{'_inner' if inner else ''}_{f.__name__}"
        out.append(njit(**(JIT_INNER if inner else JIT))(f))
    return tuple(out)


_BLOCK_LU = {}


def block_lu(nb: int, c: int, nrhs: int = 6, inner: bool = False):
    """Cached :func:`make_block_lu` (one compiled set per (nb, c, nrhs, inner))."""
    key = (int(nb), int(c), int(nrhs), bool(inner))
    if key not in _BLOCK_LU:
        _BLOCK_LU[key] = make_block_lu(*key)
    return _BLOCK_LU[key]
