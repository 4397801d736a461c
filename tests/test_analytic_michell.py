"""Michell's critical twist 2 pi sqrt(3) alpha/beta confirmed by an independent discrete stability
analysis (rodlab.analytic.michell_numeric: bending + Calugareanu twist energy, constrained Hessian)."""
from __future__ import annotations

import math

import pytest

from rodlab.analytic.classic import michell_critical_twist
from rodlab.analytic.michell_numeric import critical_twists


@pytest.fixture(scope="module")
def coarse():
    return {N: critical_twists(N) for N in (16, 24)}


def test_discrete_threshold_converges_to_michell(coarse):
    theory = michell_critical_twist(1.0, 1.0)
    (t16, i16), (t24, i24) = coarse[16], coarse[24]
    for info in (i16, i24):
        assert info["min_A"] > 0  # the untwisted ring is stable
        assert info["grad_writhe"] < 1e-10  # the circle is an equilibrium at any twist
        assert info["stationarity"] < 1e-6
    err16, err24 = t16[0] / theory - 1, t24[0] / theory - 1
    assert 0 < err24 < err16 < 0.2  # converges from above
    extrapolated = (24**2 * t24[0] - 16**2 * t16[0]) / (24**2 - 16**2)
    assert extrapolated == pytest.approx(theory, rel=0.02)
    # the first unstable mode is a degenerate pair (n = 2: cos and sin), the next pair is n = 3
    assert t24[1] == pytest.approx(t24[0], rel=1e-4)
    assert t24[3] == pytest.approx(t24[2], rel=1e-3)
    ext3 = (24**2 * t24[2] - 16**2 * t16[2]) / (24**2 - 16**2)
    assert ext3 == pytest.approx(theory * math.sqrt(8.0 / 3.0), rel=0.06)


def test_threshold_is_independent_of_the_radius_and_scales_with_alpha_over_beta(coarse):
    t, _ = critical_twists(16, alpha=1.0, beta=0.5, R=2.0, k=1)
    assert t[0] == pytest.approx(2.0 * coarse[16][0][0], rel=1e-6)
