"""The ``compact`` simulator's ``integrator`` option: backward Euler (default, unchanged) and BDF2
(docs/integrators.md)."""
from __future__ import annotations

import numpy as np
import pytest

from rodlab.model import ModelError
from rodlab.scenes.cantilever_world import cantilever_world
from rodlab.solvers import make_simulator
from rodlab.solvers.base import UnsupportedFeature
from rodlab.world import State, WorldBuilder, shapes
from rodlab.world.obstacles import Plane

TIGHT = dict(tol=1e-12, newton_iters=30, pcg_rtol=1e-13, pcg_atol=0.0)


def _helix_world():
    """A clamped helical rod under oblique gravity: bending and twist in 3D, few smooth modes."""
    b = WorldBuilder(gravity=(0.0, -3.0, -9.81), damping=0.0)
    r = b.add_rod(shapes.helix(7, 0.1, 0.1, 0.5), E=2e5, G=1e5, rho=1000.0, radius=0.01)
    b.clamp(r, "start")
    return b.build()


def _pendulum_world(damping=0.0):
    """A stiff rod pinned at its root (free to turn), released horizontal: a swinging pendulum."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=damping)
    r = b.add_rod(shapes.straight(8, 0.3), E=1e7, G=4e6, rho=1000.0, radius=0.005)
    b.pin(r, 0)
    return b.build()


def _positions(world, integrator, dt, t_end, **opts):
    sim = make_simulator(world, "compact", dt=dt, integrator=integrator, **opts)
    state = sim.initial_state()
    sim.advance(state, int(round(t_end / dt)))
    return state.vertex_x.copy()


def test_bdf2_is_second_order_on_a_smooth_3d_problem():
    w, T = _helix_world(), 0.2
    ref = _positions(w, "bdf2", T / 800, T, **TIGHT)
    e1 = np.abs(_positions(w, "bdf2", T / 100, T, **TIGHT) - ref).max()
    e2 = np.abs(_positions(w, "bdf2", T / 200, T, **TIGHT) - ref).max()
    slope = np.log2(e1 / e2)
    assert abs(slope - 2.0) < 0.15, slope
    # backward Euler on the same problem is first order and far less accurate
    ref_be = _positions(w, "backward-euler", T / 800, T, **TIGHT)
    b1 = np.abs(_positions(w, "backward-euler", T / 100, T, **TIGHT) - ref_be).max()
    b2 = np.abs(_positions(w, "backward-euler", T / 200, T, **TIGHT) - ref_be).max()
    assert abs(np.log2(b1 / b2) - 1.0) < 0.2
    assert e2 < 0.2 * b2


def test_backward_euler_is_the_default_and_unchanged():
    # tip after 10 steps, computed by the simulator before the integrator option existed (on another
    # machine: compared at the solver's tolerance, tests/test_compact_scenes_world.py); the default and
    # the named option give the same bits
    P = dict(n=20, length=1.0, radius=0.01, E=1e7, G=1e7 / 3, rho=1000.0, g=9.81, damping=0.5)
    w = cantilever_world(P, "compact")
    tips = []
    for opts in ({}, {"integrator": "backward-euler"}):
        sim = make_simulator(w, "compact", dt=0.01, **opts)
        st = sim.initial_state()
        sim.advance(st, 7)
        sim.advance(st, 3)
        tips.append(st.vertex_x[-1].tolist())
        assert np.abs(st.vertex_x[-1] - [0.9963685239652667, 1.8740553523436386e-09, -0.051261976965460435]).max() < 1e-7
    assert tips[0] == tips[1]


def test_bdf2_keeps_more_of_the_swing_than_backward_euler():
    w, dt = _pendulum_world(), 0.01
    energy = {}
    for integ in ("backward-euler", "bdf2"):
        sim = make_simulator(w, "compact", dt=dt, integrator=integ)
        st = sim.initial_state()
        m = sim.models[0].masses
        e0 = float(np.sum(m * 9.81 * st.vertex_x[:, 2]))  # at rest: potential only
        sim.advance(st, 100)  # 1 s: past one full swing
        kin = 0.5 * float(np.sum(m[:, None] * st.vertex_v**2))
        energy[integ] = (kin + float(np.sum(m * 9.81 * st.vertex_x[:, 2]))) - e0  # <= 0: lost energy [J]
    lost_be, lost_bdf2 = -energy["backward-euler"], -energy["bdf2"]
    assert lost_be > 0 and lost_bdf2 > 0
    assert lost_bdf2 < 0.5 * lost_be, (lost_bdf2, lost_be)


def test_bad_integrator_is_refused_naming_the_choices():
    w = _pendulum_world()
    for bad in ("bdf3", "", None, 2):
        with pytest.raises(ModelError, match="integrator must be one of backward-euler, bdf2"):
            make_simulator(w, "compact", integrator=bad)


def test_bdf2_with_obstacles_is_refused_by_name():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(6, 0.3, start=(0.0, 0.0, 0.1)), E=1e6, G=4e5, rho=1000.0, radius=0.005)
    b.add_obstacle(Plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)))
    w = b.build()
    with pytest.raises(UnsupportedFeature, match="integrator='bdf2' only without obstacles"):
        make_simulator(w, "compact", integrator="bdf2")
    make_simulator(w, "compact", integrator="backward-euler")


def test_bdf2_continues_bit_for_bit_across_calls_copies_and_fresh_simulators(tmp_path):
    w = _helix_world()
    one = make_simulator(w, "compact", dt=0.005, integrator="bdf2")
    a = one.initial_state()
    one.advance(a, 12)
    b = one.initial_state()
    for _ in range(5):
        one.advance(b, 1)
    warm = b.copy()
    one.advance(warm, 3)  # a warm-up step on a copy changes nothing
    fresh = make_simulator(w, "compact", dt=0.005, integrator="bdf2")
    b.save(tmp_path / "b.npz")
    c = State.load(tmp_path / "b.npz")
    fresh.advance(c, 7)
    assert np.array_equal(a.vertex_x, c.vertex_x) and np.array_equal(a.vertex_v, c.vertex_v)
    assert np.array_equal(a.solver["omega"], c.solver["omega"])
    # a history of another step size restarts with one backward-Euler step; so does the first step
    be = make_simulator(w, "compact", dt=0.005)
    s1, s2 = be.initial_state(), one.initial_state()
    be.advance(s1, 1)
    one.advance(s2, 1)
    assert np.array_equal(s1.vertex_x, s2.vertex_x)
    assert s2.solver["bdf2_dt"][0] == 0.005
    other = make_simulator(w, "compact", dt=0.0025, integrator="bdf2")
    s3, s4 = s2.copy(), s2.copy()
    other.advance(s3, 1)
    make_simulator(w, "compact", dt=0.0025).advance(s4, 1)
    assert np.array_equal(s3.vertex_x, s4.vertex_x)
    # a backward-Euler step marks the history stale
    be.advance(s2, 1)
    assert s2.solver["bdf2_dt"][0] == 0.0


def test_bdf2_from_a_state_of_another_method_starts_with_backward_euler():
    w = _helix_world()
    der = make_simulator(w, "der", dt=1e-4)
    x = der.initial_state()
    s_bdf2, s_be = x.copy(), x.copy()
    make_simulator(w, "compact", dt=0.005, integrator="bdf2").advance(s_bdf2, 1)
    make_simulator(w, "compact", dt=0.005).advance(s_be, 1)
    assert np.array_equal(s_bdf2.vertex_x, s_be.vertex_x)
    assert np.all(np.isfinite(s_bdf2.vertex_x))


def test_bdf2_takes_large_steps_with_a_moving_clamp_and_several_rods():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.2)
    r0 = b.add_rod(shapes.straight(12, 0.5), E=1e6, G=4e5, rho=1000.0, radius=0.005)
    r1 = b.add_rod(shapes.straight(15, 0.6, start=(0.0, 0.1, 0.0)), E=1e6, G=4e5, rho=1000.0, radius=0.005)
    b.clamp(r0, "start")

    def motion(t):
        c, s = np.cos(0.5 * t), np.sin(0.5 * t)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.array([0.0, 0.05 * np.sin(3 * t), 0.0])

    b.clamp(r1, "start", motion=motion)
    w = b.build()
    sim = make_simulator(w, "compact", dt=0.05, integrator="bdf2")  # 50 ms steps, stiff rods
    st = sim.initial_state()
    rep = sim.advance(st, 40)
    assert rep.steps == 40 and np.all(np.isfinite(st.vertex_x))
    lengths = np.linalg.norm(np.diff(st.rod_x(1), axis=0), axis=1)
    assert np.allclose(lengths, w.rods[1].rest_lengths, rtol=1e-9)
    R, d = motion(st.t)
    x0 = w.rods[1].rest_positions[:2]
    assert np.allclose(st.rod_x(1)[0], R @ (x0[0] - x0.mean(axis=0)) + x0.mean(axis=0) + d, atol=1e-12)
