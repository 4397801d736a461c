"""Numerical check of Michell's critical twist (:func:`rodlab.analytic.classic.michell_critical_twist`).

Run by tests/test_analytic_michell.py and ``python bench/bench_validation_michell.py [N ...]``.

A closed, naturally straight, isotropic rod with total twist Theta (link Lk = Theta/2pi at the flat
circle) has, with the twist relaxed to uniform, the energy

    E(x) = alpha/2 sum_i |kb_i|^2 / lbar_i + beta (Theta - 2 pi Wr(x))^2 / (2 L)

(Calugareanu: twist = 2 pi (Lk - Wr)), with the edge lengths held fixed. Here Wr is the Gauss
double integral by the midpoint rule over edges, kb the curvature binormal of the polygon. At the
circle grad Wr = 0 (reflection symmetry), so the constrained Hessian is
``alpha A - (2 pi beta Theta / L) B`` with A the bending Hessian of the Lagrangian (edge-length
multipliers included) and B the writhe Hessian, both reduced to the edge-length-preserving,
non-rigid motions. The circle is stable while that is positive definite: the critical twist is
``alpha L / (2 pi beta nu_max)`` with nu_max the largest generalized eigenvalue of (B, A). The
n-wave modes give ``2 pi sqrt(n^2 - 1) alpha/beta``. Independent of every simulator in rodlab.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import eigh, null_space


def ring(N: int, R: float = 1.0) -> np.ndarray:
    a = 2 * np.pi * np.arange(N) / N
    return np.stack((R * np.cos(a), R * np.sin(a), np.zeros(N)), axis=1)


def bending(x: np.ndarray, lbar: np.ndarray) -> float:
    e = np.roll(x, -1, axis=0) - x  # e_i = x_{i+1} - x_i
    ep = np.roll(e, 1, axis=0)  # e_{i-1}
    le, lp = np.linalg.norm(e, axis=1), np.linalg.norm(ep, axis=1)
    kb = 2 * np.cross(ep, e) / (lp * le + np.sum(ep * e, axis=1))[:, None]
    return 0.5 * float(np.sum(np.sum(kb * kb, axis=1) / lbar))


def writhe(x: np.ndarray) -> float:
    e = np.roll(x, -1, axis=0) - x
    m = x + 0.5 * e
    d = m[:, None, :] - m[None, :, :]
    r = np.linalg.norm(d, axis=2)
    np.fill_diagonal(r, 1.0)
    c = np.cross(e[:, None, :], e[None, :, :])
    g = np.sum(c * d, axis=2) / r**3
    np.fill_diagonal(g, 0.0)
    return float(g.sum() / (4 * np.pi))


def fd_hessian(f, x0: np.ndarray, h: float = 1e-4) -> np.ndarray:
    v = x0.ravel().copy()
    n = v.size
    H = np.zeros((n, n))

    def F(w):
        return f(w.reshape(x0.shape))

    f0 = F(v)
    for i in range(n):
        for j in range(i, n):
            if i == j:
                vp, vm = v.copy(), v.copy()
                vp[i] += h
                vm[i] -= h
                H[i, i] = (F(vp) - 2 * f0 + F(vm)) / h**2
            else:
                w = [v.copy() for _ in range(4)]
                w[0][i] += h; w[0][j] += h  # noqa: E702
                w[1][i] += h; w[1][j] -= h  # noqa: E702
                w[2][i] -= h; w[2][j] += h  # noqa: E702
                w[3][i] -= h; w[3][j] -= h  # noqa: E702
                H[i, j] = H[j, i] = (F(w[0]) - F(w[1]) - F(w[2]) + F(w[3])) / (4 * h * h)
    return H


def fd_grad(f, x0: np.ndarray, h: float = 1e-6) -> np.ndarray:
    v = x0.ravel().copy()
    g = np.zeros(v.size)
    for i in range(v.size):
        vp, vm = v.copy(), v.copy()
        vp[i] += h
        vm[i] -= h
        g[i] = (f(vp.reshape(x0.shape)) - f(vm.reshape(x0.shape))) / (2 * h)
    return g


def critical_twists(N: int, alpha: float = 1.0, beta: float = 1.0, R: float = 1.0, k: int = 4):
    """The ``k`` smallest critical total twists [rad] of an N-gon ring of radius R, and diagnostics
    (``stationarity`` = |grad E_b - C^T lam| at the circle, max ``|grad Wr|`` at the circle, smallest eigenvalue of the
    reduced bending Hessian, which must be > 0: the untwisted ring is stable). Cost ~O(N^4)."""
    x = ring(N, R)
    n = 3 * N
    e = np.roll(x, -1, axis=0) - x
    le = np.linalg.norm(e, axis=1)
    lbar = 0.5 * (le + np.roll(le, 1))
    L = float(le.sum())
    Eb = lambda y: alpha * bending(y, lbar)  # noqa: E731
    # constraints c_i = |x_{i+1} - x_i| - l_i: Jacobian and Hessians
    C = np.zeros((N, n))
    Hc = []
    for i in range(N):
        j = (i + 1) % N
        t = e[i] / le[i]
        C[i, 3 * j:3 * j + 3] = t
        C[i, 3 * i:3 * i + 3] = -t
        P = (np.eye(3) - np.outer(t, t)) / le[i]
        Hi = np.zeros((n, n))
        for a, sa in ((i, -1), (j, 1)):
            for b, sb in ((i, -1), (j, 1)):
                Hi[3 * a:3 * a + 3, 3 * b:3 * b + 3] += sa * sb * P
        Hc.append(Hi)
    g = fd_grad(Eb, x)
    lam, *_ = np.linalg.lstsq(C.T, g, rcond=None)
    stationarity = float(np.linalg.norm(C.T @ lam - g))  # |grad E_b - C^T lam| (both ~0: kb is scale-free)
    A = fd_hessian(Eb, x) - sum(li * Hi for li, Hi in zip(lam, Hc))
    B = fd_hessian(writhe, x)
    gw = fd_grad(writhe, x)
    # motions preserving the edge lengths, minus the 6 rigid motions
    Z = null_space(C)
    rig = []
    for a in range(3):
        t = np.zeros((N, 3)); t[:, a] = 1.0  # noqa: E702
        rig.append(t.ravel())
        w = np.zeros(3); w[a] = 1.0  # noqa: E702
        rig.append(np.cross(w, x).ravel())
    Rg = np.array(rig).T
    Zr = Z - Rg @ np.linalg.lstsq(Rg, Z, rcond=None)[0]
    U, s, _ = np.linalg.svd(Zr, full_matrices=False)
    Y = U[:, s > 1e-8 * s[0]]
    Ar, Br = Y.T @ A @ Y, Y.T @ B @ Y
    Ar, Br = 0.5 * (Ar + Ar.T), 0.5 * (Br + Br.T)
    nu = eigh(Br, Ar, eigvals_only=True)
    pos = np.sort(nu[nu > 1e-9])[::-1]
    thetas = alpha * L / (2 * np.pi * beta * pos[:k])
    return thetas, dict(stationarity=stationarity, grad_writhe=float(np.abs(gw).max()), min_A=float(np.linalg.eigvalsh(Ar).min()))


