"""The batched ``der`` simulator (rodlab.solvers.der + rodlab.der.batch): same answers as the
single-rod DERStepper, rods independent, closed forms for free fall and wind, the energy check,
rigid bodies."""
from __future__ import annotations

import numpy as np
import pytest

from rodlab.der.stepper import DEROptions, DERStepper, suggested_time_step
from rodlab.model import Loads, ModelError, twist_about_axis
from rodlab.solvers import SimulationError, make_simulator
from rodlab.world import WorldBuilder, shapes

MAT = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)


def _compare_with_stepper(world, chunks, **opts):
    """Run the simulator and a DERStepper on rod 0 side by side; largest |difference| of x, v, theta."""
    sim = make_simulator(world, "der", **opts)
    state = sim.initial_state()
    loads = Loads(world.loads.gravity, world.loads.damping, world.point_forces_of(0))
    st = DERStepper(world.rods[0], loads, DEROptions(dt=sim.dt, energy_check=True,
                                                     damping_scheme=opts.get("damping_scheme", "implicit")))
    rs = st.initial_state()
    worst = 0.0
    for n in chunks:
        sim.advance(state, n)
        st.advance(rs, n)
        for a, b in ((state.vertex_x, rs.x), (state.vertex_v, rs.v), (state.edge_theta, rs.theta),
                     (state.edge_ref_d1, rs.ref_d1), (state.joint_ref_twist, rs.ref_twist)):
            worst = max(worst, float(np.abs(a - b).max()))
    assert abs(state.t - rs.t) < 1e-15
    return worst, state


def test_cantilever_matches_stepper():
    b = WorldBuilder(gravity=(0, 0, -9.81), damping=0.7)
    r = b.add_rod(shapes.straight(20, 1.0), **MAT)
    b.clamp(r, "start")
    worst, state = _compare_with_stepper(b.build(), [1, 50, 149, 300])
    assert worst < 1e-12
    assert state.vertex_x[-1, 2] < -0.05  # it did bend


@pytest.mark.parametrize("scheme", ["implicit", "exponential"])
def test_closed_twisted_ring_matches_stepper(scheme):
    n = 16
    T = 1.5
    rest_twist = np.zeros(n)
    rest_twist[-1] = -T
    b = WorldBuilder(gravity=(0, 0, -9.81), damping=0.3)
    r = b.add_rod(shapes.circle(n, 1.0, normal=(1, 0, 0.3)), **MAT, closed=True, rest_twist=rest_twist,
                  rest_curvature=np.zeros((n, 4)))
    b.pin(r, 0)
    worst, state = _compare_with_stepper(b.build(), [40, 200], damping_scheme=scheme)
    assert worst < 1e-12
    assert np.abs(state.vertex_v).max() > 1e-3


def test_moving_clamp_and_timed_force_match_stepper():
    rng = np.random.default_rng(1)
    pts = np.cumsum(0.05 * np.abs(rng.standard_normal((12, 3))) + [0.05, 0, 0], axis=0)
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(pts, bending=(2e-3, 1e-3), twisting=1e-3, linear_density=0.1)  # curved, anisotropic: Newton twist
    b.clamp(r, "start", motion=twist_about_axis((1, 0, 0), rate=3.0, ramp=0.05))
    b.add_point_force(r, -1, lambda t: np.array([0.0, 0.02 * np.sin(20 * t), 0.0]))
    worst, state = _compare_with_stepper(b.build(), [1, 30, 70])
    assert worst < 1e-12
    assert np.abs(state.edge_theta).max() > 1e-3


def test_pinned_helix_matches_stepper():
    b = WorldBuilder(gravity=(0, -9.81, 0))
    r = b.add_rod(shapes.helix(15, 0.1, 0.05, 2.0), **MAT)
    b.pin(r, 0)
    b.pin(r, 7)
    b.add_point_force(r, -1, (0.0, 0.0, 0.01))
    worst, _ = _compare_with_stepper(b.build(), [25, 100])
    assert worst < 1e-12


def test_independent_rods_give_the_single_rod_answer():
    def world(k):
        b = WorldBuilder(gravity=(0, 0, -9.81), damping=0.2)
        for i in range(k):
            r = b.add_rod(shapes.straight(12, 0.5, start=(0, 1.0 * i, 0)), **MAT)
            b.clamp(r, "start")
        return b.build()

    one = make_simulator(world(1), "der")
    s1 = one.initial_state()
    three = make_simulator(world(3), "der", dt=one.dt)
    s3 = three.initial_state()
    for n in (1, 80, 120):
        one.advance(s1, n)
        three.advance(s3, n)
    for i in range(3):
        x = s3.rod_x(i) - [0, 1.0 * i, 0]
        assert np.abs(x - s1.vertex_x).max() < 1e-13
        assert np.abs(s3.rod_v(i) - s1.vertex_v).max() < 1e-13
        assert np.abs(s3.rod_theta(i) - s1.edge_theta).max() < 1e-13
    assert s3.vertex_x[11, 2] < -1e-3


def test_free_fall_is_symplectic_euler():
    g = np.array([0.0, -3.0, -9.81])
    b = WorldBuilder(gravity=g)
    b.add_rod(shapes.straight(10, 0.4, direction=(1, 1, 0)), **MAT)
    sim = make_simulator(b.build(), "der", dt=1e-3)
    state = sim.initial_state()
    x0 = state.vertex_x.copy()
    h, k = sim.dt, 0
    for n in (1, 7, 92):
        sim.advance(state, n)
        k += n
        # v_k = k g h, x_k = x_0 + h sum_{j<=k} v_j = x_0 + g h^2 k (k + 1) / 2
        assert np.abs(state.vertex_x - (x0 + g * h * h * k * (k + 1) / 2)).max() < 1e-13
        assert np.abs(state.vertex_v - g * h * k).max() < 1e-10  # (x - x_old) / h loses ~eps x / h
    assert abs(state.t - k * h) < 1e-15


def test_energy_check_refuses_and_restores():
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(shapes.straight(20, 1.0), **MAT)
    b.clamp(r, "start")
    world = b.build()
    sim = make_simulator(world, "der", dt=2.0 * suggested_time_step(world.rods[0]))
    state = sim.initial_state()
    with pytest.raises(SimulationError, match="unstable") as err:
        for _ in range(200):
            before = state.copy()
            sim.advance(state, 50)
    assert "dt = " in str(err.value) and "suggested_time_step" in str(err.value)
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
        assert np.array_equal(getattr(state, name), getattr(before, name))
    assert state.t == before.t
    assert not err.value.report.success


@pytest.mark.parametrize("scheme", ["implicit", "exponential"])
def test_wind_relaxes_velocity_to_u(scheme):
    u = np.array([0.2, 0.5, -0.3])
    drag, lam = 0.4, 1000.0 * np.pi * 0.01**2
    b = WorldBuilder()
    b.add_rod(shapes.straight(8, 0.3), **MAT)
    b.set_wind(u, drag)
    sim = make_simulator(b.build(), "der", dt=1e-3, damping_scheme=scheme)
    state = sim.initial_state()
    c, h, k = drag / lam, sim.dt, 0
    for n in (1, 40, 200):
        sim.advance(state, n)
        k += n
        decay = (1 + h * c) ** -k if scheme == "implicit" else np.exp(-c * h * k)
        # v = (x - x_old) / h carries ~eps |x| / h of round-off per step
        assert np.abs(state.vertex_v - u * (1 - decay)).max() < 1e-10
    assert 0.1 < 1 - (1 - decay) < 0.99  # the test saw the exponential, not its end


def _windy_world(u):
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(shapes.straight(12, 0.3), **MAT)
    b.clamp(r, "start")
    b.set_wind(u, 0.1)
    return b.build()


def test_wind_is_sampled_on_a_grid_of_steps_not_per_call():
    calls = []

    def u(x, t):
        calls.append(round(t / 1e-3))
        return np.broadcast_to([0.0, 1.0, 0.0], x.shape)

    sim = make_simulator(_windy_world(u), "der", dt=1e-3, wind_interval=4e-3)
    state = sim.initial_state()
    sim.advance(state, 10)
    sim.advance(state, 5)  # starts at step 10: grid step 8's sample is kept in the state
    assert calls == [0, 4, 8, 12]
    state.solver = {}  # an edited state: the field is sampled where it stands
    sim.advance(state, 1)
    assert calls == [0, 4, 8, 12, 15]
    every = make_simulator(_windy_world(u), "der", dt=1e-3, wind_interval=0.0)
    calls.clear()
    every.advance(every.initial_state(), 3)
    assert calls == [0, 1, 2]


def test_wind_trajectory_does_not_depend_on_how_steps_are_cut_into_calls():
    """A gusty wind that varies in space and time: one call of 60 steps, and the same steps cut
    into uneven calls (as the recording loop cuts them by wall time), give the same bits."""
    def gust(x, t):
        out = np.zeros_like(x)
        out[:, 1] = 2.0 * (1 + np.sin(7.0 * t + 3.0 * x[:, 0]))
        return out

    sim = make_simulator(_windy_world(gust), "der", dt=2e-4, wind_interval=1e-3)
    start = sim.initial_state()
    one, cut = start.copy(), start.copy()
    sim.advance(one, 60)
    for k in (1, 3, 7, 2, 19, 5, 23):
        sim.advance(cut, k)
    assert np.abs(one.vertex_x - start.vertex_x).max() > 1e-6  # it moved
    # the frames of a twist-free rod are rebuilt once per call (der.batch.rebuild_twist_free_frames):
    # they are not part of its dynamics, and only they depend on the cut
    for name in ("vertex_x", "vertex_v"):
        assert np.array_equal(getattr(one, name), getattr(cut, name)), name


@pytest.mark.parametrize("bad", [-1e-3, float("nan"), "1e-3", True])
def test_wind_interval_is_checked(bad):
    with pytest.raises(ModelError, match="wind_interval"):
        make_simulator(_windy_world([0.0, 1.0, 0.0]), "der", wind_interval=bad)


def test_welded_body_runs_and_only_loses_energy():
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(shapes.straight(10, 0.3), bending=2e-3, twisting=2e-3, linear_density=0.05)
    b.clamp(r, "start")
    body = b.add_body(0.01, (1e-5, 1e-5, 1e-5), position=(0.3 + 0.01, 0.0, 0.0))
    b.weld(r, "end", body)
    sim = make_simulator(b.build(), "der")
    state = sim.initial_state()
    e0 = sim.energies(state)["total"]
    es, ks = [], []
    for _ in range(20):
        sim.advance(state, 100)
        e = sim.energies(state)
        es.append(e["total"])
        ks.append(e["kinetic"])
    assert state.body_x[0, 2] < -0.01  # the body swung down
    assert abs(np.linalg.norm(state.body_q[0]) - 1) < 1e-14
    kmax = max(ks)
    assert kmax > 1e-3
    # the paper's fast projection only dissipates (first order in dt)
    assert max(es) < e0 + 1e-3 * kmax
    assert min(es) < e0 - 0.01 * kmax


def test_bodies_on_two_rods_step_together():
    b = WorldBuilder()
    r0 = b.add_rod(shapes.straight(5, 0.3), **MAT)
    r1 = b.add_rod(shapes.straight(5, 0.3, start=(0, 1, 0)), **MAT)
    b.clamp(r1, "start")
    body = b.add_body(0.1, (1e-4, 1e-4, 1e-4), position=(0.3, 0, 0))
    b.weld(r0, "end", body)
    b.add_point_force(r0, 0, (0.0, 0.0, 0.5))
    sim = make_simulator(b.build(), "der")
    state = sim.initial_state()
    sim.advance(state, 50)
    assert state.rod_x(0)[0, 2] > 1e-4  # the pushed end of the welded rod rose
    np.testing.assert_allclose(state.rod_x(1), sim.initial_state().rod_x(1), atol=1e-15)  # the other rod rests
    assert sim.weld_error(state) < 1e-15
    with pytest.raises(ModelError, match="no option body_projection"):
        make_simulator(b.build(), "der", body_projection="shake")


def test_static_solve_and_energies():
    b = WorldBuilder(gravity=(0, 0, -9.81))
    stiff = dict(MAT, E=1e9, G=1e9 / 3)
    r = b.add_rod(shapes.straight(30, 1.0), **stiff)
    b.clamp(r, "start")
    r1 = b.add_rod(shapes.straight(30, 1.0, start=(0, 1, 0)), **stiff)
    b.clamp(r1, "start")
    world = b.build()
    sim = make_simulator(world, "der")
    state = sim.initial_state()
    rep = sim.solve_static(state)
    assert rep.success
    # small-deflection cantilever tip w L^4 / (8 E I)
    w = 1000.0 * np.pi * 0.01**2 * 9.81
    EI = 1e9 * np.pi * 0.01**4 / 4
    assert state.rod_x(0)[-1, 2] == pytest.approx(-w / (8 * EI), rel=0.1)  # the clamped first edge shortens the arm
    e = sim.energies(state)
    assert e["elastic"] > 0 and e["kinetic"] == 0.0
    assert e["total"] == pytest.approx(e["kinetic"] + e["elastic"] + e["gravity"])
    per_rod = sim.rod_elastic_energies(state)
    assert per_rod[0] == pytest.approx(per_rod[1], rel=1e-9) and per_rod.sum() == pytest.approx(e["elastic"])


def test_warm_up_on_a_copy_changes_nothing():
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(shapes.straight(10, 1.0), **MAT)
    b.clamp(r, "start")
    sim = make_simulator(b.build(), "der")
    a = sim.initial_state()
    c = a.copy()
    sim.advance(a.copy(), 37)
    sim.advance(a, 10)
    sim.advance(c, 10)
    assert np.array_equal(a.vertex_x, c.vertex_x) and np.array_equal(a.edge_theta, c.edge_theta)
