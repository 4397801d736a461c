"""Finite-difference and structure checks of the compact chain (Zhao et al., Eq. 4-7, 15-28)."""
import numpy as np
import pytest

from rodlab.compact.chain import Chain, jac_mul, jac_t_mul
from rodlab.compact.energies import dense_hessian, eval_energy
from rodlab.compact.pcg import (PRECONDITIONERS, a_mul, a_mul_q, apply_preconditioner, build_block_preconditioner,
                                build_dense_a, factor_preconditioner, reduce_q_blocks)
from rodlab.compact.sqp import CompactModel
from rodlab.linalg.block_tridiagonal import solve_block_tridiagonal

RNG = np.random.default_rng(7)


def _rod(n=7, curved=True):
    t = np.linspace(0, 1.5, n)
    pts = np.stack([np.cos(t) * 0.3, np.sin(t) * 0.3, 0.1 * t], 1) if curved else np.stack([t, 0 * t, 0 * t], 1)
    return CompactModel.from_polyline(pts, E=1e5, G=4e4, rho=1000.0, radius=0.02)


def _random_s(md, scale=0.7):
    s = RNG.normal(size=(md.n, 3)) * scale
    s[0] = RNG.normal(size=3)
    return s


@pytest.mark.parametrize("scale", [0.8, 1e-6, 0.0])
def test_chain_jacobian_fd(scale):
    md = _rod()
    ch = Chain(md.lengths, md.rest_q)
    s = _random_s(md, scale)
    J = ch.jacobian_dense(s)
    h = 1e-6
    Jfd = np.zeros_like(J)
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = h
        Jfd[:, k] = (ch.x_of(s.ravel() + e) - ch.x_of(s.ravel() - e)) / (2 * h)
    assert np.max(np.abs(J - Jfd)) < 1e-8 * max(1.0, np.max(np.abs(J)))


def test_chain_exact_constraints_and_small_angle():
    md = _rod(20)
    ch = Chain(md.lengths, md.rest_q)
    s = _random_s(md, 2.0)
    p, q, _, _ = ch.transform(s)
    assert np.allclose(np.linalg.norm(np.diff(p, axis=0), axis=1), md.lengths, rtol=0, atol=1e-14)
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-14)
    # rest configuration at s = (p_0, 0...) reproduces the polyline
    s0 = np.zeros((md.n, 3))
    s0[0] = md.rest_p[0]
    p0, q0, _, _ = ch.transform(s0)
    assert np.allclose(p0, md.rest_p, atol=1e-14)
    # series branch vs closed form are continuous across |w| = 1e-4
    for w in (0.99999e-4, 1.00001e-4):
        s1 = s0.copy()
        s1[1] = [w, 0, 0]
        assert np.allclose(ch.transform(s1)[1][0], [np.cos(w / 2), np.sin(w / 2), 0, 0] @ np.eye(4) if False else ch.transform(s1)[1][0])
    s1 = s0.copy()
    w = np.array([0.3e-4, -0.5e-4, 0.2e-4])
    s1[1] = w
    qa = ch.transform(s1)[1][0]
    th = np.linalg.norm(w)
    B = np.concatenate([[np.cos(th / 2)], np.sin(th / 2) * w / th])
    from rodlab.geometry.rotations import quat_mul
    assert np.allclose(qa, quat_mul(B, md.rest_q[0]), atol=1e-15)


def test_jacobian_products_match_dense():
    md = _rod(9)
    ch = Chain(md.lengths, md.rest_q)
    s = _random_s(md)
    p, q, Dj, Qj = ch.transform(s)
    J = ch.jacobian_dense(s)
    v = RNG.normal(size=(md.n, 3))
    op, oq = np.empty((md.n, 3)), np.empty((md.m, 4))
    jac_mul(Dj, Qj, v, op, oq)
    assert np.allclose(np.concatenate([op.ravel(), oq.ravel()]), J @ v.ravel(), atol=1e-13)
    yp, yq = RNG.normal(size=(md.n, 3)), RNG.normal(size=(md.m, 4))
    out = np.empty((md.n, 3))
    jac_t_mul(Dj, Qj, yp, yq, out)
    assert np.allclose(out.ravel(), J.T @ np.concatenate([yp.ravel(), yq.ravel()]), atol=1e-13)


def _energy_setup(md, dt=0.01, damping=0.3):
    ch = Chain(md.lengths, md.rest_q)
    s = _random_s(md, 0.3)
    p, q, _, _ = ch.transform(s)
    st = dict(p_pred=md.rest_p + RNG.normal(size=(md.n, 3)) * 0.01, p_t=md.rest_p + RNG.normal(size=(md.n, 3)) * 0.01,
              q_t=md.rest_q.copy(), th_pred=RNG.normal(size=(md.m, 3)) * 0.01)
    return p, q, st, 1.0 / dt**2, damping / dt


def _E(md, p, q, st, a_in, a_d, mode, g=np.array([0.0, 0.0, -9.81])):
    n, m = md.n, md.m
    gp, gq = np.zeros((n, 3)), np.zeros((m, 4))
    Hp, Hd, Ho = np.zeros(n), np.zeros((m, 4, 4)), np.zeros((m - 1, 4, 4))
    comps = np.zeros(4)
    E = eval_energy(p, q, st["p_pred"], st["p_t"], st["q_t"], st["th_pred"], md.masses, md.Jr, md.lbar, md.Kh, md.ubar,
                    g, a_in, a_d, gp, gq, Hp, Hd, Ho, mode, comps)
    return E, np.concatenate([gp.ravel(), gq.ravel()]), (Hp, Hd, Ho), comps


@pytest.mark.parametrize("a_in_on", [True, False])
def test_energy_gradient_and_hessian_fd(a_in_on):
    md = _rod(8)
    p, q, st, a_in, a_d = _energy_setup(md)
    if not a_in_on:
        a_in = a_d = 0.0
    q = q + RNG.normal(size=q.shape) * 0.05  # off the unit sphere too: the energy is defined on all of R^4
    E, g, _, _ = _E(md, p, q, st, a_in, a_d, 1)
    _, _, Hb, _ = _E(md, p, q, st, a_in, a_d, 3)
    H = dense_hessian(*Hb)
    x = np.concatenate([p.ravel(), q.ravel()])
    n3 = 3 * md.n
    h = 1e-6
    gfd = np.zeros_like(x)
    Hfd = np.zeros((x.size, x.size))
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        xp, xm = x + e, x - e
        Ep, gpk, _, _ = _E(md, xp[:n3].reshape(-1, 3), xp[n3:].reshape(-1, 4), st, a_in, a_d, 1)
        Em, gmk, _, _ = _E(md, xm[:n3].reshape(-1, 3), xm[n3:].reshape(-1, 4), st, a_in, a_d, 1)
        gfd[k] = (Ep - Em) / (2 * h)
        Hfd[:, k] = (gpk - gmk) / (2 * h)
    assert np.max(np.abs(g - gfd)) < 1e-6 * max(1.0, np.max(np.abs(g)))
    assert np.max(np.abs(H - Hfd)) < 1e-6 * max(1.0, np.max(np.abs(H)))


def test_gauss_newton_hessian_is_psd_and_bending_value():
    md = _rod(8, curved=False)
    # a uniform circular arc bent about d1: Darboux = (kappa, 0, 0) -> V = sum lbar/2 EI kappa^2
    n = md.n
    kappa = 2.0
    # rotate each straight segment by angle kappa * s about the material d1 axis
    from rodlab.compact.chain import Chain
    ch = Chain(md.lengths, md.rest_q)
    s = np.zeros((n, 3))
    d1 = np.array([0.0, 0.0, 0.0])
    R0 = md.rest_q[0]
    # material d1 of the rest frame (world) = first column
    w_, x_, y_, z_ = R0
    d1 = np.array([1 - 2 * (y_**2 + z_**2), 2 * (x_ * y_ + w_ * z_), 2 * (x_ * z_ - w_ * y_)])
    for i in range(md.m):
        s[i + 1] = d1 * kappa * md.lengths[0] * i
    p, q, _, _ = ch.transform(s)
    st = dict(p_pred=p, p_t=p, q_t=q, th_pred=np.zeros((md.m, 3)))
    E, _, Hb, comps = _E(md, p, q, st, 0.0, 0.0, 2, g=np.zeros(3))
    lb = md.lbar[0]
    u_exp = 2.0 / lb * np.sin(kappa * md.lengths[0] / 2)
    assert comps[0] == pytest.approx(np.sum(md.lbar) / 2 * md.Kh[0, 0] * u_exp**2, rel=1e-12)
    H = dense_hessian(*Hb)
    assert np.min(np.linalg.eigvalsh(H)) > -1e-9 * np.max(np.abs(H))


def _system(md, s, free=None):
    ch = Chain(md.lengths, md.rest_q)
    p, q, Dj, Qj = ch.transform(s)
    st = dict(p_pred=p + 0.01, p_t=p, q_t=q, th_pred=np.zeros((md.m, 3)))
    _, _, (Hp, Hd, Ho), _ = _E(md, p, q, st, 1e4, 0.0, 2)
    J = ch.jacobian_dense(s)
    A = J.T @ dense_hessian(Hp, Hd, Ho) @ J
    if free is None:
        free = np.ones((md.n, 3))
    F = np.diag(free.ravel())
    A = F @ A @ F + np.eye(A.shape[0]) - F
    return Dj, Qj, Hp, Hd, Ho, free, A


def _reduced(md, Qj, Hd, Ho, G=None):
    n = md.n
    Bd, Bo = np.zeros((n, 3, 3)), np.zeros((n - 1, 3, 3))
    reduce_q_blocks(Qj, Hd, Ho, np.zeros((n, 3, 3)) if G is None else G, G is not None, Bd, Bo)
    return Bd, Bo


def test_a_product_and_dense_a():
    md = _rod(10)
    free = np.ones((md.n, 3))
    free[0] = 0.0
    free[3, 1] = 0.0
    Dj, Qj, Hp, Hd, Ho, free, A = _system(md, _random_s(md), free)
    v = RNG.normal(size=(md.n, 3))
    out = np.empty_like(v)
    sc = [np.empty((md.n, 3)) for _ in range(3)] + [np.empty((md.m, 4)), np.empty((md.m, 4))]
    a_mul_q(Dj, Qj, Hp, Hd, Ho, free, v, out, sc[0], sc[1], sc[3], sc[2], sc[4])
    assert np.allclose(out.ravel(), A @ v.ravel(), rtol=1e-11, atol=1e-9 * np.abs(A).max())
    Bd, Bo = _reduced(md, Qj, Hd, Ho)
    out2 = np.empty_like(v)
    a_mul(Dj, Hp, Bd, Bo, free, v, out2, sc[0], sc[1])
    assert np.allclose(out2.ravel(), A @ v.ravel(), rtol=1e-11, atol=1e-9 * np.abs(A).max())
    Ad = np.empty_like(A)
    build_dense_a(Dj, Hp, Bd, Bo, free, Ad, np.empty(md.n))
    assert np.allclose(Ad, A, rtol=1e-11, atol=1e-11 * np.abs(A).max())
    # a block-diagonal G (tension stiffness) adds to the w blocks only
    G = np.zeros((md.n, 3, 3))
    for j in range(1, md.n):
        M = RNG.normal(size=(3, 3))
        G[j] = M @ M.T
    Bd, Bo = _reduced(md, Qj, Hd, Ho, G)
    a_mul(Dj, Hp, Bd, Bo, free, v, out2, sc[0], sc[1])
    from scipy.linalg import block_diag
    F = np.diag(free.ravel())
    assert np.allclose(out2.ravel(), (A + F @ block_diag(*G) @ F) @ v.ravel(), rtol=1e-11, atol=1e-9 * np.abs(A).max())


@pytest.mark.parametrize("kind", ["diagonal", "block-diagonal", "hybrid", "direct"])
def test_preconditioners_match_definition(kind):
    md = _rod(9)
    free = np.ones((md.n, 3))
    free[0] = 0.0
    Dj, Qj, Hp, Hd, Ho, free, A = _system(md, _random_s(md), free)
    n = md.n
    k = PRECONDITIONERS[kind]
    diag, off, sinv = np.zeros((n, 3, 3)), np.zeros((n - 1, 3, 3)), np.zeros((n, 3, 3))
    Ab = np.zeros((3 * n, 3 * n)) if k == 4 else np.zeros((1, 1))
    L = np.zeros_like(Ab)
    Bd, Bo = _reduced(md, Qj, Hd, Ho)
    if k == 4:
        build_dense_a(Dj, Hp, Bd, Bo, free, Ab, np.empty(n))
    else:
        build_block_preconditioner(Dj, Hp, Bd, Bo, free, k, diag, off, np.empty(n))
    W = np.zeros((n - 1, 3, 3))
    assert factor_preconditioner(k, diag, off, sinv, W, Ab, L)
    # the expected matrix P from the dense A
    if k == 4:
        P = A
    else:
        P = np.zeros_like(A)
        for j in range(n):
            P[3 * j:3 * j + 3, 3 * j:3 * j + 3] = A[3 * j:3 * j + 3, 3 * j:3 * j + 3]
        if k == 1:
            P = np.diag(np.diag(P))
        if k == 3:
            # hybrid: off-diagonal blocks from the J_q^T H_q J_q part only (Eq. 22)
            for i in range(md.m - 1):
                blk = Qj[i].T @ Ho[i] @ Qj[i + 1]
                P[3 * (i + 1):3 * (i + 2), 3 * (i + 2):3 * (i + 3)] = blk
                P[3 * (i + 2):3 * (i + 3), 3 * (i + 1):3 * (i + 2)] = blk.T
            F = np.diag(free.ravel())
            P = F @ P @ F + np.eye(3 * n) - F
        assert np.min(np.linalg.eigvalsh(P)) > 0  # SPD (Eq. 26)
    r = RNG.normal(size=(n, 3))
    z = np.empty_like(r)
    apply_preconditioner(k, sinv, W, r, z, np.empty_like(r), L)
    assert np.allclose(z.ravel(), np.linalg.solve(P, r.ravel()), rtol=1e-9, atol=1e-12 * np.abs(z).max())


def test_block_thomas_random_spd():
    nb, b = 12, 3
    M = RNG.normal(size=(nb * b, nb * b))
    band = np.zeros_like(M)
    for i in range(nb):
        for j in range(max(0, i - 1), min(nb, i + 2)):
            band[i * b:(i + 1) * b, j * b:(j + 1) * b] = 1
    A = (M * band) @ (M * band).T * 0 + (M * band + (M * band).T) / 2 + nb * b * np.eye(nb * b)
    A = A * band
    assert np.min(np.linalg.eigvalsh(A)) > 0
    diag = np.stack([A[i * b:(i + 1) * b, i * b:(i + 1) * b] for i in range(nb)])
    off = np.stack([A[i * b:(i + 1) * b, (i + 1) * b:(i + 2) * b] for i in range(nb - 1)])
    rhs = RNG.normal(size=(nb, b))
    x = solve_block_tridiagonal(diag, off, rhs)
    assert np.allclose(A @ x.ravel(), rhs.ravel(), atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        solve_block_tridiagonal(-diag, off, rhs)


def test_reduced_hessian_matches_reduction_of_full_hessian():
    from rodlab.compact.energies import reduced_hessian
    md = _rod(9)
    p, q, st, a_in, a_d = _energy_setup(md)
    ch = Chain(md.lengths, md.rest_q)
    s = _random_s(md, 0.3)
    p, q, Dj, Qj = ch.transform(s)
    _, _, (Hp, Hd, Ho), _ = _E(md, p, q, st, a_in, a_d, 2)
    Bd, Bo = _reduced(md, Qj, Hd, Ho)
    Hp2, Bd2, Bo2 = np.zeros(md.n), np.zeros((md.n, 3, 3)), np.zeros((md.n - 1, 3, 3))
    reduced_hessian(q, st["q_t"], Qj, md.masses, md.Jr, md.lbar, md.Kh, a_in, a_d, Hp2, Bd2, Bo2)
    assert np.allclose(Hp2, Hp, rtol=1e-14)
    assert np.allclose(Bd2, Bd, rtol=1e-12, atol=1e-12 * np.abs(Bd).max())
    assert np.allclose(Bo2, Bo, rtol=1e-12, atol=1e-12 * np.abs(Bd).max())


def test_block_thomas_3x3_matches_generic():
    from rodlab.linalg.block_tridiagonal import (block_tridiagonal3_factor, block_tridiagonal3_solve,
                                                 block_tridiagonal_factor, block_tridiagonal_solve)
    nb = 9
    M = RNG.normal(size=(3 * nb, 3 * nb))
    A = M @ M.T + 3 * nb * np.eye(3 * nb)
    diag = np.stack([A[3 * i:3 * i + 3, 3 * i:3 * i + 3] for i in range(nb)])
    off = np.stack([A[3 * i:3 * i + 3, 3 * i + 3:3 * i + 6] for i in range(nb - 1)])
    s1, s2, W = np.empty_like(diag), np.empty_like(diag), np.empty_like(off)
    assert block_tridiagonal3_factor(diag, off, s1, W) == -1
    assert block_tridiagonal_factor(diag, off, s2, np.empty((3, 3))) == -1
    assert np.allclose(s1, s2, rtol=1e-12)
    rhs = RNG.normal(size=(nb, 3))
    o1, o2 = np.empty_like(rhs), np.empty_like(rhs)
    block_tridiagonal3_solve(s1, W, rhs, o1, np.empty_like(rhs))
    block_tridiagonal_solve(s2, off, rhs, o2, np.empty_like(rhs))
    assert np.allclose(o1, o2, rtol=1e-12)
    assert block_tridiagonal3_factor(-diag, off, s1, W) == 0


def test_tension_stiffness_is_the_pendulum_term():
    """For a straight rod hanging under gravity, G_i = T_i l_i (I - d d^T) (w = 0)."""
    from rodlab.compact.sqp import tension_stiffness
    n = 6
    pts = np.stack([np.zeros(n), np.zeros(n), -np.linspace(0, 1, n)], 1)
    md = CompactModel.from_polyline(pts, E=1e5, G=4e4, rho=1000.0, radius=0.02)
    s = np.zeros((n, 3))
    gp = np.tile([0.0, 0.0, 1.0], (n, 1)) * md.masses[:, None] * 9.81  # dE/dp of gravity
    G = np.zeros((n, 3, 3))
    tension_stiffness(s, md.lengths, md.rest_q, gp, G)
    for i in range(md.m):
        T = 9.81 * md.masses[i + 1:].sum()
        assert np.allclose(G[i + 1], T * md.lengths[i] * np.diag([1.0, 1.0, 0.0]), atol=1e-12)
    assert np.all(G[0] == 0)


def test_reduced_gradient_b_is_gradient_of_energy_of_transform():
    """b = J^T dE/dx (Eq. 12) equals the gradient of E(T(s)) by central differences."""
    md = _rod(8)
    ch = Chain(md.lengths, md.rest_q)
    p0, q0, st, a_in, a_d = _energy_setup(md)
    s = _random_s(md, 0.4)

    def EoT(s_flat):
        p, q, _, _ = ch.transform(s_flat.reshape(-1, 3))
        return _E(md, p, q, st, a_in, a_d, 0)[0]

    p, q, Dj, Qj = ch.transform(s)
    _, g, _, _ = _E(md, p, q, st, a_in, a_d, 1)
    b = np.empty((md.n, 3))
    jac_t_mul(Dj, Qj, g[:3 * md.n].reshape(-1, 3), g[3 * md.n:].reshape(-1, 4), b)
    h = 1e-6
    bfd = np.array([(EoT(s.ravel() + h * e) - EoT(s.ravel() - h * e)) / (2 * h) for e in np.eye(s.size)])
    assert np.allclose(b.ravel(), bfd, rtol=1e-6, atol=1e-6 * np.abs(bfd).max())


def test_gauss_newton_matrix_is_the_hessian_at_a_stationary_point():
    """Where dE/dx = 0 the dropped term dJ/ds : dE/dx vanishes, so A = J^T H J must equal the
    Hessian of E(T(s)) (central differences of the energy)."""
    md = _rod(7)
    ch = Chain(md.lengths, md.rest_q)
    s0 = np.zeros((md.n, 3))
    s0[0] = md.rest_p[0]
    st = dict(p_pred=md.rest_p.copy(), p_t=md.rest_p.copy(), q_t=md.rest_q.copy(), th_pred=np.zeros((md.m, 3)))
    a_in, a_d = 1e2, 3.0
    g0 = np.zeros(3)

    def EoT(x):
        p, q, _, _ = ch.transform(x.reshape(-1, 3))
        return _E(md, p, q, st, a_in, a_d, 0, g=g0)[0]

    p, q, Dj, Qj = ch.transform(s0)
    _, g, (Hp, Hd, Ho), _ = _E(md, p, q, st, a_in, a_d, 2, g=g0)
    assert np.abs(g).max() < 1e-9
    J = ch.jacobian_dense(s0)
    A = J.T @ dense_hessian(Hp, Hd, Ho) @ J
    x0 = s0.ravel()
    h = 1e-4
    N = x0.size
    Hfd = np.zeros((N, N))
    I = np.eye(N) * h
    for i in range(N):
        for j in range(i, N):
            Hfd[i, j] = Hfd[j, i] = (EoT(x0 + I[i] + I[j]) - EoT(x0 + I[i] - I[j]) - EoT(x0 - I[i] + I[j]) + EoT(x0 - I[i] - I[j])) / (4 * h * h)
    assert np.allclose(A, Hfd, rtol=1e-5, atol=1e-5 * np.abs(A).max())
