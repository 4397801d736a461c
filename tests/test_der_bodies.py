"""Rigid bodies welded to many rods inside the batched DER simulator (rodlab.der.bodies).

- two groups of rods and bodies in one world step exactly as each group does in a world of its
  own (the batched coupled step against its own single-rod path), a spinning body passing its
  twist torque (Bergou et al. 2008, Sec. 8.2) to its rod and back;
- a chain of straight rods through bodies projects exactly (<= 5 Newton iterations to 1e-12);
- two rods welded to one free body: linear momentum kept to round-off, angular momentum to the
  projection tolerance, energy never gained, welds held to round-off;
- a Y junction settled under gravity is in static balance: the virtual work of a rigid rotation
  of everything above a cut of the trunk (branches and body included) vanishes (the bending
  moment at the cut balances the weight of everything above it);
- a rod between two very heavy bodies behaves like a rod clamped at both ends.
"""
from __future__ import annotations

import numpy as np
import pytest

from rodlab.geometry.rotations import quat_to_matrix, rotvec_to_quat
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

STIFF = dict(bending=2e-3, twisting=2e-3, linear_density=0.05)


def _coupled_pair(gravity=(0.0, 0.0, -9.81), parts=(0, 1)):
    """A rod clamped at its start with a body welded to its end (part 0), and a free rod with a
    body at each end (part 1): both in one world, or one of them alone."""
    b = WorldBuilder(gravity=gravity)
    if 0 in parts:
        r0 = b.add_rod(shapes.straight(10, 0.3), **STIFF)
        b.clamp(r0, "start")
        b0 = b.add_body(0.01, (1e-5, 2e-5, 3e-5), position=(0.31, 0.0, 0.0))
        b.weld(r0, "end", b0)
    if 1 in parts:
        r1 = b.add_rod(shapes.straight(12, 0.4, start=(0.0, 1.0, 0.0), direction=(0.0, 0.6, 0.8)), **STIFF)
        b1 = b.add_body(0.02, (2e-5, 1e-5, 3e-5), position=(0.0, 0.99, -0.01))
        b2 = b.add_body(0.005, (1e-5, 1e-5, 1e-5), position=(0.0, 1.0 + 0.24, 0.32 + 0.01))
        b.weld(r1, "start", b1)
        b.weld(r1, "end", b2)
    return b.build()


def test_groups_in_one_world_step_as_they_do_alone():
    """The two groups of :func:`_coupled_pair` in one world (rods stepped in parallel, bodies
    in one serial pass) against each group in a world of its own: the same arithmetic per rod,
    so the same states to round-off over 600 steps of a body spinning at 30 rad/s about its
    rod's axis (the twist torque transfer of Sec. 8.2 acts both ways)."""
    world = _coupled_pair()
    sim = make_simulator(world, "der")
    state = sim.initial_state()
    state.body_w[0] = [30.0, 0.0, 0.0]
    alone = [make_simulator(_coupled_pair(parts=(k,)), "der", dt=sim.dt) for k in (0, 1)]
    states = [a.initial_state() for a in alone]
    states[0].body_w[0] = [30.0, 0.0, 0.0]
    import numba

    threads = numba.get_num_threads()
    for _ in range(4):
        sim.advance(state, 150)  # two coupled rods: two parallel chunks
        numba.set_num_threads(1)  # one rod alone: one chunk, no need for the parallel region's start and join
        try:
            for a, s in zip(alone, states):
                a.advance(s, 150)
        finally:
            numba.set_num_threads(threads)
        for r, s in ((0, states[0]), (1, states[1])):
            np.testing.assert_allclose(state.rod_x(r), s.rod_x(0), rtol=0, atol=1e-12)
            np.testing.assert_allclose(state.rod_v(r), s.rod_v(0), rtol=0, atol=1e-10)
            np.testing.assert_allclose(state.rod_theta(r), s.rod_theta(0), rtol=0, atol=1e-11)
        np.testing.assert_allclose(state.body_x, np.vstack([states[0].body_x, states[1].body_x]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(state.body_q, np.vstack([states[0].body_q, states[1].body_q]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(state.body_w, np.vstack([states[0].body_w, states[1].body_w]), rtol=0, atol=1e-9)
    e = sim.energies(state)
    assert e["total"] == pytest.approx(sum(a.energies(s)["total"] for a, s in zip(alone, states)), rel=1e-12)
    assert abs(state.body_w[0, 0]) > 1.0  # still spinning, the torque was transferred both ways
    assert abs(state.body_w[0, 0] - 30.0) > 1e-3  # ... and it was transferred: the spin changed
    assert state.body_x[1, 2] < -0.05  # the free rod fell
    assert sim.weld_error(state) < 1e-15


def _two_rods_on_a_body():
    b = WorldBuilder()
    r0 = b.add_rod(shapes.straight(9, 0.3, start=(-0.31, 0.0, 0.0)), **STIFF)
    r1 = b.add_rod(shapes.straight(9, 0.3, start=(0.01, 0.0, 0.0), direction=(0.0, 0.8, 0.6)), **STIFF)
    body = b.add_body(0.02, (2e-5, 3e-5, 4e-5), position=(0.0, -0.002, 0.003))
    b.weld(r0, "end", body)
    b.weld(r1, "start", body)
    return b.build()


def _spin_two_rods(dt_factor):
    world = _two_rods_on_a_body()
    sim = make_simulator(world, "der")
    sim = make_simulator(world, "der", dt=sim.dt * dt_factor)
    state = sim.initial_state()
    rng = np.random.default_rng(3)
    state.vertex_v[...] = rng.normal(0.0, 0.2, state.vertex_v.shape)
    state.body_v[0] = [0.1, -0.2, 0.3]
    state.body_w[0] = [2.0, -1.0, 3.0]
    return sim, state


def test_two_rods_on_a_free_body_keep_momentum_and_energy():
    sim, state = _spin_two_rods(1.0)
    p0, l0 = sim.momentum(state)
    e0 = sim.energies(state)["total"]
    # the first step projects the random velocities onto the constraints; measure from there
    sim.advance(state, 1)
    p1, l1 = sim.momentum(state)
    e1 = sim.energies(state)["total"]
    np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-14)
    assert e1 < e0
    energies, drift = [], 0.0
    for _ in range(10):
        sim.advance(state, 100)
        p, l = sim.momentum(state)
        np.testing.assert_allclose(p, p0, rtol=0, atol=1e-13)
        drift = max(drift, np.linalg.norm(l - l1) / np.linalg.norm(l1))
        energies.append(sim.energies(state)["total"])
        assert sim.weld_error(state) < 1e-15
    assert max(energies) <= e1 * (1 + 1e-9)  # fast projection only dissipates
    assert min(energies) > 0.5 * e1  # ... to first order in dt, not wildly
    assert sim.work.rod_diag[:, 1].max() <= 1e-12  # every rod projected to the tolerance
    assert 2 <= sim.work.rod_diag[:, 0].max() <= 8  # the rods iterated with the body, not for long
    # angular momentum drifts at first order in dt (the projection's constraint directions are
    # the iterate's), from 4 % here; half the step halves it (a wrong torque would not converge)
    sim2, state2 = _spin_two_rods(0.5)
    sim2.advance(state2, 2)
    l1b = sim2.momentum(state2)[1]
    drift2 = 0.0
    for _ in range(10):
        sim2.advance(state2, 200)
        drift2 = max(drift2, np.linalg.norm(sim2.momentum(state2)[1] - l1b) / np.linalg.norm(l1b))
    assert drift < 0.05 and 0.4 < drift2 / drift < 0.65, (drift, drift2)


def _rotate_above(sim, state, rod, vertex, rotvec, above_rods, above_bodies):
    """A copy of ``state`` with every vertex of ``rod`` past ``vertex``, every rod in
    ``above_rods`` and every body in ``above_bodies`` rotated rigidly about vertex ``vertex``
    of ``rod`` (positions, reference directors and body orientations): a motion every
    constraint allows."""
    s = state.copy()
    c = state.rod_x(rod)[vertex].copy()
    R = quat_to_matrix(rotvec_to_quat(np.asarray(rotvec, dtype=float)))
    x = s.rod_x(rod)
    x[vertex + 1:] = (x[vertex + 1:] - c) @ R.T + c
    d1 = s.rod_ref_d1(rod)
    d1[vertex:] = d1[vertex:] @ R.T  # edges vertex .. (edge vertex joins vertex and vertex + 1)
    for r in above_rods:
        s.rod_x(r)[...] = (s.rod_x(r) - c) @ R.T + c
        s.rod_ref_d1(r)[...] = s.rod_ref_d1(r) @ R.T
    dq = rotvec_to_quat(np.asarray(rotvec, dtype=float))
    for b in above_bodies:
        s.body_x[b] = R @ (s.body_x[b] - c) + c
        q = s.body_q[b]
        w0, x0, y0, z0 = dq
        s.body_q[b] = [w0 * q[0] - x0 * q[1] - y0 * q[2] - z0 * q[3], w0 * q[1] + x0 * q[0] + y0 * q[3] - z0 * q[2],
                       w0 * q[2] - x0 * q[3] + y0 * q[0] + z0 * q[1], w0 * q[3] + x0 * q[2] - y0 * q[1] + z0 * q[0]]
    return s


def test_y_junction_settles_into_static_balance():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=30.0)
    stiff = dict(bending=2e-2, twisting=2e-2, linear_density=0.05)
    trunk = b.add_rod(shapes.straight(8, 0.2, direction=(0.0, 0.0, 1.0)), **stiff)
    b.clamp(trunk, "start")
    body = b.add_body(0.01, (2e-6, 2e-6, 2e-6), position=(0.0, 0.0, 0.21))
    b.weld(trunk, "end", body)
    left = b.add_rod(shapes.straight(7, 0.15, start=(-0.01, 0.0, 0.22), direction=(-0.6, 0.0, 0.8)), **stiff)
    right = b.add_rod(shapes.straight(5, 0.1, start=(0.01, 0.0, 0.22), direction=(0.8, 0.3, 0.5)), **stiff)
    b.weld(left, "start", body)
    b.weld(right, "start", body)
    world = b.build()
    sim = make_simulator(world, "der")
    state = sim.initial_state()
    sim.advance(state, 4000)
    e = sim.energies(state)
    assert e["kinetic"] < 1e-12 * abs(e["gravity"])  # settled
    assert sim.weld_error(state) < 1e-15
    assert state.body_x[0, 0] < -0.001 and state.body_x[0, 1] > 0.0003  # leans toward the longer, heavier left branch
    state.vertex_v[...] = 0.0

    def potential(s):
        en = sim.energies(s)
        return en["elastic"] + en["gravity"]

    weight_above = 9.81 * (sim.body_model.vertex_free_mass[world.rod_vertices(trunk)][4:].sum() + world.bodies[0].mass
                           + sim.body_model.vertex_free_mass[world.rod_vertices(left)].sum()
                           + sim.body_model.vertex_free_mass[world.rod_vertices(right)].sum())
    lever = 0.2
    for cut in (2, 5):
        for axis in np.eye(3)[:2]:
            d = 1e-6
            plus = potential(_rotate_above(sim, state, trunk, cut, d * axis, (left, right), (0,)))
            minus = potential(_rotate_above(sim, state, trunk, cut, -d * axis, (left, right), (0,)))
            moment = (plus - minus) / (2 * d)
            # balance: the generalized force of the rotation vanishes, against the weight's moment scale
            assert abs(moment) < 2e-3 * weight_above * lever, (cut, axis, moment)
    # and the gravity part alone is not small: the test sees a wrong sign
    gravity_only = []
    for sgn in (1, -1):
        s = _rotate_above(sim, state, trunk, 2, sgn * 1e-6 * np.eye(3)[1], (left, right), (0,))
        gravity_only.append(sim.energies(s)["gravity"])
    assert abs(gravity_only[0] - gravity_only[1]) / 2e-6 > 0.02 * weight_above * lever


def test_heavy_bodies_clamp_the_rod():
    """A half-circle arc between two bodies of 1e9 kg, pushed by a point force, moves like the
    same arc clamped at both ends (no gravity: heavy bodies would fall with it). (A straight rod
    would not do: inextensible and held at both ends it is locked to first order.)"""
    phi = np.linspace(0.0, np.pi, 13)
    arc = np.stack([0.15 * np.cos(phi), 0.15 * np.sin(phi), np.zeros_like(phi)], axis=1)

    def pushed(heavy):
        b = WorldBuilder()
        r = b.add_rod(arc, **STIFF)
        if heavy:
            b0 = b.add_body(1e9, (1e6, 1e6, 1e6), position=arc[0] + (0.0, -0.01, 0.0))
            b1 = b.add_body(1e9, (1e6, 1e6, 1e6), position=arc[-1] + (0.0, -0.01, 0.0))
            b.weld(r, "start", b0)
            b.weld(r, "end", b1)
        else:
            b.clamp(r, "start")
            b.clamp(r, "end")
        b.add_point_force(r, 6, (0.0, 0.02, -0.01))
        return make_simulator(b.build(), "der", dt=2e-4)

    a, c = pushed(True), pushed(False)
    sa, sc = a.initial_state(), c.initial_state()
    for _ in range(4):
        a.advance(sa, 250)
        c.advance(sc, 250)
        np.testing.assert_allclose(sa.vertex_x, sc.vertex_x, rtol=0, atol=1e-9)
        np.testing.assert_allclose(sa.edge_theta, sc.edge_theta, rtol=0, atol=1e-7)
    assert np.abs(sc.vertex_x - arc).max() > 1e-3  # it moved


def test_refusals_and_energy_bookkeeping():
    from rodlab.solvers.base import UnsupportedFeature

    world = _two_rods_on_a_body()
    sim = make_simulator(world, "der")
    state = sim.initial_state()
    with pytest.raises(UnsupportedFeature, match="no static solve for rigid bodies"):
        sim.solve_static(state)
    b = WorldBuilder()
    r = b.add_rod(shapes.straight(6, 0.3), stretching=1e3, **STIFF)
    b.weld(r, "end", b.add_body(0.01, (1e-5, 1e-5, 1e-5), position=(0.31, 0.0, 0.0)))
    with pytest.raises(UnsupportedFeature, match="inextensible rods only"):
        make_simulator(b.build(), "der", inextensible=False)
    state.body_v[0] = [0.0, 0.0, 1.0]
    e = sim.energies(state)
    assert e["kinetic_bodies"] == pytest.approx(0.5 * 0.02 * 1.0)
    assert e["kinetic"] == pytest.approx(e["kinetic_rods"] + e["kinetic_bodies"])


def test_chain_of_straight_rods_through_bodies_projects_exactly():
    """Three collinear rods joined end to end by two bodies (the hard case for a rod-by-rod
    iteration: each straight rod between two welds is locked to first order, so only the
    coupled system is well posed): every step projects to 1e-12 within 5 Newton iterations,
    keeps linear momentum to round-off and the welds exact."""
    b = WorldBuilder()
    rods = [b.add_rod(shapes.straight(12, 0.3, start=(0.31 * k, 0.0, 0.0)), **STIFF) for k in range(3)]
    for k in range(2):
        body = b.add_body(0.01, (1e-6, 2e-6, 3e-6), position=(0.31 * k + 0.305, 0.0, 0.0))
        b.weld(rods[k], "end", body)
        b.weld(rods[k + 1], "start", body)
    world = b.build()
    sim = make_simulator(world, "der")
    state = sim.initial_state()
    rng = np.random.default_rng(5)
    state.vertex_v[...] = rng.normal(0.0, 0.2, state.vertex_v.shape)
    state.body_v[...] = rng.normal(0.0, 0.2, (2, 3))
    state.body_w[...] = rng.normal(0.0, 1.0, (2, 3))
    sim.advance(state, 1)
    p0 = sim.momentum(state)[0]
    iters = []
    for _ in range(30):
        sim.advance(state, 10)
        iters.append(sim.work.rod_diag[:, 0].max())
        assert sim.work.rod_diag[:, 1].max() <= 1e-12
        np.testing.assert_allclose(sim.momentum(state)[0], p0, rtol=0, atol=1e-13)
        assert sim.weld_error(state) < 1e-15
    assert 2 <= max(iters) <= 5, iters
    lengths = np.linalg.norm(np.diff(state.rod_x(1), axis=0), axis=1)
    np.testing.assert_allclose(lengths, world.rods[1].rest_lengths, rtol=1e-12)
    assert np.abs(state.rod_x(1)[:, 1:]).max() > 1e-2  # it bent: not a trivial straight motion
