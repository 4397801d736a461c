"""Smoke + physics checks of the generalized-alpha scenes at small sizes (fast)."""
import math

import numpy as np
import pytest

from rodlab.scenes.registry import SceneError, run_scene

LENGTH = {"galpha-sinus": 0.3, "galpha-helix-load": 0.3, "galpha-torque": 0.45, "galpha-buckling": 1.0,
          "galpha-spring": 5 * 2 * math.pi * math.hypot(0.01, 0.004 / (2 * math.pi)), "galpha-tress": 0.25,
          "galpha-tress-gravity": 0.25}  # [m]
SCENES = ("galpha-sinus", "galpha-helix-load", "galpha-torque", "galpha-spring", "galpha-buckling", "galpha-tress",
          "galpha-tress-gravity")


@pytest.mark.parametrize("name", SCENES)
def test_scene_runs_small_with_required_metrics(name):
    kw = dict(n=13, t_end=0.3, frames=5)
    if name == "galpha-spring":
        kw.update(dt=2e-3, t_end=0.2)
    res = run_scene(name, **kw)
    m = res.metrics
    for key in ("newton_iters", "residual", "ms_per_step"):
        assert math.isfinite(m[key])
    assert m["residual"] < 1e-8 and 2 <= m["newton_iters"] < 15 and m["ms_per_step"] > 0 and m["substeps"] == 0
    tr = res.trajectory
    assert tr["x"].shape[1:] == (13, 3) and tr["t"].shape[0] == tr["x"].shape[0]
    assert tr["energy"].shape == tr["t"].shape
    # frames every (steps // (frames - 1)) steps and at the end, starting at rest in the rest shape
    every = max(1, m["steps"] // 4)
    expected_t = [k * every * m["dt"] for k in range(m["steps"] // every + 1)]
    if m["steps"] % every:
        expected_t.append(m["steps"] * m["dt"])
    np.testing.assert_allclose(tr["t"], expected_t, rtol=1e-12, atol=1e-15)
    assert tr["kinetic"][0] == 0.0 and tr["kinetic"][-1] > 0  # they all move
    # energy parts add up; node frames stay rotations
    np.testing.assert_allclose(tr["kinetic"] + tr["elastic"] + tr["gravitational"], tr["energy"], rtol=0, atol=1e-15)
    R = tr["frames"]
    np.testing.assert_allclose(np.einsum("fnab,fnac->fnbc", R, R), np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    # the root vertex is held (it turns in place in the buckling case); positions are arcs of
    # length ds = L / (n - 1): no chord is longer than ds, and the tip is the last vertex
    np.testing.assert_allclose(tr["x"][:, 0], np.broadcast_to(tr["x"][0, 0], tr["x"][:, 0].shape), rtol=0, atol=1e-9)
    ds = LENGTH[name] / 12
    chords = np.linalg.norm(np.diff(tr["x"], axis=1), axis=2)
    assert chords.max() <= ds * (1 + 1e-12)
    assert m["inextensibility"] == pytest.approx(np.max(np.abs(chords[-1] / ds - 1.0)), rel=1e-9)
    np.testing.assert_array_equal([m["tip_x"], m["tip_y"], m["tip_z"]], tr["x"][-1, -1])


def test_sinus_falls_and_conserves_length():
    res = run_scene("galpha-sinus", n=21, t_end=0.5, rho_inf=0.5)
    x = res.trajectory["x"][-1]
    assert res.metrics["tip_z"] < -0.05  # it fell
    seg = np.linalg.norm(np.diff(x, axis=0), axis=1).sum()
    assert seg == pytest.approx(0.3, rel=5e-3)  # chords of arcs of length ds (kappa ds up to 0.3)
    assert (res.metrics["alpha"], res.metrics["beta"], res.metrics["gamma"]) == pytest.approx((1 / 6, 1 / 3, 2 / 3))


def test_tress_end_follows_the_line_then_is_released():
    """Pulled down along the vertical at 2 cm/s from its hanging equilibrium, then let go: while
    pulled, the end sinks at the pull speed without moving sideways (up to the O(ds^2) drift of the
    positions integrated along the frames, 2e-4 m here against a 9 mm pull); released, it springs
    back up."""
    res = run_scene("galpha-tress", n=21, t_end=0.5, extension=0.05, frames=30)
    m, tr = res.metrics, res.trajectory
    assert res.trajectory["fibers_end"].shape == (180, 21, 3)
    assert m["t_release"] == pytest.approx(0.05 * m["bbox_length"] / 0.02, rel=1e-12) and m["t_release"] < 0.5
    t, tip = tr["t"], tr["x"][:, -1]
    pulled = t <= m["t_release"] + 1e-12
    assert pulled.sum() == 14 and (~pulled).sum() == 2
    np.testing.assert_allclose(tip[pulled, 2] - tip[0, 2], -0.02 * t[pulled], rtol=0, atol=3e-4)
    np.testing.assert_allclose(tip[pulled, :2], np.broadcast_to(tip[0, :2], tip[pulled, :2].shape), rtol=0, atol=1e-3)
    assert m["tip_drop_max"] == pytest.approx(tip[0, 2] - tip[:, 2].min(), rel=1e-12)
    assert m["tip_drop_max"] == pytest.approx(0.02 * t[pulled][-1], rel=0.05)
    # released: it rises by most of the pull within 2 steps
    assert m["tip_rebound"] > 0.5 * m["tip_drop_max"] and np.all(np.diff(tip[~pulled, 2]) > 0)
    # the fibers ride on the guide: at the end each lies within the tress radius (5 mm) of it
    gap = np.linalg.norm(tr["fibers_end"] - tr["x"][-1][None], axis=2)
    assert gap.max() <= 0.005 + 1e-6 and gap.min() >= 0.0


def test_tress_gravity_reports_each_setting():
    res = run_scene("galpha-tress-gravity", n=9, t_end=0.2, settings="0.0:0.5,0.4:1.0")
    trap, diss = res.trajectory["kinetic_a0_g0.5"], res.trajectory["kinetic_a0.4_g1"]
    assert trap.shape == diss.shape == res.trajectory["t"].shape
    assert trap[0] == diss[0] == 0.0 and trap.max() > 1e-8  # both start at rest and move
    # the dissipative setting (alpha = 0.4, gamma = 1) loses more kinetic energy than the
    # trapezoidal one (alpha = 0, gamma = 1/2, no numerical dissipation): at the end by 10x
    # (measured 7.2e-9 J against 7.8e-8 J), and its peak is lower too (3.6e-8 J against 8.5e-8 J)
    assert res.metrics["kinetic_end_a0.4_g1"] < 0.15 * res.metrics["kinetic_end_a0_g0.5"]
    assert res.metrics["kinetic_max_a0.4_g1"] < 0.6 * res.metrics["kinetic_max_a0_g0.5"]
    assert np.all(diss[2:] < trap[2:])
    # both start with the same backward-Euler step, so their first frames agree
    assert diss[1] == pytest.approx(trap[1], rel=1e-12)
    with pytest.raises(SceneError, match="settings"):
        run_scene("galpha-tress-gravity", n=9, t_end=0.1, settings="0.4-1.0")


def test_bad_parameter_is_rejected():
    with pytest.raises(SceneError, match="range"):
        run_scene("galpha-sinus", n=2)


def test_cantilever_galpha_falls_in_its_plane_and_damping_removes_energy():
    res = run_scene("cantilever", method="galpha", n=11, t_end=0.2, dt=0.05)
    m, tr = res.metrics, res.trajectory
    assert m["steps"] == 4 and m["us_per_step"] > 0 and m["newton_iters"] < 10 and m["residual"] < 1e-6
    # released straight under gravity along -z: it falls, in the x-z plane, clamp held
    assert np.all(tr["x"][:, :, 1] == 0.0) and m["tip_y"] == 0.0
    np.testing.assert_array_equal(tr["x"][:, 0], 0.0)
    assert -1.0 < m["tip_z"] < -0.05 and 0 < m["tip_x"] < 1.0
    assert np.all(np.diff(tr["x"][:, -1, 2]) < 0)  # the tip goes down every frame
    # chords of arcs of length ds: never longer than ds, shorter by O(kappa^2 ds^2)
    # (rodlab.metrics.inextensibility: max |l / lbar - 1| over the edges)
    chords = np.linalg.norm(np.diff(tr["x"][-1], axis=0), axis=1)
    assert np.all(chords <= 0.1 * (1 + 1e-12)) and 0 < m["inextensibility"] < 1e-3
    assert m["inextensibility"] == pytest.approx(np.max(1.0 - chords / 0.1), rel=1e-9)
    # it gathers speed while it falls (lumped vertex kinetic energy, rodlab.metrics); galpha's own
    # kinetic energy (with the rotational part) is close to the lumped one (energy bookkeeping under
    # damping: tests/test_solver_galpha.py::test_damping_and_the_scheme_only_remove_energy)
    ke = tr["kinetic_energy"]
    assert ke[0] == 0.0 and np.all(np.diff(ke) > 0) and m["kinetic_energy"] == pytest.approx(ke[-1], rel=1e-12)
    assert m["kinetic_energy_end"] > 0.01 and m["kinetic_energy_end"] == pytest.approx(ke[-1], rel=0.1)
