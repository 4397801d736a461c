"""The linear solve of der-implicit's contact Newton step: a symmetric positive definite matrix given
as a lower band of half bandwidth 10 plus a few entries outside it (rod-rod and self contacts).

Without outside entries: the banded LDL^T of :mod:`rodlab.linalg.banded_ldlt`. With them, the
unknowns they touch (the interface, ``m`` of them) are ordered last, ``H = [A B; B^T C]``, and the
system is solved through the Schur complement ``S = C - B^T A^{-1} B`` (block Gaussian elimination,
e.g. G. H. Golub and C. F. Van Loan, *Matrix Computations*, 4th ed., 2013, Sec. 3.2.11 and 4.2):
``A`` (the other unknowns, in their order) is still banded with half bandwidth <= 10, ``B``'s
column of an interface unknown holds its band neighbours only, and ``A^{-1}`` of such a column is
found by substitutions that stop once the solution has been zero for more than a bandwidth
(:func:`band_solve_local`): the rods' blocks of ``A`` do not couple, so the work per column is that
of the column's rod, not of the whole system. ``S`` (``m x m``, dense) goes to LAPACK's LU.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from ..linalg.banded_ldlt import ldlt_factor_band10, ldlt_solve_band10

BW = 10
PIVOT_EPS = 1e-13  # the banded LDL^T's pivot floor (that of the contact-free step)


@njit(**JIT)
def band_solve_local(L, piv, y, s, t):
    """Solve ``L D L^T z = y`` in place for a right-hand side ``y`` that is zero outside rows ``[s, t]``,
    with the factor of :func:`rodlab.linalg.banded_ldlt.ldlt_factor_band10` (``L`` its band,
    ``piv`` its pivots). The substitutions skip the rows where the solution provably stays zero
    (more than a bandwidth of zeros behind them): the same operations on the rest, the same result
    as :func:`rodlab.linalg.banded_ldlt.ldlt_solve_band`. Returns ``(first, end)``: ``z`` is zero
    outside ``[first, end)``."""
    n = L.shape[0]
    last = s
    j = s
    while j < n:
        yj = y[j]
        if yj != 0.0:
            last = j
            amax = n - 1 - j
            if amax > BW:
                amax = BW
            for a in range(1, amax + 1):
                y[j + a] -= L[j + a, a] * yj
        elif j > t and j - last > BW:
            break
        j += 1
    end = j
    for i in range(s, end):
        y[i] /= piv[i]
    i = end - 1
    lastnz = i
    first = s
    while i >= 0:
        yi = y[i]
        if yi != 0.0:
            lastnz = i
            first = i
            kmax = i if i < BW else BW
            for k in range(1, kmax + 1):
                y[i - k] -= L[i, k] * yi
        elif i < s and lastnz - i > BW:
            break
        i -= 1
    return first, end


@njit(**JIT)
def solve_banded_plus(band, extra, n_extra, rhs):
    """``H^{-1} rhs`` for ``H`` given by its lower band ``band`` (D, 11) (``band[i, k] = H[i, i - k]``)
    and ``extra[:n_extra]`` rows (row, column, value), row > column + 10, each adding ``value`` to
    ``H[row, column]`` and ``H[column, row]`` (module docstring). ``band`` is overwritten."""
    D = band.shape[0]
    if n_extra == 0:
        piv = np.empty(D)
        ldlt_factor_band10(band, piv, PIVOT_EPS)
        x = rhs.copy()
        ldlt_solve_band10(band, piv, x)
        return x
    is_if = np.zeros(D, dtype=np.bool_)
    for t in range(n_extra):
        is_if[int(extra[t, 0])] = True
        is_if[int(extra[t, 1])] = True
    ifx = np.full(D, -1, dtype=np.int64)
    nmap = np.full(D, -1, dtype=np.int64)
    m = 0
    nN = 0
    for i in range(D):
        if is_if[i]:
            ifx[i] = m
            m += 1
        else:
            nmap[i] = nN
            nN += 1
    ifdof = np.empty(m, dtype=np.int64)
    ndof = np.empty(nN, dtype=np.int64)
    for i in range(D):
        if is_if[i]:
            ifdof[ifx[i]] = i
        else:
            ndof[nmap[i]] = i
    # A (compressed band), C (dense), B (per interface column: its <= 20 band neighbours)
    A = np.zeros((nN, BW + 1))
    for c in range(nN):
        i = ndof[c]
        for k in range(BW + 1):
            j = i - k
            if j < 0:
                break
            if not is_if[j]:
                A[c, c - nmap[j]] += band[i, k]
    C = np.zeros((m, m))
    Bi = np.zeros((m, 2 * BW), dtype=np.int64)
    Bv = np.zeros((m, 2 * BW))
    Bn = np.zeros(m, dtype=np.int64)
    for a in range(m):
        i = ifdof[a]
        C[a, a] += band[i, 0]
        for k in range(1, BW + 1):
            j = i - k
            if j >= 0 and band[i, k] != 0.0:
                if is_if[j]:
                    C[a, ifx[j]] += band[i, k]
                    C[ifx[j], a] += band[i, k]
                else:
                    Bi[a, Bn[a]] = nmap[j]
                    Bv[a, Bn[a]] = band[i, k]
                    Bn[a] += 1
            j = i + k
            if j < D and not is_if[j] and band[j, k] != 0.0:
                Bi[a, Bn[a]] = nmap[j]
                Bv[a, Bn[a]] = band[j, k]
                Bn[a] += 1
    for t in range(n_extra):
        a = ifx[int(extra[t, 0])]
        b = ifx[int(extra[t, 1])]
        C[a, b] += extra[t, 2]
        C[b, a] += extra[t, 2]
    piv = np.empty(nN)
    if nN:
        ldlt_factor_band10(A, piv, PIVOT_EPS)
    # W = A^{-1} B, column by column over the rows where it is not zero
    W = np.zeros((m, nN))
    wlo = np.zeros(m, dtype=np.int64)
    whi = np.zeros(m, dtype=np.int64)
    for a in range(m):
        if Bn[a] == 0:
            continue
        s = nN
        t = 0
        for c in range(Bn[a]):
            W[a, Bi[a, c]] += Bv[a, c]
            s = min(s, Bi[a, c])
            t = max(t, Bi[a, c])
        wlo[a], whi[a] = band_solve_local(A, piv, W[a], s, t)
    S = C
    for a in range(m):
        for b in range(m):
            acc = 0.0
            for c in range(Bn[a]):
                acc += Bv[a, c] * W[b, Bi[a, c]]
            S[a, b] -= acc
    y = np.empty(nN)
    for c in range(nN):
        y[c] = rhs[ndof[c]]
    if nN:
        ldlt_solve_band10(A, piv, y)
    r = np.empty(m)
    for a in range(m):
        acc = 0.0
        for c in range(Bn[a]):
            acc += Bv[a, c] * y[Bi[a, c]]
        r[a] = rhs[ifdof[a]] - acc
    xi = np.linalg.solve(S, r)
    for b in range(m):
        for c in range(wlo[b], whi[b]):
            y[c] -= W[b, c] * xi[b]
    x = np.empty(D)
    for c in range(nN):
        x[ndof[c]] = y[c]
    for a in range(m):
        x[ifdof[a]] = xi[a]
    return x
