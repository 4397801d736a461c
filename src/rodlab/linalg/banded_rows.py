"""Banded symmetric matrices in the row- and column-aligned layouts (compute layouts of the MPRGP fast path).

The storage layout of :mod:`rodlab.linalg` is the lower band of :mod:`.banded_ldlt`
(``band[i, k] = A[i, i - k]``). For the inner loops of the box-QP solver
(:mod:`rodlab.inverse.qp.mprgp_fast`) the same matrix and its factor are copied into two layouts
in which every row or column is one contiguous window:

* full rows (row-aligned): ``F[i, j] = A[i, i - p + j]``, ``j = 0..2p`` (zero outside the matrix),
  from the lower band by :func:`band_to_rows`; the row-aligned factor ``Lr[i, j] = L[i, i - p + j]``
  for ``j = 0..p-1`` with ``Lr[i, p] = 1 / D_i``;
* column-aligned factor ``Lc[j, k] = L[j + k, j]`` (``k >= 1``, zero beyond the matrix) with
  ``Lc[j, 0] = 1 / D_j`` (:func:`cldlt_factor`).

Vectors are padded with ``p`` zeros at both ends (entry ``i`` at ``p + i``). Row i then meets the
vector entries ``i - p .. i (+ p)`` at the contiguous padded positions ``i .. i + p (+ p)``: the
product (dot products), the forward substitution (dot products) and the backward substitution
(axpys) all run unit-stride over a row and a window of a vector, with no boundary branches.
These kernels use ``fastmath`` reassociation (and contraction into FMAs) only (:data:`JIT_FM`), so
that their dot products vectorize: this changes the rounding of each dot product (relative 1e-16 per
entry), never the handling of infinities or NaNs, which the bound logic of a (non-fastmath) caller
may rely on.
"""
from __future__ import annotations

from numba import njit

from ..geometry._vec import JIT_FM


@njit(**JIT_FM)
def rband_matvec(F, xp, op):
    """``op = M xp`` for the symmetric ``M`` stored as full rows ``F[i, j] = M[i, i - p + j]``, ``j = 0..2p``
    (zero outside the matrix), on vectors padded with ``p`` zeros at both ends (entry ``i`` at ``p + i``):
    one contiguous dot product per row, no dependency between rows."""
    n = F.shape[0]
    w = F.shape[1]
    p = (w - 1) // 2
    for i in range(n):
        s = 0.0
        for j in range(w):
            s += F[i, j] * xp[i + j]
        op[p + i] = s


@njit(**JIT_FM)
def band_to_rows(A, Ar):
    """Lower band ``A[i, k] = M[i, i - k]`` of the symmetric ``M`` into the full rows ``Ar[i, j] = M[i, i - p + j]``
    (zeros outside the matrix): the left half is row i of the band reversed (contiguous), the right half
    column i of the lower triangle (``A[i + k, k]``, strided)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    for i in range(n):
        k0 = p if i >= p else i
        for j in range(p - k0):
            Ar[i, j] = 0.0
        for k in range(k0 + 1):
            Ar[i, p - k] = A[i, k]
    for i in range(n):
        kmax = n - 1 - i
        if kmax > p:
            kmax = p
        for k in range(1, kmax + 1):
            Ar[i, p + k] = A[i + k, k]
        for k in range(kmax + 1, p + 1):
            Ar[i, p + k] = 0.0


@njit(**JIT_FM)
def column_copy_norm(Ar, Lc):
    """The right half of the full rows (``Lc[j, k] = M[j + k, j]``, the column-aligned lower triangle,
    contiguous) and ``||M||_inf`` (largest absolute row sum, an upper bound of the 2-norm)."""
    n = Ar.shape[0]
    p = Lc.shape[1] - 1
    anorm = 0.0
    for i in range(n):
        s = 0.0
        for j in range(2 * p + 1):
            s += abs(Ar[i, j])
        if s > anorm:
            anorm = s
        for k in range(p + 1):
            Lc[i, k] = Ar[i, p + k]
    return anorm


@njit(**JIT_FM)
def cldlt_factor(F, Lc, Lr, t, pivot_eps):
    """Banded LDL^T in the column-aligned layout, in place: on entry ``Lc[j, k] = A[j + k, j]`` (column j of
    the lower triangle, contiguous), on exit ``Lc[j, k] = L[j + k, j]`` (``k >= 1``) and ``Lc[j, 0] = 1/D_j``;
    each finished column is also scattered into the row-aligned copy ``Lr[i, j] = L[i, i - p + j]``,
    ``Lr[i, p] = 1/D_i`` (zeros outside the matrix), which the backward substitution needs (fused: cheaper
    than a separate strided pass). Right-looking like :func:`ldlt_factor_band` (the same products, the
    rank-1 update of the trailing triangle column by column), but each column's update is one contiguous
    axpy. Pivots not above ``pivot_eps |A_jj|`` (``A_jj`` read from the full rows ``F``) are clamped to it;
    returns their number. ``t``: scratch of length >= p + 1."""
    n = Lc.shape[0]
    p = Lc.shape[1] - 1
    clamped = 0
    for i in range(min(n, p)):
        for j in range(p - i):
            Lr[i, j] = 0.0
    for j in range(n):
        ref = abs(F[j, p])
        if ref < 1e-300:
            ref = 1e-300
        d = Lc[j, 0]
        if not d > pivot_eps * ref:
            d = pivot_eps * ref
            clamped += 1
        inv = 1.0 / d
        amax = n - 1 - j
        if amax > p:
            amax = p
        for a in range(1, amax + 1):
            t[a] = Lc[j, a]
            la = t[a] * inv
            Lc[j, a] = la
            Lr[j + a, p - a] = la
        for a in range(1, amax + 1):
            la = Lc[j, a]
            for m in range(amax - a + 1):
                Lc[j + a, m] -= la * t[a + m]
        Lc[j, 0] = inv
        Lr[j, p] = inv
    return clamped
