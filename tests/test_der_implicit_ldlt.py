"""The implicit-DER Hessian's profile-cut LDL^T (der_implicit.hessian_ldlt) against the full band-10 one."""
import numpy as np
import pytest

from rodlab.der_implicit.energies import der_elastic, update_frames
from rodlab.der_implicit.hessian_ldlt import der_hessian_ldlt_factor
from rodlab.der_implicit.slerp_bending import slerp_elastic
from rodlab.der_implicit.stepper import _hold_fixed
from rodlab.linalg.banded_ldlt import ldlt_factor_band10, ldlt_solve_band10

from test_der_implicit_energies import random_rod


def profile_mask(n):
    """True where the DER stencil may put a nonzero: row x_k (component c) reaches 8 + c left of the
    diagonal, row theta_k 7 (module docstring of hessian_ldlt)."""
    mask = np.zeros((n, 11), dtype=bool)
    for i in range(n):
        reach = 7 if i % 4 == 3 else 8 + i % 4
        mask[i, :reach + 1] = True
    return mask


def assembled_hessian(nv, seed, bending):
    q, (tan, a1, mref), p = random_rod(seed, nv)
    ne = nv - 1
    T, L, A, M = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(q, tan, a1, mref, T, L, A, M)
    g, band = np.zeros(q.size), np.zeros((q.size, 11))
    if bending == "slerp-exact":
        w2 = np.random.default_rng(seed).normal(size=(nv, 2)) * 0.3
        slerp_elastic(q, T, L, A, M, p["ks"], p["lbar"], p["kbend"], w2, p["ktwist"], p["mbar"], p["lvor"], 0, 1, 2, g,
                      band)
    else:
        der_elastic(q, T, L, A, M, p["ks"], p["lbar"], p["kbend"], p["wbar"], p["ktwist"], p["mbar"], p["lvor"],
                    bending == "2d-average", 2, g, band)
    band[:, 0] += np.random.default_rng(seed + 1).uniform(0.5, 2.0, q.size)  # inertia
    _hold_fixed(np.arange(7, dtype=np.int64), g, band)  # a clamped root edge
    return band


@pytest.mark.parametrize("bending", ["4d", "2d-average", "slerp-exact"])
@pytest.mark.parametrize("nv", [3, 4, 5, 7, 32])
def test_profile_factor_equals_band10(bending, nv):
    """Assembled Hessians have zeros outside the profile, and the profile-cut factor gives band10's
    factor and pivots as numbers (== also holds where only a zero's sign differs), then the same solve."""
    for seed in range(3):
        band = assembled_hessian(nv, seed, bending)
        n = band.shape[0]
        assert np.all(band[~profile_mask(n)] == 0.0)
        if n > 18:  # away from the held root edge, the profile is full
            inner = profile_mask(n)[18:]
            assert np.count_nonzero(band[18:][inner]) == inner.sum()
        B1, D1, B2, D2 = band.copy(), np.empty(n), band.copy(), np.empty(n)
        c1 = ldlt_factor_band10(B1, D1, 1e-13)
        c2 = der_hessian_ldlt_factor(B2, D2, 1e-13)
        assert c1 == c2
        assert np.array_equal(B1, B2) and np.array_equal(D1, D2)
        b = np.random.default_rng(seed).normal(size=n)
        x1, x2 = b.copy(), b.copy()
        ldlt_solve_band10(B1, D1, x1)
        ldlt_solve_band10(B2, D2, x2)
        assert np.all(np.isfinite(x1)) and np.array_equal(x1, x2)


def test_profile_factor_clamps_like_band10():
    """Indefinite profile matrices: the same clamped pivots (count and values) as band10."""
    rng = np.random.default_rng(11)
    n = 4 * 20 - 1
    band = np.where(profile_mask(n), rng.normal(size=(n, 11)), 0.0)
    band[:, 0] = 40.0
    band[[6, 21, 40, 41, 70], 0] = -1.0
    B1, D1, B2, D2 = band.copy(), np.empty(n), band.copy(), np.empty(n)
    c1 = ldlt_factor_band10(B1, D1, 0.5)
    c2 = der_hessian_ldlt_factor(B2, D2, 0.5)
    assert c1 == c2 and c1 > 0
    assert np.array_equal(B1, B2) and np.array_equal(D1, D2)
