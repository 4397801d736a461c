"""der-implicit barrier contact and friction (IPC; rodlab.der_implicit.contact, contact_step)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rodlab.contact import detect, from_world, min_gap
from rodlab.der_implicit.contact import (SEG_FIXPT, SEG_FIXSEG, SEG_SEG, VERT_FIXTRI, VERT_PLANE, barrier,
                                         barrier_eval, friction_eval, gap_derivatives)
from rodlab.model import ModelError
from rodlab.scenes.friction_scenes import capstan_slip, fit_acceleration, incline_theory, incline_world
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

RNG = np.random.default_rng(7)
TRI = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
# one configuration per distance type: (name, primitive, points (4, 3))
CASES = [
    ("edge-edge", SEG_SEG, np.array([[0, 0, 0], [1, 0, 0], [0.5, -0.5, 0.3], [0.4, 0.5, 0.35]], float)),
    ("point-edge", SEG_SEG, np.array([[0, 0, 0], [1, 0, 0], [1.3, -0.5, 0.3], [1.4, 0.5, 0.35]], float)),
    ("point-point", SEG_SEG, np.array([[0, 0, 0], [1, 0, 0], [1.3, 0.2, 0.3], [2.4, 0.5, 0.35]], float)),
    ("parallel", SEG_SEG, np.array([[0, 0, 0], [1, 0, 0], [0.2, 0.1, 0.3], [0.9, 0.1, 0.3]], float)),
    ("segment-fixed segment", SEG_FIXSEG, np.array([[0, 0, 0.2], [1, 0.1, 0.25], [0.3, -2, 0], [0.4, 2, 0]], float)),
    ("segment-point", SEG_FIXPT, np.array([[0, 0, 0], [1, 0, 0], [0.2, 0.3, 0.1], [0, 0, 0]], float)),
    ("point-triangle", VERT_FIXTRI, np.vstack([[0.2, 0.3, 0.4], TRI])),
    ("point-triangle edge", VERT_FIXTRI, np.vstack([[0.7, 0.7, 0.2], TRI])),
    ("point-triangle vertex", VERT_FIXTRI, np.vstack([[-0.3, -0.2, 0.1], TRI])),
    ("point-plane", VERT_PLANE, np.array([[0.2, 0.3, 0.05], [0, 0, 0], [0, 0, 1], [0, 0, 0]], float)),
]
N_MOVING = {SEG_SEG: 4, SEG_FIXSEG: 2, SEG_FIXPT: 2, VERT_FIXTRI: 1, VERT_PLANE: 1}


def _barrier_energy(ptype, X, rsum, dhat, kappa, want=0):
    """Barrier of one primitive with moving points X[:nm] (as a one-row contact table)."""
    nm = N_MOVING[ptype]
    x = X[:nm].copy()
    pv = np.full((1, 4), -1, dtype=np.int64)
    pv[0, :nm] = np.arange(nm)
    pfix = X[None].copy()
    g, h, gaps = np.zeros((1, 12)), np.zeros((1, 12, 12)), np.zeros(1)
    E = barrier_eval(np.array([ptype]), pv, pfix, np.array([rsum]), x, dhat, kappa, want, g, h, gaps)
    return E, g[0, :3 * nm], h[0, :3 * nm, :3 * nm], gaps[0]


@pytest.mark.parametrize("name,ptype,X", CASES, ids=[c[0] for c in CASES])
def test_gap_gradient_and_hessian_match_finite_differences(name, ptype, X):
    X = X + (RNG.normal(0.0, 1e-3, X.shape) if ptype not in (VERT_PLANE,) else 0.0)
    if ptype == VERT_PLANE:
        X[2] = X[2] / np.linalg.norm(X[2])
    dg, d2g = np.zeros(12), np.zeros((12, 12))
    g, _, _ = gap_derivatives(ptype, X, 0.01, 2, dg, d2g)
    nm = 3 * N_MOVING[ptype]
    h = 1e-6
    fd_g, fd_h = np.zeros(nm), np.zeros((nm, nm))
    for i in range(nm):
        Xp, Xm = X.copy(), X.copy()
        Xp.flat[i] += h
        Xm.flat[i] -= h
        gp_, gm_ = np.zeros(12), np.zeros(12)
        z = np.zeros((12, 12))
        fd_g[i] = (gap_derivatives(ptype, Xp, 0.01, 1, gp_, z)[0]
                   - gap_derivatives(ptype, Xm, 0.01, 1, gm_, z)[0]) / (2 * h)
        fd_h[:, i] = (gp_[:nm] - gm_[:nm]) / (2 * h)
    assert np.allclose(dg[:nm], fd_g, rtol=0, atol=1e-8)
    assert np.allclose(d2g[:nm, :nm], fd_h, rtol=0, atol=1e-6 * max(1.0, np.abs(fd_h).max()))
    # the barrier's gradient (and its Hessian before projection) on the moving points
    dhat = 1.5 * (g + 0.01) - 0.01 if ptype != VERT_PLANE else 2.0 * g
    rsum = 0.01
    E, grad, hess, gap = _barrier_energy(ptype, X, rsum, dhat, 3.0, want=2)
    assert 0 < gap < dhat and E > 0
    fd = np.zeros(nm)
    for i in range(nm):
        Xp, Xm = X.copy(), X.copy()
        Xp.flat[i] += h
        Xm.flat[i] -= h
        fd[i] = (_barrier_energy(ptype, Xp, rsum, dhat, 3.0)[0]
                 - _barrier_energy(ptype, Xm, rsum, dhat, 3.0)[0]) / (2 * h)
    assert np.allclose(grad, fd, rtol=1e-6, atol=1e-9 * np.abs(fd).max())
    b, b1, b2 = barrier(gap, dhat)
    dgap, d2gap = np.zeros(12), np.zeros((12, 12))
    gap_derivatives(ptype, X, rsum, 2, dgap, d2gap)
    full = 3.0 * (b2 * np.outer(dgap[:nm], dgap[:nm]) + b1 * d2gap[:nm, :nm])
    lam = np.linalg.eigvalsh(hess)
    assert lam.min() >= -1e-9 * max(1.0, lam.max())  # projected: PSD
    if np.linalg.eigvalsh(full).min() >= 0:  # already PSD: projection leaves it unchanged
        assert np.allclose(hess, full, atol=1e-8 * np.abs(full).max())
    else:  # the projection removes exactly the negative part
        w, V = np.linalg.eigh(full)
        assert np.allclose(hess, (V * np.maximum(w, 0)) @ V.T, atol=1e-8 * np.abs(full).max())


def test_barrier_derivatives_and_limits():
    dhat = 1e-3
    for g in (1e-6, 2e-4, 9e-4):
        b, b1, b2 = barrier(g, dhat)
        e = 1e-9
        assert abs(b1 - (barrier(g + e, dhat)[0] - barrier(g - e, dhat)[0]) / (2 * e)) < 1e-6 * abs(b1) + 1e-12
        assert abs(b2 - (barrier(g + e, dhat)[1] - barrier(g - e, dhat)[1]) / (2 * e)) < 1e-5 * abs(b2)
        assert b > 0 and b1 < 0 and b2 > 0
    assert barrier(dhat, dhat) == (0.0, 0.0, 0.0)
    assert barrier(0.0, dhat)[0] == math.inf


@pytest.mark.parametrize("slip", [0.3e-9, 5e-9])
def test_friction_gradient_matches_finite_differences(slip):
    """Both the mollified (static) and the sliding branch of IPC's friction potential."""
    eps = 1e-9
    x0 = np.zeros((2, 3))  # only displacements matter; near 0 so that tiny FD steps stay exact
    x = x0 + np.array([[slip, 0.7 * slip, 0.3 * slip], [0.5 * slip, -slip, 0.0]])
    ptype, pv = np.array([SEG_FIXPT]), np.array([[0, 1, -1, -1]])
    fc = np.array([[0.6, 0.4, 0.0, 0.0]])
    basis = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])
    w = np.array([2.5])
    g, H = np.zeros((1, 12)), np.zeros((1, 12, 12))
    friction_eval(ptype, pv, fc, basis, w, x, x0, eps, 2, g, H)
    h = 1e-13
    fd = np.zeros(6)
    fdh = np.zeros((6, 6))
    for i in range(6):
        xp, xm = x.copy(), x.copy()
        xp.flat[i] += h
        xm.flat[i] -= h
        gp, gm = np.zeros((1, 12)), np.zeros((1, 12))
        z = np.zeros((1, 12, 12))
        fd[i] = (friction_eval(ptype, pv, fc, basis, w, xp, x0, eps, 1, gp, z)
                 - friction_eval(ptype, pv, fc, basis, w, xm, x0, eps, 1, gm, z)) / (2 * h)
        fdh[:, i] = (gp[0, :6] - gm[0, :6]) / (2 * h)
    assert np.allclose(g[0, :6], fd, rtol=1e-4, atol=1e-6 * np.abs(fd).max())
    assert np.allclose(H[0, :6, :6], fdh, rtol=1e-3, atol=1e-4 * np.abs(fdh).max())
    assert np.linalg.eigvalsh(H[0, :6, :6]).min() >= -1e-6 * np.abs(H).max()


def _thrown(contact: bool):
    b = WorldBuilder()
    b.add_rod(shapes.straight(8, 0.2, start=(-0.1, 0.0, 0.0)), E=1e7, G=4e6, rho=1000.0, radius=0.001)
    b.pin(0, 0)
    b.pin(0, -1)
    b.add_rod(shapes.straight(8, 0.2, start=(0.0, -0.1, 0.05), direction=(0.0, 1.0, 0.0)), E=1e7, G=4e6, rho=1000.0,
              radius=0.001)
    if contact:
        b.set_contact(rods=True)
    world = b.build()
    sim = make_simulator(world, "der-implicit", dt=0.01)
    state = sim.initial_state()
    state.rod_v(1)[:, 2] = -10.0
    reports = [sim.advance(state, 1) for _ in range(6)]
    # the closest pair of segments across the rods: on which side of rod 0 is rod 1?
    cs = detect(from_world(world), state.vertex_x, 2.0)
    across = np.flatnonzero((cs.pair_a < 7) & (cs.pair_b >= 7))
    k = across[np.argmin(cs.gap[across])]  # a on rod 0, b on rod 1: normal from rod 1 toward rod 0
    return reports, cs.normal[k]


def test_thrown_rod_does_not_pass_through():
    """A rod thrown at a pinned one at 10 m/s with a 0.01 s step (0.1 m per step, 50 times the 2 mm
    thickness): CCD caps every Newton step, the barrier stops it; without contact it passes through."""
    reports, normal = _thrown(True)
    gaps = [r.contact_min_gap for r in reports]
    assert min(gaps) >= 0.0
    assert min(gaps) < 0.001  # it did reach the other rod
    assert max(r.contacts_max for r in reports) >= 1
    assert normal[2] < -0.5  # rod 1 still above rod 0 where they cross
    _, normal = _thrown(False)
    assert normal[2] > 0.5  # the control: passed through


def _incline(angle, mu, t_end, dt=0.005, eps_v=1e-6):
    world, down, _ = incline_world(angle, mu)
    sim = make_simulator(world, "der-implicit", dt=dt, friction_eps_v=eps_v)
    state = sim.initial_state()
    t, s = [], []
    for _ in range(int(round(t_end / dt))):
        rep = sim.advance(state, 1)
        assert rep.contact_min_gap > 0
        t.append(state.t)
        s.append(float(state.vertex_x.mean(axis=0) @ down))
    return np.array(t), np.array(s), state


@pytest.mark.parametrize("angle,mu", [(30.0, 0.3), (10.0, 0.3)], ids=["sliding", "sticking"])
def test_incline_acceleration_matches_coulomb(angle, mu):
    t, s, _ = _incline(angle, mu, 0.3)
    keep = t >= 0.05
    acc = fit_acceleration(t[keep], s[keep])
    theory = incline_theory(angle, mu)
    if theory > 0:
        assert abs(acc / theory - 1.0) < 0.03
        assert abs(acc / theory - 1.0) < 1e-3  # measured: 4e-8
    else:
        assert abs(acc) < 0.03 * 9.81 * math.sin(math.radians(angle))
        assert abs(acc) < 1e-6


def test_rod_at_rest_below_friction_angle_stays_put():
    """tan(10 deg) = 0.18 < mu = 0.3: after settling onto the plane, the rod moves < 1e-6 m over 1 s
    (IPC's static friction creeps at about eps_v tan(angle) / (2 mu): 3e-7 m/s here)."""
    world, down, _ = incline_world(10.0, 0.3)
    sim = make_simulator(world, "der-implicit", dt=0.01, friction_eps_v=1e-6, contact_tol=1e-8)
    state = sim.initial_state()
    sim.advance(state, 20)
    x0 = state.vertex_x.copy()
    rep = sim.advance(state, 100)
    assert rep.contact_min_gap > 0
    assert np.abs(state.vertex_x - x0).max() < 1e-6


def test_capstan_tension_ratio():
    wrap, mu = math.pi, 0.3
    ratio, run, world, state, sim = capstan_slip(wrap, mu, t_ramp=0.3, dt=0.004, segments=12)
    assert abs(ratio / math.exp(mu * wrap) - 1.0) < 0.03
    assert run.contact_min_gap > 0


def test_options_are_validated_and_contact_free_worlds_keep_their_path():
    world, _, _ = incline_world(10.0, 0.3)
    for name, bad in (("contact_dhat", -1.0), ("contact_stiffness", "big"), ("friction_eps_v", 0.0),
                      ("contact_tol", float("nan")), ("contact_newton_iters", 0)):
        with pytest.raises(ModelError, match=name):
            make_simulator(world, "der-implicit", **{name: bad})
    with pytest.raises(ModelError, match="solve_static"):
        sim = make_simulator(world, "der-implicit")
        sim.solve_static(sim.initial_state())
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(6, 0.1), E=1e7, G=4e6, rho=1000.0, radius=0.005)
    b.clamp(0)
    sim = make_simulator(b.build(), "der-implicit")
    assert sim._contact is None
    rep = sim.advance(sim.initial_state(), 3)
    assert rep.contact_min_gap == math.inf and rep.contacts_max == 0


def test_fixed_stiffness_and_closed_rods():
    world, down, _ = incline_world(30.0, 0.3)
    sim = make_simulator(world, "der-implicit", dt=0.005, contact_stiffness=1e4)
    state = sim.initial_state()
    rep = sim.advance(state, 10)
    assert rep.contact_min_gap > 0 and "contact_kappa" not in state.solver
    b = WorldBuilder()
    b.add_rod(shapes.circle(12, 0.05), E=1e7, G=4e6, rho=1000.0, radius=0.002, closed=True)
    b.set_contact(rods=True)
    with pytest.raises(ModelError, match="closed"):
        make_simulator(b.build(), "der-implicit")


@pytest.mark.parametrize("angle,mu", [(30.0, 0.3), (10.0, 0.3)], ids=["sliding", "sticking"])
def test_rod_on_rod_friction(angle, mu):
    """A short rod lying across a pinned rail tilted by ``angle``, rod-rod mu from set_contact: slides
    down the rail at g (sin - mu cos) (measured -0.6 %), or sticks."""
    a = math.radians(angle)
    d, n = np.array([math.cos(a), 0.0, math.sin(a)]), np.array([-math.sin(a), 0.0, math.cos(a)])
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(9, 0.4, start=tuple(-0.2 * d), direction=tuple(d)), E=1e7, G=4e6, rho=1000.0,
              radius=0.003)
    for i in range(9):
        b.pin(0, i)
    centre = 0.0068 * n  # both radii plus 0.8 mm
    b.add_rod(shapes.straight(5, 0.08, start=tuple(centre - np.array([0.0, 0.04, 0.0])), direction=(0.0, 1.0, 0.0)),
              E=1e7, G=4e6, rho=1000.0, radius=0.003)
    b.set_contact(rods=True, friction=mu)
    sim = make_simulator(b.build(), "der-implicit", dt=0.005, friction_eps_v=1e-6)
    state = sim.initial_state()
    t, s = [], []
    for _ in range(60):
        rep = sim.advance(state, 1)
        assert rep.contact_min_gap > 0 and rep.contacts_max >= 1
        t.append(state.t)
        s.append(-float(state.rod_x(1).mean(axis=0) @ d))
    t, s = np.array(t), np.array(s)
    acc = fit_acceleration(t[t > 0.05], s[t > 0.05])
    theory = incline_theory(angle, mu)
    if theory > 0:
        assert abs(acc / theory - 1.0) < 0.03
    else:
        assert abs(acc) < 1e-5


def _obstacle(kind):
    from rodlab.world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh
    if kind == "plane":
        return Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    if kind == "sphere":
        return Sphere((0.0, 0.0, -0.1), 0.1)
    if kind == "capsule":
        return Capsule((0.0, -0.1, -0.02), (0.0, 0.1, -0.02), 0.02)
    if kind == "cylinder":
        return Cylinder((0.0, 0.0, -0.02), (0.0, 1.0, 0.0), 0.02)
    # a tilted square of two triangles, and a fan that puts a mesh vertex and edges under the rod
    v = np.array([[-0.2, -0.2, 0.0], [0.2, -0.2, 0.0], [0.2, 0.2, 0.01], [-0.2, 0.2, 0.01], [0.0, 0.0, 0.002]])
    return TriangleMesh(v, np.array([[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]]))


@pytest.mark.parametrize("kind", ["plane", "sphere", "capsule", "cylinder", "mesh"])
def test_rod_dropped_on_each_obstacle_lands_without_penetrating(kind):
    """A rod falls 2 cm onto each obstacle kind (dt 5 ms) and comes to rest on it, with friction."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=2.0)
    b.add_rod(shapes.straight(7, 0.1, start=(-0.05, 0.013, 0.025)), E=1e7, G=4e6, rho=1000.0, radius=0.003)
    b.add_obstacle(_obstacle(kind), friction=0.5)
    world = b.build()
    sim = make_simulator(world, "der-implicit", dt=0.005)
    state = sim.initial_state()
    rep = sim.advance(state, 50)
    assert 0.0 < rep.contact_min_gap < 0.0015
    assert rep.contacts_max >= 1
    assert min_gap(from_world(world), state.vertex_x) > 0.0
    assert np.abs(state.vertex_v).max() < 0.05  # resting (damped), not falling through


def test_driven_clamp_presses_rod_onto_plane():
    """A clamp moving down 2 cm at 0.2 m/s drives a cantilever's tip (1 cm above) into a plane: the
    tip stops on it (gap positive) while the clamp keeps its prescribed path. (A clamp driven into
    an obstacle itself cannot be resolved: the step then fails with a clear error.)"""
    from rodlab.world.obstacles import Plane
    b = WorldBuilder(damping=5.0)
    b.add_rod(shapes.straight(8, 0.1, start=(0.0, 0.0, 0.03), direction=(1.0, 0.0, -0.2)), E=1e8, G=4e7, rho=1000.0,
              radius=0.002)
    b.clamp(0, "start", motion=lambda t: (np.eye(3), np.array([0.0, 0.0, -0.2 * min(t, 0.1)])))
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), friction=0.2)
    world = b.build()
    sim = make_simulator(world, "der-implicit", dt=0.005)
    state = sim.initial_state()
    rep = sim.advance(state, 40)
    assert rep.contact_min_gap > 0 and rep.contacts_max >= 1
    assert state.rod_x(0)[0, 2] == pytest.approx(0.03 - 0.02, abs=1e-12)
    assert state.rod_x(0)[-1, 2] > 0.002  # the tip rests on the plane (radius 2 mm)


def test_contact_steps_keep_no_history_outside_the_state():
    """A warm-up step on a copy changes nothing, and one call of 6 steps equals 6 calls of one."""
    world, _, _ = incline_world(30.0, 0.3)
    a = make_simulator(world, "der-implicit", dt=0.005)
    sa = a.initial_state()
    a.advance(sa.copy(), 1)
    a.advance(sa, 6)
    b = make_simulator(world, "der-implicit", dt=0.005)
    sb = b.initial_state()
    for _ in range(6):
        b.advance(sb, 1)
    assert np.array_equal(sa.vertex_x, sb.vertex_x) and np.array_equal(sa.edge_theta, sb.edge_theta)
    assert sa.solver["contact_kappa"] == sb.solver["contact_kappa"]


@pytest.mark.parametrize("contact", [True, False], ids=["contact", "control"])
def test_self_contact_hairpin_arms_do_not_cross(contact):
    """A hairpin's two arms (2 cm apart, r = 2 mm) thrown at each other at 1 m/s each, 5 mm per step
    each: self contact (one rod, skip "auto") keeps them apart."""
    arc = np.linspace(0.5 * np.pi, 1.5 * np.pi, 9)  # the bend: a half circle of radius 1 cm about x = 0
    bend = np.stack([0.01 * np.cos(arc), 0.01 * np.sin(arc), 0.0 * arc], axis=1)
    x = np.linspace(0.0875, 0.0, 8)[:-1]  # 7 vertices per arm, the bend's ends excluded
    pts = np.vstack([np.stack([x, 0.01 + 0 * x, 0 * x], axis=1), bend,
                     np.stack([x[::-1], -0.01 + 0 * x, 0 * x], axis=1)])
    b = WorldBuilder()
    b.add_rod(pts, E=1e6, G=4e5, rho=1000.0, radius=0.002)
    if contact:
        b.set_contact(rods=True)
    world = b.build()
    sim = make_simulator(world, "der-implicit", dt=0.005)
    state = sim.initial_state()
    state.vertex_v[:7, 1] = -1.0
    state.vertex_v[-7:, 1] = 1.0
    rep = sim.advance(state, 10)
    sides = state.vertex_x[:3, 1] > state.vertex_x[-3:, 1][::-1]  # arm tips on their own sides
    if contact:
        assert rep.contact_min_gap >= 0.0 and rep.contacts_max >= 1
        assert np.all(sides)
    else:  # without contact they pass through each other
        assert not np.any(sides)
