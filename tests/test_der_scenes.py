"""Physics of the DER scenes against closed-form and independently computed references."""
import numpy as np
import pytest

import rodlab
from rodlab.analytic.elastica import cantilever_elastica_tip
from rodlab.analytic.helical_buckling import helical_buckling_theory


@pytest.mark.parametrize("n,E,tol", [(50, 1e8, 0.01), (50, 1e6, 0.01), (200, 1e8, 0.003), (200, 3e6, 0.003)])
def test_cantilever_static_matches_elastica(n, E, tol):
    m = rodlab.run_scene("cantilever", n=n, E=E, static=True).metrics
    r, rho, g = 0.01, 1000.0, 9.81
    ref = cantilever_elastica_tip(1.0, E * np.pi * r**4 / 4, rho * np.pi * r**2 * g)
    err = np.hypot(m["tip_x"] - ref[0], m["tip_z"] - ref[1])
    assert m["static_success"]
    assert err < tol
    assert m["inextensibility"] < 1e-10
    assert abs(m["tip_y"]) < 1e-10


def test_cantilever_dynamic_settles_to_the_static_tip():
    dyn = rodlab.run_scene("cantilever", n=20, t_end=6.0, damping=4.0).metrics
    sta = rodlab.run_scene("cantilever", n=20, static=True).metrics
    assert abs(dyn["tip_z"] - sta["tip_z"]) < 2e-3
    assert dyn["us_per_step"] > 0 and dyn["steps"] > 1000


def test_helical_buckling_converges_to_van_der_heijden_thompson():
    m = rodlab.run_scene("helical-buckling").metrics
    theory = helical_buckling_theory(9.29, 1.345, 0.789, 27, 0.3)
    assert m["phi0_theory"] == pytest.approx(theory.phi0, rel=1e-12)
    assert m["phi0_theory"] == pytest.approx(0.919, abs=5e-4)
    assert m["static_success"]
    assert abs(m["phi0"] - m["phi0_theory"]) / m["phi0_theory"] < 0.03
    assert m["envelope_error"] < 0.03


def test_helical_buckling_phi0_error_shrinks_with_refinement():
    coarse = rodlab.run_scene("helical-buckling", n=80).metrics["phi0_error"]
    fine = rodlab.run_scene("helical-buckling", n=160).metrics["phi0_error"]
    assert fine < 0.5 * coarse


@pytest.mark.parametrize("factor,stable", [(0.8, True), (1.25, False)])
def test_michell_threshold_from_both_sides(factor, stable):
    crit = 2 * np.pi * np.sqrt(3) * 1.0 / 0.7
    m = rodlab.run_scene("michell", beta=0.7, twist=factor * crit).metrics
    assert m["critical_twist_theory"] == pytest.approx(crit, rel=1e-12)
    assert m["stable"] is stable
    assert (m["growth"] < 0.8) if stable else (m["growth"] > 10)


def test_uniform_twist_between_clamps():
    m = rodlab.run_scene("uniform-twist", n=30).metrics
    assert m["max_twist_deviation"] < 1e-9
    assert m["twist_applied"] == pytest.approx(2 * np.pi * 3.0, rel=1e-12)


def test_perversion_forms_two_helices_of_opposite_hand():
    m = rodlab.run_scene("perversion", n=80).metrics
    assert m["perversion"]
    assert abs(m["total_twist"]) < 1e-6


def test_twist_asymmetry_piles_twist_near_the_turned_end():
    m = rodlab.run_scene("twist-asymmetry", shape="arc", n=31, stages=3).metrics
    assert m["static_success"]
    assert m["twist_ratio"] > 1.02
