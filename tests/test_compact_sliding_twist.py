"""Compact method: sliding clamps, clamps of the last edge turned at a prescribed rate, pins away
from the root (rodlab.compact.end_clamps), checked against closed-form mechanics."""
import math

import numpy as np
import pytest

from rodlab.compact.energies import darboux
from rodlab.model import twist_about_axis
from rodlab.solvers import UnsupportedFeature, make_simulator
from rodlab.world import WorldBuilder, shapes

L, N, RADIUS, E, G, RHO = 1.0, 11, 0.01, 1e6, 4e5, 1e3
GJ = G * math.pi * RADIUS**4 / 2


def _rod(builder, n=N):
    return builder.add_rod(shapes.straight(n, L), E=E, G=G, rho=RHO, radius=RADIUS)


@pytest.mark.parametrize("end", ["start", "end", "both"])
def test_sliding_clamp_accelerates_at_force_over_mass(end):
    """A straight rod in sliding clamps (axis x) pushed along x by 2F (plus a force across the axis
    at a clamped vertex, which the clamp takes) translates rigidly with v_x = 2 F t / M: implicit
    Euler is exact for a constant force."""
    F = 0.5
    b = WorldBuilder()
    r = _rod(b)
    for which in (("start", "end") if end == "both" else (end,)):
        b.clamp(r, which, slide_axis=(1.0, 0.0, 0.0))
    clamped_vertex = 0 if end != "end" else N - 2
    b.add_point_force(r, clamped_vertex, (F, 3.0 * F, -2.0 * F))
    b.add_point_force(r, -1 if end != "end" else 0, (F, 0.0, 0.0))
    world = b.build()
    assert "sliding clamps" in world.features()
    sim = make_simulator(world, "compact", dt=0.01, tol=1e-12)
    state = sim.initial_state()
    rep = sim.advance(state, 10)
    assert rep.success
    M = float(np.sum(world.rods[0].vertex_masses))
    expected = 2.0 * F * state.t / M
    np.testing.assert_allclose(state.vertex_v[:, 0], expected, rtol=1e-7)  # PCG stops at 1e-7 absolute
    np.testing.assert_allclose(state.vertex_v[:, 1:], 0.0, atol=1e-7 * expected)
    np.testing.assert_allclose(state.vertex_x[:, 1:], 0.0, atol=1e-8)
    # the clamped frames (and every other) kept their orientation: d1 unchanged
    np.testing.assert_allclose(state.edge_ref_d1, np.broadcast_to(state.edge_ref_d1[0], state.edge_ref_d1.shape),
                               atol=1e-7)
    # x_n = dt^2 a n (n + 1) / 2 for backward Euler from rest
    a, n, dt = expected / state.t, 10, 0.01
    np.testing.assert_allclose(state.vertex_x[0, 0], a * dt * dt * n * (n + 1) / 2, rtol=1e-7)


@pytest.mark.parametrize("theta", [0.3, -0.2])
def test_twisted_rod_energy_and_end_torque(theta):
    """A straight rod clamped at its first edge, its last edge turned by ``theta`` about the axis
    (a clamp of the last edge with a prescribed motion, reached at t = 0.003 s), settles to the
    uniform twist: energy GJ theta^2 / (2 L') and end torque GJ theta / L', L' = L - l the distance
    between the clamped edges' midpoints (the twisting hinges span it). Tolerance 3e-4: the discrete
    Darboux twist of a hinge turned by dphi = theta / 9 differs from dphi / lbar by O(dphi^2 / 24)
    (energy: 9e-5 at theta = 0.3)."""
    b = WorldBuilder()
    r = _rod(b)
    b.clamp(r, "start")
    b.clamp(r, "end", motion=twist_about_axis((1.0, 0.0, 0.0), math.copysign(100.0, theta), total=theta))
    sim = make_simulator(b.build(), "compact", dt=0.05, tol=1e-12)
    state = sim.initial_state()
    sim.advance(state, 40)
    l = L / (N - 1)
    Lp = L - l
    np.testing.assert_allclose(sim.elastic_energy(state), GJ * theta**2 / (2 * Lp), rtol=3e-4)
    u = np.empty((N - 2, 3))
    darboux(np.ascontiguousarray(state.solver["q"]), np.full(N - 2, l), u)
    np.testing.assert_allclose(GJ * u[:, 2], GJ * theta / Lp, rtol=3e-4)  # every hinge, the end one included
    np.testing.assert_allclose(state.vertex_x[:, 1:], 0.0, atol=1e-9)  # stays straight
    np.testing.assert_allclose(state.vertex_x[-1, 0], L, atol=1e-9)


def test_pinned_far_end_and_interior_pin_hold():
    """Pins away from the root (equality rows): an arch (half circle in the x-z plane) pinned at
    both feet and at its top, under gravity, keeps those vertices in place to 1e-9 m while its
    two halves sag, as mirror images of each other."""
    phi = np.linspace(math.pi, 0.0, 21)
    pts = np.stack([0.3 * np.cos(phi), np.zeros(21), 0.3 * np.sin(phi)], axis=1)
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    r = b.add_rod(pts, E=E, G=G, rho=RHO, radius=RADIUS)
    for v in (0, 10, -1):
        b.pin(r, v)
    sim = make_simulator(b.build(), "compact", dt=0.01, tol=1e-10)
    state = sim.initial_state()
    x0 = state.vertex_x.copy()
    sim.advance(state, 15)
    np.testing.assert_allclose(state.vertex_x[[0, 10, 20]], x0[[0, 10, 20]], atol=1e-9)
    assert np.linalg.norm(state.vertex_x[5] - x0[5]) > 1e-4
    np.testing.assert_allclose(state.vertex_x[5] * [-1, 1, 1], state.vertex_x[15], atol=1e-6)


def test_moving_far_clamp_matches_moving_root_clamp():
    """A rod clamped at its first edge and turned/shifted there equals, mirrored, the rod clamped at
    its last edge with the mirrored motion: the far clamp (rows + Dirichlet frame) and the root
    clamp (Dirichlet) hold the same condition."""
    def shift(sign):
        def motion(t):
            return np.eye(3), np.array([0.0, 0.0, 0.05 * min(t / 0.05, 1.0)])
        return motion

    out = []
    for end in ("start", "end"):
        pts = shapes.straight(N, L) if end == "start" else shapes.straight(N, L)[::-1].copy()
        b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
        b.add_rod(pts, E=E, G=G, rho=RHO, radius=RADIUS)
        b.clamp(0, end, motion=shift(1))
        sim = make_simulator(b.build(), "compact", dt=0.01, tol=1e-11, newton_iters=50)
        state = sim.initial_state()
        sim.advance(state, 10)
        out.append(state.vertex_x if end == "start" else state.vertex_x[::-1])
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)
    assert out[0][-1, 2] < 0.0


def test_bdf2_is_refused_with_sliding_clamps():
    b = WorldBuilder()
    r = _rod(b)
    b.clamp(r, "start", slide_axis=(1.0, 0.0, 0.0))
    with pytest.raises(UnsupportedFeature, match="integrator='bdf2' only without clamps or pins away from the root"):
        make_simulator(b.build(), "compact", integrator="bdf2")
    b = WorldBuilder()
    r = _rod(b)
    b.clamp(r, "start", slide_axis=(0.0, 0.0, 0.0))
    with pytest.raises(Exception, match="slide_axis"):
        make_simulator(b.build(), "compact")
