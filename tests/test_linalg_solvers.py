"""rodlab.linalg solvers against dense numpy/scipy solves: tridiagonal (general, symmetric, masked,
cyclic), banded LDL^T (lower band; row/column-aligned layouts), banded LU, block tridiagonal."""
import numpy as np
import pytest
import scipy.linalg as sla

from rodlab.linalg.banded_ldlt import (band_matvec, band_to_dense, dense_to_band, ldlt_factor_band, ldlt_factor_band10,
                                       ldlt_solve_band, ldlt_solve_band10)
from rodlab.linalg.banded_rows import band_to_rows, cldlt_factor, column_copy_norm, rband_matvec
from rodlab.linalg.block_tridiagonal import block_tridiagonal3_factor, block_tridiagonal3_solve, solve_block_tridiagonal
from rodlab.linalg.tridiagonal import (solve_tridiagonal, solve_tridiagonal_masked, thomas, thomas_masked,
                                       thomas_symmetric)
from rodlab.model import ModelError

RTOL = 1e-12  # relative to |x|: a wrong sign or index anywhere breaks these by orders of magnitude


def _tri(n, seed, symmetric=False, cyclic=False):
    """Diagonally dominant (symmetric: SPD) tridiagonal matrix: its diagonals and the dense matrix."""
    rng = np.random.default_rng(seed)
    lower = rng.normal(size=n)
    upper = lower.copy() if symmetric else rng.normal(size=n)
    diag = 2.5 + np.abs(lower) + np.abs(np.roll(upper, 1)) + rng.random(n)
    A = np.diag(diag) + np.diag(lower[:n - 1], -1) + np.diag(upper[:n - 1], 1)
    if cyclic:
        A[n - 1, 0] = A[0, n - 1] = lower[n - 1]
    return lower, diag, upper, A


def _close(x, ref):
    assert np.abs(x - ref).max() <= RTOL * np.abs(ref).max()


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_thomas_general_and_symmetric_match_dense(n):
    rng = np.random.default_rng(n)
    lower, diag, upper, A = _tri(n, 1)
    b = rng.normal(size=n)
    out = np.empty(n)
    thomas(lower[:n - 1].copy(), diag, upper[:n - 1].copy(), b, out)
    _close(out, np.linalg.solve(A, b))
    _close(solve_tridiagonal(lower[:n - 1], diag, upper[:n - 1], b), np.linalg.solve(A, b))
    lower, diag, _, A = _tri(n, 2, symmetric=True)
    thomas_symmetric(diag, lower, b, out)
    _close(out, np.linalg.solve(A, b))
    # scipy's banded solver on the same diagonals
    ab = np.zeros((3, n))
    ab[0, 1:] = lower[:n - 1]
    ab[1] = diag
    ab[2, :-1] = lower[:n - 1]
    _close(out, sla.solve_banded((1, 1), ab, b))


def test_masked_solves_each_run_of_free_unknowns():
    n = 23
    lower, diag, upper, A = _tri(n, 3)
    b = np.random.default_rng(3).normal(size=n)
    free = np.ones(n, dtype=bool)
    free[[0, 5, 6, 14, 22]] = False  # runs 1-4, 7-13, 15-21
    out = np.full(n, np.nan)
    thomas_masked(lower, diag, upper, b, free, out)
    ref = np.zeros(n)
    ref[free] = np.linalg.solve(A[np.ix_(free, free)], b[free])
    _close(out, ref)
    assert np.all(out[~free] == 0.0)


@pytest.mark.parametrize("closed,prescribed", [(False, []), (False, [3, 9]), (True, []), (True, [4]), (True, [0, 11])])
def test_symmetric_masked_and_cyclic_match_dense(closed, prescribed):
    n = 16
    lower, diag, _, A = _tri(n, 4, symmetric=True, cyclic=closed)
    b = np.random.default_rng(4).normal(size=n)
    free = np.ones(n, dtype=bool)
    free[prescribed] = False
    out = np.full(n, np.nan)
    solve_tridiagonal_masked(diag, lower, b, free, closed, out)
    ref = np.zeros(n)
    ref[free] = np.linalg.solve(A[np.ix_(free, free)], b[free])
    _close(out, ref)


def test_bitwise_equal_to_the_copy_in_der():
    """What rodlab.der solves with gives the same bits as rodlab.linalg's kernel (der now imports it:
    its own copy was replaced)."""
    from rodlab.der import kernels as DK

    n = 19
    lower, diag, upper, _ = _tri(n, 5, symmetric=True)
    b = np.random.default_rng(5).normal(size=n)
    for closed in (False, True):
        for free in (np.ones(n, dtype=bool), np.arange(n) % 7 != 3):
            o1, o2 = np.empty(n), np.empty(n)
            solve_tridiagonal_masked(diag, lower, b, free, closed, o1)
            DK.solve_tridiagonal_masked(diag, lower, b, free, closed, o2)
            assert np.array_equal(o1, o2)


def test_tridiagonal_bad_input_and_zero_pivot():
    with pytest.raises(ValueError, match="zero pivot"):
        thomas(np.array([1.0]), np.array([0.0, 1.0]), np.array([1.0]), np.ones(2), np.empty(2))
    with pytest.raises(np.linalg.LinAlgError, match="zero pivot"):
        solve_tridiagonal([1.0], [1.0, 1.0], [1.0], [1.0, 2.0])  # [[1, 1], [1, 1]]
    with pytest.raises(ModelError, match="upper must have shape"):
        solve_tridiagonal([1.0], [2.0, 2.0], [1.0, 1.0], [1.0, 2.0])
    with pytest.raises(ModelError, match="rhs must be finite"):
        solve_tridiagonal([1.0], [2.0, 2.0], [1.0], [1.0, np.nan])


def _spd_band(n, p, seed):
    rng = np.random.default_rng(seed)
    M = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - p // 2), i + 1):
            M[i, j] = rng.normal()
    A = band_to_dense(dense_to_band(M @ M.T, p)) + 0.1 * np.eye(n)
    return dense_to_band(A, p), A


@pytest.mark.parametrize("n,p", [(1, 2), (5, 6), (30, 1), (40, 10), (60, 18)])
def test_banded_ldlt_matches_dense(n, p):
    band, A = _spd_band(n, p, n + p)
    b = np.random.default_rng(p).normal(size=n)
    np.testing.assert_array_equal(band_to_dense(band), A)
    y = np.empty(n)
    band_matvec(band, b, y)
    _close(y, A @ b)
    L, D = band.copy(), np.empty(n)
    assert ldlt_factor_band(L, D, 1e-14) == 0
    x = b.copy()
    ldlt_solve_band(L, D, x)
    _close(x, np.linalg.solve(A, b))
    # the factor is the LDL^T one: L unit lower with the band's pattern, D > 0
    Ld = band_to_dense(L)
    Lf = np.tril(Ld, -1) + np.eye(n)
    np.testing.assert_allclose(Lf @ np.diag(D) @ Lf.T, A, atol=1e-12 * np.abs(A).max())
    ab = np.zeros((p + 1, n))  # scipy's lower form: ab[k, j] = A[j + k, j]
    for k in range(min(p, n - 1) + 1):
        ab[k, :n - k] = band[k:, k]
    _close(x, sla.solveh_banded(ab, b, lower=True))
    if p == 10:  # the unrolled variant gives the same bits
        L10, D10 = band.copy(), np.empty(n)
        ldlt_factor_band10(L10, D10, 1e-14)
        x10 = b.copy()
        ldlt_solve_band10(L10, D10, x10)
        assert np.array_equal(L10, L) and np.array_equal(D10, D) and np.array_equal(x10, x)


def test_banded_ldlt_clamps_pivots_of_a_singular_matrix():
    v = np.arange(1.0, 7.0)
    A = np.outer(v, v)  # rank 1: every pivot after the first is zero in exact arithmetic
    band = dense_to_band(A, 5)
    D = np.empty(6)
    assert ldlt_factor_band(band, D, 1e-12) == 5
    assert np.all(np.isfinite(band)) and np.all(D > 0)


@pytest.mark.parametrize("n,p", [(12, 3), (50, 18)])
def test_row_and_column_aligned_layouts(n, p):
    band, A = _spd_band(n, p, 7 * n)
    Ar = np.empty((n, 2 * p + 1))
    band_to_rows(band, Ar)
    for i in range(n):
        for j in range(2 * p + 1):
            c = i - p + j
            assert Ar[i, j] == (A[i, c] if 0 <= c < n else 0.0)
    b = np.random.default_rng(n).normal(size=n)
    xp = np.zeros(n + 2 * p)
    xp[p:p + n] = b
    op = np.zeros(n + 2 * p)
    rband_matvec(Ar, xp, op)
    _close(op[p:p + n], A @ b)
    Lc, Lr = np.empty((n, p + 1)), np.empty((n, p + 1))
    assert column_copy_norm(Ar, Lc) == pytest.approx(np.abs(A).sum(1).max(), rel=1e-14)
    assert cldlt_factor(Ar, Lc, Lr, np.empty(p + 1), 1e-14) == 0
    L, D = band.copy(), np.empty(n)
    ldlt_factor_band(L, D, 1e-14)
    Ld = band_to_dense(L)
    np.testing.assert_allclose(Lc[:, 0], 1.0 / D, rtol=1e-12)
    np.testing.assert_allclose(Lr[:, p], 1.0 / D, rtol=1e-12)
    for j in range(n):
        for k in range(1, p + 1):
            ref = Ld[j + k, j] if j + k < n else 0.0
            assert Lc[j, k] == pytest.approx(ref, rel=1e-10, abs=1e-12)
            if j - p + k - 1 >= 0:
                assert Lr[j, k - 1] == pytest.approx(Ld[j, j - p + k - 1], rel=1e-10, abs=1e-12)


def test_banded_lu_matches_dense():
    from rodlab.linalg.banded_lu import solve_banded_lu

    n, kl, ku = 25, 2, 3
    rng = np.random.default_rng(8)
    A = np.triu(np.tril(rng.normal(size=(n, n)), ku), -kl)  # not diagonally dominant: pivoting needed
    b = rng.normal(size=n)
    _close(solve_banded_lu(A, b, kl, ku), np.linalg.solve(A, b))


@pytest.mark.parametrize("bs", [2, 3, 4])
def test_block_tridiagonal_matches_dense(bs):
    nb = 9
    rng = np.random.default_rng(bs)
    S = rng.normal(size=(nb * bs, nb * bs))
    keep = np.abs(np.subtract.outer(np.arange(nb * bs) // bs, np.arange(nb * bs) // bs)) <= 1
    S = 0.5 * (S + S.T) * keep
    A = S + np.diag(np.abs(S).sum(1) + 0.1)  # symmetric, diagonally dominant: SPD, block tridiagonal
    diag = np.array([A[i * bs:(i + 1) * bs, i * bs:(i + 1) * bs] for i in range(nb)])
    off = np.array([A[i * bs:(i + 1) * bs, (i + 1) * bs:(i + 2) * bs] for i in range(nb - 1)])
    rhs = rng.normal(size=(nb, bs))
    ref = np.linalg.solve(A, rhs.ravel()).reshape(nb, bs)
    _close(solve_block_tridiagonal(diag, off, rhs), ref)
    if bs == 3:
        sinv, W = np.empty_like(diag), np.empty((nb, 3, 3))
        assert block_tridiagonal3_factor(diag, off, sinv, W) == -1
        out = np.empty_like(rhs)
        block_tridiagonal3_solve(sinv, W, rhs, out, np.empty_like(rhs))
        _close(out, ref)
