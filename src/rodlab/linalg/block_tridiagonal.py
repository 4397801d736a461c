"""Symmetric positive-definite block-tridiagonal systems: the block Thomas algorithm.

``A`` has diagonal blocks ``diag[i]`` (b x b, i = 0..nb-1) and upper off-diagonal blocks
``off[i] = A[i, i+1]`` (the lower ones are their transposes). Factor once
(``S_0 = D_0``, ``S_i = D_i - off_{i-1}^T S_{i-1}^{-1} off_{i-1}``, storing ``S_i^{-1}``), then
solve in O(nb b^2) by a forward and a backward sweep (Thomas 1949; used for the hybrid
preconditioner of Zhao et al., Eq. 22-23). Compiled, no allocation in the sweeps.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT


@njit(**JIT)
def invert_spd_small(a, out):
    """``out = a^{-1}`` for a small SPD matrix by Gauss-Jordan without pivoting (valid for SPD).
    Returns False on a non-positive pivot."""
    b = a.shape[0]
    for r in range(b):
        for c in range(b):
            out[r, c] = a[r, c]
    for k in range(b):
        piv = out[k, k]
        if not piv > 0.0:
            return False
        inv = 1.0 / piv
        out[k, k] = 1.0
        for c in range(b):
            out[k, c] *= inv
        for r in range(b):
            if r != k:
                f = out[r, k]
                if f != 0.0:
                    out[r, k] = 0.0
                    for c in range(b):
                        out[r, c] -= f * out[k, c]
    return True


@njit(**JIT)
def block_tridiagonal_factor(diag, off, sinv, work):
    """Factor: writes ``sinv[i] = S_i^{-1}``. ``work`` is a (b, b) scratch array.
    Returns the index of the first block whose Schur complement is not positive definite, or -1."""
    nb = diag.shape[0]
    b = diag.shape[1]
    for i in range(nb):
        for r in range(b):
            for c in range(b):
                work[r, c] = diag[i, r, c]
        if i > 0:
            # work -= off^T S^{-1} off   (off = off[i-1])
            for r in range(b):
                for c in range(b):
                    acc = 0.0
                    for k in range(b):
                        t = 0.0
                        for l in range(b):
                            t += sinv[i - 1, k, l] * off[i - 1, l, c]
                        acc += off[i - 1, k, r] * t
                    work[r, c] -= acc
        if not invert_spd_small(work, sinv[i]):
            return i
    return -1


@njit(**JIT)
def block_tridiagonal_solve(sinv, off, rhs, out, y):
    """Solve with the factor from :func:`block_tridiagonal_factor`; rhs, out, y are (nb, b)."""
    nb = sinv.shape[0]
    b = sinv.shape[1]
    for r in range(b):
        y[0, r] = rhs[0, r]
    for i in range(1, nb):
        # y_i = r_i - off_{i-1}^T S_{i-1}^{-1} y_{i-1}
        for r in range(b):
            acc = 0.0
            for k in range(b):
                t = 0.0
                for l in range(b):
                    t += sinv[i - 1, k, l] * y[i - 1, l]
                acc += off[i - 1, k, r] * t
            y[i, r] = rhs[i, r] - acc
    for r in range(b):
        acc = 0.0
        for c in range(b):
            acc += sinv[nb - 1, r, c] * y[nb - 1, c]
        out[nb - 1, r] = acc
    for i in range(nb - 2, -1, -1):
        for r in range(b):
            t = y[i, r]
            for c in range(b):
                t -= off[i, r, c] * out[i + 1, c]
            y[i, r] = t
        for r in range(b):
            acc = 0.0
            for c in range(b):
                acc += sinv[i, r, c] * y[i, c]
            out[i, r] = acc


def solve_block_tridiagonal(diag, off, rhs) -> np.ndarray:
    """Convenience wrapper: solve ``A x = rhs`` (shapes (nb,b,b), (nb-1,b,b), (nb,b)).
    Raises ``np.linalg.LinAlgError`` naming the block when ``A`` is not positive definite."""
    diag = np.ascontiguousarray(diag, dtype=float)
    off = np.ascontiguousarray(off, dtype=float)
    rhs = np.ascontiguousarray(rhs, dtype=float)
    nb, b, _ = diag.shape
    if off.shape != (max(nb - 1, 0), b, b) or rhs.shape != (nb, b):
        raise ValueError(f"shapes: diag {diag.shape}, off {off.shape} (want {(nb - 1, b, b)}), rhs {rhs.shape} (want {(nb, b)})")
    sinv = np.empty_like(diag)
    bad = block_tridiagonal_factor(diag, off, sinv, np.empty((b, b)))
    if bad >= 0:
        raise np.linalg.LinAlgError(f"block-tridiagonal matrix not positive definite at block {bad}")
    out = np.empty_like(rhs)
    block_tridiagonal_solve(sinv, off, rhs, out, np.empty_like(rhs))
    return out


# ---- 3x3 blocks, unrolled (the compact rod's case) -------------------------------------------
@njit(inline="always", **JIT)
def _inv3_into(a00, a01, a02, a11, a12, a22, out):
    """Inverse of the symmetric 3x3 [[a00,a01,a02],[a01,a11,a12],[a02,a12,a22]] (cofactors);
    returns False unless positive definite (leading minors > 0)."""
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    det = a00 * c00 + a01 * c01 + a02 * c02
    if not (a00 > 0.0 and a00 * a11 - a01 * a01 > 0.0 and det > 0.0):
        return False
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[0, 1] = out[1, 0] = c01 * inv
    out[0, 2] = out[2, 0] = c02 * inv
    out[1, 1] = (a00 * a22 - a02 * a02) * inv
    out[1, 2] = out[2, 1] = (a01 * a02 - a00 * a12) * inv
    out[2, 2] = (a00 * a11 - a01 * a01) * inv
    return True


@njit(**JIT)
def block_tridiagonal3_factor(diag, off, sinv, W):
    """:func:`block_tridiagonal_factor` unrolled for 3x3 blocks (symmetric ``diag``), also storing
    ``W_i = S_i^{-1} off_i`` so that the solve sweeps are ``y_i = r_i - W_{i-1}^T y_{i-1}`` and
    ``x_i = S_i^{-1} y_i - W_i x_{i+1}`` (27 instead of 36 multiply-adds per block, and only 9 on
    each sweep's dependency chain). Returns the first non-positive-definite block or -1."""
    nb = diag.shape[0]
    for i in range(nb):
        a00, a01, a02 = diag[i, 0, 0], diag[i, 0, 1], diag[i, 0, 2]
        a11, a12, a22 = diag[i, 1, 1], diag[i, 1, 2], diag[i, 2, 2]
        if i > 0:
            # a -= off^T S^{-1} off = off^T W
            O = off[i - 1]
            w = W[i - 1]
            a00 -= O[0, 0] * w[0, 0] + O[1, 0] * w[1, 0] + O[2, 0] * w[2, 0]
            a01 -= O[0, 0] * w[0, 1] + O[1, 0] * w[1, 1] + O[2, 0] * w[2, 1]
            a02 -= O[0, 0] * w[0, 2] + O[1, 0] * w[1, 2] + O[2, 0] * w[2, 2]
            a11 -= O[0, 1] * w[0, 1] + O[1, 1] * w[1, 1] + O[2, 1] * w[2, 1]
            a12 -= O[0, 1] * w[0, 2] + O[1, 1] * w[1, 2] + O[2, 1] * w[2, 2]
            a22 -= O[0, 2] * w[0, 2] + O[1, 2] * w[1, 2] + O[2, 2] * w[2, 2]
        if not _inv3_into(a00, a01, a02, a11, a12, a22, sinv[i]):
            return i
        if i < nb - 1:
            S = sinv[i]
            O = off[i]
            for c in range(3):
                W[i, 0, c] = S[0, 0] * O[0, c] + S[0, 1] * O[1, c] + S[0, 2] * O[2, c]
                W[i, 1, c] = S[1, 0] * O[0, c] + S[1, 1] * O[1, c] + S[1, 2] * O[2, c]
                W[i, 2, c] = S[2, 0] * O[0, c] + S[2, 1] * O[1, c] + S[2, 2] * O[2, c]
    return -1


@njit(**JIT)
def block_tridiagonal3_solve(sinv, W, rhs, out, y):
    """Solve with the factor of :func:`block_tridiagonal3_factor` (``sinv``, ``W``)."""
    nb = sinv.shape[0]
    y0 = rhs[0, 0]
    y1 = rhs[0, 1]
    y2 = rhs[0, 2]
    for i in range(nb):
        if i > 0:
            w = W[i - 1]
            t0 = rhs[i, 0] - (w[0, 0] * y0 + w[1, 0] * y1 + w[2, 0] * y2)
            t1 = rhs[i, 1] - (w[0, 1] * y0 + w[1, 1] * y1 + w[2, 1] * y2)
            t2 = rhs[i, 2] - (w[0, 2] * y0 + w[1, 2] * y1 + w[2, 2] * y2)
            y0, y1, y2 = t0, t1, t2
        S = sinv[i]
        out[i, 0] = S[0, 0] * y0 + S[0, 1] * y1 + S[0, 2] * y2
        out[i, 1] = S[1, 0] * y0 + S[1, 1] * y1 + S[1, 2] * y2
        out[i, 2] = S[2, 0] * y0 + S[2, 1] * y1 + S[2, 2] * y2
    x0 = out[nb - 1, 0]
    x1 = out[nb - 1, 1]
    x2 = out[nb - 1, 2]
    for i in range(nb - 2, -1, -1):
        w = W[i]
        x0, x1, x2 = (out[i, 0] - (w[0, 0] * x0 + w[0, 1] * x1 + w[0, 2] * x2),
                      out[i, 1] - (w[1, 0] * x0 + w[1, 1] * x1 + w[1, 2] * x2),
                      out[i, 2] - (w[2, 0] * x0 + w[2, 1] * x1 + w[2, 2] * x2))
        out[i, 0] = x0
        out[i, 1] = x1
        out[i, 2] = x2
