"""Dense views of the residual and of its banded Jacobian, for checks against finite differences.

The Jacobian itself is assembled analytically inside :func:`rodlab.galpha.residual.residual`
(hand-derived derivatives of the pointwise terms; see that module's docstring). Here:
:func:`residual_vector` evaluates Eq. 21 for a given nodal state (boundary values as given,
loads as they stand), :func:`dense_jacobian` unpacks the banded analytic Jacobian over the free
unknowns, :func:`fd_jacobian` differentiates :func:`residual_vector` by central differences.
"""
from __future__ import annotations

import numpy as np

from .boundary import column_map, free_mask
from .residual import NV, old_terms, residual


def _setup(solver, dt, coeffs, static):
    prm = solver._prm(dt, coeffs, static)
    return prm


def residual_vector(solver, x, xprev, xdotprev, dt, coeffs, *, static=False, tip_kind=1):
    """Row-scaled residual (flattened (N-1)*15) of the segment equations at nodal state ``x``."""
    m = solver.model
    N = m.n_nodes
    prm = solver._prm(dt, coeffs, static)
    old = np.zeros((N - 1, NV))
    Pw = np.zeros((N, 12))
    old_terms(xprev, xdotprev, solver._khat, solver._K, solver._J, prm, Pw, old)
    cm, n, kl, ku = column_map(free_mask(N, tip_kind))
    F = np.zeros((N - 1, NV))
    P = np.zeros((N, 12))
    dP = np.zeros((N, 12, NV))
    ab = np.zeros((n, 2 * kl + ku + 1))
    residual(np.ascontiguousarray(x), xprev, xdotprev, old, solver._khat, solver._K, solver._J, prm,
             solver._rowscale, P, dP, False, F, ab, cm, kl, ku, np.zeros((NV, NV)))
    return F.reshape(-1).copy()


def dense_jacobian(solver, x, xprev, xdotprev, dt, coeffs, *, static=False, tip_kind=1):
    """Analytic Jacobian d F / d x_free as a dense ((N-1)*15)^2 matrix, and the free mask."""
    m = solver.model
    N = m.n_nodes
    prm = solver._prm(dt, coeffs, static)
    old = np.zeros((N - 1, NV))
    Pw = np.zeros((N, 12))
    old_terms(xprev, xdotprev, solver._khat, solver._K, solver._J, prm, Pw, old)
    mask = free_mask(N, tip_kind)
    cm, n, kl, ku = column_map(mask)
    F = np.zeros((N - 1, NV))
    P = np.zeros((N, 12))
    dP = np.zeros((N, 12, NV))
    ab = np.zeros((n, 2 * kl + ku + 1))
    residual(np.ascontiguousarray(x), xprev, xdotprev, old, solver._khat, solver._K, solver._J, prm,
             solver._rowscale, P, dP, True, F, ab, cm, kl, ku, np.zeros((NV, NV)))
    A = np.zeros((n, n))
    d = kl + ku
    for j in range(n):
        for i in range(max(0, j - ku), min(n, j + kl + 1)):
            A[i, j] = ab[j, d + i - j]
    return A, mask


def fd_jacobian(solver, x, xprev, xdotprev, dt, coeffs, *, static=False, tip_kind=1, h=1e-6):
    """Central-difference Jacobian over the free unknowns (relative step ``h``)."""
    mask = free_mask(solver.model.n_nodes, tip_kind).ravel()
    idx = np.flatnonzero(mask)
    base = np.array(x, dtype=float)
    cols = []
    for i in idx:
        step = h * max(1.0, abs(base.flat[i]))
        xp = base.copy(); xp.flat[i] += step
        xm = base.copy(); xm.flat[i] -= step
        fp = residual_vector(solver, xp, xprev, xdotprev, dt, coeffs, static=static, tip_kind=tip_kind)
        fm = residual_vector(solver, xm, xprev, xdotprev, dt, coeffs, static=static, tip_kind=tip_kind)
        cols.append((fp - fm) / (2 * step))
    return np.array(cols).T


def newton_map(solver, x_free_state, xprev, xdotprev, dt, coeffs, vals, R0, tip_kind):
    """The map Newton actually solves: free unknowns -> (frames, boundary values with end
    loads rotated into the tip frame, residual). Returns the flattened scaled residual."""
    from .solver import apply_bc
    from .state import integrate_frames
    m = solver.model
    x = np.array(x_free_state, dtype=float)
    R = np.zeros((m.n_nodes, 3, 3))
    integrate_frames(x, R0, m.ds, solver._cay, R)
    apply_bc(x, R, tip_kind, vals, solver._khat, solver._K, np.ascontiguousarray(m.gravity))
    return residual_vector(solver, x, xprev, xdotprev, dt, coeffs, tip_kind=tip_kind)


def newton_jacobian(solver, x, xprev, xdotprev, dt, coeffs, vals, R0, tip_kind):
    """Dense A + C D (banded Jacobian plus the tip-frame coupling) at the state Newton sees."""
    from .residual import tip_sensitivity
    from .solver import apply_bc
    from .state import integrate_frames
    m = solver.model
    N = m.n_nodes
    x = np.array(x, dtype=float)
    R = np.zeros((N, 3, 3))
    integrate_frames(x, R0, m.ds, solver._cay, R)
    apply_bc(x, R, tip_kind, vals, solver._khat, solver._K, np.ascontiguousarray(m.gravity))
    prm = solver._prm(dt, coeffs, False)
    old = np.zeros((N - 1, NV)); Pw = np.zeros((N, 12))
    old_terms(xprev, xdotprev, solver._khat, solver._K, solver._J, prm, Pw, old)
    cm, n, kl, ku = column_map(free_mask(N, tip_kind))
    F = np.zeros((N - 1, NV)); P = np.zeros((N, 12)); dP = np.zeros((N, 12, NV))
    ab = np.zeros((n, 2 * kl + ku + 1)); tb = np.zeros((NV, NV))
    residual(x, xprev, xdotprev, old, solver._khat, solver._K, solver._J, prm, solver._rowscale, P, dP, True, F, ab,
             cm, kl, ku, tb)
    A = np.zeros((n, n))
    d = kl + ku
    for j in range(n):
        for i in range(max(0, j - ku), min(n, j + kl + 1)):
            A[i, j] = ab[j, d + i - j]
    D = np.zeros((6, n))
    tip_sensitivity(x, R, m.ds, np.ascontiguousarray(vals[2:4]), cm, D)
    C = np.zeros((n, 6))
    r0 = NV * (N - 2)
    if tip_kind == 1:
        C[r0:, 0:3] = tb[:, 9:12]
        C[r0:, 3:6] = tb[:, 6:9] / solver._K[None, :]
    else:
        C[r0:, 0:3] = tb[:, 0:3]
        C[r0:, 3:6] = tb[:, 3:6]
    return A + C @ D
