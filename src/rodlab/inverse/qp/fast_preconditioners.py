"""Preconditioners of the MPRGP fast path on the row- and column-aligned layouts
(:mod:`rodlab.linalg.banded_rows`): set-up (:func:`prepare_fast`, :func:`prepare_rows`), the filtered
symmetric substitution (:func:`rfiltered_apply`, unrolled for half bandwidth 18 in :func:`_filtered18`;
Takahashi and Batty, "Optimizing Parameters for Static Equilibrium of Discrete Elastic Rods with
Active-Set Cholesky", Eqs. 32-35) and the incremental Schur-complement correction of ``asc-schur``
(:func:`_schur_fast`)."""
from __future__ import annotations

import math

from numba import njit

from ...geometry._vec import JIT, JIT_FM, JIT_FMA
from ...linalg.banded_rows import band_to_rows, cldlt_factor, column_copy_norm
from .preconditioners import PC_ASC, PC_ASCS, PC_IC, PC_MIC, ic_factor_band

FAST_PCS = (PC_ASC, PC_IC, PC_MIC)  # the filtered-factor preconditioners of the fast path (and PC_ASCS)


@njit(**JIT_FM)
def rfiltered_apply(Lr, free, r, yp, zp, v):
    """Filtered symmetric substitution (Takahashi and Batty Eqs. 32-35) with the row-aligned factor
    ``Lr`` (diagonal column ``1/D``): ``z = L_F^{-T} F D^{-1} F L_F^{-1} r`` into the padded ``zp``
    (``yp``: padded scratch, both with zero padding). Forward in dot-product form, backward in axpy form
    (each contiguous). Returns ``z . v`` (``v`` padded), accumulated as the backward sweep finalizes
    each ``z_i`` (the CG recurrence needs it)."""
    n = Lr.shape[0]
    p = Lr.shape[1] - 1
    for i in range(n):
        if free[i]:
            s = r[i]
            for j in range(p):
                s -= Lr[i, j] * yp[i + j]
            yp[p + i] = s
            zp[p + i] = s * Lr[i, p]
        else:
            yp[p + i] = 0.0
            zp[p + i] = 0.0
    zv = 0.0
    for i in range(n - 1, -1, -1):
        if free[i]:
            zi = zp[p + i]
            zv += zi * v[p + i]
            for j in range(p):
                zp[i + j] -= Lr[i, j] * zi
        else:
            zp[p + i] = 0.0
    return zv


@njit(**JIT_FMA)
def _filtered18(Lf, free, r, zp, v):
    """:func:`rfiltered_apply` for half bandwidth 18 (the sag-free Hessian, ``kernels.HBW``): both sweeps in
    axpy form with the 18 pending entries held in registers (``s0..s18`` forward over the column-aligned
    factor ``Lf[1]``, ``t0..t18`` backward over the row-aligned ``Lf[0]``), so that consecutive rows depend on
    each other through one multiply-subtract, not through a store and a reload. Same operations as the
    textbook substitutions, multiply-subtracts contracted into FMAs (``fastmath`` contraction only: 1.47 ->
    1.22 us per application at n = 196). ``r``: entries 0..n-1 used; ``zp``, ``v`` padded by 18; returns
    ``z . v``."""
    n = Lf.shape[1]
    Lr = Lf[0]
    Lc = Lf[1]
    s0 = r[0] if 0 < n else 0.0
    s1 = r[1] if 1 < n else 0.0
    s2 = r[2] if 2 < n else 0.0
    s3 = r[3] if 3 < n else 0.0
    s4 = r[4] if 4 < n else 0.0
    s5 = r[5] if 5 < n else 0.0
    s6 = r[6] if 6 < n else 0.0
    s7 = r[7] if 7 < n else 0.0
    s8 = r[8] if 8 < n else 0.0
    s9 = r[9] if 9 < n else 0.0
    s10 = r[10] if 10 < n else 0.0
    s11 = r[11] if 11 < n else 0.0
    s12 = r[12] if 12 < n else 0.0
    s13 = r[13] if 13 < n else 0.0
    s14 = r[14] if 14 < n else 0.0
    s15 = r[15] if 15 < n else 0.0
    s16 = r[16] if 16 < n else 0.0
    s17 = r[17] if 17 < n else 0.0
    s18 = r[18] if 18 < n else 0.0
    for j in range(n):
        y = s0 if free[j] else 0.0
        zp[18 + j] = y * Lc[j, 0]
        s0 = s1 - Lc[j, 1] * y
        s1 = s2 - Lc[j, 2] * y
        s2 = s3 - Lc[j, 3] * y
        s3 = s4 - Lc[j, 4] * y
        s4 = s5 - Lc[j, 5] * y
        s5 = s6 - Lc[j, 6] * y
        s6 = s7 - Lc[j, 7] * y
        s7 = s8 - Lc[j, 8] * y
        s8 = s9 - Lc[j, 9] * y
        s9 = s10 - Lc[j, 10] * y
        s10 = s11 - Lc[j, 11] * y
        s11 = s12 - Lc[j, 12] * y
        s12 = s13 - Lc[j, 13] * y
        s13 = s14 - Lc[j, 14] * y
        s14 = s15 - Lc[j, 15] * y
        s15 = s16 - Lc[j, 16] * y
        s16 = s17 - Lc[j, 17] * y
        s17 = s18 - Lc[j, 18] * y
        s18 = r[j + 19] if j + 19 < n else 0.0
    t0 = zp[18 + n - 1 - 0] if n - 1 - 0 >= 0 else 0.0
    t1 = zp[18 + n - 1 - 1] if n - 1 - 1 >= 0 else 0.0
    t2 = zp[18 + n - 1 - 2] if n - 1 - 2 >= 0 else 0.0
    t3 = zp[18 + n - 1 - 3] if n - 1 - 3 >= 0 else 0.0
    t4 = zp[18 + n - 1 - 4] if n - 1 - 4 >= 0 else 0.0
    t5 = zp[18 + n - 1 - 5] if n - 1 - 5 >= 0 else 0.0
    t6 = zp[18 + n - 1 - 6] if n - 1 - 6 >= 0 else 0.0
    t7 = zp[18 + n - 1 - 7] if n - 1 - 7 >= 0 else 0.0
    t8 = zp[18 + n - 1 - 8] if n - 1 - 8 >= 0 else 0.0
    t9 = zp[18 + n - 1 - 9] if n - 1 - 9 >= 0 else 0.0
    t10 = zp[18 + n - 1 - 10] if n - 1 - 10 >= 0 else 0.0
    t11 = zp[18 + n - 1 - 11] if n - 1 - 11 >= 0 else 0.0
    t12 = zp[18 + n - 1 - 12] if n - 1 - 12 >= 0 else 0.0
    t13 = zp[18 + n - 1 - 13] if n - 1 - 13 >= 0 else 0.0
    t14 = zp[18 + n - 1 - 14] if n - 1 - 14 >= 0 else 0.0
    t15 = zp[18 + n - 1 - 15] if n - 1 - 15 >= 0 else 0.0
    t16 = zp[18 + n - 1 - 16] if n - 1 - 16 >= 0 else 0.0
    t17 = zp[18 + n - 1 - 17] if n - 1 - 17 >= 0 else 0.0
    t18 = zp[18 + n - 1 - 18] if n - 1 - 18 >= 0 else 0.0
    zv = 0.0
    for i in range(n - 1, -1, -1):
        z = t0 if free[i] else 0.0
        zp[18 + i] = z
        zv += z * v[18 + i]
        t0 = t1 - Lr[i, 17] * z
        t1 = t2 - Lr[i, 16] * z
        t2 = t3 - Lr[i, 15] * z
        t3 = t4 - Lr[i, 14] * z
        t4 = t5 - Lr[i, 13] * z
        t5 = t6 - Lr[i, 12] * z
        t6 = t7 - Lr[i, 11] * z
        t7 = t8 - Lr[i, 10] * z
        t8 = t9 - Lr[i, 9] * z
        t9 = t10 - Lr[i, 8] * z
        t10 = t11 - Lr[i, 7] * z
        t11 = t12 - Lr[i, 6] * z
        t12 = t13 - Lr[i, 5] * z
        t13 = t14 - Lr[i, 4] * z
        t14 = t15 - Lr[i, 3] * z
        t15 = t16 - Lr[i, 2] * z
        t16 = t17 - Lr[i, 1] * z
        t17 = t18 - Lr[i, 0] * z
        t18 = zp[18 + i - 19] if i - 19 >= 0 else 0.0
    return zv


@njit(**JIT)
def _apply(Lf, free, r, yp, zp, v):
    """Filtered substitution with the factor pair ``Lf`` (row-aligned ``Lf[0]``, column-aligned ``Lf[1]``):
    :func:`_filtered18` for half bandwidth 18, else :func:`rfiltered_apply`. Returns ``z . v``."""
    if Lf.shape[2] == 19:
        return _filtered18(Lf, free, r, zp, v)
    return rfiltered_apply(Lf[0], free, r, yp, zp, v)


@njit(**JIT)
def prepare_rows(pc, Ar, Lb, Lf, D):
    """Set-up of :func:`mprgp_fast` for ``pc`` in ``FAST_PCS`` or ``PC_ASCS`` from the full rows ``Ar``
    (n, 2p + 1) of ``A`` (:func:`band_to_rows`, or assembled so by the caller): the factor into the pair
    ``Lf`` (2, n, p + 1): row-aligned ``Lf[0][i, j] = L[i, i - p + j]`` with ``Lf[0][i, p] = 1/D_i``, and
    column-aligned ``Lf[1][j, k] = L[j + k, j]`` (``k >= 1``, zero beyond the matrix) with
    ``Lf[1][j, 0] = 1/D_j``. The complete factor (ASC, ASC-Schur) by :func:`cldlt_factor` in the column
    layout; the incomplete ones (IC, MIC) by :func:`ic_factor_band` in the band scratch ``Lb``, ``D`` and
    copied. ``Lb[0]`` is scratch for the complete factor. Returns ``(#clamped pivots, ||A||_inf)``."""
    n = Ar.shape[0]
    p = Lf.shape[2] - 1
    Lr = Lf[0]
    Lc = Lf[1]
    anorm = column_copy_norm(Ar, Lc)
    if pc == PC_ASC or pc == PC_ASCS:
        clamped = cldlt_factor(Ar, Lc, Lr, Lb[0], 1e-12)
        return clamped, anorm
    for i in range(n):
        for k in range(p + 1):
            Lb[i, k] = Ar[i, p - k]
    clamped = ic_factor_band(Lb, D, pc == PC_MIC, 1e-12)
    for i in range(n):
        k0 = p if i >= p else i
        for j in range(p - k0):
            Lr[i, j] = 0.0
        for k in range(1, k0 + 1):
            Lr[i, p - k] = Lb[i, k]
        inv = 1.0 / D[i]
        Lr[i, p] = inv
        Lc[i, 0] = inv
        kmax = n - 1 - i
        if kmax > p:
            kmax = p
        for k in range(1, kmax + 1):
            Lc[i, k] = Lb[i + k, k]
        for k in range(kmax + 1, p + 1):
            Lc[i, k] = 0.0
    return clamped, anorm


@njit(**JIT)
def prepare_fast(pc, A, Ar, Lb, Lf, D):
    """:func:`prepare_rows` from the lower band ``A`` (converted into the full rows ``Ar`` first by
    :func:`band_to_rows`). Returns ``(#clamped pivots, ||A||_inf)``."""
    band_to_rows(A, Ar)
    return prepare_rows(pc, Ar, Lb, Lf, D)


@njit(**JIT)
def _schur_fast(Lf, free, lo, hi, r, yp, zp, v, fm, e, Y, C, w, iw):
    """:func:`schur_apply` on the fast layouts, incrementally: ``z = A_FF^{-1} r_F`` into the padded ``zp``
    from the complete factor ``Lf`` (see :func:`prepare_fast`) and a capacitance correction over the active
    set ``E`` (non-pinned entries with ``free`` False): ``z = A^{-1}(r_F + E mu)``, ``C mu = -(A^{-1} r_F)_E``,
    ``C = E^T A^{-1} E``. One unfiltered substitution (``_apply`` with the all-true mask ``fm``), two
    ``k x k`` triangular solves and ``k`` axpys with the cached columns ``A^{-1} e_i`` (padded rows of ``Y``,
    each computed once per solve by one substitution of the unit vector ``e``, n-vector of zeros).
    The Cholesky factor of ``C`` (lower, in ``C``) is kept in the order in which indices became active:
    a newly active index appends one row (``O(k^2)``), a released one compacts the list and refactors.
    Beyond ``cap = Y.shape[0]`` active or cached indices, or for a numerically singular ``C``, this
    application falls back to the filtered substitution. ``iw`` (int64, ``2n + cap + 2``): ``slot`` (cached
    column of index i or -1), ``pos`` (position in the active list or -1), the active list, ``[k, #cached]``;
    set ``slot = pos = -1`` and both counters to 0 for a new factor. Returns ``z . v``."""
    n = free.shape[0]
    p = Lf.shape[2] - 1
    cap = Y.shape[0]
    m = iw[2 * n + cap]
    # released indices leave the list (order kept); then the factor of C is rebuilt
    keep = 0
    for a in range(m):
        i = iw[2 * n + a]
        if free[i]:
            iw[n + i] = -1
        else:
            iw[2 * n + keep] = i
            iw[n + i] = keep
            keep += 1
    ok = True
    if keep < m:
        m = keep
        for a in range(m):
            ya = iw[iw[2 * n + a]]
            for c in range(a + 1):
                s = Y[ya, p + iw[2 * n + c]]
                for q in range(c):
                    s -= C[a, q] * C[c, q]
                if c < a:
                    C[a, c] = s / C[c, c]
                elif s > 1e-12 * Y[ya, p + iw[2 * n + a]]:
                    C[a, a] = math.sqrt(s)
                else:
                    ok = False
            if not ok:
                break
    # newly active indices: cached column, one appended row of the Cholesky factor
    if ok:
        for i in range(n):
            if free[i] or not lo[i] < hi[i] or iw[n + i] >= 0:
                continue
            if m >= cap:
                ok = False
                break
            k = iw[i]
            if k < 0:
                k = iw[2 * n + cap + 1]
                if k >= cap:
                    ok = False
                    break
                iw[2 * n + cap + 1] = k + 1
                iw[i] = k
                e[i] = 1.0
                _apply(Lf, fm, e, yp, Y[k], Y[k])
                e[i] = 0.0
            s2 = 0.0
            for a in range(m):
                s = Y[k, p + iw[2 * n + a]]
                for q in range(a):
                    s -= C[m, q] * C[a, q]
                s /= C[a, a]
                C[m, a] = s
                s2 += s * s
            d = Y[k, p + i] - s2
            if not d > 1e-12 * Y[k, p + i]:
                ok = False
                break
            C[m, m] = math.sqrt(d)
            iw[2 * n + m] = i
            iw[n + i] = m
            m += 1
    if not ok:
        for a in range(m):
            iw[n + iw[2 * n + a]] = -1
        iw[2 * n + cap] = 0
        return _apply(Lf, free, r, yp, zp, v)
    iw[2 * n + cap] = m
    _apply(Lf, fm, r, yp, zp, zp)
    if m > 0:
        for a in range(m):  # C mu = -(A^{-1} r_F)_E: forward, then backward
            s = -zp[p + iw[2 * n + a]]
            for q in range(a):
                s -= C[a, q] * w[q]
            w[a] = s / C[a, a]
        for a in range(m - 1, -1, -1):
            s = w[a]
            for q in range(a + 1, m):
                s -= C[q, a] * w[q]
            w[a] = s / C[a, a]
        for a in range(m):
            _axpy_row(w[a], Y[iw[iw[2 * n + a]]], zp, p, n)
    zv = 0.0
    for i in range(n):
        if free[i]:
            zv += zp[p + i] * v[p + i]
        else:
            zp[p + i] = 0.0
    return zv


@njit(**JIT_FM)
def _axpy_row(a, y, z, p, n):
    """``z += a y`` on the padded entries ``p .. p + n - 1`` (contiguous, vectorized)."""
    for t in range(p, p + n):
        z[t] += a * y[t]
