"""Banded LDL^T of the implicit-DER Hessian that skips the zeros its stencil leaves in the band.

On interleaved unknowns ``q = [x_0, theta_0, x_1, ...]`` (:mod:`.energies`) every energy term couples
the 11 unknowns of one joint, ``(x_(i-1), theta_(i-1), x_i, theta_i, x_(i+1))``, or the 7 of one edge, so
the Hessian has half bandwidth 10 (:func:`rodlab.linalg.banded_ldlt.ldlt_factor_band10`), but not every
row fills it: row ``x_k`` (component ``c``) starts at ``x_(k-2)`` (``8 + c`` left of the diagonal), row
``theta_k`` at ``x_(k-1)`` (7 left). Column by column, the entries below the diagonal reach 10, 9, 8
(``x`` components 0, 1, 2) and 7 (``theta``) rows down. A factorization keeps these profiles (no fill-in
outside a skyline: George and Liu, "Computer Solution of Large Sparse Positive Definite Systems", 1981,
Ch. 4), so the rank-1 updates of the right-looking LDL^T need only run over them: per vertex (four
columns) 164 multiply-subtracts instead of 220.

:func:`der_hessian_ldlt_factor` is :func:`rodlab.linalg.banded_ldlt.ldlt_factor_band10` (pairs of
columns held in registers, the same pivot clamping) with the pairs' updates cut to those profiles:
the pair ``(x_k0, x_k1)`` updates rows ``j + 2 .. j + 10``, the pair ``(x_k2, theta_k)`` rows ``j + 2 .. j + 8``.
Every term it leaves out is a product with an exact zero, so every factor entry and pivot is the
band10 one (equal as numbers: only the sign of a zero may differ); tests/test_der_implicit_ldlt.py
checks that on assembled Hessians of every bending model. The last columns (fewer than a pair's rows
left) take band10's column loop. The band must hold zeros outside the profiles (any Hessian
assembled from the joint and edge stencils, plus a diagonal, with held unknowns' rows and columns
cleared does); solve with :func:`rodlab.linalg.banded_ldlt.ldlt_solve_band10`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT

BANDWIDTH = 10


@njit(inline="always", **JIT)
def _pivot(d, diag, pivot_eps, clamped):
    """The pivot ``d`` clamped up to ``pivot_eps * max(|diag|, 1e-300)`` (``diag``: the matrix's own
    diagonal entry), its inverse and the count of clamped pivots (band_ldlt's rule)."""
    ref = abs(diag)
    if ref < 1e-300:
        ref = 1e-300
    if not d > pivot_eps * ref:
        d = pivot_eps * ref
        clamped += 1
    return d, 1.0 / d, clamped


@njit(**JIT)
def der_hessian_ldlt_factor(band, D, pivot_eps):
    """In-place LDL^T of the implicit-DER Hessian's lower band ``band`` (n, 11), pivots into ``D`` (n,);
    returns the number of clamped pivots (module docstring)."""
    n = band.shape[0]
    t = np.empty(BANDWIDTH + 1)
    for i in range(n):
        D[i] = band[i, 0]
    clamped = 0
    j = 0
    while j < n:
        d, inv, clamped = _pivot(band[j, 0], D[j], pivot_eps, clamped)
        D[j] = d
        if j % 4 == 0 and j + 10 < n:  # columns x_k0 (10 rows below) and x_k1 (9)
            # column j: t_a = A[j+a, j], l_a = t_a / d (a = 1..10)
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
            # column j + 1 after column j's update: u_b = A[j+1+b, j+1] - l_(1+b) t_1 (b = 1..9)
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
            band[j + 1, 0] = d
            d, inv, clamped = _pivot(d, D[j + 1], pivot_eps, clamped)
            D[j + 1] = d
            m1 = u1 * inv
            m2 = u2 * inv
            m3 = u3 * inv
            m4 = u4 * inv
            m5 = u5 * inv
            m6 = u6 * inv
            m7 = u7 * inv
            m8 = u8 * inv
            m9 = u9 * inv
            band[j + 2, 1] = m1
            band[j + 3, 2] = m2
            band[j + 4, 3] = m3
            band[j + 5, 4] = m4
            band[j + 6, 5] = m5
            band[j + 7, 6] = m6
            band[j + 8, 7] = m7
            band[j + 9, 8] = m8
            band[j + 10, 9] = m9
            # rank-2 update of rows j+2 .. j+10, column j's term first, then column j+1's
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
            j += 2
        elif j % 4 == 2 and j + 8 < n:  # columns x_k2 (8 rows below) and theta_k (7)
            # column j: t_a = A[j+a, j], l_a = t_a / d (a = 1..8)
            t1 = band[j + 1, 1]
            t2 = band[j + 2, 2]
            t3 = band[j + 3, 3]
            t4 = band[j + 4, 4]
            t5 = band[j + 5, 5]
            t6 = band[j + 6, 6]
            t7 = band[j + 7, 7]
            t8 = band[j + 8, 8]
            l1 = t1 * inv
            l2 = t2 * inv
            l3 = t3 * inv
            l4 = t4 * inv
            l5 = t5 * inv
            l6 = t6 * inv
            l7 = t7 * inv
            l8 = t8 * inv
            band[j + 1, 1] = l1
            band[j + 2, 2] = l2
            band[j + 3, 3] = l3
            band[j + 4, 4] = l4
            band[j + 5, 5] = l5
            band[j + 6, 6] = l6
            band[j + 7, 7] = l7
            band[j + 8, 8] = l8
            # column j + 1 after column j's update: u_b = A[j+1+b, j+1] - l_(1+b) t_1 (b = 1..7)
            d = band[j + 1, 0] - l1 * t1
            u1 = band[j + 2, 1] - l2 * t1
            u2 = band[j + 3, 2] - l3 * t1
            u3 = band[j + 4, 3] - l4 * t1
            u4 = band[j + 5, 4] - l5 * t1
            u5 = band[j + 6, 5] - l6 * t1
            u6 = band[j + 7, 6] - l7 * t1
            u7 = band[j + 8, 7] - l8 * t1
            band[j + 1, 0] = d
            d, inv, clamped = _pivot(d, D[j + 1], pivot_eps, clamped)
            D[j + 1] = d
            m1 = u1 * inv
            m2 = u2 * inv
            m3 = u3 * inv
            m4 = u4 * inv
            m5 = u5 * inv
            m6 = u6 * inv
            m7 = u7 * inv
            band[j + 2, 1] = m1
            band[j + 3, 2] = m2
            band[j + 4, 3] = m3
            band[j + 5, 4] = m4
            band[j + 6, 5] = m5
            band[j + 7, 6] = m6
            band[j + 8, 7] = m7
            # rank-2 update of rows j+2 .. j+8, column j's term first, then column j+1's
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
            j += 2
        else:
            amax = n - 1 - j
            if amax > BANDWIDTH:
                amax = BANDWIDTH
            for a in range(1, amax + 1):
                t[a] = band[j + a, a]
                band[j + a, a] = t[a] * inv
            for a in range(1, amax + 1):
                ta = t[a] * inv
                for b in range(1, a + 1):
                    band[j + a, a - b] -= ta * t[b]
            j += 1
    return clamped
