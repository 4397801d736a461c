"""Classical closed forms (rodlab.analytic.classic), cross-checked against the elastica solver and
against direct integration where possible."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_bvp

from rodlab.analytic.classic import (
    EULER_K,
    beam_column_tip_deflection,
    cantilever_small_deflection_tip,
    cantilever_tip_load_deflection,
    cantilever_uniform_load_deflection,
    euler_buckling_load,
    michell_critical_moment,
    michell_critical_twist,
    uniform_twist,
)
from rodlab.analytic.elastica import cantilever_elastica_tip


def test_euler_loads():
    EI, L = 2.0, 3.0
    assert euler_buckling_load(EI, L, "clamped-free") == pytest.approx(math.pi**2 * EI / (4 * L**2))
    assert euler_buckling_load(EI, L, "clamped-clamped") == pytest.approx(4 * math.pi**2 * EI / L**2)
    assert euler_buckling_load(EI, L, "clamped-clamped") / euler_buckling_load(EI, L, "clamped-free") == pytest.approx(16.0)
    k = math.pi / EULER_K["clamped-pinned"]
    assert math.tan(k) == pytest.approx(k, rel=1e-12)  # clamped-pinned: tan(kL) = kL
    with pytest.raises(ValueError, match="ends"):
        euler_buckling_load(EI, L, "free-free")


def test_clamped_clamped_euler_load_from_the_linear_eigenproblem():
    """Smallest eigenvalue of EI v'''' + P v'' = 0 with v = v' = 0 at both ends, by solve_bvp."""
    L, EI = 1.0, 1.0

    def rhs(x, y, p):
        return np.vstack((y[1], y[2], y[3], -p[0] / EI * y[2]))

    def bc(ya, yb, p):  # normalisation v''(0) = 1 fixes the eigenvector
        return np.array([ya[0], ya[1], yb[0], yb[1], ya[2] - 1.0])

    x = np.linspace(0, L, 50)
    guess = np.vstack((1 - np.cos(2 * np.pi * x), 2 * np.pi * np.sin(2 * np.pi * x), 4 * np.pi**2 * np.cos(2 * np.pi * x),
                       -8 * np.pi**3 * np.sin(2 * np.pi * x))) / (4 * np.pi**2)
    sol = solve_bvp(rhs, bc, x, guess, p=[35.0], tol=1e-6, max_nodes=20000)
    assert sol.success
    assert sol.p[0] == pytest.approx(euler_buckling_load(EI, L, "clamped-clamped"), rel=1e-6)


def test_clamped_free_euler_load_against_the_elastica():
    """The beam-column amplification 1/(...) diverges at pi^2 EI/(4L^2): the large-deflection
    elastica with a compressive tip load and a tiny lateral load agrees with the linear formula
    below the critical load and deflects finitely far beyond it above."""
    L, EI = 1.0, 1.0
    pcr = euler_buckling_load(EI, L)
    Q = 1e-6
    for frac in (0.3, 0.8):
        P = frac * pcr
        tip = cantilever_elastica_tip(L, EI, 0.0, (-P, -Q))
        assert -tip[1] == pytest.approx(beam_column_tip_deflection(EI, L, P, Q), rel=1e-4)
    assert beam_column_tip_deflection(EI, L, 0.0, Q) == pytest.approx(Q * L**3 / (3 * EI))
    with pytest.raises(ValueError, match="Euler load"):
        beam_column_tip_deflection(EI, L, 1.01 * pcr, Q)


def test_michell():
    assert michell_critical_twist(1.0, 1.0) == pytest.approx(2 * math.pi * math.sqrt(3))
    assert michell_critical_twist(2.0, 0.5) == pytest.approx(4 * 2 * math.pi * math.sqrt(3))
    # consistency with the moment form for any radius: Theta_c = 2 pi R M_c / beta
    for R in (0.5, 1.0, 3.0):
        alpha, beta = 1.3, 0.7
        assert 2 * math.pi * R * michell_critical_moment(alpha, R) / beta == pytest.approx(michell_critical_twist(alpha, beta))
    with pytest.raises(ValueError, match="beta"):
        michell_critical_twist(1.0, 0.0)


def test_small_deflection_curves_solve_the_beam_equation():
    L, EI, w, P = 1.7, 2.3, 0.9, 0.4
    x = np.linspace(0, L, 11)
    h = 1e-3
    for v, load in ((lambda xx: cantilever_uniform_load_deflection(xx, w, L, EI), lambda xx: w * (L - xx) ** 2 / 2),
                    (lambda xx: cantilever_tip_load_deflection(xx, P, L, EI), lambda xx: P * (L - xx))):
        assert v(0.0) == 0.0
        assert (v(h) - v(-h)) / (2 * h) == pytest.approx(0.0, abs=1e-6)  # clamped slope (O(h^2) FD error)
        curv = (v(x + h) - 2 * v(x) + v(x - h)) / h**2
        np.testing.assert_allclose(EI * curv, load(x), rtol=1e-6, atol=1e-6)  # EI v'' = bending moment
    tip = cantilever_small_deflection_tip(w, P, L, EI)
    assert tip["deflection"] == pytest.approx(float(cantilever_uniform_load_deflection(L, w, L, EI) + cantilever_tip_load_deflection(L, P, L, EI)))
    slope = (cantilever_uniform_load_deflection(L + h, w, L, EI) - cantilever_uniform_load_deflection(L - h, w, L, EI)) / (2 * h)
    slope += (cantilever_tip_load_deflection(L + h, P, L, EI) - cantilever_tip_load_deflection(L - h, P, L, EI)) / (2 * h)
    assert tip["slope"] == pytest.approx(float(slope), rel=1e-6)


def test_uniform_twist_minimises_the_twist_energy():
    L, beta, t0, tn = 2.0, 0.8, 0.3, 5.3
    ut = uniform_twist(t0, tn, L, beta)
    assert ut.twist_density == pytest.approx(2.5)
    assert ut.torque == pytest.approx(2.0)
    assert ut.energy == pytest.approx(0.5 * beta * 2.5**2 * L)
    assert ut.angle(L, t0) == pytest.approx(tn)
    # any other angle profile with the same end values has more energy
    s = np.linspace(0, L, 2001)
    other = ut.angle(s, t0) + 0.2 * np.sin(np.pi * s / L)
    e_other = 0.5 * beta * np.trapezoid(np.gradient(other, s) ** 2, s)
    assert e_other > ut.energy
    # torque = dE/d(theta_n)
    h = 1e-6
    assert (uniform_twist(t0, tn + h, L, beta).energy - uniform_twist(t0, tn - h, L, beta).energy) / (2 * h) == pytest.approx(ut.torque, rel=1e-8)
