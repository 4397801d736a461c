"""Rigid-body coupling of DER (Bergou 2008, Sec. 8) in the ``der`` simulator: closed-form and
conservation checks on small worlds (one rod, one or two bodies)."""
import numpy as np
import pytest

from rodlab import metrics
from rodlab.model import ModelError
from rodlab.scenes.coupling_scenes import body_world_angular_velocity, disk_inertia, set_body_velocity, weld_error
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder


@pytest.fixture(autouse=True)
def one_thread():
    """One rod per world: the simulator's parallel phases have one chunk; run them on one thread
    (their start and join per phase dominate on a loaded machine, rodlab.scenes.coupling_scenes)."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(threads)


def hanging(n=10, L=0.5, twisting=0.5, g=9.81, mass=1.0, radius=0.1, projection="fast"):
    """A straight rod along -z clamped at its top edge, a disk (axis z) welded to its bottom edge."""
    x = np.zeros((n, 3))
    x[:, 2] = -np.linspace(0, L, n)
    b = WorldBuilder(gravity=(0, 0, -g))
    r = b.add_rod(x, bending=1.0, twisting=twisting, linear_density=0.01)
    b.clamp(r, "start")
    centre = x[-2:].mean(axis=0) + [0, 0, -0.02]
    b.weld(r, "end", b.add_body(mass, disk_inertia(mass, radius, 0.01, axis=2), position=centre))
    world = b.build()
    return world, make_simulator(world, "der", projection=projection)


def crossings(t, y):
    i = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    return t[i] - y[i] * (t[i + 1] - t[i]) / (y[i + 1] - y[i])


@pytest.mark.parametrize("projection", ["fast", "symplectic"])
def test_torsion_pendulum_period_matches_closed_form(projection):
    """Straight isotropic rod clamped above, disk welded below: T = 2 pi sqrt(I L / (G J)), with L
    the distance between the midpoints of the clamped and welded edges (the twisting length of
    the discrete rod, Eq. 5)."""
    world, sim = hanging(twisting=0.5, projection=projection)
    s = sim.initial_state()
    set_body_velocity(sim, s, 0, None, [0, 0, 1.0])
    x = world.rods[0].rest_positions
    L = np.linalg.norm(x[-2:].mean(0) - x[:2].mean(0))
    T = 2 * np.pi * np.sqrt(world.bodies[0].inertia[2, 2] * L / 0.5)
    nchunk = 120
    per = int(1.6 * T / sim.dt / nchunk)
    t, wz = [], []
    for _ in range(nchunk):
        sim.advance(s, per)
        t.append(s.t)
        wz.append(body_world_angular_velocity(s, 0)[2])
    tc = crossings(np.array(t), np.array(wz))
    assert len(tc) >= 3
    period = 2 * np.mean(np.diff(tc))
    assert abs(period / T - 1) < 1e-3
    assert weld_error(sim, s) < 1e-12
    assert np.abs(s.vertex_x[:, :2]).max() < 1e-12  # a pure twist never bends the rod


def test_pendulum_at_rest_hangs_straight_and_welds_hold():
    world, sim = hanging()
    s = sim.initial_state()
    sim.advance(s, 3000)
    assert sim.work.rod_diag[:, 1].max() < 1e-10  # largest constraint violation after projection
    assert metrics.inextensibility(world, s) < 1e-10
    assert weld_error(sim, s) < 1e-10
    assert np.abs(s.vertex_x[:, :2]).max() < 1e-12
    assert np.abs(s.body_x[0, :2]).max() < 1e-12
    assert abs(s.body_q[0] @ s.body_q[0] - 1) < 1e-14


def test_swinging_pendulum_welds_and_energy():
    """A rod + disk pendulum started sideways: welds exact, constraints held, energy never grows
    (fast projection only dissipates, first order in dt)."""
    world, sim = hanging(n=8, L=0.3, g=9.81)
    s = sim.initial_state()
    e_rest = sim.energies(s)["total"]
    set_body_velocity(sim, s, 0, [0.3, 0.1, 0.0], [0.5, -0.3, 2.0])
    e0 = sim.energies(s)["total"] - e_rest  # energy above the hanging equilibrium
    es = []
    for _ in range(40):
        sim.advance(s, 200)
        es.append(sim.energies(s)["total"] - e_rest)
        assert weld_error(sim, s) < 1e-10
        assert sim.work.rod_diag[:, 1].max() < 1e-10
    es = np.array(es)
    assert es.max() < e0 * (1 + 1e-3)
    assert es.min() > e0 * (1 - 0.1)
    assert abs(np.linalg.norm(s.body_q[0]) - 1) < 1e-14


def _free_curved_rod(projection, dt_factor=0.5, rod_velocity=True):
    """Curved anisotropic rod (Newton twist) with a body welded to each end, no gravity, random
    velocities of the bodies and (``rod_velocity``) of the free vertices."""
    rng = np.random.default_rng(3)
    n = 9
    s_ = np.linspace(0, 1.2, n)
    x = np.stack([np.cos(s_), np.sin(s_), 0.1 * s_], 1)
    b = WorldBuilder()
    r = b.add_rod(x, bending=(0.02, 0.03), twisting=0.015, linear_density=0.05)
    b.weld(r, "start", b.add_body(0.2, (1e-3, 2e-3, 1.5e-3), position=x[:2].mean(0) + [0, 0, -0.05]))
    b.weld(r, "end", b.add_body(0.1, (5e-4, 4e-4, 6e-4), position=x[-2:].mean(0) + [0.03, 0, 0]))
    world = b.build()
    dt = make_simulator(world, "der", projection=projection).dt  # suggested_time_step
    sim = make_simulator(world, "der", projection=projection, dt=dt_factor * dt)
    s = sim.initial_state()
    s.vertex_v[...] = 0.2 * rng.standard_normal(x.shape) * rod_velocity
    V, w = rng.standard_normal((2, 3)) * 0.2, rng.standard_normal((2, 3))
    for k in range(2):
        set_body_velocity(sim, s, k, V[k], w[k])
    return world, sim, s


@pytest.mark.parametrize("projection", ["fast", "symplectic"])
def test_momentum_conserved_without_gravity(projection):
    """Linear momentum exact to round-off, angular momentum to first order in dt, energy never
    gained, welds exact."""
    world, sim, s = _free_curved_rod(projection)
    p0, L0 = sim.momentum(s)
    e0 = sim.energies(s)["total"]
    for _ in range(20):
        sim.advance(s, 100)
        assert np.linalg.norm(sim.momentum(s)[0] - p0) < 1e-12 * (1 + np.linalg.norm(p0))
    L1 = sim.momentum(s)[1]
    assert np.linalg.norm(L1 - L0) < 2e-2 * np.linalg.norm(L0)
    assert sim.energies(s)["total"] < e0 * (1 + 1e-3)
    assert weld_error(sim, s) < 1e-10


def test_rod_wrench_on_the_bodies_is_conservative():
    """The force and torque a rod hands to its bodies (elastic forces on the welded vertices plus
    the explicit twist torque -dE/dtheta_w t_w of Sec. 8.2) are minus the gradient of the rod's
    reduced energy: then the energy-keeping (RATTLE) step keeps the total energy of a curved
    anisotropic rod between two tumbling bodies (the rod at rest at first, so it bends and twists
    smoothly) within an oscillation that is first order in dt, like any symplectic Euler step.
    A wrench that is not such a gradient (a flipped sign, a missing twist torque) feeds energy in
    or out at a rate that does not shrink with dt. Measured: 1.19e-2 and 5.1e-3 of the kinetic
    energy at 0.5 and 0.25 x the suggested step."""
    drifts = []
    for f in (0.5, 0.25):
        world, sim, s = _free_curved_rod("symplectic", dt_factor=f, rod_velocity=False)
        sim.advance(s, 1)  # project the bodies' velocities onto the constraints first
        e0 = sim.energies(s)
        scale = e0["kinetic"]
        drift, elastic, nsteps = 0.0, 0.0, int(round(0.4 / sim.dt))
        for _ in range(200):
            sim.advance(s, max(1, nsteps // 200))
            e = sim.energies(s)
            drift = max(drift, abs(e["total"] - e0["total"]) / scale)
            elastic = max(elastic, e["elastic"] / scale)
        drifts.append(drift)
        assert elastic > 0.1  # the rod really bent and twisted (measured 0.26)
        assert weld_error(sim, s) < 1e-10
    assert drifts[0] < 2e-2, drifts
    assert 1.7 < drifts[0] / drifts[1] < 3.2, drifts  # first order in dt


def test_bad_input_names_the_parameter():
    from rodlab.world.world import Body

    b = WorldBuilder()
    r = b.add_rod(np.stack([np.linspace(0, 1, 6), np.zeros(6), np.zeros(6)], 1), bending=1.0, twisting=1.0,
                  linear_density=0.1)
    b.weld(r, 2, b.add_body(1.0, (1.0, 1.0, 1.0)))
    with pytest.raises(ModelError, match="weld edge"):
        b.build()
    with pytest.raises(ModelError, match="body mass"):
        Body(-1.0, np.eye(3), np.zeros(3), (1.0, 0.0, 0.0, 0.0))
    with pytest.raises(ModelError, match="positive definite"):
        Body(1.0, np.diag([1.0, -1.0, 1.0]), np.zeros(3), (1.0, 0.0, 0.0, 0.0))
    with pytest.raises(ModelError, match="projection must be one of fast, symplectic"):
        make_simulator(hanging()[0], "der", projection="shake")


def test_symplectic_projection_does_not_damp_a_taut_rod():
    """A rod hanging under a 0.5 kg body, kicked sideways: the paper's fast projection damps the
    transverse motion of the taut rod away (first-order projection dissipation, growing with
    the tension), the RATTLE step keeps the energy (docs/coupling.md)."""
    n, L = 21, 0.5
    x = np.zeros((n, 3))
    x[:, 2] = -np.linspace(0, L, n)
    b = WorldBuilder(gravity=(0, 0, -9.81))
    r = b.add_rod(x, bending=0.01, twisting=0.01, linear_density=0.02)
    b.clamp(r, "start")
    b.weld(r, "end", b.add_body(0.5, disk_inertia(0.5, 0.02, 0.01, axis=2), position=x[-2:].mean(0) + [0, 0, -0.01]))
    world = b.build()
    loss = {}
    for projection in ("fast", "symplectic"):
        sim = make_simulator(world, "der", projection=projection)
        s = sim.initial_state()
        s.vertex_v[2:, 0] = 0.1 * np.sin(np.pi * np.linspace(0, 1, n))[2:]
        set_body_velocity(sim, s, 0, [0.0, 0.0, 0.0])  # welded vertices move with the body (at rest)
        sim.advance(s, 1)
        e = sim.energies(s)
        e0, k0 = e["total"], e["kinetic"]
        sim.advance(s, int(1.0 / sim.dt))
        assert sim.work.rod_diag[:, 1].max() < 1e-10
        loss[projection] = (e0 - sim.energies(s)["total"]) / k0
    assert loss["fast"] > 0.5
    assert abs(loss["symplectic"]) < 0.03
