"""CompactSimulator (Zhao et al., compact inextensible Cosserat rods) on the World protocol."""
import math

import numpy as np
import pytest

from rodlab.compact.sqp import CompactModel
from rodlab.model import ModelError
from rodlab.solvers import SimulationError, UnsupportedFeature, make_simulator
from rodlab.solvers.compact import compact_model_of
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Plane, TriangleMesh


def cantilever_world(n, E=1e7, g=9.81, damping=2.0, copies=1, spacing=0.5):
    """The first-wave compact cantilever's rod (segment 0 straddles the clamp) in a world."""
    L = 1.0
    l = L / (n - 1.5)
    x = -0.5 * l + l * np.arange(n)
    b = WorldBuilder(gravity=(0, 0, -g), damping=damping)
    for k in range(copies):
        r = b.add_rod(np.stack([x, np.full(n, spacing * k), np.zeros(n)], 1), E=E, G=E / 3, rho=1000.0, radius=0.01,
                      rest_d1=np.tile([0.0, 1.0, 0.0], (n - 1, 1)))
        b.clamp(r, "start")
    return b.build()


def helix_world(n=24, **kw):
    b = WorldBuilder(**kw)
    b.add_rod(shapes.helix(n, 0.1, 0.05, 1.5), E=1e6, G=1e6 / 3, rho=1000.0, radius=0.005)
    b.pin(0, 0)
    return b.build()


def test_model_equals_from_polyline_for_uniform_circular_rod():
    w = helix_world()
    rod = w.rods[0]
    ref = CompactModel.from_polyline(rod.rest_positions, E=1e6, G=1e6 / 3, rho=1000.0, radius=0.005, d1=rod.rest_d1)
    # the same rod given by its stiffness goes through the per-edge arrays
    b = WorldBuilder()
    I = math.pi * 0.005**4 / 4
    b.add_rod(rod.rest_positions, bending=1e6 * I, twisting=1e6 / 3 * 2 * I, linear_density=1000 * math.pi * 0.005**2,
              radius=0.005)
    for md in (compact_model_of(w, 0), compact_model_of(b.build(), 0)):
        for name in ("lengths", "masses", "Jr", "lbar", "Kh", "ubar", "rest_p", "rest_q"):
            a, e = getattr(md, name), getattr(ref, name)
            assert a.shape == e.shape
            assert np.allclose(a, e, rtol=1e-13, atol=1e-15 * np.abs(e).max()), name


# the first-wave driver (rodlab/compact/cantilever.py, removed in stage 2 of issue #13) on these two
# runs: tip and middle vertex (index n // 2) at the end
FIRST_WAVE_DYNAMIC = ([0.37367874491795294, 2.101626061917623e-08, -0.8706426193509337],
                      [0.2783607669546976, 4.5883998702636024e-10, -0.39377040993240736])
FIRST_WAVE_STATIC = ([0.8933708798106775, -8.469742662088825e-17, -0.41913936034563565],
                     [0.4749850987930013, -3.0903115118432194e-17, -0.15505976758265985])


def _assert_first_wave(x, golden, tol=1e-10):
    """``tol`` relative to the tip's size: 1e-10 for the static solve (a direct Newton to 1e-10),
    1e-7 for dynamics (PCG to an absolute 1e-7 in every step; another CPU rounds differently and
    the golden values were recorded on one machine, tests/test_compact_scenes_world.py)."""
    tip, mid = (np.array(v) for v in golden)
    scale = np.abs(tip).max()
    assert np.abs(x[-1] - tip).max() <= tol * scale
    assert np.abs(x[x.shape[0] // 2] - mid).max() <= tol * scale


def test_dynamic_cantilever_matches_first_wave_driver():
    n, dt, t_end = 20, 0.01, 0.5
    sim = make_simulator(cantilever_world(n), "compact", dt=dt, tension_stiffness=True)
    state = sim.initial_state()
    sim.advance(state.copy(), 3)  # a warm-up on a copy changes nothing
    rep = sim.advance(state, int(round(t_end / dt)))
    assert rep.success and rep.steps == 50 and rep.newton_iters > 0
    _assert_first_wave(state.vertex_x, FIRST_WAVE_DYNAMIC, tol=1e-7)
    assert state.t == pytest.approx(t_end, rel=1e-12)
    # the common fields: m1 unit and normal to the edges, velocities of the chain
    e = np.diff(state.vertex_x, axis=0)
    assert np.allclose(np.linalg.norm(state.edge_ref_d1, axis=1), 1.0, atol=1e-12)
    assert np.abs(np.einsum("ij,ij->i", e, state.edge_ref_d1)).max() < 1e-12
    assert np.all(state.edge_theta == 0.0)
    assert np.abs(state.vertex_v).max() > 0.1


def test_static_cantilever_matches_first_wave_and_elastica():
    from rodlab.analytic.elastica import cantilever_elastica_tip

    n, E = 50, 1e8
    sim = make_simulator(cantilever_world(n, E=E), "compact")
    state = sim.initial_state()
    rep = sim.solve_static(state)
    assert rep.success and rep.iterations > 0
    _assert_first_wave(state.vertex_x, FIRST_WAVE_STATIC)
    ref = cantilever_elastica_tip(1.0, E * math.pi * 1e-8 / 4, 1000 * math.pi * 1e-4 * 9.81)
    tip = state.vertex_x[-1]
    assert math.hypot(tip[0] - ref[0], tip[2] - ref[1]) < 0.01 / 5
    assert np.all(state.vertex_v == 0.0) and state.t == 0.0
    assert sim.elastic_energy(state) > 0.0


def test_identical_rods_step_like_one_rod():
    """Three copies of one rod (on top of each other: no contacts) step bit for bit like it."""
    one = make_simulator(cantilever_world(16), "compact", dt=0.02)
    three = make_simulator(cantilever_world(16, copies=3, spacing=0.0), "compact", dt=0.02)
    s1, s3 = one.initial_state(), three.initial_state()
    rep1 = one.advance(s1, 10)
    rep3 = three.advance(s3, 10)
    for r in range(3):
        assert np.array_equal(s3.rod_x(r), s1.rod_x(0))
        assert np.array_equal(s3.rod_v(r), s1.rod_v(0))
        assert np.array_equal(s3.rod_ref_d1(r), s1.rod_ref_d1(0))
    assert rep3.newton_iters == 3 * rep1.newton_iters


def test_curved_rod_at_rest_stays_at_rest():
    sim = make_simulator(helix_world(), "compact", dt=0.01)
    state = sim.initial_state()
    w = sim.world
    assert np.allclose(state.edge_ref_d1, w.edge_rest_d1, atol=1e-12)
    assert np.abs(state.vertex_x - w.vertex_rest_x).max() < 1e-15
    assert sim.elastic_energy(state) < 1e-20
    sim.advance(state, 20)
    assert np.abs(state.vertex_x - w.vertex_rest_x).max() < 1e-12
    assert np.abs(state.vertex_v).max() < 1e-10
    assert np.abs(state.joint_ref_twist).max() < 1e-10  # Bishop rest frame: no reference twist


def test_anisotropic_bending_uses_the_stiffness_about_m1():
    """Rod along x, m1 = +y: sagging toward -z turns the tangent toward m2 (= +z), which the world's
    bending_stiffness[:, 1] resists (rotation about m1)."""
    def tip_z(bending):
        b = WorldBuilder(gravity=(0, 0, -9.81))
        b.add_rod(shapes.straight(20, 1.0), bending=bending, twisting=0.5, linear_density=0.3,
                  rest_d1=np.tile([0.0, 1.0, 0.0], (19, 1)))
        b.clamp(0, "start")
        sim = make_simulator(b.build(), "compact")
        s = sim.initial_state()
        sim.solve_static(s)
        return s.vertex_x[-1, 2]

    stiff, soft = tip_z((5.0, 0.5)), tip_z((0.5, 5.0))
    assert tip_z(0.5) == pytest.approx(stiff, rel=1e-6)
    assert tip_z(5.0) == pytest.approx(soft, rel=1e-6)
    assert stiff < 5 * soft  # the (5, 0.5) rod sags ~10x more


def test_start_from_common_fields_of_another_state():
    sim = make_simulator(cantilever_world(12), "compact", dt=0.01)
    a = sim.initial_state()
    sim.advance(a, 5)
    b = a.copy()
    b.method, b.solver = "", {}
    sim.advance(a, 3)
    sim.advance(b, 3)
    assert b.method == "compact"
    assert np.abs(a.vertex_x - b.vertex_x).max() < 1e-6  # angular velocity about the tangents is not in the State


def test_refusals_name_feature_and_method():
    def world(**edit):
        b = WorldBuilder()
        b.add_rod(shapes.straight(8, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01, closed=edit.get("closed", False))
        if "clamp" in edit:
            b.clamp(0, edit["clamp"])
        if "pin" in edit:
            b.pin(0, edit["pin"])
        if edit.get("wind"):
            b.set_wind((1.0, 0, 0), 0.1)
        if edit.get("mesh"):  # capsules are supported (tests/test_compact_friction.py)
            b.add_obstacle(TriangleMesh([(0, 0, -1.0), (1.0, 0, -1.0), (0, 1.0, -1.0)], [(0, 1, 2)]))
        return b.build()

    for edit, words in (({"wind": True}, "wind"), ({"mesh": True}, "triangle mesh obstacles")):
        with pytest.raises(UnsupportedFeature, match="compact") as exc:
            make_simulator(world(**edit), "compact")
        assert words in str(exc.value)
    b = WorldBuilder()
    b.add_rod(shapes.circle(8, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01, closed=True)
    with pytest.raises(UnsupportedFeature, match="compact does not support closed rods"):
        make_simulator(b.build(), "compact")
    with pytest.raises(ModelError, match="precond"):
        make_simulator(world(), "compact", precond="ilu")
    with pytest.raises(ModelError, match="newton_iters"):
        make_simulator(world(), "compact", newton_iters=0)
    with pytest.raises(ModelError, match="no option rho_inf"):
        make_simulator(world(), "compact", rho_inf=0.5)


def test_non_finite_step_raises_and_keeps_last_good_state():
    sim = make_simulator(cantilever_world(10, copies=2), "compact", dt=0.01)
    state = sim.initial_state()
    sim.advance(state, 2)
    good = state.copy()
    state.solver["omega"][3, 0] = np.nan
    with pytest.raises(SimulationError, match="compact: step 1 of this call is not finite"):
        sim.advance(state, 4)
    assert state.t == good.t
    assert np.array_equal(state.vertex_x, good.vertex_x)
    assert np.array_equal(state.solver["q"], good.solver["q"])


# ---- moving root clamps and obstacles (the compact scenes on the World) ---------------------------
def _turn_and_shift(rate=0.8, speed=0.1):
    """A clamp motion: turn about z at ``rate`` [rad/s] and translate along y at ``speed`` [m/s]."""
    def motion(t):
        c, s = math.cos(rate * t), math.sin(rate * t)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.array([0.0, speed * t, 0.0])
    return motion


def _driven_world(n=12, motion=None, extra_rod=None, g=9.81):
    b = WorldBuilder(gravity=(0, 0, -g))
    r = b.add_rod(shapes.straight(n, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01)
    b.clamp(r, "start", motion=motion)
    if extra_rod is not None:
        r2 = b.add_rod(shapes.straight(extra_rod, 0.8, start=(0, 0.5, 0)), E=1e6, G=4e5, rho=1e3, radius=0.01)
        b.clamp(r2, "start")
    return b.build()


def test_moving_root_clamp_follows_its_rigid_motion():
    motion = _turn_and_shift()
    w = _driven_world(motion=motion)
    sim = make_simulator(w, "compact", dt=0.01)
    state = sim.initial_state()
    sim.advance(state, 7)
    sim.advance(state, 13)
    R, d = motion(state.t)
    x0 = w.vertex_rest_x[:2]
    c0 = x0.mean(axis=0)
    assert state.t == pytest.approx(0.2, rel=1e-12)
    assert np.abs(state.vertex_x[:2] - ((x0 - c0) @ R.T + c0 + d)).max() < 1e-12
    assert np.abs(state.edge_ref_d1[0] - R @ w.edge_rest_d1[0]).max() < 1e-12
    assert np.abs(state.vertex_x[-1] - w.vertex_rest_x[-1]).max() > 0.05  # the rest of the rod follows
    # static: the clamp is held at its pose at state.t
    state.t = 0.5
    assert sim.solve_static(state).success
    R, d = motion(0.5)
    assert np.abs(state.vertex_x[:2] - ((x0 - c0) @ R.T + c0 + d)).max() < 1e-12


def test_moving_clamp_moves_only_its_rod():
    """Two rods of different sizes, one driven: each steps bit for bit as in a world of its own."""
    motion = _turn_and_shift()
    both = make_simulator(_driven_world(motion=motion, extra_rod=9), "compact", dt=0.02)
    alone = make_simulator(_driven_world(motion=motion), "compact", dt=0.02)
    b = WorldBuilder(gravity=(0, 0, -9.81))
    b.add_rod(shapes.straight(9, 0.8, start=(0, 0.5, 0)), E=1e6, G=4e5, rho=1e3, radius=0.01)
    b.clamp(0, "start")
    still = make_simulator(b.build(), "compact", dt=0.02)
    s2, s1, s0 = both.initial_state(), alone.initial_state(), still.initial_state()
    for sim, st in ((both, s2), (alone, s1), (still, s0)):
        sim.advance(st, 6)
    assert np.array_equal(s2.rod_x(0), s1.rod_x(0)) and np.array_equal(s2.rod_v(0), s1.rod_v(0))
    assert np.array_equal(s2.rod_x(1), s0.rod_x(0)) and np.array_equal(s2.rod_v(1), s0.rod_v(0))


def test_moving_clamp_away_from_the_root_is_accepted():
    # clamps and pins away from the root are equality rows of the step now (rodlab.compact.end_clamps;
    # their mechanics: tests/test_compact_sliding_twist.py)
    b = WorldBuilder()
    b.add_rod(shapes.straight(8, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01)
    b.clamp(0, "end", motion=_turn_and_shift())
    b.pin(0, 3)
    sim = make_simulator(b.build(), "compact")
    assert sim._joint is not None and sim._joint.n_eq == 6


def test_mesh_obstacles_are_refused_by_name():
    from rodlab.world.obstacles import TriangleMesh

    b = WorldBuilder()
    b.add_rod(shapes.straight(8, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01)
    b.add_obstacle(TriangleMesh([[0, 0, -1.0], [1, 0, -1.0], [0, 1, -1.0]], [[0, 1, 2]]))
    with pytest.raises(UnsupportedFeature, match="compact does not support triangle mesh obstacles"):
        make_simulator(b.build(), "compact")


def _falling_rod(obstacle, n=10, z=0.3, damping=0.0):
    b = WorldBuilder(gravity=(0, 0, -9.81), damping=damping)
    b.add_rod(shapes.straight(n, 1.0, start=(-0.5, 0, z)), E=1e5, G=4e4, rho=1e3, radius=0.01)
    b.add_obstacle(obstacle)
    return b.build()


def test_rod_falls_onto_a_plane_and_rests_on_it():
    """A plane through z = 0.1 (its point off the origin): the rod comes to rest flat on it,
    every vertex at z = 0.1 + rod radius and in contact."""
    w = _falling_rod(Plane(point=(0.3, -0.2, 0.1), normal=(0, 0, 2.0)), damping=8.0)
    sim = make_simulator(w, "compact", dt=0.01)
    state = sim.initial_state()
    rep = sim.advance(state, 80)
    assert rep.success and rep.steps == 80
    assert np.abs(state.vertex_x[:, 2] - 0.11).max() < 1e-8
    assert np.abs(state.vertex_v).max() < 1e-3
    assert sim.last_call.contacts == 10 and sim.last_call.contacts_max == 10 and sim.last_call.steps == 80
    assert 0 < sim.last_call.contacts_sum <= 800 and sim.last_call.max_violation < 1e-9
    assert state.solver["contact_active"].shape == (10, 3)
    assert sorted(state.solver["contact_active"][:, 2]) == list(range(10))


def test_sphere_and_cylinder_contacts_match_the_active_set_solver():
    """The world's sphere and cylinder go to rodlab.compact.active_set unchanged: the simulator
    steps bit for bit as the ConstrainedSolver on the same rod, and nothing penetrates."""
    from rodlab.compact.active_set import ConstrainedSolver, Cylinder as ASCylinder, Sphere as ASSphere
    from rodlab.compact.sqp import CompactState, SolverOptions
    from rodlab.world.obstacles import Cylinder, Sphere

    for ob, ref in ((Sphere((0.1, 0.0, -0.2), 0.3), ASSphere((0.1, 0.0, -0.2), 0.3)),
                    (Cylinder((0.0, 0.0, -0.1), (0, 3.0, 0), 0.2), ASCylinder((0.0, 0.0, -0.1), (0, 1.0, 0), 0.2))):
        w = _falling_rod(ob, z=0.15)
        sim = make_simulator(w, "compact", dt=0.01)
        state = sim.initial_state()
        sim.advance(state, 25)
        md = compact_model_of(w, 0)
        cs = ConstrainedSolver(md, SolverOptions(), obstacles=[ref], gravity=(0, 0, -9.81))
        st = CompactState.at_rest(md)
        for _ in range(25):
            cs.step(st, 0.01)
        assert np.array_equal(state.vertex_x, st.p)
        assert np.array_equal(state.solver["q"], st.q)
        assert float(np.min(ob.distance(state.vertex_x))) > 0.01 - 1e-9
        assert sim.last_call.contacts >= 1


def test_the_active_set_lives_in_the_state():
    """A warm-up step on a copy changes nothing; a saved and loaded state steps on identically."""
    w = _falling_rod(Plane((0, 0, 0.2), (0, 0, 1)), z=0.22)
    a = make_simulator(w, "compact", dt=0.01)
    sa = a.initial_state()
    a.advance(sa, 5)
    assert len(sa.solver["contact_active"]) > 0
    sb = sa.copy()
    a.advance(sa.copy(), 3)  # warm-up on a copy
    a.advance(sa, 4)
    b = make_simulator(w, "compact", dt=0.01)
    b.advance(sb, 4)
    assert np.array_equal(sa.vertex_x, sb.vertex_x)
    assert np.array_equal(sa.solver["contact_active"], sb.solver["contact_active"])


def test_static_solve_with_obstacles_is_refused():
    w = _falling_rod(Plane((0, 0, 0.0), (0, 0, 1)))
    sim = make_simulator(w, "compact")
    with pytest.raises(UnsupportedFeature, match="no static solve with obstacles"):
        sim.solve_static(sim.initial_state())


def test_direct_preconditioner_matches_hybrid_on_rods_of_two_sizes():
    """precond=direct factors one dense block per rod (rods of 8 and 12 vertices here)."""
    b = WorldBuilder(gravity=(0, 0, -9.81))
    for n, y in ((12, 0.0), (8, 0.5)):
        r = b.add_rod(shapes.helix(n, 0.1, 0.05, 1.0, start=(0, y, 0)), E=1e6, G=4e5, rho=1e3, radius=0.005)
        b.clamp(r, "start")
    w = b.build()
    out = []
    for pc in ("hybrid", "direct"):
        sim = make_simulator(w, "compact", dt=0.01, precond=pc, newton_iters=30, tol=1e-11, pcg_rtol=1e-13, pcg_atol=0.0)
        st = sim.initial_state()
        assert sim.advance(st, 3).success
        out.append(st.vertex_x)
    assert np.abs(out[0] - out[1]).max() < 1e-10
    assert np.abs(out[0] - w.vertex_rest_x).max() > 1e-4


def test_a_clamp_motion_of_the_wrong_shape_is_an_error_naming_the_rod():
    sim = make_simulator(_driven_world(motion=lambda t: (np.eye(3), np.zeros(2))), "compact", dt=0.01)
    with pytest.raises(ModelError, match=r"clamp motion of rod 0 must return a rotation \(3, 3\)"):
        sim.advance(sim.initial_state(), 1)


def test_fast_path_matches_the_checked_path_and_rechecks_replaced_arrays():
    """``advance`` checks a state's arrays once and then trusts them while they are the same
    objects: a state whose arrays were replaced is checked again, and the quick report equals the
    dataclass's."""
    from rodlab.solvers.base import StepReport
    from rodlab.solvers.compact import step_report

    assert step_report(3, True, "ok", 4, 5, 1e-7, 2e-6) == StepReport(3, True, "ok", 4, 5, 1e-7, 2e-6)
    world = cantilever_world(12, copies=2)
    sim = make_simulator(world, "compact")
    state = sim.initial_state()
    rep = sim.advance(state, 3)
    assert rep.steps == 3 and rep.success and rep.newton_iters > 0 and rep.linear_iters > 0
    again = sim.initial_state()
    sim.advance(again, 1)
    state_copy = again.copy()  # new arrays: the checked path, then the fast one; same numbers
    sim.advance(again, 2)
    sim.advance(state_copy, 1)
    sim.advance(state_copy, 1)
    assert np.array_equal(again.vertex_x, state.vertex_x) and np.array_equal(state_copy.vertex_x, state.vertex_x)
    assert np.array_equal(state_copy.joint_ref_twist, state.joint_ref_twist)
    state.solver["s"] = np.zeros((world.n_vertices - 1, 3))
    with pytest.raises(ModelError, match=r"state.solver\['s'\] of a compact state must have shape"):
        sim.advance(state, 1)
    state.solver["s"] = np.array(again.solver["s"])
    state.edge_ref_d1 = np.zeros((world.n_edges, 2))
    with pytest.raises(ModelError, match="state.edge_ref_d1 must be a C-contiguous float64 array of shape"):
        sim.advance(state, 1)
