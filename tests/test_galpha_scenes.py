"""Smoke + physics checks of the generalized-alpha scenes at small sizes (fast)."""
import math

import numpy as np
import pytest

from rodlab.scenes.registry import SceneError, run_scene

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
    assert m["residual"] < 1e-6
    tr = res.trajectory
    assert tr["x"].shape[1:] == (13, 3) and tr["t"].shape[0] == tr["x"].shape[0]
    assert tr["energy"].shape == tr["t"].shape


def test_sinus_falls_and_conserves_length():
    res = run_scene("galpha-sinus", n=21, t_end=0.5, rho_inf=0.5)
    x = res.trajectory["x"][-1]
    assert res.metrics["tip_z"] < -0.05  # it fell
    seg = np.linalg.norm(np.diff(x, axis=0), axis=1).sum()
    assert seg == pytest.approx(0.3, rel=5e-3)  # chords of arcs of length ds (kappa ds up to 0.3)


def test_tress_end_follows_the_line_then_is_released():
    res = run_scene("galpha-tress", n=21, t_end=0.5, extension=0.05, frames=30)
    m = res.metrics
    assert m["t_release"] < 0.5
    assert res.trajectory["fibers_end"].shape == (180, 21, 3)


def test_tress_gravity_reports_each_setting():
    res = run_scene("galpha-tress-gravity", n=9, t_end=0.2, settings="0.0:0.5,0.4:1.0")
    assert "kinetic_a0_g0.5" in res.trajectory and "kinetic_a0.4_g1" in res.trajectory
    # the dissipative setting loses more kinetic energy than the trapezoidal one
    assert res.metrics["kinetic_end_a0.4_g1"] <= res.metrics["kinetic_end_a0_g0.5"] * 1.5


def test_bad_parameter_is_rejected():
    with pytest.raises(SceneError, match="range"):
        run_scene("galpha-sinus", n=2)


def test_cantilever_galpha_metrics():
    res = run_scene("cantilever", method="galpha", n=11, t_end=0.2, dt=0.05)
    for key in ("tip_x", "tip_y", "tip_z", "inextensibility", "steps", "us_per_step", "newton_iters"):
        assert key in res.metrics
