"""Finite-difference checks of every DER energy derivative (Bergou 2008, Eq. 7, 9-11)."""
import numpy as np
import pytest

from der_helpers import energy_at, fd_gradient, perturbed_state, random_rod, stepper_for
from rodlab.der import kernels as K


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("stretching", [0.0, 5.0])
@pytest.mark.parametrize("seed", [1, 2])
def test_centerline_forces_are_minus_energy_gradient(closed, stretching, seed):
    rng = np.random.default_rng(seed)
    rod = random_rod(rng, n=7, closed=closed, stretching=stretching)
    st = stepper_for(rod, inextensible=stretching == 0.0)
    s = perturbed_state(st, rng)
    f = st.elastic_forces(s)
    g = fd_gradient(lambda xx: energy_at(st, s, xx), s.x.copy())
    assert np.abs(f + g).max() <= 1e-6 * max(1.0, np.abs(g).max())


def _twist_derivs(st, s):
    st._refresh(s)
    _, lengths, tangents, kb, d2 = st._buffers()
    ne = st.rod.n_edges
    grad, hd, hl = np.zeros(ne), np.zeros(ne), np.zeros(ne)
    K.twist_gradient_hessian(kb, s.ref_d1, d2, s.theta, s.ref_twist, st.lbar, st.omega_bar, st.bend_k,
                             st.twist_bar, st.twist_k, np.zeros((ne, 3)), np.zeros((ne, 3)),
                             np.zeros((st.rod.n_joints, 4)), grad, hd, hl)
    return grad, hd, hl


@pytest.mark.parametrize("closed", [False, True])
def test_twist_gradient_and_tridiagonal_hessian(closed):
    rng = np.random.default_rng(3)
    rod = random_rod(rng, n=8, closed=closed)
    st = stepper_for(rod)
    s = perturbed_state(st, rng)

    def energy(theta):
        q = s.copy()
        q.theta[:] = theta
        return st.elastic_energy(q)

    grad, hd, hl = _twist_derivs(st, s)
    g_fd = fd_gradient(energy, s.theta.copy(), h=1e-5)
    assert np.allclose(grad, g_fd, atol=1e-7, rtol=1e-6)
    ne = rod.n_edges
    H = np.zeros((ne, ne))
    for j in range(ne):
        tp, tm = s.copy(), s.copy()
        tp.theta[j] += 1e-5
        tm.theta[j] -= 1e-5
        H[:, j] = (_twist_derivs(st, tp)[0] - _twist_derivs(st, tm)[0]) / 2e-5
    H_an = np.diag(hd)
    for j in range(ne if closed else ne - 1):
        H_an[j, (j + 1) % ne] += hl[j]
        H_an[(j + 1) % ne, j] += hl[j]
    assert np.allclose(H, H_an, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("anisotropic,curved", [(True, True), (False, False)])
def test_forces_at_twist_equilibrium_are_gradient_of_reduced_energy(anisotropic, curved):
    """With both end frames clamped, -dE/dx at the quasistatic twist equals minus the gradient
    of E(x, theta*(x)) (the paper's holonomy terms make this hold, Sec. 7.1)."""
    rng = np.random.default_rng(4)
    rod = random_rod(rng, n=9, anisotropic=anisotropic, curved=curved, clamps=(0, -1))
    st = stepper_for(rod)
    x0 = rod.rest_positions + 0.04 * rng.standard_normal(rod.rest_positions.shape)
    x0[[0, 1, -2, -1]] = rod.rest_positions[[0, 1, -2, -1]]
    s = st.initial_state(x=x0)
    # wind the far clamp by 1.3 turns so the twist is far from zero
    s.theta[-1] += 1.3 * 2 * np.pi
    st._clamp_rest[rod.n_edges - 1] = (st._clamp_rest[rod.n_edges - 1][0], st.material_frames(s)[0][-1])
    st._solve_twist(s)
    f = st.elastic_forces(s)

    def reduced(xx):
        q = s.copy()
        from rodlab.der.stepper import _tangents
        from rodlab.geometry.curves import reference_twist, time_parallel_update

        time_parallel_update(_tangents(s.x, False), _tangents(xx, False), q.ref_d1)
        q.x = xx.copy()
        reference_twist(_tangents(xx, False), q.ref_d1, False, s.ref_twist.copy(), q.ref_twist)
        st._refresh(q)
        st._solve_twist(q)
        return st.elastic_energy(q)

    free = slice(2, rod.n_vertices - 2)
    g = fd_gradient(reduced, s.x.copy(), h=1e-6)
    assert np.abs(f[free] + g[free]).max() <= 1e-6 * np.abs(g[free]).max()


def test_naturally_straight_isotropic_forces_match_paper_special_case():
    """Bergou 2008, Sec. 7.1 special case: F_i = -sum 2 alpha / l_j (grad_i kb_j)^T kb_j
    + beta (theta^n - theta^0)/L grad_i psi_j, with the exact kb gradient."""
    rng = np.random.default_rng(5)
    n = 10
    rod = random_rod(rng, n=n, anisotropic=False, curved=False, clamps=(0, -1))
    st = stepper_for(rod)
    x0 = rod.rest_positions + 0.03 * rng.standard_normal((n, 3))
    x0[[0, 1, -2, -1]] = rod.rest_positions[[0, 1, -2, -1]]
    s = st.initial_state(x=x0)
    s.theta[-1] += 2.0
    st._clamp_rest[n - 2] = (st._clamp_rest[n - 2][0], st.material_frames(s)[0][-1])
    st._solve_twist(s)
    f = st.elastic_forces(s)
    alpha, beta = rod.bending_stiffness[0, 0], rod.twisting_stiffness[0]
    e = np.diff(s.x, axis=0)
    total_twist = np.sum(st.twist(s))
    two_L = st.lbar.sum()
    ref = np.zeros((n, 3))
    for k in range(n - 2):
        a, b = e[k], e[k + 1]
        D = np.linalg.norm(a) * np.linalg.norm(b) + a @ b
        kb = 2 * np.cross(a, b) / D
        ta, tb = a / np.linalg.norm(a), b / np.linalg.norm(b)
        skew = lambda w: np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        g_prev = (2 * skew(b) + np.outer(kb, np.linalg.norm(b) * ta + b)) / D
        g_next = (2 * skew(a) - np.outer(kb, np.linalg.norm(a) * tb + a)) / D
        grads = {k: g_prev, k + 2: g_next, k + 1: -(g_prev + g_next)}
        hol = {k: kb / (2 * np.linalg.norm(a)), k + 2: -kb / (2 * np.linalg.norm(b))}
        hol[k + 1] = -(hol[k] + hol[k + 2])
        for i in (k, k + 1, k + 2):
            ref[i] += -2 * alpha / st.lbar[k] * grads[i].T @ kb + 2 * beta * total_twist / two_L * hol[i]
    assert np.allclose(f[2:-2], ref[2:-2], rtol=1e-9, atol=1e-9 * np.abs(ref).max())
