"""Small, fast versions of the explicit-DER contact scenes (rodlab.scenes.der_contact_scenes)."""
import pytest

from rodlab.scenes.registry import run_scene
import rodlab.scenes._catalog  # noqa: F401  (registers every scene)


def test_hanging_chain_hangs_then_breaks_at_a_link_without_penetration():
    r = run_scene("hanging-chain", links=3, n=12, dt=5e-4, t_hold=0.05, pull_speed=0.4, t_end=0.3, frames=30)
    m = r.metrics
    assert m["n_vertices"] == 36
    assert m["min_gap"] >= -0.01 * 0.002
    assert m["max_contacts"] >= 2                # both link pairs carry the chain
    assert m["broken"] and m["break_link"] in (0, 1, 2)
    assert 0.06 < m["break_time"] < 0.3                  # after the pull started
    assert m["break_span"] > 3 * 0.024                   # pulled out beyond its rest span
    assert m["ms_per_step"] > 0


def test_plectonemes_hanging_writhes_with_self_contact():
    r = run_scene("plectonemes-hanging", n=30, dt=1e-3, rate=25.0, t_end=1.5, frames=30)
    m = r.metrics
    assert m["min_gap"] >= -0.01 * 0.003
    assert m["plectoneme"] and 0.5 < m["plectoneme_twist_turns"] < m["twist_turns_end"]
    assert abs(m["writhe_end"]) > 1.0            # the legs wrapped around each other
    assert m["max_contacts"] >= 1


def test_scene_parameters_are_checked():
    with pytest.raises(Exception, match="spacing|links"):
        from rodlab.scenes.der_contact_scenes import chain_world
        chain_world(1, 10)
