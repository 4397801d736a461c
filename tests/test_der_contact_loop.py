"""The compiled contact loop of explicit DER (rodlab.der.contact_loop; docs/contact-der.md)."""
import numpy as np

from rodlab.contact.broadphase import grid_pairs
from rodlab.der.contact_loop import grid_pairs_serial
from rodlab.scenes.der_contact_scenes import chain_world
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Plane


def test_serial_broadphase_gives_the_contact_package_pairs_in_its_order():
    rng = np.random.default_rng(3)
    n = 400
    lo = rng.uniform(0.0, 1.0, (n, 3))
    hi = lo + rng.uniform(0.0, 0.15, (n, 3))
    edge_rod = np.repeat(np.arange(4), n // 4).astype(np.int64)
    edge_local = np.tile(np.arange(n // 4), 4).astype(np.int64)
    counts = np.full(4, n // 4, dtype=np.int64)
    closed = np.array([False, True, False, True])
    skip = np.array([1, 2, 1, 3], dtype=np.int64)
    ref = grid_pairs(lo, hi, edge_rod, edge_local, counts, closed, skip)
    got = grid_pairs_serial(lo, hi, edge_rod, edge_local, counts, closed, skip)
    assert ref.shape[0] > 100
    np.testing.assert_array_equal(got, ref)


def _lengths_and_rates(world, state):
    """Largest relative length error and largest |d/dt |e|^2| / |e|^2 over every edge."""
    x, v = state.vertex_x, state.vertex_v
    e = x[1:] - x[:-1]
    de = v[1:] - v[:-1]
    rest = world.edge_rest_length
    lengths = np.linalg.norm(e, axis=1)
    return float(np.abs(lengths / rest - 1.0).max()), float(np.abs(2.0 * np.sum(e * de, axis=1) / rest**2).max())


def test_symplectic_projection_is_kept_through_the_contact_response():
    r = 0.002
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    # a tilted rod hitting a plane at 1 m/s: the impulses move its lower end only
    pts = shapes.straight(9, 0.1, start=(0.0, 0.0, 0.0025), direction=(0.8, 0.0, 0.6))
    b.add_rod(pts, E=1e6, G=4e5, rho=1000.0, radius=r)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), friction=0.3)
    world = b.build()
    worst = {}
    for projection in ("symplectic", "fast"):
        sim = make_simulator(world, "der", dt=2e-4, projection=projection, energy_check=False)
        st = sim.initial_state()
        st.vertex_v[:, 2] = -1.0
        rates, lengths, touching = [], [], 0
        for _ in range(20):
            rep = sim.advance(st, 1)
            touching += rep.contacts_max > 0
            le, ra = _lengths_and_rates(world, st)
            lengths.append(le)
            rates.append(ra)
        assert touching >= 10 and rep.contact_min_gap >= -0.01 * r
        assert max(lengths) <= 1e-9
        worst[projection] = max(rates)
    # RATTLE: velocities on the constraints' tangent space after the contact correction too
    # (fast projection leaves a rate of the order of the correction over h)
    assert worst["symplectic"] <= 1e-8
    assert worst["fast"] >= 1e3 * worst["symplectic"]


def test_a_call_split_in_pieces_gives_the_same_steps():
    world = chain_world(3, 12, t_hold=1.0)   # the clamps hold still over the test
    sim = make_simulator(world, "der", dt=5e-4, energy_check=False)
    a = sim.initial_state()
    b = a.copy()
    ra = sim.advance(a, 200)
    sums = 0
    for _ in range(4):
        sums += sim.advance(b, 50).contacts_sum
    assert ra.contacts_sum > 0 and ra.contacts_sum == sums
    np.testing.assert_array_equal(a.vertex_x, b.vertex_x)
    np.testing.assert_array_equal(a.vertex_v, b.vertex_v)
    np.testing.assert_array_equal(a.edge_theta, b.edge_theta)
    assert a.t == b.t
