"""CompactSimulator (Zhao et al., compact inextensible Cosserat rods) on the World protocol."""
import math

import numpy as np
import pytest

from rodlab.compact.cantilever import build_cantilever, run_cantilever
from rodlab.compact.sqp import CompactModel
from rodlab.model import ModelError
from rodlab.solvers import SimulationError, UnsupportedFeature, make_simulator
from rodlab.solvers.compact import compact_model_of
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Plane


class _Quiet:
    def update(self, *a):
        pass


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


def test_dynamic_cantilever_matches_first_wave_driver():
    n, dt, t_end = 20, 0.01, 0.5
    old = run_cantilever(dict(n=n, length=1.0, E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01, g=9.81, damping=2.0,
                              dt=dt, t_end=t_end, static=False), _Quiet())
    sim = make_simulator(cantilever_world(n), "compact", dt=dt, tension_stiffness=True)
    state = sim.initial_state()
    sim.advance(state.copy(), 3)  # a warm-up on a copy changes nothing
    rep = sim.advance(state, int(round(t_end / dt)))
    assert rep.success and rep.steps == 50 and rep.newton_iters > 0
    x_old = old.trajectory["x"][-1]
    assert np.abs(state.vertex_x - x_old).max() <= 1e-10 * np.abs(x_old).max()
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
    old = run_cantilever(dict(n=n, length=1.0, E=E, G=E / 3, rho=1000.0, radius=0.01, g=9.81, damping=2.0, dt=0.0,
                              t_end=1.0, static=True), _Quiet())
    x_old = old.trajectory["x"][-1]
    assert np.abs(state.vertex_x - x_old).max() <= 1e-10 * np.abs(x_old).max()
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
        if edit.get("plane"):
            b.add_obstacle(Plane(point=(0, 0, -1.0), normal=(0, 0, 1.0)))
        return b.build()

    for edit, words in (({"clamp": "end"}, "clamp of edge 6"), ({"pin": 3}, "pin of vertex 3"),
                        ({"wind": True}, "wind"), ({"plane": True}, "obstacles")):
        with pytest.raises(UnsupportedFeature, match="compact") as exc:
            make_simulator(world(**edit), "compact")
        assert words in str(exc.value)
    b = WorldBuilder()
    b.add_rod(shapes.circle(8, 1.0), E=1e6, G=4e5, rho=1e3, radius=0.01, closed=True)
    with pytest.raises(UnsupportedFeature, match="compact does not support closed rods"):
        make_simulator(b.build(), "compact")
    with pytest.raises(ModelError, match="precond"):
        make_simulator(world(), "compact", precond="direct")
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
