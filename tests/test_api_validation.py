"""Python API validation at construction (issue #16, item 5): bad rods, loads, point forces and step
counts are refused where they are given, with a ModelError naming the parameter and its range,
instead of an IndexError, a numba typing error or a misleading failure later."""
import numpy as np
import pytest

from rodlab.der.stepper import DEROptions, DERStepper
from rodlab.model import CrossSection, Loads, Material, ModelError, PointForce, Rod, check_steps
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

MAT = Material(1e7, 1e7 / 3, 1000.0)
SEC = CrossSection.circle(0.01)
LINE3 = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]])
TRIANGLE = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])


def line(n):
    return np.c_[np.linspace(0.0, 1.0, n), np.zeros(n), np.zeros(n)]


# ---- rest polyline ------------------------------------------------------------------------------
BAD_POLYLINES = [
    (np.zeros((1, 3)), False, r"rest_positions: an open rod needs at least 2 vertices \(got 1\)"),
    (np.zeros((0, 3)), False, r"at least 2 vertices \(got 0\)"),
    (LINE3[:2], True, r"rest_positions: a closed rod needs at least 3 vertices \(got 2\)"),
    (np.arange(6.0), False, r"rest_positions must have shape \(n, 3\) \[m\] \(got \(6,\)\)"),
    (np.zeros((4, 2)), False, r"must have shape \(n, 3\) \[m\] \(got \(4, 2\)\)"),
    (np.zeros((2, 3, 1)), False, r"must have shape \(n, 3\)"),
    (np.array([[0.0, 0, 0], [np.inf, 0, 0], [2, 0, 0]]), False, r"rest_positions must be finite \(vertex 1 is not\)"),
    (np.array([[0.0, 0, 0], [1, np.nan, 0]]), False, r"must be finite \(vertex 1 is not\)"),
    (np.array([[0.0, 0, 0], [0, 0, 0], [1, 0, 0]]), False, r"zero-length edge \(edge 0\)"),
    ([["a", "b", "c"], ["d", "e", "f"]], False, r"rest_positions must be a numeric \(n, 3\) array"),
]


@pytest.mark.parametrize("points, closed, match", BAD_POLYLINES)
def test_rod_from_material_refuses_bad_polylines(points, closed, match):
    with pytest.raises(ModelError, match=match):
        Rod.from_material(points, MAT, SEC, closed=closed)


@pytest.mark.parametrize("points, closed, match", BAD_POLYLINES)
def test_rod_from_stiffness_refuses_bad_polylines(points, closed, match):
    with pytest.raises(ModelError, match=match):
        Rod.from_stiffness(points, bending=1.0, twisting=1.0, closed=closed)


@pytest.mark.parametrize("points, closed, match", BAD_POLYLINES[:8])
def test_world_builder_refuses_bad_polylines(points, closed, match):
    with pytest.raises(ModelError, match=r"points must be a finite \(n, 3\) array|must have shape|needs at least"):
        WorldBuilder().add_rod(points, E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01, closed=closed)


def test_smallest_legitimate_rods_are_accepted():
    assert Rod.from_material(LINE3[:2], MAT, SEC).n_edges == 1
    assert Rod.from_material(TRIANGLE, MAT, SEC, closed=True).n_edges == 3
    assert Rod.from_stiffness(LINE3[:2].tolist(), bending=1.0, twisting=1.0).n_vertices == 2  # nested lists work
    assert Rod.from_material(LINE3.astype(np.float32), MAT, SEC).rest_positions.dtype == np.float64


# ---- loads --------------------------------------------------------------------------------------
@pytest.mark.parametrize("gravity", [(np.nan, 0, 0), (0, np.inf, 0), (1, 2), (1, 2, 3, 4), "down", np.zeros((3, 1)), None])
def test_loads_gravity_must_be_a_finite_3_vector(gravity):
    with pytest.raises(ModelError, match=r"gravity must be a finite 3-vector m/s\^2"):
        Loads(gravity=gravity)


@pytest.mark.parametrize("damping", [-1.0, np.nan, np.inf, "a", None, True])
def test_loads_damping_must_be_finite_and_nonnegative(damping):
    with pytest.raises(ModelError, match=r"damping must be a finite number >= 0 1/s"):
        Loads(damping=damping)


def test_loads_normalises_what_it_accepts():
    loads = Loads(gravity=np.array([0, 0, -9.81]), damping=np.float32(0.5))
    assert loads.gravity == (0.0, 0.0, -9.81) and all(type(g) is float for g in loads.gravity)
    assert loads.damping == 0.5 and type(loads.damping) is float
    with pytest.raises(ModelError, match="point_forces must hold PointForce entries"):
        Loads(point_forces=((3, (0, 0, 1)),))


@pytest.mark.parametrize("vertex, force, match", [
    (2.5, (0, 0, 1), r"point force vertex must be an integer index \(got 2.5\)"),
    (True, (0, 0, 1), r"point force vertex must be an integer index"),
    (1, (0, 1), r"point force must be a finite 3-vector N"),
    (1, (0, np.nan, 1), r"point force must be a finite 3-vector N"),
])
def test_point_force_checked_at_construction(vertex, force, match):
    with pytest.raises(ModelError, match=match):
        PointForce(vertex, force)


def test_point_force_accepts_functions_and_freezes_constants():
    f = PointForce(np.int64(3), [0, 0, 1])
    assert f.at(0.0).tolist() == [0.0, 0.0, 1.0] and not f.force.flags.writeable
    g = PointForce(-1, lambda t: np.array([t, 0.0, 0.0]))
    assert g.at(2.0)[0] == 2.0


def test_point_force_vertex_out_of_range_refused_where_the_rod_is_known():
    rod = Rod.from_material(line(60), MAT, SEC)
    loads = Loads(point_forces=(PointForce(99, np.array([0.0, 0.0, 1.0])),))
    with pytest.raises(ModelError, match=r"point force 0: vertex must be in \[-60, 59\] for this 60-vertex rod \(got 99\)"):
        loads.check_for(rod)
    with pytest.raises(ModelError, match=r"vertex must be in \[-60, 59\]"):
        DERStepper(rod, loads, DEROptions(dt=1e-5))
    with pytest.raises(ModelError, match=r"vertex must be in \[-60, 59\]"):
        DERStepper(rod, Loads(point_forces=(PointForce(-61, (0, 0, 1)),)), DEROptions(dt=1e-5))
    assert Loads(point_forces=(PointForce(-60, (0, 0, 1)), PointForce(59, (0, 0, 1)))).check_for(rod) is not None
    b = WorldBuilder()
    r = b.add_rod(line(60), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
    with pytest.raises(ModelError, match=r"point force vertex of rod 0 must be in \[-60, 59\] \(got 99\)"):
        b.add_point_force(r, 99, (0, 0, 1))


def test_world_gravity_and_damping_checked():
    for kw, match in (({"gravity": (np.nan, 0, 0)}, "gravity must be a finite 3-vector"),
                      ({"damping": -1.0}, "damping must be >= 0")):
        b = WorldBuilder(**kw)
        b.add_rod(line(5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
        with pytest.raises(ModelError, match=match):
            b.build()


# ---- step counts --------------------------------------------------------------------------------
BAD_STEPS = [2.5, -1, True, "3", None, np.float64(2.0)]


@pytest.mark.parametrize("nsteps", BAD_STEPS)
def test_check_steps_refuses_non_integers(nsteps):
    with pytest.raises(ModelError, match=r"nsteps must be an integer >= 0"):
        check_steps(nsteps)


def test_check_steps_accepts_numpy_integers():
    assert check_steps(np.int64(3)) == 3 and type(check_steps(np.int32(3))) is int
    assert check_steps(0) == 0


@pytest.fixture(scope="module")
def world():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    r = b.add_rod(shapes.straight(6, 0.5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
    b.clamp(r, "start")
    return b.build()


@pytest.mark.parametrize("method", ["der", "der-implicit", "compact", "galpha"])
def test_simulator_advance_refuses_fractional_steps(world, method):
    sim = make_simulator(world, method)
    state = sim.initial_state()
    before = state.copy()
    for bad in (2.5, True, -1):
        with pytest.raises(ModelError, match=r"nsteps must be an integer >= 0 \(got "):
            sim.advance(state, bad)
    np.testing.assert_array_equal(state.vertex_x, before.vertex_x)
    assert state.t == before.t
    assert sim.advance(state, np.int64(0)).steps == 0  # numpy integers are integers


def test_old_der_stepper_refuses_fractional_steps():
    rod = Rod.from_material(line(10), MAT, SEC)
    st = DERStepper(rod, Loads(), DEROptions(dt=1e-5))
    state = st.initial_state()
    with pytest.raises(ModelError, match=r"nsteps must be an integer >= 0 \(got 2.5\)"):
        st.advance(state, 2.5)
    assert state.t == 0.0


def test_old_der_implicit_stepper_refuses_fractional_steps():
    from rodlab.der_implicit.stepper import DERImplicitStepper, build_rod

    model, state = build_rod(line(6), radius=0.01, E=1e7, G=1e7 / 3, rho=1000.0)
    st = DERImplicitStepper.from_frame_rate(model)
    q0 = state.q.copy()
    with pytest.raises(ModelError, match=r"nsteps must be an integer >= 0 \(got 2.5\)"):
        st.advance(state, 2.5)
    with pytest.raises(ModelError, match=r"nframes must be an integer >= 0 \(got 1.5\)"):
        st.advance_frames(state, 1.5)
    assert state.t == 0.0
    np.testing.assert_array_equal(state.q, q0)


def test_old_galpha_simulate_refuses_fractional_steps():
    from rodlab.galpha import GAlphaRod, GAlphaSolver

    s = GAlphaSolver(GAlphaRod.from_material(6, 1.0, radius=0.01, E=1e7, G=1e7 / 3, rho=1000.0))
    state = s.initial_state()
    with pytest.raises(ModelError, match=r"n_steps must be an integer >= 0 \(got 2.5\)"):
        s.simulate(state, 1e-3, 2.5)
    with pytest.raises(ModelError, match=r"record_every must be an integer >= 1 \(got 0\)"):
        s.simulate(state, 1e-3, 2, record_every=0)


def test_old_compact_step_refuses_non_numeric_dt():
    from rodlab.compact.sqp import CompactModel, CompactSolver, CompactState

    model = CompactModel.from_polyline(line(5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
    solver = CompactSolver(model)
    with pytest.raises(ValueError, match=r"dt must be a finite number > 0 s \(got '0.01'\)"):
        solver.step(CompactState.at_rest(model), "0.01")


@pytest.mark.parametrize("method", ["der", "der-implicit", "compact", "galpha"])
def test_two_vertex_rod_is_a_rod_but_each_method_says_what_it_needs(method):
    b = WorldBuilder()
    b.add_rod(LINE3[:2], E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
    world = b.build()  # a legitimate rod (one edge) ...
    with pytest.raises(ModelError, match=r"at least 3 vertices.*2"):  # ... that no method can bend
        make_simulator(world, method)
