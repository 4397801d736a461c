"""Time integrators of the der-implicit simulator (option ``integrator``): backward Euler unchanged
bit for bit, BDF2's second order, its smaller numerical damping, its previous step carried in the
State (split calls and fresh simulators continue bit for bit), contact worlds, refusals."""
import math

import numpy as np
import pytest

from rodlab.model import ModelError
from rodlab.solvers import make_simulator
from rodlab.world import Plane, WorldBuilder, shapes


def helix_world(nrods=1):
    """Helical rods (curved and twisted rest shape), clamped at the start, gravity, damping 0.5/s."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    for k in range(nrods):
        r = b.add_rod(shapes.helix(12, 0.05, 0.04, 1.0) + np.array([0.3 * k, 0.0, 0.0]), E=1e7, G=1e7 / 3,
                      rho=1000.0, radius=0.004)
        b.clamp(r, "start")
    return b.build()


def cantilever(n=5, damping=0.0):
    """A soft straight cantilever released from straight (large sag: a nonlinear swing)."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=damping)
    r = b.add_rod(shapes.straight(n, 0.2), E=1e6, G=1e6 / 3, rho=1000.0, radius=0.005)
    b.clamp(r, "start")
    return b.build()


# values of the code before the integrator option (git 2026-11-24, backward Euler, this file's worlds),
# re-recorded when the energies moved onto the shared DER stencil (rodlab.geometry.der_joint, 2026-12-07):
# its curvature binormal and pullback are written with unit tangents instead of edge vectors, which moved
# these values in the last bits (at most 3.6e-13 relative; the integrator option's own check, backward
# Euler bit for bit with and without it, is unchanged)
BEFORE = {
    1: ([0.04946947777638689, -0.008498511505064305, -0.016158012112858], 0.2600073608016716, 0.10731154823747611),
    2: ([0.349469477776387, -0.008498511505065505, -0.016158012112859856], 0.26000736080168113,
        0.10731154823746987),
}


@pytest.mark.parametrize("nrods", [1, 2])
def test_backward_euler_is_unchanged_and_the_default(nrods):
    """The stored values at round-off (1e-11 relative: another CPU rounds differently, docs/architecture.md,
    Golden values); the default and the named option bit for bit."""
    runs = []
    for opts in ({}, {"integrator": "backward-euler"}):
        sim = make_simulator(helix_world(nrods), "der-implicit", dt=0.01, **opts)
        st = sim.initial_state()
        sim.advance(st, 25)
        tip, theta, vz = BEFORE[nrods]
        assert st.vertex_x[-1] == pytest.approx(tip, rel=1e-11, abs=1e-13)
        assert float(st.edge_theta[-1]) == pytest.approx(theta, rel=1e-11)
        assert float(st.vertex_v[-1, 2]) == pytest.approx(vz, rel=1e-10)
        assert "bdf2_prev" not in st.solver
        runs.append((st.vertex_x.tobytes(), st.edge_theta.tobytes(), st.vertex_v.tobytes()))
    assert runs[0] == runs[1]


def tip_error(integrator, dts, dt_ref, t_end=0.25, samples=5):
    """Max over ``samples`` times of the tip distance to the run at ``dt_ref`` [m], per dt."""
    times = t_end * np.arange(1, samples + 1) / samples

    def tips(dt):
        sim = make_simulator(cantilever(), "der-implicit", dt=dt, integrator=integrator, newton_iters=30, gtol=1e-12)
        st = sim.initial_state()
        out, done = [], 0
        for t in times:
            k = int(round(t / dt))
            sim.advance(st, k - done)
            done = k
            out.append(st.vertex_x[-1].copy())
        return np.array(out)

    ref = tips(dt_ref)
    return np.array([np.linalg.norm(tips(dt) - ref, axis=1).max() for dt in dts])


def slopes(dts, err):
    return np.diff(np.log(err)) / np.diff(np.log(dts))


def test_bdf2_is_second_order_and_backward_euler_first():
    """Tip error of the released soft cantilever (5 vertices, 0.25 s, undamped, Newton converged)
    against the same integrator at dt / 8 (measured: bdf2 3.1e-4, 8.0e-5, 2.0e-5 m, slopes 1.95,
    2.00; backward Euler 7.1e-3, 3.6e-3, 1.7e-3 m)."""
    dts = np.array([0.0025, 0.00125, 0.000625])
    err2 = tip_error("bdf2", dts, dts[-1] / 8)
    s2 = slopes(dts, err2)
    assert np.all(np.abs(s2 - 2.0) < 0.15), (err2, s2)
    err1 = tip_error("backward-euler", dts, dts[-1] / 8)
    s1 = slopes(dts, err1)
    assert np.all(np.abs(s1 - 1.0) < 0.3), (err1, s1)
    assert np.all(err2 < 0.2 * err1)


def test_bdf2_keeps_more_of_the_swing():
    """Undamped swing, same (large) dt: backward Euler's numerical damping takes much more of the
    energy than BDF2's (equal results would mean BDF2 fell back to Euler)."""
    energy = {}
    for integ in ("backward-euler", "bdf2"):
        sim = make_simulator(cantilever(8), "der-implicit", dt=0.01, integrator=integ, newton_iters=10, gtol=1e-12)
        st = sim.initial_state()
        e0 = sim.energies(st)["total"]
        sim.advance(st, 100)  # 1 s, about one period
        energy[integ] = e0 - sim.energies(st)["total"]  # energy lost [J]
    assert energy["bdf2"] > 0.0
    assert energy["bdf2"] < 0.2 * energy["backward-euler"], energy  # measured: 3.7e-4 J vs 3.9e-3 J


def test_bdf2_split_calls_and_fresh_simulator_continue_bit_for_bit():
    for nrods in (1, 2):
        sim = make_simulator(helix_world(nrods), "der-implicit", dt=0.01, integrator="bdf2")
        a, b = sim.initial_state(), sim.initial_state()
        sim.advance(a, 12)
        for _ in range(12):
            sim.advance(b, 1)
        for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        np.testing.assert_array_equal(a.solver["bdf2_prev"], b.solver["bdf2_prev"])
        np.testing.assert_array_equal(a.solver["edge_theta_v"], b.solver["edge_theta_v"])
        # a fresh simulator (and a saved copy) takes over where the first one stopped
        c = a.copy()
        sim.advance(a, 8)
        fresh = make_simulator(helix_world(nrods), "der-implicit", dt=0.01, integrator="bdf2")
        fresh.advance(c, 8)
        np.testing.assert_allclose(c.vertex_x, a.vertex_x, rtol=0, atol=1e-13)
        np.testing.assert_allclose(c.edge_theta, a.edge_theta, rtol=0, atol=1e-12)


def test_bdf2_first_step_is_backward_euler_and_then_differs():
    """Without a previous step (a fresh state, another dt, a state changed by hand) BDF2 takes one
    backward-Euler step; its second step is BDF2."""
    w = helix_world()
    be = make_simulator(w, "der-implicit", dt=0.01)
    bd = make_simulator(w, "der-implicit", dt=0.01, integrator="bdf2")
    a, b = be.initial_state(), bd.initial_state()
    be.advance(a, 1)
    bd.advance(b, 1)
    np.testing.assert_array_equal(a.vertex_x, b.vertex_x)
    np.testing.assert_array_equal(a.edge_theta, b.edge_theta)
    np.testing.assert_array_equal(b.solver["bdf2_prev_at"], [0.01, 0.01])
    be.advance(a, 1)
    bd.advance(b, 1)
    assert np.abs(a.vertex_x - b.vertex_x).max() > 1e-6
    # a state whose time was reset (or stepped with another dt) restarts with a backward-Euler step
    c, d = b.copy(), b.copy()
    c.t = 0.0
    d.t = 0.0
    bd.advance(c, 1)
    d.solver.pop("bdf2_prev")
    be.advance(d, 1)  # (be's frames take another round-off path: its last state was elsewhere)
    np.testing.assert_allclose(c.vertex_x, d.vertex_x, rtol=0, atol=1e-16)
    other = make_simulator(w, "der-implicit", dt=0.005, integrator="bdf2")
    e, f = b.copy(), b.copy()
    other.advance(e, 1)
    make_simulator(w, "der-implicit", dt=0.005).advance(f, 1)
    np.testing.assert_array_equal(e.vertex_x, f.vertex_x)
    # solve_static drops the previous step
    bd.solve_static(b)
    assert "bdf2_prev" not in b.solver and "bdf2_prev_at" not in b.solver


def test_bdf2_with_driven_clamp_follows_the_motion():
    """A stepwise world (a clamp turned about z): the held unknowns follow the motion and their
    BDF2 velocity is that of the motion; split calls agree bit for bit."""
    def world():
        b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.2)
        r = b.add_rod(shapes.straight(6, 0.1), E=1e6, G=1e6 / 3, rho=1000.0, radius=0.004)

        def motion(t):
            a = 0.5 * math.sin(2.0 * math.pi * t)
            c, s = math.cos(a), math.sin(a)
            return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.zeros(3)
        b.clamp(r, "start", motion=motion)
        return b.build()
    sim = make_simulator(world(), "der-implicit", dt=0.005, integrator="bdf2", newton_iters=5)
    a, b = sim.initial_state(), sim.initial_state()
    sim.advance(a, 20)
    for _ in range(20):
        sim.advance(b, 1)
    np.testing.assert_array_equal(a.vertex_x, b.vertex_x)
    ang = 0.5 * math.sin(2.0 * math.pi * 0.1)
    # the clamp turns edge 0 (vertices at x = 0 and 0.02 m) about its rest midpoint x = 0.01 m
    np.testing.assert_allclose(a.vertex_x[1, :2], [0.01 + 0.01 * math.cos(ang), 0.01 * math.sin(ang)], atol=1e-12)
    # velocity of the clamped vertex: BDF2's difference of the motion, within O(dt^2) of the exact one
    w = 0.5 * 2.0 * math.pi * math.cos(2.0 * math.pi * 0.1)
    v_exact = 0.01 * w * np.array([-math.sin(ang), math.cos(ang)])
    assert np.abs(a.vertex_v[1, :2] - v_exact).max() < 2e-3 * np.abs(v_exact).max()


def test_bdf2_in_contact_world():
    """A rod dropped onto a frictional plane: BDF2 in the global contact Newton, no penetration,
    and split calls agree bit for bit."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.0)
    b.add_rod(shapes.straight(6, 0.1) + np.array([0.0, 0.0, 0.006]), E=1e6, G=1e6 / 3, rho=1000.0, radius=0.004)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), friction=0.2)
    w = b.build()
    sim = make_simulator(w, "der-implicit", dt=0.005, integrator="bdf2")
    be = make_simulator(w, "der-implicit", dt=0.005)
    s1, s2, s3 = sim.initial_state(), sim.initial_state(), be.initial_state()
    rep = sim.advance(s1, 12)
    for _ in range(12):
        sim.advance(s2, 1)
    be.advance(s3, 12)
    np.testing.assert_array_equal(s1.vertex_x, s2.vertex_x)
    assert rep.contact_min_gap > 0.0 and rep.contacts_max > 0
    assert np.abs(s1.vertex_x - s3.vertex_x).max() > 1e-7  # not backward Euler
    assert np.all(s1.vertex_x[:, 2] > 0.004 * 0.99)


def test_bad_integrator_is_refused_naming_the_allowed_ones():
    for bad in ("bdf3", "BDF2", 2, None):
        with pytest.raises(ModelError, match="integrator must be one of backward-euler, bdf2"):
            make_simulator(helix_world(), "der-implicit", integrator=bad)
