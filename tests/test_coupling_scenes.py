"""Coupling scenes (Bergou 2008, Fig. 6 and 11) through the registry: World + the ``der``
simulator's rigid bodies, ``projection="symplectic"`` (RATTLE) by default."""
import pytest

from rodlab.scenes.registry import SceneError, run_scene


def test_torque_transducer_matches_two_disk_torsion_oscillator():
    """Two disks on a straight rod, one spun: relative spin oscillates with
    T = 2 pi sqrt(I_red L / GJ), the rod stores at most I_red w0^2 / 2, angular momentum kept."""
    m = run_scene("torque-transducer", periods=2.0).metrics
    assert abs(m["period_error"]) < 1e-4
    assert abs(m["energy_rod_max"] / m["energy_rod_max_theory"] - 1) < 2e-3
    assert m["angular_momentum_drift"] < 1e-8
    assert m["energy_drift_max"] < 5e-4
    assert m["weld_error"] < 1e-12 and m["inextensibility"] < 1e-10
    # energy moves from the spun body to the other one and the rod
    assert m["energy_b_max"] > 0.3 * m["energy_initial"]
    assert m["energy_a_min"] < 0.7 * m["energy_initial"]


def test_torque_transducer_with_wobble_stays_bounded():
    m = run_scene("torque-transducer", periods=3.0, wobble=1.0).metrics
    assert m["energy_drift_max"] < 1e-3
    assert m["angular_momentum_drift"] < 1e-4


def test_wilberforce_tuned_spring_exchanges_energy():
    """Tuned: nearly all the energy passes from the vertical to the torsional mode and back;
    detuned by 20 %, most of it stays vertical."""
    m = run_scene("wilberforce", g=0.0, bending=0.01, pitch=0.06, v0=0.05, periods=25.0).metrics
    assert m["max_fraction_torsional"] > 0.95
    assert m["min_fraction_vertical"] < 0.05
    assert 15 < m["exchange_periods_in_vertical_periods"] < 25
    assert abs(m["energy_drift"]) < 5e-3
    assert m["weld_error"] < 1e-12
    d = run_scene("wilberforce", g=0.0, bending=0.01, pitch=0.06, v0=0.05, periods=12.0, tuning=1.2).metrics
    assert d["max_fraction_torsional"] < 0.3


def test_bad_parameter_is_rejected():
    with pytest.raises(SceneError, match="tuning"):
        run_scene("wilberforce", tuning=-1.0)
    with pytest.raises(SceneError, match="projection"):
        run_scene("torque-transducer", projection="rattle")


def test_shake_is_the_old_name_of_symplectic():
    a = run_scene("torque-transducer", periods=0.3, projection="shake").metrics
    b = run_scene("torque-transducer", periods=0.3, projection="symplectic").metrics
    for key in ("torsional_period", "energy_a_min", "energy_rod_max", "energy_drift_max", "angular_momentum_drift"):
        assert a[key] == b[key], key
