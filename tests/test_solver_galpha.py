"""GAlphaSimulator (generalized-alpha Cosserat rod) on the World protocol."""
import math

import numpy as np
import pytest

from rodlab.analytic.elastica import cantilever_elastica_tip
from rodlab.galpha.cantilever import run_cantilever
from rodlab.model import ModelError
from rodlab.solvers import UnsupportedFeature, make_simulator
from rodlab.world import WorldBuilder, shapes


class _Quiet:
    def update(self, *a):
        pass


def cantilever_world(n, E=1e7, g=9.81, damping=2.0, copies=1, tip_force=None):
    b = WorldBuilder(gravity=(0, 0, -g), damping=damping)
    for _ in range(copies):
        r = b.add_rod(shapes.straight(n, 1.0), E=E, G=E / 3, rho=1000.0, radius=0.01,
                      rest_d1=np.tile([0.0, 1.0, 0.0], (n - 1, 1)))
        b.clamp(r, "start")
        if tip_force is not None:
            b.add_point_force(r, n - 1, tip_force)
    return b.build()


def old_params(n, **kw):
    p = dict(n=n, length=1.0, radius=0.01, E=1e7, G=1e7 / 3, rho=1000.0, g=9.81, damping=2.0, dt=0.02, t_end=0.4,
             static=False, damping_scheme="implicit")
    p.update(kw)
    return p


def test_dynamic_cantilever_matches_first_wave_driver():
    n, dt = 16, 0.02
    old = run_cantilever(old_params(n), _Quiet())
    sim = make_simulator(cantilever_world(n), "galpha", dt=dt)
    state = sim.initial_state()
    sim.advance(state.copy(), 2)  # a warm-up on a copy changes nothing
    rep = sim.advance(state, 20)
    assert rep.success and rep.newton_iters > 0
    x_old = old.trajectory["x"][-1]
    assert np.abs(state.vertex_x - x_old).max() <= 1e-10 * np.abs(x_old).max()
    assert state.t == pytest.approx(0.4, rel=1e-12)
    # common fields: node frames' mid frames on the edges; velocities R u
    e = np.diff(state.vertex_x, axis=0)
    assert np.abs(np.einsum("ij,ij->i", e, state.edge_ref_d1)).max() < 1e-12
    assert np.allclose(np.linalg.norm(state.edge_ref_d1, axis=1), 1.0, atol=1e-12)
    assert np.abs(state.edge_ref_d1[:, 1] - 1.0).max() < 1e-12  # planar sag: m1 stays +y
    R, u = state.solver["R"], state.solver["x"][:, 0:3]
    assert np.allclose(state.vertex_v, np.einsum("jab,jb->ja", R, u), atol=0)
    assert np.abs(state.vertex_v[-1]).max() > 0.1


@pytest.mark.parametrize("E, tol", [(1e8, 0.01), (1e6, 0.01)])
def test_static_cantilever_matches_first_wave_and_elastica(E, tol):
    n = 50
    sim = make_simulator(cantilever_world(n, E=E), "galpha")
    state = sim.initial_state()
    rep = sim.solve_static(state)
    assert rep.success
    old = run_cantilever(old_params(n, E=E, G=E / 3, static=True), _Quiet())
    x_old = old.trajectory["x"][-1]
    assert np.abs(state.vertex_x - x_old).max() <= 1e-10 * np.abs(x_old).max()
    ref = cantilever_elastica_tip(1.0, E * math.pi * 1e-8 / 4, 1000 * math.pi * 1e-4 * 9.81)
    assert math.hypot(state.vertex_x[-1, 0] - ref[0], state.vertex_x[-1, 2] - ref[1]) < tol
    assert np.all(state.vertex_v == 0.0) and sim.elastic_energy(state) > 0


def test_tip_point_force_is_the_tip_load():
    EI = 1e8 * math.pi * 1e-8 / 4
    sim = make_simulator(cantilever_world(40, E=1e8, g=0.0, tip_force=(0.0, 0.0, -2.0 * EI)), "galpha")
    state = sim.initial_state()
    sim.solve_static(state)
    ref = cantilever_elastica_tip(1.0, EI, 0.0, tip_force=(0.0, -2.0 * EI))
    assert math.hypot(state.vertex_x[-1, 0] - ref[0], state.vertex_x[-1, 2] - ref[1]) < 2e-3
    assert state.vertex_x[-1, 2] < -0.3  # a large deflection, downward


def test_identical_rods_step_like_one_rod():
    one = make_simulator(cantilever_world(12), "galpha", dt=0.02)
    three = make_simulator(cantilever_world(12, copies=3), "galpha", dt=0.02)
    s1, s3 = one.initial_state(), three.initial_state()
    rep1, rep3 = one.advance(s1, 8), three.advance(s3, 8)
    for r in range(3):
        assert np.array_equal(s3.rod_x(r), s1.rod_x(0))
        assert np.array_equal(s3.rod_v(r), s1.rod_v(0))
        assert np.array_equal(s3.rod_ref_d1(r), s1.rod_ref_d1(0))
    assert rep3.newton_iters == 3 * rep1.newton_iters


@pytest.mark.parametrize("shape", ["helix", "arc"])
def test_curved_rod_at_rest_stays_at_rest(shape):
    b = WorldBuilder()
    if shape == "helix":
        pts = shapes.helix(30, 0.1, 0.05, 1.5)
    else:
        phi = np.linspace(0, 2.0, 30)
        pts = np.stack([0.3 * np.sin(phi), np.zeros(30), 0.3 * (1 - np.cos(phi))], 1)
    b.add_rod(pts, E=1e6, G=1e6 / 3, rho=1000.0, radius=0.005)
    b.clamp(0, "start")
    w = b.build()
    sim = make_simulator(w, "galpha", dt=0.01)
    state = sim.initial_state()
    # the rest frames are the world's to second order (the helix's Bishop frame has a turning
    # Darboux vector); positions are arcs: O(kappa^2 ds^2) inside the polyline
    assert np.abs(state.edge_ref_d1 - w.edge_rest_d1).max() < 5e-3
    kds = np.linalg.norm(sim.solvers[0].model.kappa_hat, axis=1).max() * sim.solvers[0].model.ds
    assert np.abs(state.vertex_x - w.vertex_rest_x).max() < 30 * kds**2 * 0.1
    assert sim.elastic_energy(state) == 0.0
    x0, d0, tw0 = state.vertex_x.copy(), state.edge_ref_d1.copy(), state.joint_ref_twist.copy()
    sim.advance(state, 10)
    assert np.abs(state.vertex_x - x0).max() < 1e-12
    assert np.abs(state.vertex_v).max() < 1e-10
    assert np.abs(state.edge_ref_d1 - d0).max() < 1e-12 and np.abs(state.joint_ref_twist - tw0).max() < 1e-12


def test_uniform_helix_starts_with_its_exact_edge_frames():
    """A helix with the principal normal as m1 has a uniform rest Darboux vector: galpha's edge
    frames are the world's up to the projection onto the chords."""
    pts = shapes.helix(40, 0.1, 0.05, 2.0)
    mid = 0.5 * (pts[1:] + pts[:-1])
    t = np.diff(pts, axis=0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    d1 = -mid * [1.0, 1.0, 0.0]
    d1 -= np.einsum("ij,ij->i", d1, t)[:, None] * t
    d1 /= np.linalg.norm(d1, axis=1)[:, None]
    b = WorldBuilder()
    b.add_rod(pts, E=1e6, G=1e6 / 3, rho=1000.0, radius=0.005, rest_d1=d1)
    b.pin(0, 0)
    w = b.build()
    sim = make_simulator(w, "galpha")
    kh = sim.solvers[0].model.kappa_hat
    assert np.abs(kh - kh[0]).max() < 1e-9 * np.abs(kh).max()
    assert abs(kh[0, 0]) < 1e-9 * np.abs(kh).max()  # bending about m2 (toward the axis) and twist only
    state = sim.initial_state()
    assert np.abs(state.edge_ref_d1 - w.edge_rest_d1).max() < 3e-3  # chord vs mid-frame tangent: O(ds^2)
    sim.advance(state, 5)  # pinned root, no gravity: nothing moves
    assert np.abs(state.vertex_v).max() < 1e-10


def test_tip_clamp_and_tip_pin_hold_the_tip():
    """The held tip's velocity is zero: its position integrated from the velocities stays put; the
    positions integrated along the frames (vertex_x) drift by the scheme's O(ds^2) (GA paper,
    Sec. 4.4), a quarter as much at twice the nodes."""
    drift = {}
    for n in (15, 30):
        phi = np.linspace(0, 2.0, n)
        arch = np.stack([0.3 * np.sin(phi), np.zeros(n), 0.3 * (1 - np.cos(phi))], 1)
        for hold in ("clamp", "pin"):
            b = WorldBuilder(gravity=(0, 0, -9.81), damping=1.0)
            b.add_rod(arch, E=1e5, G=1e5 / 3, rho=1000.0, radius=0.01)
            b.clamp(0, "start")
            b.clamp(0, "end") if hold == "clamp" else b.pin(0, n - 1)
            sim = make_simulator(b.build(), "galpha", dt=0.02)
            state = sim.initial_state()
            x0 = state.vertex_x.copy()
            sim.advance(state, 10)
            assert np.abs(state.solver["r_vel"][-1] - x0[-1]).max() < 1e-12
            assert state.vertex_x[n // 2, 2] != x0[n // 2, 2]  # the arch moves
            drift[n, hold] = np.linalg.norm(state.vertex_x[-1] - x0[-1])
    for hold in ("clamp", "pin"):
        assert drift[15, hold] < 0.015
        assert 3.0 < drift[15, hold] / drift[30, hold] < 5.5


def test_refusals_name_the_requirement_and_method():
    def world(pts=None, stiffness=False, **edit):
        b = WorldBuilder()
        pts = shapes.straight(8, 1.0) if pts is None else pts
        if stiffness:
            b.add_rod(pts, bending=1.0, twisting=1.0, linear_density=0.1)
        else:
            b.add_rod(pts, E=1e6, G=4e5, rho=1e3, radius=0.01)
        for e in edit.get("clamps", ["start"]):
            b.clamp(0, e)
        for v in edit.get("pins", []):
            b.pin(0, v)
        return b.build()

    uneven = shapes.straight(8, 1.0)
    uneven[3, 0] += 0.02
    cases = [(dict(pts=uneven), "equally spaced rest vertices"), (dict(stiffness=True), "rods given by stiffness"),
             (dict(clamps=[3]), "clamp of edge 3"), (dict(pins=[4]), "pin of vertex 4"),
             (dict(clamps=[]), "free start")]
    for kw, words in cases:
        with pytest.raises(UnsupportedFeature, match="galpha") as exc:
            make_simulator(world(**kw), "galpha")
        assert words in str(exc.value)
    with pytest.raises(ModelError, match="damping_scheme='exponential' is not available for method galpha"):
        make_simulator(world(), "galpha", damping_scheme="exponential")
    with pytest.raises(ModelError, match="rho_inf"):
        make_simulator(world(), "galpha", rho_inf=1.5)
    sim = make_simulator(world(), "galpha")
    foreign = sim.initial_state()
    foreign.method = "der"
    with pytest.raises(ModelError, match="galpha starts only from a galpha state"):
        sim.advance(foreign, 1)
    with pytest.raises(UnsupportedFeature, match="statics only"):
        make_simulator(world(clamps=["start", "end"]), "galpha").solve_static(foreign.copy())
