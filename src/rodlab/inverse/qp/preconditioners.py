"""Preconditioners of MPRGP on the free set of a box QP (lower band layout, :mod:`rodlab.linalg.banded_ldlt`).

Codes ``PC_*`` (names in :data:`PC_NAMES`): ``PC_NONE``, ``PC_DIAG`` (Jacobi), ``PC_WJ`` (two
weighted-Jacobi sweeps, weight 2/3, from zero), ``PC_SSOR`` (symmetric SOR, weight 1.2), ``PC_IC`` /
``PC_MIC`` (incomplete LDL^T on the nonzero pattern, :func:`ic_factor_band`), ``PC_ASC`` (the complete
banded LDL^T; Takahashi and Batty, "Optimizing Parameters for Static Equilibrium of Discrete Elastic Rods
with Active-Set Cholesky", Sec. V-A), all three applied by the filtered symmetric substitution
(:func:`apply_filtered_ldlt`), and ``PC_ASCS`` (the complete factor applied exactly on the free set by a
Schur-complement correction, :func:`schur_apply`). See :mod:`rodlab.inverse.qp` for the algorithm.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...geometry._vec import JIT
from ...linalg.banded_ldlt import ldlt_factor_band, ldlt_solve_band

PC_NONE = 0
PC_DIAG = 1
PC_WJ = 2
PC_SSOR = 3
PC_IC = 4
PC_MIC = 5
PC_ASC = 6
PC_ASCS = 7
PC_NAMES = {"none": PC_NONE, "diag": PC_DIAG, "wj": PC_WJ, "ssor": PC_SSOR, "ic": PC_IC, "mic": PC_MIC, "asc": PC_ASC,
            "asc-schur": PC_ASCS}
SCHUR_CAP = 48  # most active bounds the Schur-complement correction handles exactly (beyond: filtered)

WJ_WEIGHT = 2.0 / 3.0
SSOR_WEIGHT = 1.2


@njit(**JIT)
def ic_factor_band(band, D, modified, pivot_eps):
    """Incomplete LDL^T on the nonzero pattern of the lower band (IC(0)); ``modified`` adds dropped
    fill to the pivots (MIC). In place like :func:`ldlt_factor_band`. Returns #clamped pivots."""
    n = band.shape[0]
    p = band.shape[1] - 1
    pattern = np.empty((n, p + 1), dtype=np.bool_)
    for i in range(n):
        for k in range(p + 1):
            pattern[i, k] = band[i, k] != 0.0
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
            if t[a] == 0.0:
                continue
            ta = t[a] * inv
            for b in range(1, a + 1):
                upd = ta * t[b]
                if pattern[j + a, a - b]:
                    band[j + a, a - b] -= upd
                elif modified:
                    band[j + a, 0] -= upd
                    band[j + b, 0] -= upd
    return clamped


@njit(**JIT)
def apply_filtered_ldlt(L, D, free, r, z):
    """``z = L_F^{-T} F D^{-1} F L_F^{-1} r`` (filtered symmetric substitution, Takahashi and Batty Eqs. 34-35)."""
    n = L.shape[0]
    p = L.shape[1] - 1
    for i in range(n):
        if free[i]:
            s = r[i]
            k0 = p if i >= p else i
            for k in range(1, k0 + 1):
                s -= L[i, k] * z[i - k]
            z[i] = s
        else:
            z[i] = 0.0
    for i in range(n):
        z[i] /= D[i]
    for i in range(n - 1, -1, -1):
        if free[i]:
            s = z[i]
            kmax = n - 1 - i
            if kmax > p:
                kmax = p
            for k in range(1, kmax + 1):
                s -= L[i + k, k] * z[i + k]
            z[i] = s
        else:
            z[i] = 0.0


@njit(**JIT)
def _free_matvec(A, free, x, out):
    """``out = A_FF x_F`` (zero outside the free set)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    for i in range(n):
        out[i] = A[i, 0] * x[i] if free[i] else 0.0
    for i in range(n):
        if not free[i]:
            continue
        k0 = p if i >= p else i
        s = 0.0
        xi = x[i]
        for k in range(1, k0 + 1):
            if free[i - k]:
                a = A[i, k]
                s += a * x[i - k]
                out[i - k] += a * xi
        out[i] += s


@njit(**JIT)
def schur_apply(L, D, free, lo, hi, r, z, Y, slot, act, st, C, w):
    """Exact free-set solve ``z = A_FF^{-1} r_F`` from the complete factor ``A = L D L^T`` and a
    capacitance (Schur-complement) correction over the active set ``E``:
    ``z = A^{-1}(r_F + E mu)`` with ``mu`` chosen so that ``z_E = 0``, i.e. ``C mu = -(A^{-1} r_F)_E``,
    ``C = E^T A^{-1} E`` (a principal block of ``A^{-1}``, SPD). Columns ``A^{-1} e_k`` are computed once
    per newly active index (two band sweeps) and cached in ``Y``; ``C`` is refactored (dense Cholesky)
    whenever the active set changes. Variables pinned by ``lo == hi`` are decoupled and left out.
    Falls back to the filtered substitution beyond ``SCHUR_CAP`` active or cached indices.
    ``st = [active count, cached columns]``."""
    n = r.shape[0]
    cap = Y.shape[0]
    m = 0
    changed = False
    for i in range(n):
        if (not free[i]) and lo[i] < hi[i]:
            if m >= cap:
                apply_filtered_ldlt(L, D, free, r, z)
                return
            if act[m] != i:
                changed = True
            act[m] = i
            m += 1
    if m != st[0]:
        changed = True
    st[0] = m
    for a in range(m):
        i = act[a]
        if slot[i] < 0:
            if st[1] >= cap:
                apply_filtered_ldlt(L, D, free, r, z)
                return
            k = st[1]
            st[1] += 1
            slot[i] = k
            for t in range(n):
                Y[k, t] = 0.0
            Y[k, i] = 1.0
            ldlt_solve_band(L, D, Y[k])
    if changed and m > 0:
        for a in range(m):
            for b in range(m):
                C[a, b] = Y[slot[act[a]], act[b]]
        # dense Cholesky in place (lower)
        for j in range(m):
            d = C[j, j]
            for k in range(j):
                d -= C[j, k] * C[j, k]
            if not d > 0.0:
                d = 1e-300
            d = math.sqrt(d)
            C[j, j] = d
            for i2 in range(j + 1, m):
                v = C[i2, j]
                for k in range(j):
                    v -= C[i2, k] * C[j, k]
                C[i2, j] = v / d
    for i in range(n):
        z[i] = r[i] if free[i] else 0.0
    ldlt_solve_band(L, D, z)
    if m > 0:
        for a in range(m):
            w[a] = -z[act[a]]
        for a in range(m):  # forward
            v = w[a]
            for k in range(a):
                v -= C[a, k] * w[k]
            w[a] = v / C[a, a]
        for a in range(m - 1, -1, -1):  # backward
            v = w[a]
            for k in range(a + 1, m):
                v -= C[k, a] * w[k]
            w[a] = v / C[a, a]
        for a in range(m):
            row = slot[act[a]]
            mu = w[a]
            for t in range(n):
                z[t] += mu * Y[row, t]
    for i in range(n):
        if not free[i]:
            z[i] = 0.0


@njit(**JIT)
def apply_pc(pc, A, L, D, free, r, z, tmp):
    """Preconditioner ``z = M_F^{-1} r`` restricted to the free set (see module docstring)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    if pc == PC_NONE:
        for i in range(n):
            z[i] = r[i] if free[i] else 0.0
    elif pc == PC_DIAG:
        for i in range(n):
            z[i] = r[i] / A[i, 0] if free[i] else 0.0
    elif pc == PC_WJ:
        for i in range(n):
            z[i] = WJ_WEIGHT * r[i] / A[i, 0] if free[i] else 0.0
        _free_matvec(A, free, z, tmp)
        for i in range(n):
            if free[i]:
                z[i] += WJ_WEIGHT * (r[i] - tmp[i]) / A[i, 0]
    elif pc == PC_SSOR:
        w = SSOR_WEIGHT
        for i in range(n):
            if free[i]:
                s = r[i]
                k0 = p if i >= p else i
                for k in range(1, k0 + 1):
                    if free[i - k]:
                        s -= A[i, k] * z[i - k]
                z[i] = s * w / A[i, 0]
            else:
                z[i] = 0.0
        for i in range(n):
            z[i] *= A[i, 0] / w
        for i in range(n - 1, -1, -1):
            if free[i]:
                s = z[i]
                kmax = n - 1 - i
                if kmax > p:
                    kmax = p
                for k in range(1, kmax + 1):
                    if free[i + k]:
                        s -= A[i + k, k] * z[i + k]
                z[i] = s * w / A[i, 0]
        for i in range(n):
            z[i] *= (2.0 - w) / w * 1.0
    else:
        apply_filtered_ldlt(L, D, free, r, z)


@njit(**JIT)
def prepare_pc(pc, A, L, D):
    """Factor ``A`` for the Cholesky-type preconditioners (into ``L``, ``D``); returns #clamped pivots."""
    if pc == PC_ASC or pc == PC_ASCS or pc == PC_IC or pc == PC_MIC:
        L[:, :] = A
        if pc == PC_ASC or pc == PC_ASCS:
            return ldlt_factor_band(L, D, 1e-12)
        return ic_factor_band(L, D, pc == PC_MIC, 1e-12)
    return 0
