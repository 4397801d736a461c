"""GAlphaSimulator (generalized-alpha Cosserat rod) on the World protocol."""
import math

import numpy as np
import pytest

from rodlab.analytic.elastica import cantilever_elastica_tip
from rodlab.model import ModelError
from rodlab.solvers import UnsupportedFeature, make_simulator
from rodlab.world import WorldBuilder, shapes


def cantilever_world(n, E=1e7, g=9.81, damping=2.0, copies=1, tip_force=None):
    b = WorldBuilder(gravity=(0, 0, -g), damping=damping)
    for _ in range(copies):
        r = b.add_rod(shapes.straight(n, 1.0), E=E, G=E / 3, rho=1000.0, radius=0.01,
                      rest_d1=np.tile([0.0, 1.0, 0.0], (n - 1, 1)))
        b.clamp(r, "start")
        if tip_force is not None:
            b.add_point_force(r, n - 1, tip_force)
    return b.build()


# the first-wave driver (rodlab/galpha/cantilever.py, removed in stage 2 of issue #13): tip and middle
# vertex (index n // 2) at the end of its dynamic run (n = 16, E = 1e7, dt = 0.02 s, t_end = 0.4 s) and
# of its static solves (n = 50)
FIRST_WAVE_DYNAMIC = ([0.6392651879530806, 0.0, -0.7308610092717556], [0.392803555744129, 0.0, -0.33467101294437906])
FIRST_WAVE_STATIC = {1e8: ([0.8933625598686948, 0.0, -0.41918967416549296], [0.47938993157843285, 0.0, -0.15756837895491704]),
                     1e6: ([0.07551676348699411, 0.0, -0.968750066894319], [0.0754893812736797, 0.0, -0.47895415050681])}


def _assert_first_wave(x, golden):
    tip, mid = (np.array(v) for v in golden)
    scale = np.abs(tip).max()
    assert np.abs(x[-1] - tip).max() <= 1e-10 * scale
    assert np.abs(x[x.shape[0] // 2] - mid).max() <= 1e-10 * scale


def test_dynamic_cantilever_matches_first_wave_driver():
    n, dt = 16, 0.02
    sim = make_simulator(cantilever_world(n), "galpha", dt=dt)
    state = sim.initial_state()
    sim.advance(state.copy(), 2)  # a warm-up on a copy changes nothing
    rep = sim.advance(state, 20)
    assert rep.success and rep.newton_iters > 0
    _assert_first_wave(state.vertex_x, FIRST_WAVE_DYNAMIC)
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
    _assert_first_wave(state.vertex_x, FIRST_WAVE_STATIC[E])
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


# ---------------------------------------------------------------------------------------------
# stage 2: point torques, moving clamps, coefficients, LU factors across calls, rest polylines
# ---------------------------------------------------------------------------------------------
from rodlab.geometry.rotations import exp_so3, log_so3  # noqa: E402
from rodlab.model import Clamp  # noqa: E402
from rodlab.solvers.galpha import ClampKinematics, rest_polyline  # noqa: E402
from rodlab.world.world import RodPointTorque  # noqa: E402

EI_1E7 = 1e7 * math.pi * 1e-8 / 4  # E I of the test rods (E = 1e7 Pa, radius 0.01 m) [N m^2]


def torque_world(n=21, torque=None, pin_tip=False, clamp_tip=False, vertex=-1):
    b = WorldBuilder()
    b.add_rod(shapes.straight(n, 1.0), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01,
              rest_d1=np.tile([0.0, 1.0, 0.0], (n - 1, 1)))
    b.clamp(0, "start")
    if pin_tip:
        b.pin(0, n - 1)
    if clamp_tip:
        b.clamp(0, "end")
    if torque is not None:
        b.add_point_torque(0, vertex, torque)
    return b.build()


def test_end_torque_bends_the_rod_into_the_arc_of_the_moment():
    """A couple M about +y (= d1) on the free end of a straight cantilever (no gravity): uniform
    curvature kappa1 = M / EI, the tip on the circle of radius EI / M turning from +x toward -z
    (right-hand rule); the Cayley orientation map turns each segment by 2 atan(kappa ds / 2), so
    the tip converges at second order in ds."""
    theta = 1.2  # [rad] turned at the tip
    M = EI_1E7 * theta
    rho = 1.0 / theta
    exact = np.array([rho * math.sin(theta), 0.0, -rho * (1 - math.cos(theta))])
    error = {}
    for n in (21, 41):
        sim = make_simulator(torque_world(n, torque=(0.0, M, 0.0)), "galpha")
        state = sim.initial_state()
        assert sim.solve_static(state).success
        np.testing.assert_allclose(state.solver["x"][:, 6:9], np.tile([theta, 0.0, 0.0], (n, 1)), rtol=0, atol=1e-9)
        error[n] = np.linalg.norm(state.vertex_x[-1] - exact)
        np.testing.assert_allclose(state.solver["R"][-1][:, 2], [math.cos(theta), 0.0, -math.sin(theta)], atol=1e-3)
    assert error[21] < 2e-4 and 3.5 < error[21] / error[41] < 4.5
    # a twisting couple about the axis: uniform twist rate T / GJ, the centerline stays straight
    T = 0.01
    sim = make_simulator(torque_world(torque=lambda t: np.array([T, 0.0, 0.0])), "galpha")
    state = sim.initial_state()
    assert sim.solve_static(state).success
    GJ = 1e7 / 3 * math.pi * 1e-8 / 2
    np.testing.assert_allclose(state.solver["x"][:, 8], T / GJ, rtol=1e-7)
    np.testing.assert_allclose(state.vertex_x[-1], [1.0, 0.0, 0.0], atol=1e-12)


def test_point_torque_on_a_pinned_tip_is_its_end_couple():
    """An arch clamped at its root and pinned at its end, a couple about +y ramped in on the end:
    galpha's pinned tip takes it as its end couple, kappa(L) = kappa_hat(L) + K^-1 R_L^T T."""
    n = 21
    phi = np.linspace(0, 2.0, n)
    arch = np.stack([0.3 * np.sin(phi), np.zeros(n), 0.3 * (1 - np.cos(phi))], 1)
    T = np.array([0.0, 0.004, 0.0])
    b = WorldBuilder(damping=1.0)
    b.add_rod(arch, E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
    b.clamp(0, "start")
    b.pin(0, n - 1)
    b.add_point_torque(0, n - 1, lambda t: min(1.0, 10 * t) * T)
    sim = make_simulator(b.build(), "galpha", dt=0.01)
    state = sim.initial_state()
    x0 = state.solver["r_vel"][-1].copy()
    sim.advance(state, 20)
    model = sim.solvers[0].model
    R = state.solver["R"][-1]
    np.testing.assert_allclose(state.solver["x"][-1, 6:9], model.kappa_hat[-1] + R.T @ T / model.stiffness, rtol=0, atol=1e-12)
    assert np.abs(R.T @ T / model.stiffness).max() > 0.05  # a couple that bends the end noticeably
    np.testing.assert_allclose(state.solver["r_vel"][-1], x0, atol=1e-12)  # the pin holds


def test_point_torques_are_validated_and_refused_where_not_modelled():
    b = WorldBuilder()
    b.add_rod(shapes.straight(6, 0.3), E=1e6, G=4e5, rho=1e3, radius=0.01)
    with pytest.raises(ModelError, match=r"point torque vertex of rod 0 must be in \[-6, 5\] \(got 6\)"):
        b.add_point_torque(0, 6, (0.0, 0.0, 1.0))
    with pytest.raises(ModelError, match="point torque must be a finite 3-vector"):
        b.add_point_torque(0, -1, (0.0, np.nan, 1.0))
    with pytest.raises(ModelError, match="point torque must be a finite 3-vector"):
        b.add_point_torque(0, -1, (1.0, 2.0))
    bad = RodPointTorque(0, 5, lambda t: (1.0, 2.0))
    with pytest.raises(ModelError, match="point torque on vertex 5 of rod 0 must be a finite 3-vector"):
        bad.at(0.0)
    world = torque_world(torque=(0.0, 0.0, 1e-3))
    assert world.features() == {"point torques"}
    assert world.point_torques_of(0)[0].vertex == 20 and np.array_equal(world.point_torques_of(0)[0].at(1.0), [0, 0, 1e-3])
    for method in ("der", "der-implicit", "compact"):
        with pytest.raises(UnsupportedFeature, match=f"method {method} does not support point torques"):
            make_simulator(world, method)
    with pytest.raises(UnsupportedFeature, match="galpha does not support a point torque on vertex 7 of rod 0"):
        make_simulator(torque_world(torque=(0.0, 0.0, 1e-3), vertex=7), "galpha")
    with pytest.raises(UnsupportedFeature, match="point torque on the clamped tip of rod 0"):
        make_simulator(torque_world(torque=(0.0, 0.0, 1e-3), clamp_tip=True), "galpha")


def test_clamp_kinematics_differentiates_the_pose():
    """w = vee(R' R^T) and the carried point's velocity, against closed forms, at t = 0 (one-sided
    differences) and later (central)."""
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    motion = lambda t: (np.asarray(exp_so3(axis * math.sin(2 * t))), np.array([t * t, 0.5 * t, 0.0]))  # noqa: E731
    p, c = np.array([0.3, -0.1, 0.2]), np.array([0.1, 0.0, 0.0])
    k = ClampKinematics(motion, p, c, 1e-6, "test clamp")
    for t in (0.0, 0.7):
        R = np.asarray(exp_so3(axis * math.sin(2 * t)))
        w = 2 * math.cos(2 * t) * axis
        np.testing.assert_allclose(k.angular_velocity(t), w, rtol=0, atol=1e-8)
        np.testing.assert_allclose(k.velocity(t), np.cross(w, R @ (p - c)) + [2 * t, 0.5, 0.0], rtol=0, atol=1e-8)
    with pytest.raises(ModelError, match=r"test clamp: motion\(t\) must return \(R, d\)"):
        ClampKinematics(lambda t: (2 * np.eye(3), np.zeros(3)), p, c, 1e-6, "test clamp").velocity(0.5)


def test_root_clamp_motion_turns_the_root_frame_and_moves_the_root():
    """A clamp turned about +z: galpha's root frame follows the motion's rotation (midpoint rule,
    O(dt^2)); turned about vertex 0 the root stays put, turned about the clamped edge's midpoint
    (the World's convention, d = 0) vertex 0 runs on the circle around it."""
    n, ramp, rate = 21, 0.2, 1.0
    angle = lambda t: rate * (t * t / (2 * ramp) if t < ramp else t - ramp / 2)  # noqa: E731
    for about_root in (True, False):
        b = WorldBuilder()
        pts = shapes.straight(n, 1.0)
        b.add_rod(pts, E=1e9, G=1e9 / 3, rho=1000.0, radius=0.01, rest_d1=np.tile([0.0, 1.0, 0.0], (n - 1, 1)))
        c0 = 0.5 * (pts[0] + pts[1])

        def motion(t, about_root=about_root):
            R = np.asarray(exp_so3(np.array([0.0, 0.0, angle(t)])))
            return R, (R @ c0 - c0) if about_root else np.zeros(3)

        b.clamp(0, "start", motion=motion)
        w = b.build()
        assert w.features() == {"prescribed clamp motion"}
        sim = make_simulator(w, "galpha", dt=0.01)
        state = sim.initial_state()
        R_start = state.solver["R"][0].copy()
        sim.advance(state, 50)
        R, _ = motion(state.t)
        np.testing.assert_allclose(state.solver["R"][0], R @ R_start, atol=2e-6)
        expected = pts[0] if about_root else R @ (pts[0] - c0) + c0
        np.testing.assert_allclose(state.vertex_x[0], expected, atol=1e-6)
        if not about_root:
            assert np.linalg.norm(state.vertex_x[0] - pts[0]) > 0.009  # a chord of 0.4 rad on a 2.5 cm circle
        # a stiff rod (first bending mode 17 rad/s) turned slowly (1 rad/s) follows, lagging 2 cm at its tip
        np.testing.assert_allclose(state.vertex_x[-1], R @ (pts[-1] - c0) + c0 + motion(state.t)[1], atol=0.04)
        assert state.vertex_x[-1, 1] > 0.3


def test_tip_clamp_moving_along_a_line_is_the_line_constraint():
    """An arch whose end clamp translates toward the root at 5 cm/s without turning (GA paper,
    Sec. 5 item 6): the end's time-integrated position follows the line exactly, its frame does
    not turn (to the orientation integration's O(dt^2))."""
    n = 21
    phi = np.linspace(0, 2.0, n)
    arch = np.stack([0.3 * np.sin(phi), np.zeros(n), 0.3 * (1 - np.cos(phi))], 1)
    b = WorldBuilder(gravity=(0, 0, -9.81), damping=1.0)
    b.add_rod(arch, E=1e5, G=1e5 / 3, rho=1000.0, radius=0.01)
    b.clamp(0, "start")
    v, ramp = np.array([-0.05, 0.0, 0.0]), 0.1  # [m/s], [s]: speed reached linearly over 5 steps
    shift = lambda t: v * (t * t / (2 * ramp) if t < ramp else t - ramp / 2)  # noqa: E731
    b.clamp(0, "end", motion=lambda t: (np.eye(3), shift(t)))
    sim = make_simulator(b.build(), "galpha", dt=0.02)
    state = sim.initial_state()
    R_start = state.solver["R"].copy()
    x0 = state.solver["r_vel"][-1].copy()
    sim.advance(state, 25)
    # the trapezoid rule integrates the piecewise linear velocity exactly (up to the difference
    # quotient across the velocity's kink at t = ramp: 1e-8 m; a lost half step would be 5e-4 m)
    np.testing.assert_allclose(state.solver["r_vel"][-1], x0 + shift(state.t), rtol=0, atol=1e-8)
    # omega(L) = 0: the end frame integrated along s turns only by the scheme's O(ds^2) drift,
    # the arch's middle turns 20 times more
    turned = [np.linalg.norm(np.asarray(log_so3(np.ascontiguousarray(state.solver["R"][j] @ R_start[j].T))))
              for j in (n // 2, n - 1)]
    assert turned[1] < 0.005 and turned[0] > 20 * turned[1]
    assert np.linalg.norm(state.vertex_x[n // 2] - arch[n // 2]) > 0.01  # the arch is pushed


def test_moving_clamps_must_start_at_rest_pose():
    def world(motion):
        b = WorldBuilder()
        b.add_rod(shapes.straight(8, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01)
        b.clamp(0, "start", motion=motion)
        return b.build()

    with pytest.raises(UnsupportedFeature, match=r"galpha needs the moving clamp of edge 0 of rod 0 to start at its rest pose"):
        make_simulator(world(lambda t: (np.eye(3), np.array([0.0, 0.0, 0.1 + t]))), "galpha")
    with pytest.raises(ModelError, match=r"moving clamp of edge 0 of rod 0: motion\(t\) must return \(R, d\)"):
        make_simulator(world(lambda t: np.eye(3)), "galpha")
    assert Clamp(0).motion is None


def test_time_coefficients_from_rho_inf_or_given():
    w = torque_world()
    co = make_simulator(w, "galpha").coefficients
    assert (co.alpha, co.beta, co.gamma) == pytest.approx((1 / 6, 1 / 3, 2 / 3), abs=1e-15)  # rho_inf = 0.5
    co = make_simulator(w, "galpha", rho_inf=1.0).coefficients
    assert (co.alpha, co.beta, co.gamma) == pytest.approx((0.5, 0.5, 0.5), abs=1e-15)
    co = make_simulator(w, "galpha", alpha=0.4, gamma=1.0).coefficients
    assert (co.alpha, co.beta, co.gamma) == (0.4, 0.0, 1.0)
    with pytest.raises(ModelError, match="either rho_inf or the coefficients alpha, beta, gamma"):
        make_simulator(w, "galpha", rho_inf=0.5, alpha=0.3, gamma=0.7)
    with pytest.raises(ModelError, match="needs both alpha and gamma"):
        make_simulator(w, "galpha", alpha=0.3)
    with pytest.raises(ModelError, match=r"alpha must be < 1 \(got 1.2\)"):
        make_simulator(w, "galpha", alpha=1.2, gamma=0.7)
    with pytest.raises(ModelError, match="gamma must be a finite number"):
        make_simulator(w, "galpha", alpha=0.3, gamma="x")
    # the dissipative setting of the paper's Fig. 1 removes energy the trapezoidal one keeps
    kinetic = {}
    for a, g in ((0.0, 0.5), (0.4, 1.0)):
        sim = make_simulator(cantilever_world(11, damping=0.0), "galpha", dt=0.02, alpha=a, gamma=g)
        state = sim.initial_state()
        sim.advance(state, 30)
        kinetic[a] = sim.energies(state)
    assert kinetic[0.4]["total"] < kinetic[0.0]["total"] - 1e-4


def test_advance_depends_only_on_the_state():
    """LU factors restart at every call: a warm-up on a copy and a fresh simulator change nothing
    (bitwise), a run split into calls agrees with one call within Newton's tolerance; the
    diagnostics of the last step ride in the state."""
    world = cantilever_world(16)
    one = make_simulator(world, "galpha", dt=0.02)
    s_one = one.initial_state()
    one.advance(s_one.copy(), 3)  # a warm-up on a copy changes nothing
    one.advance(s_one, 6)
    fresh = make_simulator(world, "galpha", dt=0.02)
    s_fresh = fresh.initial_state()
    fresh.advance(s_fresh, 6)
    for key in ("x", "xdot", "R", "r_vel", "step", "last_residual", "last_newton_iters", "substeps"):
        assert np.array_equal(s_one.solver[key], s_fresh.solver[key]), key
    split = s_one.copy()
    one.advance(s_one, 6)
    for _ in range(6):
        fresh.advance(split, 1)
    np.testing.assert_allclose(split.vertex_x, s_one.vertex_x, rtol=0, atol=1e-8)
    assert 0 < split.solver["last_residual"][0] < 1e-8 and split.solver["last_newton_iters"][0] >= 1
    assert split.solver["step"][0] == 12 and split.solver["substeps"][0] == 0


def test_rest_polyline_round_trips_the_darboux_vector_and_root_frame():
    n, ds = 17, 0.02
    s = np.arange(n) * ds
    kh = np.column_stack([3 * np.sin(9 * s), 5 + 2 * np.cos(7 * s), 4 * s])
    root_R = np.asarray(exp_so3(np.array([0.3, -0.5, 0.8])))
    pts, d1 = rest_polyline(kh, ds, root_R, (0.1, 0.2, 0.3))
    np.testing.assert_allclose(np.linalg.norm(np.diff(pts, axis=0), axis=1), ds, rtol=1e-14)
    b = WorldBuilder()
    b.add_rod(pts, E=1e6, G=4e5, rho=1e3, radius=0.001, rest_d1=d1)
    b.clamp(0, "start")
    model = make_simulator(b.build(), "galpha").solvers[0].model
    np.testing.assert_allclose(model.kappa_hat[1:-1], kh[1:-1], rtol=0, atol=1e-11)
    np.testing.assert_allclose(model.kappa_hat[[0, -1]], kh[[1, -2]], rtol=0, atol=1e-11)  # ends: the neighbours
    np.testing.assert_allclose(model.root_R, root_R, atol=1e-14)
    np.testing.assert_allclose(model.root_r, [0.1, 0.2, 0.3], atol=0)
    assert model.ds == pytest.approx(ds, rel=1e-14)
    with pytest.raises(ModelError, match=r"kappa_hat must be a finite \(n, 3\) array with n >= 3"):
        rest_polyline(kh[:2], ds, root_R)


def test_damping_and_the_scheme_only_remove_energy():
    """A cantilever released straight under gravity with viscous damping 2 /s: galpha's energies
    (Simulator.energies: translational + rotational kinetic, elastic, gravity) add up and their
    total only decreases. Undamped (alpha = 0, gamma = 1/2), the total drifts by about 5 % of the
    kinetic energy (measured +0.035 J at 0.73 J kinetic after 0.3 s): the damped run's loss is
    five times that."""
    totals = {}
    for damping, opts in ((2.0, {}), (0.0, dict(alpha=0.0, gamma=0.5))):
        sim = make_simulator(cantilever_world(11, damping=damping), "galpha", dt=0.02, **opts)
        state = sim.initial_state()
        e = [sim.energies(state)]
        for _ in range(15):
            sim.advance(state, 1)
            e.append(sim.energies(state))
        for item in e:
            assert item["total"] == pytest.approx(item["kinetic"] + item["elastic"] + item["gravity"], abs=1e-15)
        totals[damping] = np.array([item["total"] for item in e])
        assert e[-1]["kinetic"] > 0.01 and e[0]["total"] == 0.0
    assert np.all(np.diff(totals[2.0]) < 0) and totals[2.0][-1] < -0.01
    assert abs(totals[0.0][-1]) < 0.06 and totals[2.0][-1] < totals[0.0][-1] - 0.15


def test_lu_factors_ride_in_the_state(tmp_path):
    """The chord Newton's LU factors live in ``state.solver["lu_*"]``: one-step calls are bitwise the
    one long call, a saved state continues bitwise in a fresh simulator, a state without factors
    (an older file) makes them, and carrying them saves factorizations against restarting them."""
    from rodlab.world import State

    world = cantilever_world(16, copies=2)
    sim = make_simulator(world, "galpha", dt=0.02)
    one = sim.initial_state()
    split = one.copy()
    sim.advance(one, 8)
    for _ in range(8):
        sim.advance(split, 1)
    assert np.array_equal(split.vertex_x, one.vertex_x) and np.array_equal(split.vertex_v, one.vertex_v)
    for key in one.solver:
        assert np.array_equal(split.solver[key], one.solver[key]), key
    assert np.all(one.solver["lu_meta"][:, 0] == 1.0) and one.solver["lu_W"].shape == (world.n_edges, 24, 30)
    one.save(tmp_path / "mid.npz")
    sim.advance(one, 4)
    resumed = State.load(tmp_path / "mid.npz")
    make_simulator(world, "galpha", dt=0.02).advance(resumed, 4)
    for key in one.solver:
        assert np.array_equal(resumed.solver[key], one.solver[key]), key
    bare = split.copy()
    for key in [k for k in bare.solver if k.startswith("lu_")]:
        del bare.solver[key]
    sim.advance(bare, 1)
    assert bare.solver["lu_meta"][0, 0] == 1.0 and np.isfinite(bare.vertex_x).all()
    # carried factors against factors restarted at every call (what the simulator did before)
    counts = []
    for restart in (False, True):
        state, before = split.copy(), sim.solvers[0].factorizations
        for _ in range(6):
            if restart:
                state.solver["lu_meta"][:, 0] = 0.0
            sim.advance(state, 1)
        counts.append(sim.solvers[0].factorizations - before)
    assert counts[1] >= 6 and counts[0] < counts[1]
