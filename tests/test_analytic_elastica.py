"""The planar cantilever elastica reference (rodlab.analytic.elastica) against closed forms,
equilibrium (moment balance), energy (stationarity and the envelope theorem) and an independent
single-shooting solution with solve_ivp + brentq (rodlab.analytic.elastica_shooting)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import simpson

from rodlab.analytic.elastica_shooting import shooting_cantilever_tip as shooting_tip
from rodlab.analytic.elastica import (
    cantilever_elastica_shape,
    cantilever_elastica_tip,
    small_deflection_tip,
    solve_cantilever_elastica,
)


def test_small_distributed_load_matches_linear_theory():
    L, EI = 2.0, 3.0
    errs = []
    for q in (0.01, 0.02):
        w = q * EI / L**3
        tip = cantilever_elastica_tip(L, EI, w)
        lin = small_deflection_tip(L, EI, w)
        assert lin[1] == pytest.approx(-w * L**4 / (8 * EI))
        rel = abs(tip[1] - lin[1]) / abs(lin[1])
        assert rel < 1e-4 * (q / 0.01) ** 2
        errs.append(rel)
        # shortening: L - x = (L/2) int theta^2 = L q^2/112 to leading order
        assert (L - tip[0]) == pytest.approx(L * q**2 / 112.0, rel=1e-3)
    # the correction is O(q^2): doubling the load multiplies the relative error by 4
    assert errs[1] / errs[0] == pytest.approx(4.0, rel=0.02)


def test_small_tip_load_matches_linear_theory():
    L, EI = 1.5, 0.7
    errs = []
    for p in (0.01, 0.02):
        P = p * EI / L**2
        tip = cantilever_elastica_tip(L, EI, 0.0, (0.0, -P))
        assert small_deflection_tip(L, EI, 0.0, (0.0, -P))[1] == pytest.approx(-P * L**3 / (3 * EI))
        rel = abs(tip[1] + P * L**3 / (3 * EI)) / (P * L**3 / (3 * EI))
        errs.append(rel)
        assert (L - tip[0]) == pytest.approx(L * p**2 / 15.0, rel=1e-3)
    assert errs[1] / errs[0] == pytest.approx(4.0, rel=0.02)


@pytest.mark.parametrize("w,tip_force", [(2.0, (0.0, 0.0)), (30.0, (0.0, 0.0)), (5.0, (3.0, -2.0)), (0.0, (-1.0, -4.0))])
def test_root_moment_balances_the_loads(w, tip_force):
    L, EI = 1.0, 1.0
    sol = solve_cantilever_elastica(L, EI, w, tip_force)
    sh = sol.shape(4001)
    px, pz = tip_force
    # moment about the clamp of the weight and the tip force (2D cross product r x F)
    m_loads = -w * simpson(sh["x"], x=sh["s"]) + sh["x"][-1] * pz - sh["z"][-1] * px
    assert sol.root_moment == pytest.approx(m_loads, rel=1e-8, abs=1e-10)
    # and at an interior section s: EI theta'(s) = moment of the loads beyond s about r(s)
    i = 1000
    y = sol.sol(sh["s"][i] / L)
    m_int = -w * simpson(sh["x"][i:] - sh["x"][i], x=sh["s"][i:]) + (sh["x"][-1] - sh["x"][i]) * pz - (sh["z"][-1] - sh["z"][i]) * px
    assert EI * y[1] / L == pytest.approx(m_int, rel=1e-8, abs=1e-10)


def _potential(theta, s, EI, w, tip_force):
    """Total potential energy of a shape given theta(s) on a fine grid (clamp at the origin)."""
    from scipy.integrate import cumulative_trapezoid

    # integrate positions with high accuracy via Simpson on a fine uniform grid
    dth = np.gradient(theta, s, edge_order=2)
    x = cumulative_trapezoid(np.cos(theta), s, initial=0.0)
    z = cumulative_trapezoid(np.sin(theta), s, initial=0.0)
    return simpson(0.5 * EI * dth**2 + w * z, x=s) - tip_force[0] * x[-1] - tip_force[1] * z[-1]


def test_equilibrium_is_a_stationary_stable_energy_minimum():
    L, EI, w, tf = 1.0, 1.0, 20.0, (1.0, -2.0)
    sh = cantilever_elastica_shape(L, EI, w, tf, n=20001)
    s, th = sh["s"], sh["theta"]
    eta = np.sin(1.3 * s) * s  # admissible variation: eta(0) = 0
    eps = 1e-3
    v0 = _potential(th, s, EI, w, tf)
    vp = _potential(th + eps * eta, s, EI, w, tf)
    vm = _potential(th - eps * eta, s, EI, w, tf)
    first = (vp - vm) / (2 * eps)
    second = (vp + vm - 2 * v0) / eps**2
    assert second > 0.0
    assert abs(first) < 1e-5 * second  # first variation vanishes (up to quadrature error)


def test_envelope_theorem_dV_dw_equals_integral_of_z():
    """d(min V)/dw = int z ds at the equilibrium: checks energy and solution together."""
    L, EI, w = 1.0, 1.0, 8.0

    def vstar(wv):
        sol = solve_cantilever_elastica(L, EI, wv)
        sig = np.linspace(0.0, 1.0, 8001)
        y = sol.sol(sig)
        return simpson(0.5 * EI * (y[1] / L) ** 2 + wv * y[3] * L, x=sig * L), simpson(y[3] * L, x=sig * L)

    h = 1e-4
    vp, _ = vstar(w + h)
    vm, _ = vstar(w - h)
    _, zint = vstar(w)
    assert (vp - vm) / (2 * h) == pytest.approx(zint, rel=1e-6)


def test_large_load_tip_hangs_below_the_root():
    r = 0.01
    EI = 1e6 * np.pi * r**4 / 4
    w = 1000 * np.pi * r**2 * 9.81  # q = w L^3 / EI ~ 392
    tip = cantilever_elastica_tip(1.0, EI, w)
    assert tip[1] < -0.95
    assert 0.0 < tip[0] < 0.1
    sh = cantilever_elastica_shape(1.0, EI, w, n=400)
    assert np.all(np.diff(sh["theta"]) <= 1e-12)  # tangent turns monotonically downwards
    assert sh["theta"][-1] > -np.pi / 2 - 1e-9
    ds = np.hypot(np.diff(sh["x"]), np.diff(sh["z"]))
    assert ds.sum() == pytest.approx(1.0, rel=1e-4)  # inextensible (chord sum of a smooth curve)


@pytest.mark.parametrize("q,tip_force", [(1.0, (0.0, 0.0)), (10.0, (0.0, 0.0)), (60.0, (0.0, 0.0)), (4.0, (2.0, -3.0))])
def test_matches_independent_shooting(q, tip_force):
    L, EI = 1.3, 0.9
    w = q * EI / L**3
    tf = tuple(v * EI / L**2 for v in tip_force)
    tip = cantilever_elastica_tip(L, EI, w, tf)
    ref = shooting_tip(L, EI, w, tf)
    assert np.max(np.abs(tip - ref)) < 1e-9 * L


def test_shape_is_consistent_with_tip_and_cache_returns_copies():
    tip = cantilever_elastica_tip(1.0, 2.0, 5.0)
    tip[0] = 123.0
    again = cantilever_elastica_tip(1.0, 2.0, 5.0)
    assert again[0] != 123.0
    sh = cantilever_elastica_shape(1.0, 2.0, 5.0, n=11)
    assert set(sh) == {"s", "x", "z", "theta"} and sh["x"].shape == (11,)
    assert sh["x"][-1] == pytest.approx(again[0], abs=1e-12)
    assert sh["z"][-1] == pytest.approx(again[1], abs=1e-12)
    assert sh["theta"][0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kw", [dict(length=0.0), dict(EI=-1.0), dict(w=float("nan")), dict(tip_force=(1.0,))])
def test_bad_input_names_the_parameter(kw):
    args = dict(length=1.0, EI=1.0, w=1.0)
    args.update(kw)
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        cantilever_elastica_tip(**args)
