"""The exact O(n) solve of the compact rod's Gauss-Newton system (src/rodlab/compact/augmented.py)
against the dense ``A_F`` (the ``direct`` baseline's matrix), and as the ``exact`` preconditioner of
PCG: one iteration where the paper's hybrid preconditioner takes several."""
from __future__ import annotations

import numpy as np
import pytest

from rodlab.compact.augmented import factor_augmented, factor_rows, solve_augmented
from rodlab.compact.chain import chain_forward
from rodlab.compact.energies import reduced_hessian
from rodlab.compact.pcg import build_dense_a, pcg_solve
from rodlab.compact.sqp import CompactModel, SolverOptions, Workspace, prepare_preconditioner


def _skew(t):
    return np.array([[0.0, -t[2], t[1]], [t[2], 0.0, -t[0]], [-t[1], t[0], 0.0]])


def _random_system(n, rng, fixed):
    """Rank-2 segment Jacobians (a rotation about the segment leaves it in place), positive vertex
    weights, a block-tridiagonal B with positive definite rotation blocks, a Dirichlet mask."""
    m = n - 1
    Dj = np.empty((m, 3, 3))
    for i in range(m):
        t = rng.normal(size=3)
        Dj[i] = 0.03 * _skew(t / np.linalg.norm(t))
    Hp = rng.uniform(0.5, 2.0, n)
    Bd, Bo = np.zeros((n, 3, 3)), np.zeros((n - 1, 3, 3))
    for i in range(1, n):
        Q = rng.normal(size=(3, 3))
        Bd[i] = Q @ Q.T + 100.0 * np.eye(3)
        if i + 1 < n:
            Bo[i] = 10.0 * rng.normal(size=(3, 3))
    free = np.ones((n, 3))
    if fixed:
        free[0] = 0.0
        free[1, 2] = 0.0
    return Dj, Hp, Bd, Bo, free


@pytest.mark.parametrize("n, fixed", [(3, False), (5, True), (40, False), (101, True)])
def test_exact_solve_matches_the_dense_matrix(n, fixed):
    rng = np.random.default_rng(n)
    Dj, Hp, Bd, Bo, free = _random_system(n, rng, fixed)
    A = np.zeros((3 * n, 3 * n))
    build_dense_a(Dj, Hp, Bd, Bo, free, A, np.zeros(n))
    F = np.zeros((factor_rows(n), 6))
    assert factor_augmented(Dj, Hp, Bd, Bo, free, F)
    rhs = rng.normal(size=(n, 3))
    x, y = np.empty((n, 3)), np.empty((n, 3))
    solve_augmented(F, rhs, x, y)
    ref = np.linalg.solve(A, rhs.ravel())
    assert np.max(np.abs(x.ravel() - ref)) <= 1e-12 * np.max(np.abs(ref))
    if fixed:
        assert np.array_equal(x[0], rhs[0])  # a held coordinate: identity row of A_F


def test_exact_factor_refuses_a_nonpositive_weight():
    rng = np.random.default_rng(0)
    Dj, Hp, Bd, Bo, free = _random_system(6, rng, False)
    Hp[3] = 0.0
    assert not factor_augmented(Dj, Hp, Bd, Bo, free, np.zeros((factor_rows(6), 6)))


def test_exact_preconditioner_on_a_bent_rod_converges_in_one_iteration():
    """A helix of 60 vertices at dt = 3 ms (inertia, bending, twist): PCG with ``exact`` stops after
    one iteration at the paper's tolerance and gives the hybrid PCG's solution."""
    n = 60
    t = np.linspace(0.0, 4.0 * np.pi, n)
    pts = np.stack([0.1 * np.cos(t), 0.1 * np.sin(t), 0.02 * t], axis=1)
    md = CompactModel.from_polyline(pts, E=2e7, G=2e7, rho=100.0, radius=0.01)
    dt = 0.003
    s = np.zeros((n, 3))
    s[0] = md.rest_p[0]
    rng = np.random.default_rng(3)
    s[1:] += 0.05 * rng.normal(size=(n - 1, 3))  # away from rest: the bending Hessian is not trivial
    free = np.ones((n, 3))
    free[0] = 0.0
    out = {}
    for name, kind in (("hybrid", 3), ("exact", 5)):
        ws = Workspace(n, exact=kind == 5)
        chain_forward(s, md.lengths, np.array(md.rest_q), ws.p, ws.q, ws.Dj, ws.Qj, True)
        reduced_hessian(ws.q, np.array(md.rest_q), ws.Qj, md.masses, md.Jr, md.lbar, md.Kh, 1.0 / dt**2, 0.0,
                        ws.Hp, ws.Bd, ws.Bo)
        assert prepare_preconditioner(kind, ws.Dj, ws.Hp, ws.Bd, ws.Bo, free, ws.diag, ws.off, ws.sinv, ws.W,
                                      ws.suffix, ws.A, ws.L)
        rhs = np.random.default_rng(5).normal(size=(n, 3))
        x = np.zeros((n, 3))
        o = SolverOptions()
        it, res, ok = pcg_solve(ws.Dj, ws.Hp, ws.Bd, ws.Bo, free, kind, ws.sinv, ws.W, ws.L, rhs, x, o.pcg_rtol,
                                o.pcg_atol, o.pcg_maxiter, *(np.zeros((n, 3)) for _ in range(7)))
        assert ok
        out[name] = (it, x)
    assert out["exact"][0] == 1 and out["hybrid"][0] > 1
    scale = np.max(np.abs(out["exact"][1]))
    assert np.max(np.abs(out["exact"][1] - out["hybrid"][1])) <= 1e-5 * scale
