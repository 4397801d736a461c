"""Finite-difference checks of the implicit-DER energies on interleaved DOFs, and the banded LDL^T."""
import numpy as np
import pytest

from rodlab.der_implicit.energies import (der_elastic, material_curvature_all, pack_dofs,
                                          unpack_dofs, update_frames, vertex_jacobians, material_frames_q)
from rodlab.der_implicit.stepper import bishop_reference
from rodlab.linalg.banded_ldlt import (band_matvec, band_to_dense, dense_to_band, ldlt_factor_band,
                                       ldlt_factor_band10, ldlt_solve_band, ldlt_solve_band10)


def random_rod(seed, n=7):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.normal(size=(n, 3)) * 0.4 + np.array([1.0, 0.0, 0.0]), axis=0)
    q = pack_dofs(x, rng.normal(size=n - 1))
    a1, tan = bishop_reference(x)
    for j in range(n - 1):  # random reference directors about each tangent: nonzero reference twist
        ang = rng.normal()
        a1[j] = np.cos(ang) * a1[j] + np.sin(ang) * np.cross(tan[j], a1[j])
    ne = n - 1
    t2, e2, a12, mref = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, tan, a1, np.zeros(ne - 1), t2, e2, a12, mref)
    params = dict(ks=rng.uniform(1, 2, ne), lbar=e2 * rng.uniform(0.8, 1.2, ne), kbend=rng.uniform(1, 2, n),
                  wbar=rng.normal(size=(n, 4)) * 0.3, ktwist=rng.uniform(1, 2, n), mbar=rng.normal(size=n) * 0.3)
    lv = np.zeros(n)
    lv[1:-1] = params["lbar"][:-1] + params["lbar"][1:]
    params["lvor"] = lv
    return q, (t2, a12, mref), params


def evaluate(q, base, p, curv2d=False, want=0):
    tan_b, a1_b, mref_b = base
    ne = tan_b.shape[0]
    T, L, A, M = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, tan_b, a1_b, mref_b, T, L, A, M)
    g = np.zeros(q.size)
    B = np.zeros((q.size, 11))
    e = der_elastic(q, T, L, A, M, p["ks"], p["lbar"], p["kbend"], p["wbar"], p["ktwist"], p["mbar"], p["lvor"], curv2d, want, g, B)
    return e, g, B


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("curv2d", [False, True])
def test_gradient_matches_central_differences(seed, curv2d):
    q, base, p = random_rod(seed)
    _, g, _ = evaluate(q, base, p, curv2d, 1)
    h = 1e-6
    eye = np.eye(q.size)
    gfd = np.array([(evaluate(q + h * eye[k], base, p, curv2d)[0] - evaluate(q - h * eye[k], base, p, curv2d)[0]) / (2 * h)
                    for k in range(q.size)])
    assert np.abs(g - gfd).max() < 1e-7 * max(1.0, np.abs(g).max())
    assert np.abs(g).max() > 0.1  # not trivially zero


def test_local_jacobians_match_central_differences():
    q, base, p = random_rod(5)
    tan_b, a1_b, mref_b = base
    ne = tan_b.shape[0]

    def wm(qq):
        T, L, A, M = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
        update_frames(qq, tan_b, a1_b, mref_b, T, L, A, M)
        w, m = np.empty((ne + 1, 4)), np.empty(ne + 1)
        material_curvature_all(qq, T, L, A, M, w, m)
        return w, m

    T, L, A, M = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, tan_b, a1_b, mref_b, T, L, A, M)
    m1, m2 = np.empty((ne, 3)), np.empty((ne, 3))
    material_frames_q(q, T, A, m1, m2)
    w, Jw, gm = np.empty(4), np.empty((4, 11)), np.empty(11)
    h = 1e-6
    for i in range(1, ne):
        vertex_jacobians(q, T, L, m1, m2, M, i, w, Jw, gm)
        for c in range(11):
            d = np.zeros(q.size)
            d[4 * (i - 1) + c] = h
            wp, mp = wm(q + d)
            wmn, mm = wm(q - d)
            np.testing.assert_allclose((wp[i] - wmn[i]) / (2 * h), Jw[:, c], atol=1e-7)
            np.testing.assert_allclose((mp[i] - mm[i]) / (2 * h), gm[c], atol=1e-7)


@pytest.mark.parametrize("curv2d", [False, True])
def test_hessian_at_rest_curvature_matches_differences_of_gradient(curv2d):
    """Where w = wbar and m = mbar the Gauss-Newton bending/twisting Hessian is the exact Hessian; with
    every edge stretched the projected stretching Hessian is exact too."""
    q, base, p = random_rod(3)
    tan_b, a1_b, mref_b = base
    ne = tan_b.shape[0]
    T, L, A, M = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, tan_b, a1_b, mref_b, T, L, A, M)
    w, m = np.empty((ne + 1, 4)), np.empty(ne + 1)
    material_curvature_all(q, T, L, A, M, w, m)
    p = dict(p, wbar=w, mbar=m, lbar=L * 0.9)
    _, _, B = evaluate(q, base, p, curv2d, 2)
    H = band_to_dense(B)
    h = 1e-6
    eye = np.eye(q.size)
    Hfd = np.array([(evaluate(q + h * eye[k], base, p, curv2d, 1)[1] - evaluate(q - h * eye[k], base, p, curv2d, 1)[1]) / (2 * h)
                    for k in range(q.size)])
    assert np.abs(H - Hfd).max() < 1e-6 * np.abs(H).max()


def test_stretching_hessian_is_projected_to_spd_when_compressed():
    q, base, p = random_rod(4)
    p = dict(p, lbar=p["lbar"] * 3.0)  # every edge compressed: raw Hessian indefinite
    _, _, B = evaluate(q, base, p, False, 2)
    H = band_to_dense(B)
    assert np.linalg.eigvalsh(H).min() > -1e-10 * np.abs(H).max()


def test_straight_rod_bending_energy_matches_closed_form():
    """Naturally straight isotropic rod: E_bend = sum alpha |kb|^2 / l_i (Bergou et al. 2008, Eq. 6)."""
    rng = np.random.default_rng(7)
    n = 6
    x = np.cumsum(rng.normal(size=(n, 3)) * 0.3 + [1, 0, 0], axis=0)
    a1, tan = bishop_reference(x)
    q = pack_dofs(x, np.zeros(n - 1))
    ne = n - 1
    el = np.linalg.norm(np.diff(x, axis=0), axis=1)
    lv = np.zeros(n)
    lv[1:-1] = el[:-1] + el[1:]
    alpha = 1.7
    T, L, A, M = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, tan, a1, np.zeros(ne - 1), T, L, A, M)
    g = np.zeros(q.size)
    B = np.zeros((q.size, 11))
    e = der_elastic(q, T, L, A, M, np.zeros(ne), el, np.full(n, alpha), np.zeros((n, 4)), np.zeros(n), np.zeros(n), lv, False, 0, g, B)
    t = tan
    kb = 2 * np.cross(t[:-1], t[1:]) / (1 + np.sum(t[:-1] * t[1:], axis=1))[:, None]
    ref = np.sum(alpha * np.sum(kb**2, axis=1) / lv[1:-1])
    assert e == pytest.approx(ref, rel=1e-12)
    assert np.all(np.abs(M) < 1e-12)  # Bishop frames: no reference twist


def test_pack_unpack_roundtrip():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 3))
    th = rng.normal(size=4)
    q = pack_dofs(x, th)
    x2, th2 = unpack_dofs(q)
    assert np.array_equal(x, x2) and np.array_equal(th, th2)
    assert q[4 * 2 + 1] == x[2, 1] and q[4 * 3 + 3] == th[3]


@pytest.mark.parametrize("p,n", [(10, 83), (18, 64), (3, 5), (10, 7), (10, 11), (10, 12), (10, 22)])
def test_banded_ldlt_solves_spd_systems(p, n):
    rng = np.random.default_rng(p * 100 + n)
    A = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - p), i + 1):
            A[i, j] = A[j, i] = rng.normal()
    A = A @ A.T + 0.1 * np.eye(n)  # SPD, bandwidth up to 2p: re-band at p by restricting
    A = band_to_dense(dense_to_band(A, p)) + np.diag(np.abs(band_to_dense(dense_to_band(A, p))).sum(1))
    band = dense_to_band(A, p)
    b = rng.normal(size=n)
    B, D = band.copy(), np.empty(n)
    assert ldlt_factor_band(B, D, 1e-14) == 0
    x = b.copy()
    ldlt_solve_band(B, D, x)
    np.testing.assert_allclose(A @ x, b, atol=1e-10)
    y = np.empty(n)
    band_matvec(band, b, y)
    np.testing.assert_allclose(y, A @ b, atol=1e-10)
    if p == 10:
        B2 = band.copy()
        ldlt_factor_band10(B2, D, 1e-14)
        x2 = b.copy()
        ldlt_solve_band10(B2, D, x2)
        np.testing.assert_allclose(A @ x2, b, atol=1e-10)
        np.testing.assert_allclose(B2, B, atol=1e-12)


def test_band10_factor_matches_generic_bitwise_including_clamps():
    """The unrolled band-10 factor and the windowed solve do the generic kernels' operations in the same
    order: identical factors, pivots, clamp counts and solutions, also for indefinite matrices."""
    rng = np.random.default_rng(7)
    n = 57
    band = rng.normal(size=(n, 11))
    band[:, 0] = 40.0
    band[[5, 20, 50], 0] = -1.0  # indefinite: these pivots get clamped (to 0.5 |A_ii|)
    B1, D1, B2, D2 = band.copy(), np.empty(n), band.copy(), np.empty(n)
    c1 = ldlt_factor_band(B1, D1, 0.5)
    c2 = ldlt_factor_band10(B2, D2, 0.5)
    assert c1 == c2 and c1 > 0
    assert np.array_equal(B1, B2) and np.array_equal(D1, D2)
    b = rng.normal(size=n)
    x1, x2 = b.copy(), b.copy()
    ldlt_solve_band(B1, D1, x1)
    ldlt_solve_band10(B2, D2, x2)
    assert np.all(np.isfinite(x1)) and np.array_equal(x1, x2)


def test_ldlt_clamps_nonpositive_pivots():
    A = np.array([[1.0, 2.0], [2.0, 1.0]])  # indefinite: second pivot -3
    B = dense_to_band(A, 1)
    D = np.empty(2)
    assert ldlt_factor_band(B, D, 1e-8) == 1
    assert D[1] > 0
