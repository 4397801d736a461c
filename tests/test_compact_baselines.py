"""Cartesian baselines (Zhao et al., Sec. 4.1): penalty and direct KKT."""
import numpy as np
import pytest

from rodlab.compact.baselines import CartesianSolver, quad_director, run_cartesian
from rodlab.compact.simulate import simulate
from rodlab.scenes.compact_scenes import HELIX_PARAMS, build_helix


def _helix(n=8):
    params = {p.name: p.default for p in HELIX_PARAMS}
    params.update(n=n)
    return build_helix(params)


def test_sparse_hessian_and_constraint_jacobian_fd():
    md, _, _ = _helix(5)
    cs = CartesianSolver(md, method="kkt", gravity=(0, 0, -9.81))
    n, m = md.n, md.m
    rng = np.random.default_rng(0)
    pred = (md.rest_p, md.rest_p, md.rest_q, np.zeros((m, 3)), 1e4, 0.0)
    x = np.concatenate([md.rest_p.ravel(), md.rest_q.ravel()]) + rng.normal(size=3 * n + 4 * m) * 1e-3

    def ev(x):
        p, q = x[:3 * n].reshape(n, 3), x[3 * n:].reshape(m, 4)
        E, g, H = cs._energy(p, q, pred, 3)
        c, J = cs.constraints(p, q)
        return g, H, c, J

    g, H, c, J = ev(x)
    h = 1e-7
    Hfd = np.zeros(H.shape)
    Jfd = np.zeros(J.shape)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        gp, _, cp, _ = ev(x + e)
        gm, _, cm, _ = ev(x - e)
        Hfd[:, k] = (gp - gm) / (2 * h)
        Jfd[:, k] = (cp - cm) / (2 * h)
    assert np.abs(H.toarray() - Hfd).max() < 1e-6 * np.abs(Hfd).max()
    assert np.abs(J.toarray() - Jfd).max() < 1e-7
    q = rng.normal(size=(4, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    from rodlab.compact.chain import directors
    assert np.allclose(quad_director(q), directors(q), atol=1e-14)


def test_kkt_matches_compact_and_penalty_violations_shrink_with_weight():
    md, solver, st = _helix(16)
    m, tr = simulate(solver, st, 0.01, 10, frames=10)
    kkt = CartesianSolver(md, method="kkt", max_newton=10, tol=1e-9, gravity=(0, 0, -9.81), fixed_vertices=(0, 1), fixed_segments=(0,))
    r = run_cartesian(md, kkt, 0.01, 10)
    assert r["inextensibility"].max() < 1e-9 and r["alignment"].max() < 1e-7
    assert np.allclose(r["x"][-1], st.p, atol=1e-5)  # same physics, same discretization
    viol = []
    for w in (1e2, 1e5):
        pen = CartesianSolver(md, method="penalty", weight=w, max_newton=20, tol=1e-9, gravity=(0, 0, -9.81),
                              fixed_vertices=(0, 1), fixed_segments=(0,))
        rp = run_cartesian(md, pen, 0.01, 10)
        viol.append(rp["inextensibility"].max() + rp["alignment"].max())
    assert viol[1] < viol[0] / 10
    assert viol[1] > 1e-10  # a penalty never satisfies the constraints exactly


def test_baseline_bad_input():
    md, _, _ = _helix(4)
    with pytest.raises(ValueError, match="method"):
        CartesianSolver(md, method="lagrange")
    with pytest.raises(ValueError, match="weight"):
        CartesianSolver(md, weight=0.0)
