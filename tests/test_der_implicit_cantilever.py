"""Implicit DER cantilever against the planar elastica, and basic stepper checks."""
import math

import numpy as np
import pytest

from rodlab.der_implicit.energies import unpack_dofs
from rodlab.der_implicit.stepper import DERImplicitStepper, build_rod
from rodlab.scenes.registry import Progress, run_scene

try:
    from rodlab.analytic.elastica import cantilever_elastica_tip
except ImportError:  # pragma: no cover - reference written by another engineer
    cantilever_elastica_tip = None


def elastica_tip(L, EI, w):
    if cantilever_elastica_tip is not None:
        return np.asarray(cantilever_elastica_tip(L, EI, w), dtype=float)
    from scipy.integrate import solve_bvp

    def f(s, y):
        return np.vstack([y[1], -w * (L - s) * np.cos(y[0]) / EI, np.cos(y[0]), -np.sin(y[0])])

    s = np.linspace(0, L, 100)
    y = np.zeros((4, s.size))
    y[2] = s
    sol = None
    for lam in np.linspace(0.05, 1.0, 20):
        wl = w * lam
        sol = solve_bvp(lambda s, y: np.vstack([y[1], -wl * (L - s) * np.cos(y[0]) / EI, np.cos(y[0]), -np.sin(y[0])]),
                        lambda a, b: np.array([a[0], b[1], a[2], a[3]]), s, y, tol=1e-10)
        s, y = sol.x, sol.y
    return np.array([sol.sol(L)[2], sol.sol(L)[3]])


def run_cantilever(params, progress=None):
    """The ``cantilever`` scene (World + der-implicit simulator) with ``params``."""
    return run_scene("cantilever", progress=progress, **params)


BASE = dict(length=1.0, radius=0.01, rho=1000.0, g=9.81, dt=0.0, t_end=5.0, damping=2.0)


@pytest.mark.parametrize("n,tol", [(50, 0.01), (200, 0.003)])
@pytest.mark.parametrize("E", [1e9, 1e7])  # nearly linear (q = wL^3/EI = 0.04) and tip far below the root (q = 3.9)
def test_static_cantilever_matches_elastica(n, tol, E):
    p = dict(BASE, n=n, E=E, G=E / 3, method="der-implicit", static=True)
    m = run_cantilever(p, Progress()).metrics
    r = p["radius"]
    ref = elastica_tip(1.0, E * math.pi * r**4 / 4, p["rho"] * math.pi * r * r * p["g"])
    err = math.hypot(m["tip_x"] - ref[0], m["tip_z"] - ref[1])
    assert err < tol
    assert m["static_success"]
    assert abs(m["tip_y"]) < 1e-12


def test_static_error_decreases_under_refinement():
    E = 1e8
    r = 0.01
    ref = elastica_tip(1.0, E * math.pi * r**4 / 4, 1000 * math.pi * r * r * 9.81)
    errs = []
    for n in (26, 101):
        m = run_cantilever(dict(BASE, n=n, E=E, G=E / 3, method="der-implicit", static=True), Progress()).metrics
        errs.append(math.hypot(m["tip_x"] - ref[0], m["tip_z"] - ref[1]))
    assert errs[1] < errs[0] / 3  # at least first order (observed about second order)


def test_dynamic_cantilever_settles_on_elastica():
    E = 1e8
    p = dict(BASE, n=50, E=E, G=E / 3, method="der-implicit", static=False, t_end=6.0)
    res = run_cantilever(p, Progress())
    m = res.metrics
    r = p["radius"]
    ref = elastica_tip(1.0, E * math.pi * r**4 / 4, 1000 * math.pi * r * r * 9.81)
    assert math.hypot(m["tip_x"] - ref[0], m["tip_z"] - ref[1]) < 0.01
    assert m["steps"] == 1440 and m["us_per_step"] > 0
    assert res.trajectory["x"].shape[1:] == (50, 3)
    assert abs(m["inextensibility"]) < 1e-4


def test_undamped_free_fall_keeps_shape_and_momentum():
    """No clamp, gravity only: every vertex falls like a point mass (h^2 g terms), the shape is unchanged."""
    x = np.zeros((6, 3))
    x[:, 0] = np.linspace(0, 1, 6)
    x[:, 2] = 0.1 * np.sin(np.linspace(0, 3, 6))
    model, state = build_rod(x, radius=0.01, E=1e7, G=1e7 / 3, rho=1000, gravity=(0, 0, -9.81), clamp_root=False)
    h = 0.01
    st = DERImplicitStepper(model, h=h, newton_iters=3)
    st.advance(state, 10)
    x1 = unpack_dofs(state.q)[0]
    np.testing.assert_allclose(x1 - x, np.broadcast_to(x1[0] - x[0], x.shape), atol=1e-9)
    # implicit Euler: z drop after k steps = g h^2 k (k+1) / 2
    assert x1[0, 2] - x[0, 2] == pytest.approx(-9.81 * h * h * 10 * 11 / 2, rel=1e-9)


def test_twist_relaxes_to_uniform():
    """Straight rod, both ends' frames held at a relative twist: equilibrium twist is uniform (DER Eq. 5)."""
    from rodlab.der_implicit.stepper import solve_static
    from dataclasses import replace
    n = 8
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0, 1, n)
    model, state = build_rod(x, radius=0.01, E=1e7, G=1e7 / 3, rho=1000, gravity=(0, 0, 0))
    fixed = model.fixed.copy()
    fixed[4 * (n - 1) - 1:] = True  # last edge angle and last two vertices
    fixed[4 * (n - 2):4 * (n - 2) + 3] = True
    model = replace(model, fixed=fixed)
    state.q[4 * (n - 2) + 3] = 1.0  # twist the last edge by 1 rad
    res = solve_static(model, state, gtol=1e-12)
    theta = unpack_dofs(state.q)[1]
    np.testing.assert_allclose(np.diff(theta), 1.0 / (n - 2), atol=1e-9)
    assert res.success


def test_frame_rate_stepper_runs_the_papers_setting():
    x = np.zeros((8, 3))
    x[:, 0] = np.linspace(0, 0.2, 8)
    model, state = build_rod(x, radius=1e-3, E=1e8, G=1e8 / 3, rho=1000)
    st = DERImplicitStepper.from_frame_rate(model)  # 60 fps x 4 substeps x 1 Newton iteration
    assert st.h == pytest.approx(1 / 240) and st.newton_iters == 1
    stats = st.advance_frames(state, 3)
    assert stats.steps == 12 and stats.newton_iters == 12 and stats.success
    assert state.t == pytest.approx(3 / 60)
    with pytest.raises(ValueError, match="substeps"):
        DERImplicitStepper.from_frame_rate(model, substeps=0)


def test_cantilever_scene_dispatches_to_der_implicit():
    from rodlab.scenes.registry import run_scene

    m = run_scene("cantilever", method="der-implicit", n=30, static=True, E=1e8, G=1e8 / 3).metrics
    assert m["method"] == "der-implicit"
    assert m["tip_error_over_length"] < 0.01
    for key in ("tip_x", "tip_y", "tip_z", "inextensibility", "steps", "us_per_step"):
        assert key in m
