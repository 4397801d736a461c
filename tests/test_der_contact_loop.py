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


def _resting_rod_world(friction):
    """A straight rod lying on a tilted plane (10 degrees), 20 vertices, gravity: resting rows on every segment
    (its closest points and both endpoints), redundant and frictional."""
    r = 0.002
    tilt = np.radians(10.0)
    normal = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(20, 0.2, start=tuple(r * normal), direction=(np.cos(tilt), 0.0, -np.sin(tilt))), E=1e6,
              G=4e5, rho=1000.0, radius=r)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), tuple(normal)), friction=friction)
    return b.build()


def _contact_sim(world, dt, **flags):
    sim = make_simulator(world, "der", dt=dt, energy_check=False)
    for k, on in flags.items():
        if k == "pair_skin":
            sim._contact.cfg[6] = on * sim._contact.radius_min
        else:
            sim._contact.icfg[{"warm": 5, "recheck": 6}[k]] = int(on)
    return sim


def test_warm_start_reaches_the_cold_start_impulses_on_a_resting_rod_in_fewer_sweeps():
    world = _resting_rod_world(0.5)                   # tan 10 deg = 0.18 < 0.5: static friction holds it
    states, sweeps = {}, {}
    for warm in (False, True):
        sim = _contact_sim(world, 5e-4, warm=warm)
        st = sim.initial_state()
        sim.advance(st, 100)                          # settles onto the plane
        before = sim._contact.stats.copy()
        rep = sim.advance(st, 200)
        sweeps[warm] = (sim._contact.stats - before)[3]
        assert rep.contacts_max >= 19 and rep.contact_min_gap >= -1e-3 * 0.002
        states[warm] = st
    assert "der_contact_warm" in states[True].solver and states[True].solver["der_contact_warm"][0, 0] >= 19
    # the same fixed point: positions and velocities agree to the iteration's tolerance (1e-10 m/s, 5e-4 s steps)
    np.testing.assert_allclose(states[True].vertex_x, states[False].vertex_x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(states[True].vertex_v, states[False].vertex_v, rtol=0, atol=1e-10)
    assert sweeps[True] <= 0.5 * sweeps[False]        # 1 sweep per step against 3 (measured)


def test_warm_start_lives_in_the_state():
    """A step depends on its state only: another state stepped in between on the same simulator changes nothing."""
    world = chain_world(3, 12, t_hold=1.0)
    sim = _contact_sim(world, 5e-4, warm=True)
    a = sim.initial_state()
    sim.advance(a, 115)
    assert a.solver["der_contact_warm"][0, 0] > 0      # the next step starts warm
    b, other = a.copy(), sim.initial_state()
    sim.advance(a, 15)
    sim.advance(other, 120)                            # leaves other impulses in the simulator's reach
    sim.advance(b, 15)
    np.testing.assert_array_equal(a.vertex_x, b.vertex_x)
    np.testing.assert_array_equal(a.vertex_v, b.vertex_v)


def test_round_one_check_on_round_zero_pairs_gives_the_full_detection_result():
    world = chain_world(3, 12, t_hold=1.0)
    out = {}
    for recheck in (False, True):
        sim = _contact_sim(world, 5e-4, recheck=recheck)
        st = sim.initial_state()
        rep = sim.advance(st, 200)
        out[recheck] = (st, rep, sim._contact.stats.copy())
    (sa, ra, ca), (sb, rb, cb) = out[False], out[True]
    assert ca[4] == 0 and cb[4] > 50                 # the shortcut was taken ...
    assert cb[0] < ca[0] - 50                         # ... in place of that many detections
    np.testing.assert_array_equal(sa.vertex_x, sb.vertex_x)
    np.testing.assert_array_equal(sa.vertex_v, sb.vertex_v)
    assert ra.contacts_sum == rb.contacts_sum and ra.contact_min_gap == rb.contact_min_gap


def test_kept_pair_list_gives_the_grid_pairs_in_their_order_while_segments_move():
    from rodlab.contact.geometry import from_arrays
    from rodlab.der.contact_loop import listed_pairs

    rng = np.random.default_rng(7)
    # four rods of 40 vertices crumpled into one box: many non-neighbour pairs, a closed one among them
    nv = 40
    starts = np.arange(0, 4 * nv + 1, nv, dtype=np.int64)
    closed = np.array([False, True, False, False])
    g = from_arrays(starts, closed, 0.004, skip=2)
    x = np.cumsum(rng.normal(0.0, 0.01, (4 * nv, 3)), axis=0) % 0.1
    margin, skin = 0.002, 0.004
    near, near_x = np.zeros((3, 2), dtype=np.int64), np.zeros((4 * nv, 3))
    reused = 0
    for step in range(60):
        x = x + rng.normal(0.0, 4e-4, x.shape)        # a random walk: the list is kept for a few steps
        a, b = x[g.edge_v0], x[g.edge_v1]
        lo = np.minimum(a, b) - (g.edge_radius + 0.5 * margin)[:, None]
        hi = np.maximum(a, b) + (g.edge_radius + 0.5 * margin)[:, None]
        builds = near[0, 1]
        got, near = listed_pairs(lo, hi, x, skin, g, near_x, near)
        reused += near[0, 1] == builds
        ref = grid_pairs_serial(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
        assert ref.shape[0] > 20
        np.testing.assert_array_equal(got, ref)
    assert reused >= 30 and near[0, 1] >= 3           # kept most steps, rebuilt when needed


def test_kept_pair_list_leaves_the_steps_bitwise_unchanged():
    world = chain_world(3, 12, t_hold=1.0)
    out = {}
    for skin in (0.0, 1.0):
        sim = _contact_sim(world, 5e-4, pair_skin=skin)
        st = sim.initial_state()
        rep = sim.advance(st, 200)
        out[skin] = (st, rep, sim._contact.stats.copy(), int(sim._contact.near[0, 1]))
    (sa, ra, ca, builds_a), (sb, rb, cb, builds_b) = out[0.0], out[1.0]
    assert builds_a == 0 and 0 < builds_b < cb[0] / 4  # the list was used, and rebuilt for few detections
    np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(sa.vertex_x, sb.vertex_x)
    np.testing.assert_array_equal(sa.vertex_v, sb.vertex_v)
    assert ra.contacts_sum == rb.contacts_sum and ra.contact_min_gap == rb.contact_min_gap


def test_compiled_rod_min_gap_is_the_contact_package_min_gap():
    from rodlab.contact.detect import min_gap
    from rodlab.contact.geometry import from_arrays
    from rodlab.der.contact_loop import rod_min_gap

    rng = np.random.default_rng(11)
    starts = np.array([0, 30, 55, 80], dtype=np.int64)
    g = from_arrays(starts, np.array([False, True, False]), rng.uniform(0.001, 0.003, 78), skip=2)
    for scale in (0.05, 0.3, 3.0, 30.0):             # crossing rods, then ever farther apart
        x = np.cumsum(rng.normal(0.0, 0.01, (80, 3)), axis=0) + rng.normal(0.0, scale, 3) * (np.arange(80) >= 55)[:, None]
        assert rod_min_gap(x, g) == min_gap(g, x, obstacles=False)
    lone = from_arrays(np.array([0, 3], dtype=np.int64), np.array([False]), 0.001)   # only neighbours: none
    assert rod_min_gap(np.eye(3), lone) == min_gap(lone, np.eye(3), obstacles=False) == np.inf


def test_one_call_gives_the_steps_of_single_step_calls():
    """The compiled loop keeps each rod's geometry between the steps of a call unless the response touched
    the rod (rodlab.der.contact_steps); a call of one step always recomputes it: bitwise the same steps.
    The chain's end clamps are driven (held still until t_hold), so the per-step clamp inputs are indexed too."""
    world = chain_world(3, 12, t_hold=1.0)
    sim = make_simulator(world, "der", dt=5e-4, energy_check=False)
    a = sim.initial_state()
    b = a.copy()
    ra = sim.advance(a, 150)
    sums = sum(sim.advance(b, 1).contacts_sum for _ in range(150))
    assert ra.contacts_sum > 0 and ra.contacts_sum == sums
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.t == b.t


def test_a_rod_under_the_energy_check_steps_alike_in_one_call_and_in_single_steps():
    """An undriven rod under the energy check takes the serial driver's own step (its call cache) inside the
    compiled loop: one call and single-step calls agree bitwise, resting on a plane with friction."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(12, 0.11, start=(0.0, 0.0, 0.003), direction=(1.0, 0.0, 0.0)), E=1e6, G=4e5, rho=1000.0,
              radius=0.002)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), friction=0.3)
    world = b.build()
    sim = make_simulator(world, "der", dt=5e-4)
    a = sim.initial_state()
    c = a.copy()
    ra = sim.advance(a, 120)
    sums = sum(sim.advance(c, 1).contacts_sum for _ in range(120))
    assert ra.contacts_sum > 0 and ra.contacts_sum == sums
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
        np.testing.assert_array_equal(getattr(a, name), getattr(c, name))


def test_pair_order_is_the_argsort_of_lower_and_higher_rank():
    # listed_pairs' counting sort by the lower box rank, then insertion by the higher, against the
    # np.argsort of lower * nb + higher it replaced: distinct pairs, so one sorting permutation
    from rodlab.der.contact_loop import _pair_order

    rng = np.random.default_rng(7)
    for nb, m in ((2, 1), (5, 10), (40, 300), (300, 900)):
        flat = rng.choice(nb * nb, size=min(m, nb * (nb - 1) // 2), replace=False)
        i, j = flat // nb, flat % nb
        keep = i != j
        i, j = i[keep], j[keep]
        key = np.minimum(i, j) * nb + np.maximum(i, j)
        _, first = np.unique(key, return_index=True)  # distinct unordered pairs
        out = np.stack([i[first], j[first]], axis=1).astype(np.int64)
        rank = rng.permutation(nb).astype(np.int64)  # box id -> rank
        ri, rj = rank[out[:, 0]], rank[out[:, 1]]
        want = np.argsort(np.minimum(ri, rj) * nb + np.maximum(ri, rj))
        got = _pair_order(out, out.shape[0], rank, nb)
        assert np.array_equal(got, want)


def test_dormant_rows_and_the_bounded_recheck_leave_the_steps_bitwise_unchanged():
    """Rows left out of the sweeps (``dormant_reach``) give the same steps as sweeping every row (the
    redone solves of failed proofs: tests/test_der_contact_newton.py)."""
    world = chain_world(3, 12, t_hold=1.0)
    out = {}
    for reach in (0.0, 8.0):
        sim = _contact_sim(world, 5e-4)
        sim._contact.cfg[7] = reach
        st = sim.initial_state()
        rep = sim.advance(st, 200)
        out[reach] = (st, rep, sim._contact.stats.copy())
    sa, ra, ca = out[0.0]
    assert ca[7] == 0 and out[8.0][2][7] > 50
    for reach in (8.0,):
        sb, rb, cb = out[reach]
        np.testing.assert_array_equal(ca[:7], cb[:7])
        np.testing.assert_array_equal(sa.vertex_x, sb.vertex_x)
        np.testing.assert_array_equal(sa.vertex_v, sb.vertex_v)
        assert ra.contacts_sum == rb.contacts_sum and ra.contact_min_gap == rb.contact_min_gap
