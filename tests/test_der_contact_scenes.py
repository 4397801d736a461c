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


# ---- trefoil-twist (Bergou et al. 2008, Fig. 1) --------------------------------------------------------
def test_open_trefoil_points_has_its_tails_on_the_x_axis_and_clearance():
    import numpy as np

    from rodlab.scenes.knot_scenes import open_trefoil_points
    from rodlab.contact import from_arrays, min_gap

    x = open_trefoil_points(60)
    e = np.diff(x, axis=0)
    lengths = np.linalg.norm(e, axis=1)
    assert np.allclose(lengths, lengths[0], rtol=0.02)     # equal arc length (chords within 2 %)
    assert np.allclose(x[[0, -1], 1:], 0.0, atol=1e-12) and np.isclose(x[0, 0], -x[-1, 0])
    assert np.allclose(e[[0, -1]] / lengths[[0, -1], None], [1.0, 0.0, 0.0], atol=1e-9)   # tangents along +x
    # segments that share no vertex keep 0.13 m apart (centre lines): a rod of radius 0.06 m fits
    geo = from_arrays(np.array([0, 60]), np.array([False]), 0.06, skip=2)
    assert 0.0 < min_gap(geo, x) < 0.02


def test_twist_jump_tells_a_snap_from_a_smooth_change():
    import numpy as np

    from rodlab.scenes.der_contact_scenes import twist_jump

    turns = np.linspace(0.0, 4.0, 161)
    energy = turns**2
    smooth = -3.0 + 0.9 * np.tanh(turns - 2.0)                      # |dWr/dturns| <= 0.9: no jump
    j = twist_jump(turns, smooth, energy)
    assert not j["jump"] and j["rate"] < 1.0 and "twist" not in j
    drift = smooth + 0.05 * (turns > 0.51)                          # fast but small (a settling knot)
    j = twist_jump(turns, drift, energy)
    assert not j["jump"] and j["rate"] > 1.0
    snap = -3.0 + 0.05 * turns + 2.0 * (turns > 2.51)               # writhe jumps by 2 at 2.51 turns
    snap_energy = energy - 3.0 * (turns > 2.51)
    j = twist_jump(turns, snap, snap_energy)
    assert j["jump"] and abs(j["twist"] - 2.5125) < 1e-9 and j["onset"] == j["twist"]
    assert abs(j["writhe_jump"] - 2.05 * 1.0 - 0.05 * 0.025 + 0.05) < 0.06 and j["twist_released"] > 1.9
    assert abs(j["energy_drop"] - (3.0 - (2.525**2 - 2.5**2))) < 1e-9
    with pytest.raises(Exception, match="turns, writhe and energy"):
        twist_jump(turns, snap[:-1], energy)


def test_trefoil_twist_changes_smoothly_then_jumps_for_both_signs():
    """Bergou et al. 2008, Fig. 1: the twisted knot first changes smoothly, then jumps, for either
    sign of twist. At the scene's defaults (measured: +7.10 / -3.04 turns, writhe +3.02 / -1.03,
    twist released 2.72 / 0.76 turns, energy drops 0.136 / 0.012 J, jump rates 25 / 8 per turn)."""
    import numpy as np

    r = run_scene("trefoil-twist")
    m, tr = r.metrics, r.trajectory
    assert m["n_vertices"] == 60
    assert m["min_gap"] >= -0.01 * 0.01
    assert m["max_contacts"] >= 2 and m["ms_per_step"] > 0      # the braid is held by self contact
    assert -3.3 < m["writhe_start"] < -2.9                      # a trefoil's loop and braid
    assert m["jump_positive"] and m["jump_negative"]
    # the signs: a wrong twist direction swaps the two branches and breaks these
    assert 6.0 < m["jump_twist_positive"] < 8.5 and -4.0 < m["jump_twist_negative"] < -2.0
    assert 0 < m["jump_onset_positive"] <= m["jump_twist_positive"]
    assert m["jump_twist_negative"] <= m["jump_onset_negative"] < 0
    assert m["writhe_jump_positive"] > 2.0 and m["writhe_jump_negative"] < -0.5
    # a snap: more writhe than the twist added meanwhile, elastic energy released
    assert m["twist_released_positive"] > 1.5 and m["twist_released_negative"] > 0.25
    assert m["energy_drop_positive"] > 0.05 and m["energy_drop_negative"] > 0.005
    assert m["jump_rate_positive"] > 5.0 and m["jump_rate_negative"] > 3.0
    # smooth before: the writhe stays near the untwisted knot's until 0.5 turn before each jump
    for name in ("positive", "negative"):
        turns, wr = tr[f"turns_{name}"], tr[f"writhe_{name}"]
        before = np.abs(turns) < abs(m[f"jump_twist_{name}"]) - 0.5
        assert before.sum() > 40 and np.max(np.abs(wr[before] - m["writhe_start"])) < 0.4
