"""The der-implicit simulator on the World (rodlab.solvers.der_implicit): builder, batching,
agreement with the single-rod stepper, statics, loads, refusals and failure handling."""
import math

import numpy as np
import pytest

from rodlab.analytic.elastica import cantilever_elastica_tip
from rodlab.scenes.cantilever_world import cantilever_model
from rodlab.der_implicit.energies import der_elastic, unpack_dofs, update_frames
from rodlab.der_implicit.stepper import DERImplicitStepper, build_rod
from rodlab.model import ModelError
from rodlab.solvers import SimulationError, UnsupportedFeature, make_simulator
from rodlab.solvers.der_implicit import rod_model
from rodlab.world import WorldBuilder, shapes

E, G, RHO, R = 1e8, 1e8 / 3, 1000.0, 0.01


def cantilever_world(x, *, copies=1, damping=2.0, g=9.81):
    b = WorldBuilder(gravity=(0.0, 0.0, -g), damping=damping)
    for k in range(copies):
        r = b.add_rod(x + np.array([0.0, 0.1 * k, 0.0]), E=E, G=G, rho=RHO, radius=R)
        b.clamp(r, "start")
    return b.build()


def test_uniform_rod_builder_is_build_rod():
    x = shapes.helix(12, 0.1, 0.05, 1.5)  # curved and twisted rest shape, Bishop rest frame
    b = WorldBuilder(gravity=(0.0, -9.81, 1.0), damping=0.5)
    r = b.add_rod(x, E=E, G=G, rho=RHO, radius=R)
    b.clamp(r, "start")
    rod = b.build().rods[0]
    mine, st = rod_model(rod, gravity=(0.0, -9.81, 1.0), damping=0.5)
    ref, ref_st = build_rod(x, radius=R, E=E, G=G, rho=RHO, gravity=(0.0, -9.81, 1.0), damping=0.5, u0=rod.rest_d1[0])
    for name in ("ks", "lbar", "kbend", "wbar", "ktwist", "mbar", "lvor", "mass", "fext"):
        np.testing.assert_allclose(getattr(mine, name), getattr(ref, name), rtol=1e-13, atol=1e-15, err_msg=name)
    assert np.abs(ref.wbar).max() > 0.5  # the comparison sees the rest curvature
    np.testing.assert_array_equal(mine.fixed, ref.fixed)
    assert mine.damping == ref.damping and mine.curv2d == ref.curv2d
    for name in ("q", "a1", "tan", "mref"):
        np.testing.assert_allclose(getattr(st, name), getattr(ref_st, name), rtol=0, atol=1e-14, err_msg=name)


def test_rest_frame_and_overrides_set_the_rest_curvature():
    """A rest frame turned by a constant angle about the tangents changes nothing; rest-curvature
    overrides land on the interior vertices with the explicit DER's joint numbering."""
    x = shapes.helix(10, 0.1, 0.05, 1.0)
    rod0 = WorldBuilder()
    rod0.add_rod(x, E=E, G=G, rho=RHO, radius=R)
    base = rod0.build().rods[0]
    m0, _ = rod_model(base)
    t = np.diff(x, axis=0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    turned = math.cos(0.7) * base.rest_d1 + math.sin(0.7) * np.cross(t, base.rest_d1)
    b = WorldBuilder()
    b.add_rod(x, E=E, G=G, rho=RHO, radius=R, rest_d1=turned)
    m1, st1 = rod_model(b.build().rods[0])
    # the material curvature components rotate by the angle, the twist is unchanged
    c, s = math.cos(0.7), math.sin(0.7)
    rot = np.array([[c, s], [-s, c]])
    np.testing.assert_allclose(m1.wbar[1:-1, :2], m0.wbar[1:-1, :2] @ rot.T, atol=1e-12)
    np.testing.assert_allclose(m1.mbar, m0.mbar, atol=1e-12)
    np.testing.assert_allclose(st1.a1, turned, atol=1e-12)
    w = np.arange(8 * 4, dtype=float).reshape(8, 4) * 0.1
    b = WorldBuilder()
    b.add_rod(x, E=E, G=G, rho=RHO, radius=R, rest_curvature=w, rest_twist=np.full(8, 0.25))
    m2, _ = rod_model(b.build().rods[0])
    np.testing.assert_array_equal(m2.wbar[1:-1], w)
    np.testing.assert_array_equal(m2.mbar[1:-1], 0.25)


@pytest.mark.parametrize("scheme,bending", [("implicit", "4d"), ("exponential", "4d"), ("implicit", "2d-average")])
def test_reproduces_the_old_stepper_on_the_cantilever(scheme, bending):
    model, st = cantilever_model(30, 1.0, R, E, G, RHO, 9.81, 2.0)
    x0 = unpack_dofs(st.q)[0]
    if bending == "2d-average":
        model, st = build_rod(x0, radius=R, E=E, G=G, rho=RHO, gravity=(0.0, 0.0, -9.81), damping=2.0, curv2d=True,
                              u0=np.array([0.0, 0.0, 1.0]))
    sim = make_simulator(cantilever_world(x0), "der-implicit", damping_scheme=scheme, bending=bending)
    assert sim.dt == pytest.approx(1 / 240)
    state = sim.initial_state()
    DERImplicitStepper(model, damping_scheme=scheme).advance(st, 240)
    rep = sim.advance(state, 100)
    assert rep.steps == 100 and rep.newton_iters == 100 and rep.success
    sim.advance(state, 140)
    x, theta = unpack_dofs(st.q)
    v, omega = unpack_dofs(st.v)
    assert np.abs(x - x0).max() > 0.05  # it moved
    # the two drivers order some operations differently (the batch kernel reuses the base frames
    # where they belong to q): round-off of 1e-16 grows to ~1e-12 over 240 steps (measured 9e-13
    # before that change, 1.1e-12 after), far below any physical difference
    np.testing.assert_allclose(state.vertex_x, x, rtol=0, atol=1e-11)
    np.testing.assert_allclose(state.edge_theta, theta, rtol=0, atol=1e-11)
    np.testing.assert_allclose(state.vertex_v, v, rtol=0, atol=1e-9)
    np.testing.assert_allclose(state.solver["edge_theta_v"], omega, rtol=0, atol=1e-9)
    np.testing.assert_allclose(state.edge_ref_d1, st.a1, rtol=0, atol=1e-11)
    np.testing.assert_allclose(state.joint_ref_twist, st.mref, rtol=0, atol=1e-11)
    assert state.t == pytest.approx(1.0) and state.method == "der-implicit"
    tan, elen, a1, mref = np.empty((29, 3)), np.empty(29), np.empty((29, 3)), np.empty(28)
    update_frames(st.q, st.tan, st.a1, st.mref, tan, elen, a1, mref)
    n = st.q.size
    energy = der_elastic(st.q, tan, elen, a1, mref, model.ks, model.lbar, model.kbend, model.wbar, model.ktwist,
                         model.mbar, model.lvor, model.curv2d, 0, np.zeros(n), np.zeros((n, 11)))
    assert energy > 1e-4 and sim.elastic_energy(state) == pytest.approx(energy, rel=1e-10)


def test_identical_rods_in_one_batch_give_the_single_rod_answer():
    x = shapes.straight(12, 0.6)
    single = make_simulator(cantilever_world(x), "der-implicit")
    many = make_simulator(cantilever_world(x, copies=5), "der-implicit")
    s1, sk = single.initial_state(), many.initial_state()
    # a warm-up step on a copy changes nothing (no history outside the state)
    many.advance(sk.copy(), 3)
    single.advance(s1, 50)
    many.advance(sk, 20)
    many.advance(sk, 30)
    for r in range(5):
        np.testing.assert_allclose(sk.rod_x(r) - np.array([0.0, 0.1 * r, 0.0]), s1.vertex_x, rtol=0, atol=1e-13)
        np.testing.assert_allclose(sk.rod_theta(r), s1.edge_theta, rtol=0, atol=1e-13)
    # the parallel loop is deterministic: one thread or two, the same bits
    import numba

    threads = numba.get_num_threads()
    runs = []
    for k in (1, threads):
        numba.set_num_threads(k)
        s = many.initial_state()
        many.advance(s, 20)
        runs.append(s)
    numba.set_num_threads(threads)
    np.testing.assert_array_equal(runs[0].vertex_x, runs[1].vertex_x)
    assert many.elastic_energy(sk) == pytest.approx(5 * single.elastic_energy(s1), rel=1e-12)


@pytest.mark.parametrize("n,tol", [(50, 0.01)])
def test_static_cantilever_matches_the_elastica(n, tol):
    L, Ey = 1.0, 1e7
    dx = L / (n - 1.5)  # the discrete clamp of der_implicit/cantilever.py: root edge centred on x = 0
    x = np.zeros((n, 3))
    x[:, 0] = -0.5 * dx + dx * np.arange(n)
    x[-1, 0] = L
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.clamp(b.add_rod(x, E=Ey, G=Ey / 3, rho=RHO, radius=R), "start")
    sim = make_simulator(b.build(), "der-implicit")
    state = sim.initial_state()
    rep = sim.solve_static(state)
    assert rep.success, rep.message
    ref = cantilever_elastica_tip(L, Ey * math.pi * R**4 / 4, RHO * math.pi * R**2 * 9.81)
    tip = state.vertex_x[-1]
    assert math.hypot(tip[0] - ref[0], tip[2] - ref[1]) < tol
    assert abs(ref[1]) > 0.3  # a large deflection
    assert abs(tip[1]) < 1e-12 and np.all(state.vertex_v == 0)


def test_free_rod_in_wind_reaches_the_wind_speed_exactly():
    """No gravity, no clamp, uniform wind u: v_k = u (1 - (1 + c h)^-k), c = drag / linear density."""
    b = WorldBuilder()
    b.add_rod(shapes.straight(8, 0.5), E=E, G=G, rho=RHO, radius=R)
    u = np.array([0.3, -0.2, 0.1])
    b.set_wind(u, drag=2.0)
    sim = make_simulator(b.build(), "der-implicit", dt=0.01)
    state = sim.initial_state()
    sim.advance(state, 10)
    c = 2.0 / (RHO * math.pi * R**2)
    expect = u * (1.0 - (1.0 + c * 0.01) ** -10)
    np.testing.assert_allclose(state.vertex_v, np.broadcast_to(expect, state.vertex_v.shape), rtol=1e-9, atol=0)


def test_point_forces_constant_and_timed_and_pins():
    x = shapes.straight(6, 0.5)
    b = WorldBuilder()
    r = b.add_rod(x, E=E, G=G, rho=RHO, radius=R)
    b.pin(r, 0)
    b.add_point_force(r, -1, (0.0, 0.0, 1e-3))
    b.add_point_force(r, 2, lambda t: np.array([0.0, 1e-3 * t, 0.0]))
    sim = make_simulator(b.build(), "der-implicit")
    state = sim.initial_state()
    sim.advance(state, 24)
    assert np.all(state.vertex_x[0] == x[0])  # pinned
    assert state.vertex_x[-1, 2] > 1e-6 and state.vertex_x[2, 1] > 0  # both forces act
    # the same run in other chunks: timed loads are evaluated per step, so the chunks do not matter
    s2 = sim.initial_state()
    for k in (5, 7, 12):
        sim.advance(s2, k)
    np.testing.assert_array_equal(s2.vertex_x, state.vertex_x)


def test_driven_clamp_turns_the_end_and_twists_the_rod():
    from rodlab.model import twist_about_axis

    b = WorldBuilder()
    r = b.add_rod(shapes.straight(10, 0.5), E=E, G=G, rho=RHO, radius=R)
    b.clamp(r, "start")
    b.clamp(r, "end", motion=twist_about_axis((1.0, 0.0, 0.0), rate=2.0))
    sim = make_simulator(b.build(), "der-implicit", damping_scheme="exponential")
    state = sim.initial_state()
    sim.advance(state, 120)  # 0.5 s: the end edge turned by 1 rad about the rod's axis
    m1, _ = state.material_frames()
    angle = math.atan2(np.cross(m1[0], m1[-1]) @ np.array([1.0, 0.0, 0.0]), m1[0] @ m1[-1])
    assert angle == pytest.approx(1.0, abs=1e-9)
    assert sim.elastic_energy(state) > 0


def test_refusals_name_the_feature_and_the_method():
    b = WorldBuilder()
    b.add_rod(shapes.circle(8, 1.0), E=E, G=G, rho=RHO, radius=R, closed=True)
    with pytest.raises(UnsupportedFeature, match="der-implicit does not support closed rods"):
        make_simulator(b.build(), "der-implicit")
    b = WorldBuilder()
    b.add_rod(shapes.straight(5, 1.0), bending=(1.0, 2.0), twisting=1.0, linear_density=0.1, stretching=10.0)
    with pytest.raises(UnsupportedFeature, match="der-implicit does not support anisotropic bending"):
        make_simulator(b.build(), "der-implicit")
    b = WorldBuilder()
    r = b.add_rod(shapes.straight(5, 1.0), E=E, G=G, rho=RHO, radius=R)
    b.clamp(r, "start", slide_axis=(1.0, 0.0, 0.0))
    with pytest.raises(UnsupportedFeature, match="sliding clamps"):
        make_simulator(b.build(), "der-implicit")
    b = WorldBuilder()
    b.add_rod(shapes.straight(5, 1.0), bending=1.0, twisting=1.0, linear_density=0.1)  # stretching 0
    with pytest.raises(ModelError, match="stretching stiffness > 0"):
        make_simulator(b.build(), "der-implicit")
    b = WorldBuilder()
    b.add_rod(shapes.straight(5, 1.0), E=E, G=G, rho=RHO, radius=R)
    w = b.build()
    with pytest.raises(ModelError, match="no option substeps"):
        make_simulator(w, "der-implicit", substeps=4)
    for bad in (dict(newton_iters=0), dict(line_search=-1), dict(gtol=-1.0), dict(bending="3d"),
                dict(damping_scheme="rk4")):
        with pytest.raises(ModelError, match=next(iter(bad))):
            make_simulator(w, "der-implicit", **bad)


def test_a_failing_step_raises_and_keeps_the_last_good_step():
    x = shapes.straight(8, 0.5)
    sim = make_simulator(cantilever_world(x, copies=3), "der-implicit")
    state = sim.initial_state()
    sim.advance(state, 2)
    good = state.copy()
    state.vertex_x[3 * 8 - 2, 0] = np.nan  # rod 2 is corrupted: its first step fails
    with pytest.raises(SimulationError, match=r"der-implicit: step 1 of 5 failed on rod\(s\) \[2\]") as exc:
        sim.advance(state, 5)
    assert exc.value.report.steps == 0 and not exc.value.report.success
    np.testing.assert_array_equal(state.vertex_x[:16], good.vertex_x[:16])  # nothing was written
    assert state.t == good.t


def test_a_failure_inside_a_call_replays_the_good_steps():
    """Vertex 1 of a soft free rod thrown at vertex 0: edge 0 collapses a few steps in."""
    b = WorldBuilder()
    for k in range(2):
        b.add_rod(shapes.straight(6, 0.5, start=(0.0, k, 0.0)), E=1e3, G=1e3 / 3, rho=RHO, radius=R)
    sim = make_simulator(b.build(), "der-implicit")
    start = sim.initial_state()
    start.vertex_v[1, 0] = -0.1 / (3.5 * sim.dt)
    state = start.copy()
    with pytest.raises(SimulationError) as exc:
        sim.advance(state, 10)
    done = exc.value.report.steps
    assert 1 <= done < 9 and f"step {done + 1} of 10 failed on rod(s) [0]" in str(exc.value)
    again = start.copy()
    sim.advance(again, done)
    np.testing.assert_array_equal(state.vertex_x, again.vertex_x)
    np.testing.assert_array_equal(state.vertex_v, again.vertex_v)
    assert state.t == pytest.approx(done * sim.dt)


def test_energy_of_another_state_does_not_disturb_stepping():
    x = shapes.straight(10, 0.5)
    sim = make_simulator(cantilever_world(x), "der-implicit")
    a, b = sim.initial_state(), sim.initial_state()
    sim.advance(a, 30)
    sim.advance(b, 30)
    other = a.copy()
    other.vertex_x[5:] += np.array([0.0, 0.05, 0.02])
    e_own = sim.elastic_energy(a)
    assert sim.elastic_energy(other) > e_own > 0  # the last energy evaluated is the other state's
    sim.advance(a, 10)  # continues from a's own tangents, not from the other state's
    fresh = make_simulator(cantilever_world(x), "der-implicit")
    fresh.advance(b, 10)
    np.testing.assert_array_equal(a.vertex_x, b.vertex_x)


# ---- slerped bending, line-search failures, per-edge and per-joint stiffness (sag-free scenes) ----

def _curved_slerp_world(n=9, kappa=20.0, flipped=True):
    from rodlab.scenes.sagfree_scenes import flipped_world

    theta = np.array([math.pi * (j % 2) for j in range(n - 1)]) if flipped else np.zeros(n - 1)
    world, _ = flipped_world(dict(n=n, length=0.25, radius=5e-4, E=5e8, rest_curvature=kappa), theta)
    return world, theta


@pytest.mark.parametrize("gradient", ["approx", "exact"])
def test_slerp_bending_is_the_slerp_stepper(gradient):
    """bending="2d-slerp" steps what SlerpStepper steps (same model, same rest 2D curvature), to
    round-off; and its elastic energy is the slerped one."""
    from rodlab.der_implicit.slerp_bending import rest_curvature2
    from rodlab.der_implicit.stepper import DERImplicitState, SlerpStepper, with_params
    from rodlab.der_implicit.energies import pack_dofs
    from rodlab.scenes.sagfree_scenes import _flip_rest

    n = 9
    world, theta = _curved_slerp_world(n)
    sim = make_simulator(world, "der-implicit", bending="2d-slerp", gradient=gradient, line_search=0)
    state = sim.initial_state()
    state.edge_theta[...] = theta
    x, xr = _flip_rest(n, 0.25, 20.0)
    kw = dict(radius=5e-4, E=5e8, G=5e8 / 3, rho=1000.0, theta=theta, damping=1.0, u0=np.array([0.0, 0.0, 1.0]))
    model, st = build_rod(x, **kw)
    rmodel, rstate = build_rod(xr, **kw)
    model = with_params(model, wbar=rmodel.wbar, mbar=rmodel.mbar)
    old = SlerpStepper(model, rest_curvature2(rmodel, rstate), gradient=gradient, line_search=0)
    assert sim.elastic_energy(state) == pytest.approx(old.elastic_energy(st), rel=1e-9, abs=1e-18)
    old.advance(st, 40)
    sim.advance(state, 40)
    xo, tho = unpack_dofs(st.q)
    assert np.abs(xo - x).max() > 1e-3  # it moved
    assert np.abs(state.vertex_x - xo).max() <= 1e-12
    assert np.abs(state.edge_theta - tho).max() <= 1e-9
    probe = DERImplicitState(pack_dofs(state.vertex_x, state.edge_theta), np.zeros(4 * n - 1),
                             np.array(state.edge_ref_d1), np.array(st.tan), np.array(state.joint_ref_twist))
    assert sim.elastic_energy(state) == pytest.approx(old.elastic_energy(probe), rel=1e-9)


def test_slerp_options_are_validated():
    world, _ = _curved_slerp_world()
    with pytest.raises(ModelError, match="gradient must be one of approx, exact"):
        make_simulator(world, "der-implicit", bending="2d-slerp", gradient="fd")
    with pytest.raises(ModelError, match="branch must be one of twist, shortest"):
        make_simulator(world, "der-implicit", bending="2d-slerp", branch="long")
    with pytest.raises(ModelError, match="options of bending='2d-slerp' only"):
        make_simulator(world, "der-implicit", gradient="exact")
    with pytest.raises(ModelError, match="line_search_failures must be one of fail, count"):
        make_simulator(world, "der-implicit", line_search_failures="ignore")
    with pytest.raises(ModelError, match="bending must be one of 4d, 2d-average, 2d-slerp"):
        make_simulator(world, "der-implicit", bending="3d")


def test_line_search_failures_fail_or_are_counted():
    """The approximated slerp gradient on a curved rest shape loses descent near 0.8 s (n = 30): by
    default the step fails (state at the last good step); with "count" the run goes on and counts."""
    world, theta = _curved_slerp_world(30)
    sim = make_simulator(world, "der-implicit", bending="2d-slerp")
    state = sim.initial_state()
    state.edge_theta[...] = theta
    with pytest.raises(SimulationError):
        sim.advance(state, 240)
    assert 0 < state.t < 1.0 and np.all(np.isfinite(state.vertex_x))
    sim = make_simulator(world, "der-implicit", bending="2d-slerp", line_search_failures="count")
    state = sim.initial_state()
    state.edge_theta[...] = theta
    sim.advance(state, 240)
    assert state.t == pytest.approx(1.0) and sim.batch.rod_line_search_failures[0] > 0


def test_per_edge_and_per_joint_stiffness_reach_the_model():
    from rodlab.world.builder import edge_values_from_joints

    x = shapes.straight(7, 0.6)
    ks = np.linspace(1e3, 2e3, 6)
    kb = np.array([1.0, 1.3, 1.7, 2.0, 2.2])
    b = WorldBuilder()
    r = b.add_rod(x, joint_bending=kb, joint_twisting=0.5 * kb, linear_density=np.linspace(1.0, 2.0, 6),
                  stretching=ks, radius=0.01)
    b.clamp(r, "start")
    world = b.build()
    model, _ = rod_model(world.rods[0])
    np.testing.assert_allclose(model.kbend[1:-1], kb, rtol=1e-14)
    np.testing.assert_allclose(model.ktwist[1:-1], 0.5 * kb, rtol=1e-14)
    np.testing.assert_array_equal(model.ks, ks)
    np.testing.assert_allclose(model.mass[0::4][1:-1], 0.05 * (np.linspace(1.0, 2.0, 6)[:-1] + np.linspace(1.0, 2.0, 6)[1:]),
                               rtol=1e-14)
    e = edge_values_from_joints(kb, 6)
    np.testing.assert_allclose(0.5 * (e[:-1] + e[1:]), kb, rtol=1e-14)
    assert e[0::2].min() == pytest.approx(e[1::2].min(), rel=1e-12)  # the family member with the largest minimum
    with pytest.raises(ModelError, match="joint_bending vary too fast"):
        WorldBuilder().add_rod(x, joint_bending=[1.0, 10.0, 1.0, 10.0, 1.0], twisting=1.0, linear_density=1.0)
    with pytest.raises(ModelError, match=r"joint_bending must be finite and > 0 with shape \(5,\)"):
        WorldBuilder().add_rod(x, joint_bending=[1.0, 2.0], twisting=1.0, linear_density=1.0)
    with pytest.raises(ModelError, match=r"stretching stiffness must be a number or \(n_edges,\) with n_edges = 6"):
        WorldBuilder().add_rod(x, bending=1.0, twisting=1.0, linear_density=1.0, stretching=[1.0, 2.0])
    with pytest.raises(ModelError, match="give bending or joint_bending, not both"):
        WorldBuilder().add_rod(x, bending=1.0, joint_bending=kb, twisting=1.0, linear_density=1.0)
