"""Localized helical buckling theory (rodlab.analytic.helical_buckling): Bergou et al. 2008 Fig. 7's
phi0 = 0.919, and the closed forms re-derived numerically (shortening, twist + writhe, first integral)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from rodlab.analytic.helical_buckling import (
    envelope_error,
    envelope_f,
    envelope_from_centerline,
    helical_buckling_theory,
    helical_envelope,
    helical_phi,
    theoretical_centerline,
)

PAPER = dict(L=9.29, alpha=1.345, beta=0.789, turns=27, shortening=0.3)


@pytest.fixture(scope="module")
def th():
    return helical_buckling_theory(**PAPER)


def test_reproduces_bergou_fig7_phi0(th):
    assert th.success and th.localized
    assert th.phi0 == pytest.approx(0.919, abs=5e-4)
    assert th.s_star < 0.05 * th.L  # localized: the infinite-rod theory applies


def test_published_equations_hold(th):
    gamma = th.beta / th.alpha
    d = th.shortening / th.L
    assert math.sqrt(16 / th.t * (1 - th.m**2 / (4 * th.t))) == pytest.approx(d, rel=1e-12)
    assert th.m / gamma + 4 * math.acos(th.m / (2 * math.sqrt(th.t))) == pytest.approx(2 * math.pi * th.turns, rel=1e-12)
    assert math.cos(th.phi0) == pytest.approx(th.m**2 / (2 * th.t) - 1, rel=1e-12)
    # dimensional meaning of m and t: moment scaled by alpha/L, tension by alpha/L^2
    assert th.moment == pytest.approx(th.m * th.alpha / th.L)
    assert th.tension == pytest.approx(th.t * th.alpha / th.L**2)
    assert math.cos(th.phi0) == pytest.approx(th.moment**2 / (2 * th.alpha * th.tension) - 1, rel=1e-12)


def test_shortening_is_the_integral_of_one_minus_cos_phi(th):
    val, _ = quad(lambda s: 1 - math.cos(float(helical_phi(s, th))), -40 * th.s_star, 40 * th.s_star, limit=400, epsabs=1e-13)
    assert val == pytest.approx(th.shortening, rel=1e-9)


def test_clamp_rotation_is_twist_plus_fuller_writhe(th):
    """2 pi N = M L / beta + int (1 - cos phi) psi' ds, psi' = M / (alpha (1 + cos phi))."""

    def integrand(s):
        c = math.cos(float(helical_phi(s, th)))
        return (1 - c) * th.moment / (th.alpha * (1 + c))

    wr, _ = quad(integrand, -40 * th.s_star, 40 * th.s_star, limit=400, epsabs=1e-13)
    assert th.moment * th.L / th.beta + wr == pytest.approx(2 * math.pi * th.turns, rel=1e-10)
    assert wr == pytest.approx(2 * math.pi * th.writhe, rel=1e-9)


def test_envelope_satisfies_the_first_integral(th):
    """alpha/2 phi'^2 = (1 - cos phi)(T - M^2 / (2 alpha (1 + cos phi))) along the pattern."""
    s = np.linspace(0.1, 3.0, 25) * th.s_star
    h = 1e-5 * th.s_star
    dphi = (helical_phi(s + h, th) - helical_phi(s - h, th)) / (2 * h)
    c = np.cos(helical_phi(s, th))
    rhs = (1 - c) * (th.tension - th.moment**2 / (2 * th.alpha * (1 + c)))
    np.testing.assert_allclose(0.5 * th.alpha * dphi**2, rhs, rtol=1e-6)


def test_paper_form_of_s_star_with_m_as_twist_density(th):
    c0 = math.cos(th.phi0)
    paper = th.beta * th.twist_density / (2 * th.alpha) * math.sqrt((1 - c0) / (1 + c0))
    assert 1 / th.s_star == pytest.approx(paper, rel=1e-12)
    assert 1 / th.s_star == pytest.approx(math.sqrt(th.tension * (1 - c0) / (2 * th.alpha)), rel=1e-12)
    # the twist density is close to the imposed 2 pi N / L (most of the rotation is twist)
    assert th.twist_density == pytest.approx(2 * math.pi * th.turns / th.L, rel=0.02)


def test_envelope_values(th):
    assert helical_envelope(0.0, th) == 0.0
    assert helical_envelope(50 * th.s_star, th) == pytest.approx(1.0)
    assert envelope_f(th.phi0, th.phi0) == pytest.approx(0.0)
    np.testing.assert_allclose(envelope_f(helical_phi([0.3, 1.0], th), th.phi0), helical_envelope([0.3, 1.0], th), atol=1e-12)


def test_envelope_from_theoretical_centerline(th):
    x = theoretical_centerline(th, n=4001)
    env = envelope_from_centerline(x, (1.0, 0.0, 0.0))
    assert env["phi_max"] == pytest.approx(th.phi0, abs=1e-5)
    assert abs(env["s_center"] - 8 * th.s_star) < 1e-3 * th.s_star
    assert envelope_error(x, (1.0, 0.0, 0.0), th) < 1e-4
    # a coarse (200-vertex) sampling, rotated and translated, with the axis reversed
    xc = theoretical_centerline(th, n=200)
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    xr = xc @ rot.T + np.array([1.0, 2.0, 3.0])
    err = envelope_error(xr, (0.0, -1.0, 0.0), th)
    assert err < 0.02
    # the wrong length scale is detected
    from dataclasses import replace

    assert envelope_error(xr, (0.0, 1.0, 0.0), replace(th, s_star=1.3 * th.s_star)) > 0.05


def test_bad_inputs():
    with pytest.raises(ValueError, match="alpha"):
        helical_buckling_theory(9.29, -1.0, 0.789, 27, 0.3)
    with pytest.raises(ValueError, match="shortening"):
        helical_buckling_theory(9.29, 1.345, 0.789, 27, 10.0)
    with pytest.raises(ValueError, match="turns"):
        helical_buckling_theory(9.29, 1.345, 0.789, 40, 0.3)  # more twist than the shortening allows
    assert not helical_buckling_theory(9.29, 1.345, 0.789, 1, 0.3).localized
    with pytest.raises(ValueError, match="x must be"):
        envelope_from_centerline(np.zeros((5, 2)))
