"""One solver x world matrix (DESIGN.md, "Every solver through the same tests").

Every method of :data:`rodlab.solvers.METHODS` goes through the same small worlds and the same
physics checks, with the tolerances of each method's own tests:

- a static cantilever against the planar elastica (rodlab.analytic.elastica), built through the
  WorldBuilder with the discrete layout of each method's old ``rodlab/<method>/cantilever.py``;
- three independent identical rods move exactly like one (to round-off), and their kinetic and
  gravity energies are three times one rod's;
- edge lengths stay at rest length for the inextensible methods (``metrics.inextensibility``);
- a free rod without gravity keeps its linear momentum; viscous damping never adds kinetic energy;
- a closed ring spinning about its axis stays a regular polygon and keeps its angular momentum
  (methods with closed rods); a rod welded to a body falls freely as one rigid piece under
  gravity (methods with rigid bodies);
- unsupported features and unknown options are refused, naming the method; ``advance(state, 0)``
  changes nothing; ``State.save/load`` mid-run, continued by a fresh simulator, is bitwise the
  run that never stopped (no history outside the State).

A method whose simulator module is not written yet is skipped with the module's name.
"""
import math

import numpy as np
import pytest

from rodlab import metrics
from rodlab.analytic.elastica import cantilever_elastica_tip
from rodlab.model import ModelError
from rodlab.solvers import METHODS, UnsupportedFeature, simulator_class
from rodlab.world import Plane, State, WorldBuilder, shapes

METHOD_NAMES = tuple(METHODS)
R, RHO, G_ACC = 0.01, 1000.0, 9.81
MAT = dict(E=1e8, G=1e8 / 3, rho=RHO, radius=R)

# Tolerances of each method's own tests (tests/test_der_scenes.py, test_der_implicit_cantilever.py,
# test_compact_solver.py, test_galpha.py): n = 50 static cantilever tip within 0.01 m of the
# elastica; edge-length error of the inextensible methods (galpha: the chord of an arc of length
# ds is shorter by (kappa ds)^2 / 24, 2e-3 at 12 nodes; der-implicit: stiff stretching, not a
# constraint).
CANTILEVER_TIP_TOL = {"der": 0.01, "der-implicit": 0.01, "compact": 0.01, "galpha": 0.01}
INEXTENSIBILITY_TOL = {"der": 1e-10, "der-implicit": 1e-4, "compact": 1e-10, "galpha": 5e-3}
# linear momentum of a free rod: round-off for exact solves, the PCG tolerance for compact's
MOMENTUM_RTOL = {"der": 1e-10, "der-implicit": 1e-9, "compact": 1e-6, "galpha": 1e-8}
# (DER's fast projection moves vertices along the edges of its iterate, not of the last step, so
# it conserves angular momentum only to O(dt^2): measured 2e-5 over 50 steps of the ring below)
ANGULAR_MOMENTUM_RTOL = {"der": 1e-4, "der-implicit": 1e-6, "compact": 1e-6, "galpha": 1e-6}


# ------------------------------------------------------------------------------------ helpers
def sim_class(method):
    """The method's simulator class, or a skip naming the module that is not written yet."""
    module = METHODS[method].split(":")[0]
    try:
        return simulator_class(method)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            pytest.skip(f"{module} is not importable yet (the lead removes this skip at integration)")
        raise


def build(cls, world, **options):
    """The simulator, or a skip where the method refuses this world (the refusal names why)."""
    try:
        return cls(world, **options)
    except UnsupportedFeature as exc:
        pytest.skip(str(exc))


def needs(cls, feature):
    if feature not in cls.supports:
        pytest.skip(f"{cls.method} does not support {feature} (its refusal is test_unsupported_features_are_refused)")


def cantilever_points(method, n, length, start=(0.0, 0.0, 0.0)):
    """The discrete cantilever of ``rodlab/<method>/cantilever.py``: galpha's node 0 is the clamp
    (nodes at s_j = j L / (n - 1)); the DER-family and compact clamp edge 0, centred on the
    clamp point (x_i = (i - 1/2) h, h = L / (n - 3/2)), so the free length is L in both."""
    start = np.asarray(start, dtype=float)
    if method == "galpha":
        return shapes.straight(n, length, start=start)
    h = length / (n - 1.5)
    return shapes.straight(n, (n - 1) * h, start=start + (-0.5 * h, 0.0, 0.0))


def cantilever_world(method, n=50, *, offsets=(0.0,), gravity=G_ACC, damping=0.0, E=1e8):
    b = WorldBuilder(gravity=(0.0, 0.0, -gravity), damping=damping)
    for y in offsets:
        r = b.add_rod(cantilever_points(method, n, 1.0, start=(0.0, y, 0.0)), E=E, G=E / 3, rho=RHO, radius=R)
        b.clamp(r, "start")
    return b.build()


def free_rod_world(n=20, damping=0.0):
    b = WorldBuilder(damping=damping)
    b.add_rod(shapes.straight(n, 0.5), **MAT)
    return b.build()


def restart_from_common_fields(state):
    """After editing the common fields, make the simulator start from them (State docstring)."""
    state.method = ""
    state.solver = {}


def momentum(world, state):
    p = np.sum(world.vertex_mass[:, None] * state.vertex_v, axis=0)
    for b, body in enumerate(world.bodies):
        p = p + body.mass * state.body_v[b]
    return p


def assert_states_bitwise(a, b):
    assert a.t == b.t
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist", "body_x", "body_q", "body_v", "body_w"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.solver.keys() == b.solver.keys()
    for k in a.solver:
        assert np.array_equal(a.solver[k], b.solver[k]), f"solver/{k}"


def elastica_reference(E, length=1.0):
    return cantilever_elastica_tip(length, E * math.pi * R**4 / 4, RHO * math.pi * R**2 * G_ACC)


# ------------------------------------------------------------------------------------ cantilever
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_static_cantilever_matches_elastica(method):
    cls = sim_class(method)
    world = cantilever_world(method, 50)
    sim = cls(world)
    state = sim.initial_state()
    rep = sim.solve_static(state)
    assert rep.success, rep.message
    assert np.all(state.vertex_v == 0.0)
    tip = metrics.tip(world, state)
    ref = elastica_reference(1e8)
    assert ref[1] < -0.1  # a large deflection: q = w L^3 / EI = 3.9
    assert math.hypot(tip[0] - ref[0], tip[2] - ref[1]) < CANTILEVER_TIP_TOL[method]
    assert abs(tip[1]) < 1e-12
    assert metrics.inextensibility(world, state) < INEXTENSIBILITY_TOL[method]
    # the clamp held: the clamped vertices did not move (galpha clamps its root node and frame
    # only: its node 1 lies on the clamped tangent to O(ds^2), not on it)
    fixed = world.vertex_fixed.copy()
    if method == "galpha":
        fixed[1:] = False
    np.testing.assert_allclose(state.vertex_x[fixed], world.vertex_rest_x[fixed], atol=1e-12)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_three_independent_rods_move_like_one(method):
    cls = sim_class(method)
    one_world = cantilever_world(method, 12, damping=1.0)
    offsets = (0.0, 0.25, -0.5)
    three_world = cantilever_world(method, 12, offsets=offsets, damping=1.0)
    one, three = cls(one_world), cls(three_world)
    assert three.dt == one.dt
    s1, s3 = one.initial_state(), three.initial_state()
    r1, r3 = one.advance(s1, 40), three.advance(s3, 40)
    assert r1.success and r3.success and r1.steps == r3.steps == 40
    assert s3.t == s1.t
    assert s1.vertex_x[-1, 2] < -1e-4  # it moved
    for k, y in enumerate(offsets):
        np.testing.assert_allclose(s3.rod_x(k), s1.vertex_x + (0.0, y, 0.0), rtol=0, atol=1e-12)
        np.testing.assert_allclose(s3.rod_v(k), s1.vertex_v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(s3.rod_theta(k), s1.edge_theta, rtol=0, atol=1e-12)
    assert metrics.kinetic_energy(three_world, s3) == pytest.approx(3 * metrics.kinetic_energy(one_world, s1), rel=1e-12)
    # gravity potential: the y offsets do not change it
    assert metrics.gravity_potential(three_world, s3) == pytest.approx(3 * metrics.gravity_potential(one_world, s1), rel=1e-12)
    assert metrics.inextensibility(three_world, s3) < INEXTENSIBILITY_TOL[method]
    assert metrics.inextensibility(three_world, s3) == pytest.approx(metrics.inextensibility(one_world, s1), abs=1e-14)


# ------------------------------------------------------------------------------------ conservation
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_free_rod_without_gravity_keeps_its_momentum(method):
    cls = sim_class(method)
    world = free_rod_world(20)
    sim = build(cls, world)
    state = sim.initial_state()
    s = np.linspace(0.0, 1.0, world.n_vertices)
    m = world.vertex_mass
    bend = np.cos(2 * math.pi * s)
    bend -= (m @ bend) / m.sum()  # no net momentum in the bending part
    v = np.zeros((world.n_vertices, 3))
    v[:, 0] = 0.3
    v[:, 1] = -0.2
    v[:, 2] = 0.05 + 0.4 * bend
    state.vertex_v[...] = v
    restart_from_common_fields(state)
    p0 = momentum(world, state)
    com0 = (m @ state.vertex_x) / m.sum()
    t0 = state.t
    sim.advance(state, 60)
    assert np.linalg.norm(state.vertex_v - v) > 1e-3  # it bent
    p1 = momentum(world, state)
    np.testing.assert_allclose(p1, p0, rtol=0, atol=MOMENTUM_RTOL[method] * np.linalg.norm(p0))
    com1 = (m @ state.vertex_x) / m.sum()
    np.testing.assert_allclose(com1, com0 + p0 / m.sum() * (state.t - t0), rtol=0,
                               atol=1e-12 + MOMENTUM_RTOL[method] * np.linalg.norm(p0) / m.sum() * (state.t - t0))
    assert metrics.inextensibility(world, state) < INEXTENSIBILITY_TOL[method]


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_damping_never_adds_kinetic_energy(method):
    """A free rod translating and bending with viscous damping and no other load: the kinetic
    energy of a rigid translation decays every step; with bending the kinetic plus elastic energy
    (where the simulator reports it) never rises."""
    cls = sim_class(method)
    world = free_rod_world(16, damping=3.0)
    sim = build(cls, world)
    state = sim.initial_state()
    state.vertex_v[...] = (0.2, 0.0, -0.1)
    restart_from_common_fields(state)
    ke = [metrics.kinetic_energy(world, state)]
    for _ in range(10):
        sim.advance(state, 1)
        ke.append(metrics.kinetic_energy(world, state))
    assert np.all(np.diff(ke) < 0), ke
    decay = 3.0 * 10 * sim.dt
    assert ke[-1] < ke[0] * math.exp(-decay)  # at least the exact decay exp(-2 c t), to first order
    assert ke[-1] > ke[0] * math.exp(-4 * decay)

    state = sim.initial_state()
    s = np.linspace(0.0, 1.0, world.n_vertices)
    state.vertex_v[:, 2] = 0.5 * np.cos(math.pi * s)
    restart_from_common_fields(state)
    energy = getattr(sim, "elastic_energy", None)
    total = (lambda st: metrics.kinetic_energy(world, st) + energy(st)) if energy else (lambda st: metrics.kinetic_energy(world, st))
    e = [total(state)]
    chunk = max(1, round(0.05 / sim.dt))  # 8 chunks of 0.05 s: exp(-2 c t) = 0.09 over 0.4 s
    for _ in range(8):
        sim.advance(state, chunk)
        e.append(total(state))
    if energy:
        assert np.all(np.diff(e) <= 1e-12 * e[0]), e
    assert e[-1] < 0.5 * e[0]


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_closed_ring_spins_as_a_regular_polygon(method):
    cls = sim_class(method)
    needs(cls, "closed rods")
    b = WorldBuilder()
    n, perimeter = 24, 0.6
    b.add_rod(shapes.circle(n, perimeter, center=(0.1, 0.2, 0.3)), closed=True, **MAT)
    world = b.build()
    sim = build(cls, world)
    state = sim.initial_state()
    c0 = np.array([0.1, 0.2, 0.3])
    omega, drift = 4.0, np.array([0.05, 0.0, 0.02])
    state.vertex_v[...] = np.cross([0.0, 0.0, omega], state.vertex_x - c0) + drift
    restart_from_common_fields(state)
    m = world.vertex_mass

    def angular_momentum(st, c):
        return np.sum(m[:, None] * np.cross(st.vertex_x - c, st.vertex_v), axis=0)

    l0 = angular_momentum(state, c0)
    radius0 = np.linalg.norm(state.vertex_x - c0, axis=1).mean()
    sim.advance(state, 50)
    assert state.t > 0
    c = (m @ state.vertex_x) / m.sum()
    np.testing.assert_allclose(c, c0 + drift * state.t, rtol=0, atol=1e-9)
    d = np.linalg.norm(state.vertex_x - c, axis=1)
    assert d.max() - d.min() < 1e-9 * radius0  # still regular
    a, b0 = state.vertex_x[0] - c, world.vertex_rest_x[0] - c0
    angle = math.atan2(float(np.cross(b0, a)[2]), float(a @ b0))
    assert angle > 0.5 * omega * state.t  # it turned
    np.testing.assert_allclose(angular_momentum(state, c), l0, rtol=0, atol=ANGULAR_MOMENTUM_RTOL[method] * np.linalg.norm(l0))
    assert metrics.inextensibility(world, state) < INEXTENSIBILITY_TOL[method]
    np.testing.assert_allclose(state.vertex_x[:, 2], c[2], atol=1e-9)  # in its plane


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_rod_welded_to_a_body_falls_as_one_rigid_piece(method):
    cls = sim_class(method)
    needs(cls, "rigid bodies")
    b = WorldBuilder(gravity=(0.0, 0.0, -G_ACC))
    b.add_rod(shapes.straight(12, 0.4, start=(0.05, 0.0, 0.0)), **MAT)
    body = b.add_body(0.2, (2e-4, 3e-4, 4e-4), position=(0.0, 0.0, 0.0))
    b.weld(0, "start", body)
    world = b.build()
    sim = build(cls, world)
    state = sim.initial_state()
    x0 = state.vertex_x.copy()
    sim.advance(state, 50)
    t = state.t
    p = momentum(world, state)
    np.testing.assert_allclose(p, [0.0, 0.0, -world.total_mass() * G_ACC * t], rtol=0, atol=1e-9 * world.total_mass() * G_ACC * t)
    np.testing.assert_allclose(state.body_q[0], [1.0, 0.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(state.body_w[0], 0.0, atol=1e-12)
    # every vertex moved by the body's displacement: a uniform field deforms nothing
    np.testing.assert_allclose(state.vertex_x - x0, np.broadcast_to(state.body_x[0] - world.bodies[0].position, x0.shape), atol=1e-9)
    assert state.body_x[0, 2] < -0.5 * G_ACC * t * t * 0.9


# ------------------------------------------------------------------------------------ protocol
def _feature_world(feature):
    """A tiny world that uses exactly ``feature`` (besides a plain clamp)."""
    b = WorldBuilder(gravity=(0.0, 0.0, -G_ACC))
    pts = shapes.circle(8, 0.4) if feature == "closed rods" else shapes.straight(6, 0.3)
    if feature == "rods given by stiffness":
        b.add_rod(pts, bending=1e-3, twisting=1e-3, linear_density=0.1)
    elif feature == "rest curvature overrides":
        b.add_rod(pts, rest_twist=np.zeros(4), **MAT)
    else:
        b.add_rod(pts, closed=feature == "closed rods", **MAT)
    if feature != "closed rods":
        b.clamp(0, "start", motion=(lambda t: (np.eye(3), np.zeros(3))) if feature == "prescribed clamp motion" else None,
                free_rotation=feature == "swivel clamps", slide_axis=(1.0, 0.0, 0.0) if feature == "sliding clamps" else None)
    if feature == "pinned vertices":
        b.pin(0, -1)
    if feature == "rigid bodies":
        b.add_body(0.1, (1e-4, 1e-4, 1e-4), position=(0.35, 0.0, 0.0))
        b.weld(0, "end", 0)
    if feature == "obstacles":
        b.add_obstacle(Plane((0.0, 0.0, -0.5), (0.0, 0.0, 1.0)))
    if feature == "wind":
        b.set_wind((1.0, 0.0, 0.0), 0.01)
    if feature == "point forces":
        b.add_point_force(0, -1, (0.0, 0.0, 0.01))
    world = b.build()
    assert world.features() == {feature}
    return world


ALL_FEATURES = ("closed rods", "prescribed clamp motion", "swivel clamps", "sliding clamps", "pinned vertices",
                "rest curvature overrides", "rigid bodies", "obstacles", "wind", "point forces", "rods given by stiffness")


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_unsupported_features_are_refused(method):
    cls = sim_class(method)
    refused = [f for f in ALL_FEATURES if f not in cls.supports]
    for feature in refused:
        with pytest.raises(UnsupportedFeature, match=f"method {method} does not support {feature}"):
            cls(_feature_world(feature))
    # a world of supported features only is accepted by construction
    for feature in ("closed rods", "point forces"):
        if feature in cls.supports:
            assert cls(_feature_world(feature)).world.features() == {feature}


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_bad_options_are_refused(method):
    cls = sim_class(method)
    world = cantilever_world(method, 8)
    with pytest.raises(ModelError, match=f"method {method} has no option frobnicate"):
        cls(world, frobnicate=1)
    with pytest.raises(ModelError, match=r"dt must be > 0 s \(got -0.001\)"):
        cls(world, dt=-1e-3)
    sim = cls(world, dt=1e-3)
    assert sim.dt == 1e-3
    state = sim.initial_state()
    for bad in (-1, 1.5, True):
        with pytest.raises(ModelError, match="nsteps must be an integer >= 0"):
            sim.advance(state, bad)
    other = State.zeros_for(cantilever_world(method, 9))
    with pytest.raises(ModelError, match="this world has 8"):
        sim.advance(other, 1)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_advance_zero_steps_changes_nothing(method):
    cls = sim_class(method)
    sim = cls(cantilever_world(method, 10))
    state = sim.initial_state()
    sim.advance(state, 3)
    before = state.copy()
    rep = sim.advance(state, 0)
    assert rep.steps == 0 and rep.success
    assert_states_bitwise(state, before)
    assert state.method == before.method


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_save_load_mid_run_continues_bitwise(method, tmp_path):
    cls = sim_class(method)
    world = cantilever_world(method, 10, damping=0.5)
    sim = cls(world)
    straight = sim.initial_state()  # the run that never stops (same calls: t adds up the same way)
    sim.advance(straight, 8)
    unread = straight.copy()
    sim.advance(unread, 12)  # nobody read the state at step 8 (no save there)
    # the same reads as the saved run: saving reads the state, and a read ends a deferred frame
    # rebuild (docs/world.md, "Deferred outputs"): DER's reference directors of twist-free rods then
    # differ by round-off from the run read only at its end; everything else is bitwise
    straight.resolve()
    sim.advance(straight, 12)

    stopped = sim.initial_state()
    sim.advance(stopped, 8)
    sim.advance(stopped.copy(), 1)  # a warm-up step on a copy changes nothing
    stopped.save(tmp_path / "mid.npz", metadata={"method": method})
    resumed = State.load(tmp_path / "mid.npz")
    assert_states_bitwise(resumed, stopped)
    sim.advance(resumed, 12)
    assert_states_bitwise(resumed, straight)
    assert resumed.vertex_x[-1, 2] < world.vertex_rest_x[-1, 2]  # it moved
    for name in ("vertex_x", "vertex_v", "body_x", "body_q", "body_v", "body_w"):
        assert np.array_equal(getattr(unread, name), getattr(straight, name)), name
    for a, b in zip(unread.material_frames(), straight.material_frames()):
        assert np.abs(a - b).max() <= 1e-14


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_a_fresh_simulator_continues_a_loaded_state_bitwise(method, tmp_path):
    """No history outside the State: a new simulator of the same world, given the saved state
    and nothing else, continues exactly as the one that made it."""
    cls = sim_class(method)
    world = cantilever_world(method, 10, damping=0.5)
    sim = cls(world)
    reference = sim.initial_state()
    sim.advance(reference, 8)
    reference.save(tmp_path / "mid.npz")
    sim.advance(reference, 12)
    resumed = State.load(tmp_path / "mid.npz")
    cls(world).advance(resumed, 12)
    assert_states_bitwise(resumed, reference)
