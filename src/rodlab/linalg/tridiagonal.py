"""Tridiagonal systems: the Thomas algorithm, general and symmetric, on runs of free unknowns, and cyclic.

Layout (three diagonals as vectors of length n): ``diag[i] = A[i, i]``; ``lower[i] = A[i + 1, i]``
(row i + 1, unknown i) and ``upper[i] = A[i, i + 1]`` (row i, unknown i + 1), ``i = 0..n-2``; a
symmetric matrix passes ``lower`` only. Entry ``n - 1`` of ``lower`` / ``upper`` is read only as the
corner ``A[n-1, 0] = A[0, n-1]`` of a cyclic (closed-ring) symmetric matrix, see
:func:`solve_tridiagonal_masked`; the arrays may then have length ``n``.

Elimination without pivoting (Thomas 1949; stable for the diagonally dominant or SPD matrices the
rod methods produce): forward ``c'_r = upper_r / b_r``, ``d'_r = (rhs_r - lower_{r-1} d'_{r-1}) / b_r``
with ``b_r = diag_r - lower_{r-1} c'_{r-1}``, then back substitution. A zero pivot ``b_r`` raises
``ValueError`` (never an inf or NaN returned silently).

Masked solves act on the unknowns with ``free[i]`` True: each maximal run of consecutive free
unknowns is one independent system (the couplings to prescribed unknowns are dropped, their
``out`` is 0). Kernels are compiled and allocate their scratch in one block per call. The explicit DER
(``rodlab.der.kernels``'s quasistatic twist, ``rodlab.der.projection``'s constraint solves) calls
:func:`solve_tridiagonal_masked` from here; it replaced a copy there with bitwise-equal results.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from ..model import require


@njit(inline="always", **JIT)
def _thomas_run(lower, diag, upper, rhs, start, stop, cp, dp, out):
    """Thomas on the rows and unknowns ``start .. stop - 1`` (couplings outside dropped) into ``out``.

    Each sweep is a serial chain (a division per row in the forward one): the previous row's
    ``c'``, ``d'`` and solution are carried in scalars, not re-read from the arrays just written
    (a store-to-load round trip on the chain's critical path: 3.4 -> 2.0 us on 274 rows, bitwise
    the same)."""
    b = diag[start]
    if b == 0.0:
        raise ValueError("singular tridiagonal matrix (zero pivot)")
    c_prev = upper[start] / b if start + 1 < stop else 0.0
    d_prev = rhs[start] / b
    cp[start] = c_prev
    dp[start] = d_prev
    for r in range(start + 1, stop):
        a = lower[r - 1]
        b = diag[r] - a * c_prev
        if b == 0.0:
            raise ValueError("singular tridiagonal matrix (zero pivot)")
        c_prev = upper[r] / b if r + 1 < stop else 0.0
        d_prev = (rhs[r] - a * d_prev) / b
        cp[r] = c_prev
        dp[r] = d_prev
    o = d_prev
    out[stop - 1] = o
    for r in range(stop - 2, start - 1, -1):
        o = dp[r] - cp[r] * o
        out[r] = o


@njit(**JIT)
def thomas(lower, diag, upper, rhs, out):
    """Solve the general tridiagonal ``A out = rhs`` (layout: module docstring; ``lower``, ``upper`` of
    length >= n - 1). Raises ``ValueError`` on a zero pivot."""
    n = diag.shape[0]
    if n == 0:
        return
    work = np.empty(2 * n)
    _thomas_run(lower, diag, upper, rhs, 0, n, work[:n], work[n:], out)


@njit(**JIT)
def thomas_symmetric(diag, lower, rhs, out):
    """Solve the symmetric tridiagonal ``A out = rhs`` (``lower[i] = A[i + 1, i] = A[i, i + 1]``).
    Raises ``ValueError`` on a zero pivot."""
    thomas(lower, diag, lower, rhs, out)


@njit(**JIT)
def thomas_masked(lower, diag, upper, rhs, free, out):
    """General tridiagonal solve over each run of consecutive unknowns with ``free`` True; the others
    get ``out = 0`` (their rows and columns are dropped). Raises ``ValueError`` on a zero pivot."""
    n = diag.shape[0]
    work = np.empty(2 * n)
    _thomas_masked_into(lower, diag, upper, rhs, free, out, work[:n], work[n:])


@njit(**JIT)
def _thomas_masked_into(lower, diag, upper, rhs, free, out, cp, dp):
    """:func:`thomas_masked` with its scratch vectors ``cp``, ``dp`` (n) given."""
    n = diag.shape[0]
    for i in range(n):
        out[i] = 0.0
    i = 0
    while i < n:
        if not free[i]:
            i += 1
            continue
        start = i
        while i < n and free[i]:
            i += 1
        _thomas_run(lower, diag, upper, rhs, start, i, cp, dp, out)


@njit(**JIT)
def _sherman_morrison_ring(diag, lower, rhs, out):
    """The cyclic symmetric solve of :func:`solve_tridiagonal_masked` with every unknown free (n > 2),
    by Sherman-Morrison: ``A = T + u v^T``, ``u = (gamma, 0, .., c)``, ``v = (1, 0, .., c / gamma)``,
    ``gamma = -A[0, 0]``, ``T`` the tridiagonal part with its first and last diagonal entries
    changed. Its two Thomas solves (``T y = rhs``, ``T z = u``) share their elimination, so they
    run in one pass (the same operations on every entry as two :func:`thomas_symmetric` calls,
    bitwise the same results; the second solve's right-hand side fills the first's division
    latency) with one scratch allocation. Raises ``ValueError`` on a zero pivot."""
    n = diag.shape[0]
    corner = lower[n - 1]
    gamma = -diag[0] if diag[0] != 0.0 else -1.0
    d_last = diag[n - 1] - corner * corner / gamma
    work = np.empty(3 * n)
    cp = work[:n]
    y = work[n:2 * n]  # forward sweep, then the solution
    z = work[2 * n:]
    b = diag[0] - gamma
    if b == 0.0:
        raise ValueError("singular tridiagonal matrix (zero pivot)")
    c_prev = lower[0] / b
    y_prev = rhs[0] / b
    z_prev = gamma / b
    cp[0] = c_prev
    y[0] = y_prev
    z[0] = z_prev
    for r in range(1, n):  # (the previous row's values carried in scalars: _thomas_run)
        a = lower[r - 1]
        dr = d_last if r == n - 1 else diag[r]
        b = dr - a * c_prev
        if b == 0.0:
            raise ValueError("singular tridiagonal matrix (zero pivot)")
        c_prev = lower[r] / b if r + 1 < n else 0.0
        ur = corner if r == n - 1 else 0.0
        y_prev = (rhs[r] - a * y_prev) / b
        z_prev = (ur - a * z_prev) / b
        cp[r] = c_prev
        y[r] = y_prev
        z[r] = z_prev
    sherman_morrison_finish(n, cp, y, z, y_prev, z_prev, gamma, corner, out)


@njit(**JIT)
def sherman_morrison_finish(n, cp, y, z, y_prev, z_prev, gamma, corner, out):
    """The end of a Sherman-Morrison ring solve (:func:`_sherman_morrison_ring`): back substitution
    of the two Thomas solves ``y``, ``z`` (forward sweeps done, ``cp`` their ``c'``, ``y_prev``,
    ``z_prev`` the last row's values) and ``out = y - (v . y) / (1 + v . z) z`` over the first ``n``
    entries; ``out`` may be ``y``."""
    for r in range(n - 2, -1, -1):
        y_prev = y[r] - cp[r] * y_prev
        z_prev = z[r] - cp[r] * z_prev
        y[r] = y_prev
        z[r] = z_prev
    fac = (y[0] + corner * y[n - 1] / gamma) / (1.0 + z[0] + corner * z[n - 1] / gamma)
    for i in range(n):
        out[i] = y[i] - fac * z[i]


@njit(**JIT)
def solve_tridiagonal_masked(diag, lower, rhs, free, closed, out):
    """Symmetric tridiagonal (``closed`` False) or cyclic tridiagonal (``closed`` True: ``lower`` has
    length n and ``lower[n - 1] = A[n-1, 0]`` is the corner) solve on the unknowns with ``free`` True;
    the others get ``out = 0``.

    A ring with every unknown free (n > 2) is solved by Sherman-Morrison: ``A = T + u v^T`` with
    ``u = (gamma, 0, .., c)``, ``v = (1, 0, .., c / gamma)``, ``gamma = -A[0, 0]``, two Thomas solves with
    ``T``. A ring with a prescribed unknown is cut there and solved as a chain. Raises ``ValueError``
    on a zero pivot.
    """
    n = diag.shape[0]
    nfree = 0
    for i in range(n):
        if free[i]:
            nfree += 1
    for i in range(n):
        out[i] = 0.0
    if nfree == 0:
        return
    if closed and nfree == n and n > 2:
        _sherman_morrison_ring(diag, lower, rhs, out)
        return
    if closed and nfree < n:
        # cut the ring at a prescribed unknown: rotate so that it comes last, then solve as a chain
        p = 0
        while free[p]:
            p += 1
        work = np.empty(6 * n)  # one allocation for the rotated system and the solve's scratch
        rd = work[:n]
        rl = work[n:2 * n]
        rr = work[2 * n:3 * n]
        ro = work[3 * n:4 * n]
        rf = np.empty(n, dtype=np.bool_)
        for i in range(n):
            src = (p + 1 + i) % n
            rd[i] = diag[src]
            rl[i] = lower[src]
            rr[i] = rhs[src]
            rf[i] = free[src]
        _thomas_masked_into(rl, rd, rl, rr, rf, ro, work[4 * n:5 * n], work[5 * n:])
        for i in range(n):
            out[(p + 1 + i) % n] = ro[i]
        return
    work = np.empty(2 * n)
    _thomas_masked_into(lower, diag, lower, rhs, free, out, work[:n], work[n:])


def solve_tridiagonal(lower, diag, upper, rhs) -> np.ndarray:
    """Solve ``A x = rhs`` for the tridiagonal ``A`` given by its three diagonals (``lower[i] = A[i+1, i]``,
    ``diag[i] = A[i, i]``, ``upper[i] = A[i, i+1]``); returns ``x``. Checked wrapper of :func:`thomas`:
    raises :class:`rodlab.model.ModelError` naming a wrong shape or a non-finite entry, and
    ``numpy.linalg.LinAlgError`` on a zero pivot."""
    diag = np.ascontiguousarray(diag, dtype=float)
    lower = np.ascontiguousarray(lower, dtype=float)
    upper = np.ascontiguousarray(upper, dtype=float)
    rhs = np.ascontiguousarray(rhs, dtype=float)
    n = diag.shape[0]
    require(diag.ndim == 1 and n >= 1, f"diag must be a vector of length >= 1 (got shape {diag.shape})")
    for name, v, m in (("lower", lower, n - 1), ("upper", upper, n - 1), ("rhs", rhs, n)):
        require(v.shape == (m,), f"{name} must have shape ({m},) for n = {n} (got {v.shape})")
    for name, v in (("lower", lower), ("diag", diag), ("upper", upper), ("rhs", rhs)):
        require(bool(np.all(np.isfinite(v))), f"{name} must be finite (got a non-finite entry)")
    out = np.empty(n)
    try:
        thomas(lower, diag, upper, rhs, out)
    except ValueError as e:
        raise np.linalg.LinAlgError(str(e)) from None
    return out
