"""World, WorldBuilder, State, obstacles and shapes: layout, validation, files, geometry.

No simulator is built here (the solver x world matrix is tests/test_world_matrix.py), so these
tests compile nothing beyond the frame helpers and run in about a second.
"""
import math

import numpy as np
import pytest

from rodlab.model import CrossSection, ModelError
from rodlab.world import (Capsule, Cylinder, Plane, Sphere, State, TriangleMesh, World, WorldBuilder,
                          shapes)
from rodlab.world.state import STATE_FORMAT_VERSION

MAT = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)


def mixed_world():
    """Open (5 vertices), closed (6) and open (3) rods; rod 0 clamped at its start, rod 2 pinned
    at its last vertex; one body and a weld of rod 2's start to it."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(5, 0.4), **MAT)
    b.add_rod(shapes.circle(6, 0.6, center=(0.0, 1.0, 0.0)), closed=True, **MAT)
    b.add_rod(shapes.straight(3, 0.2, start=(0.0, 2.0, 0.0)), bending=2e-3, twisting=1e-3, linear_density=0.05)
    b.clamp(0, "start")
    b.pin(2, -1)
    body = b.add_body(0.3, (1e-3, 2e-3, 3e-3), position=(0.0, 2.0, -0.1))
    b.weld(2, "start", body)
    return b.build()


# ------------------------------------------------------------------------------------ layout
def test_flat_offsets_for_mixed_open_and_closed_rods():
    w = mixed_world()
    assert (w.n_rods, w.n_vertices, w.n_edges, w.n_joints, w.n_bodies) == (3, 14, 12, 10, 1)
    np.testing.assert_array_equal(w.rod_vertex_start, [0, 5, 11, 14])
    np.testing.assert_array_equal(w.rod_edge_start, [0, 4, 10, 12])  # a closed rod of n vertices has n edges
    np.testing.assert_array_equal(w.rod_joint_start, [0, 3, 9, 10])  # ... and n joints; open: n - 2
    np.testing.assert_array_equal(w.rod_closed, [False, True, False])
    for r, rod in enumerate(w.rods):
        np.testing.assert_array_equal(w.vertex_rest_x[w.rod_vertices(r)], rod.rest_positions)
        np.testing.assert_array_equal(w.edge_rest_length[w.rod_edges(r)], rod.rest_lengths)
        np.testing.assert_array_equal(w.edge_rest_d1[w.rod_edges(r)], rod.rest_d1)
        assert w.rod_joints(r) == slice(int(w.rod_joint_start[r]), int(w.rod_joint_start[r + 1]))
    np.testing.assert_allclose(w.edge_rest_length[:4], 0.1, rtol=1e-14)
    np.testing.assert_allclose(w.edge_rest_length[4:10], 0.1, rtol=1e-14)  # closing edge included
    np.testing.assert_allclose(w.edge_rest_length[10:], 0.1, rtol=1e-14)
    # lumped masses: each rod's total is rho A L (the closed ring's perimeter)
    area = math.pi * 0.01**2
    np.testing.assert_allclose([w.vertex_mass[w.rod_vertices(r)].sum() for r in range(3)],
                               [1000 * area * 0.4, 1000 * area * 0.6, 0.05 * 0.2], rtol=1e-14)
    np.testing.assert_allclose(w.vertex_mass[5:11], 1000 * area * 0.1, rtol=1e-14)  # ring: all equal
    assert w.total_mass() == pytest.approx(w.vertex_mass.sum() + 0.3, rel=1e-15)
    np.testing.assert_array_equal(np.flatnonzero(w.vertex_fixed), [0, 1, 13])  # clamp of rod 0, pin of rod 2
    np.testing.assert_allclose(w.edge_bend_stiffness[:4], 1e7 * math.pi * 0.01**4 / 4, rtol=1e-14)
    np.testing.assert_allclose(w.edge_bend_stiffness[10:], 2e-3)
    np.testing.assert_allclose(w.edge_twist_stiffness[10:], 1e-3)
    np.testing.assert_allclose(w.rod_radius, [0.01, 0.01, 0.01])
    assert w.rod_material[2] is None and w.rod_material[0].E == 1e7 and w.rod_material[1].radius == 0.01
    assert w.welds[0].rod == 2 and w.welds[0].edge == 0 and w.welds[0].body == 0
    for name in ("vertex_rest_x", "edge_rest_length", "rod_vertex_start", "vertex_fixed"):
        with pytest.raises(ValueError):
            getattr(w, name)[0] = 0  # frozen


def test_state_views_follow_the_world_offsets():
    w = mixed_world()
    s = State.zeros_for(w)
    assert s.vertex_x.shape == (14, 3) and s.edge_theta.shape == (12,) and s.joint_ref_twist.shape == (10,)
    assert s.body_x.shape == (1, 3) and s.body_q.shape == (1, 4)
    np.testing.assert_array_equal(s.body_q[0], [1.0, 0.0, 0.0, 0.0])
    s.rod_x(1)[...] = 7.0  # views write through
    assert np.all(s.vertex_x[5:11] == 7.0) and not np.any(s.vertex_x[:5] == 7.0) and not np.any(s.vertex_x[11:] == 7.0)
    s.rod_theta(2)[...] = 3.0
    assert np.all(s.edge_theta[10:] == 3.0) and np.all(s.edge_theta[:10] == 0.0)
    s.rod_ref_twist(1)[...] = 2.0
    assert np.all(s.joint_ref_twist[3:9] == 2.0) and s.joint_ref_twist[9] == 0.0


# ------------------------------------------------------------------------------------ validation
def _b(n=5, **kw):
    b = WorldBuilder(**kw)
    b.add_rod(shapes.straight(n, 0.4), **MAT)
    return b


def _closed_b():
    b = WorldBuilder()
    b.add_rod(shapes.circle(6, 0.6), closed=True, **MAT)
    b.add_body(1.0, (1, 1, 1))
    return b


PTS = shapes.straight(5, 0.4)
BUILDER_ERRORS = [
    ("both material and stiffness", lambda: WorldBuilder().add_rod(PTS, E=1e7, G=1e7, rho=1e3, radius=0.01, bending=1.0),
     r"either a material \(E, G, rho"),
    ("material incomplete", lambda: WorldBuilder().add_rod(PTS, E=1e7, rho=1e3, radius=0.01), r"all of E, G and rho"),
    ("radius and section", lambda: WorldBuilder().add_rod(PTS, E=1e7, G=1e7, rho=1e3, radius=0.01, section=CrossSection(0.01, 0.01)),
     r"exactly one of radius and section"),
    ("stiffness incomplete", lambda: WorldBuilder().add_rod(PTS, bending=1.0, twisting=1.0), r"bending, twisting and linear_density"),
    ("E", lambda: WorldBuilder().add_rod(PTS, E=-1.0, G=1e7, rho=1e3, radius=0.01), r"E must be > 0 Pa \(got -1.0\)"),
    ("G", lambda: WorldBuilder().add_rod(PTS, E=1e7, G=0.0, rho=1e3, radius=0.01), r"G must be > 0 Pa"),
    ("rho", lambda: WorldBuilder().add_rod(PTS, E=1e7, G=1e7, rho=math.nan, radius=0.01), r"rho must be > 0 kg/m\^3"),
    ("radius", lambda: WorldBuilder().add_rod(PTS, E=1e7, G=1e7, rho=1e3, radius=0.0), r"semi-axis a1 must be > 0 m"),
    ("bending", lambda: WorldBuilder().add_rod(PTS, bending=-1.0, twisting=1.0, linear_density=1.0), r"bending stiffness must be > 0 N m\^2"),
    ("twisting", lambda: WorldBuilder().add_rod(PTS, bending=1.0, twisting=0.0, linear_density=1.0), r"twisting stiffness must be > 0 N m\^2"),
    ("points shape", lambda: WorldBuilder().add_rod(np.zeros((5, 2)), **MAT), r"points must be a finite \(n, 3\) array with n >= 2 vertices for an open rod \(got shape \(5, 2\)\)"),
    ("zero edge", lambda: WorldBuilder().add_rod(np.zeros((3, 3)), **MAT), r"points has a zero-length edge \(edge 0\): edge lengths must be > 0 m"),
    ("closed too short", lambda: WorldBuilder().add_rod(PTS[:2], closed=True, **MAT), r"n >= 3 vertices for a closed rod \(got shape \(2, 3\)\)"),
    ("rest_d1 shape", lambda: WorldBuilder().add_rod(PTS, rest_d1=np.zeros((2, 3)), **MAT), r"rest_d1 must have shape \(4, 3\)"),
    ("rod index", lambda: _b().clamp(1), r"rod index must be in \[0, 0\] \(got 1\)"),
    ("clamp end name", lambda: _b().clamp(0, "middle"), r"clamp end must be one of start, end"),
    ("clamp end edge", lambda: _b().clamp(0, 4), r"clamp end edge must be in \[-4, 3\] \(got 4\)"),
    ("clamp twice", lambda: [_bb := _b(), _bb.clamp(0, "start"), _bb.clamp(0, 0)], r"rod 0 edge 0 is clamped twice"),
    ("pin vertex", lambda: _b().pin(0, 5), r"pin vertex of rod 0 must be in \[-5, 4\] \(got 5\)"),
    ("pin index type", lambda: _b().pin(0, 1.5), r"pin vertex of rod 0 must be in \[-5, 4\] \(got 1.5\)"),
    ("body mass", lambda: _b().add_body(0.0, (1, 1, 1)), r"body mass must be > 0 kg \(got 0.0\)"),
    ("body inertia", lambda: _b().add_body(1.0, (1, -1, 1)), r"body inertia must be positive definite"),
    ("body inertia shape", lambda: _b().add_body(1.0, np.eye(2)), r"body inertia must have shape \(3, 3\)"),
    ("body orientation", lambda: _b().add_body(1.0, (1, 1, 1), orientation=(0, 0, 0, 0)), r"body orientation must be a nonzero quaternion"),
    ("weld body index", lambda: _b().weld(0, "end", 0), r"weld body index must be in \[0, -1\] \(got 0\)"),
    ("weld end", lambda: [_bb := _b(), _bb.add_body(1.0, (1, 1, 1)), _bb.weld(0, "tip", 0)], r"weld end must be one of start, end"),
    ("weld interior edge", lambda: [_bb := _b(), _bb.add_body(1.0, (1, 1, 1)), _bb.weld(0, 2, 0), _bb.build()],
     r"weld edge of rod 0 must be its first \(0\) or last \(-1\) edge \(got 2\)"),
    ("weld and clamp", lambda: [_bb := _b(), _bb.add_body(1.0, (1, 1, 1)), _bb.weld(0, "start", 0), _bb.clamp(0), _bb.build()],
     r"rod 0 edge 0 is both clamped and welded"),
    ("weld twice", lambda: [_bb := _b(), _bb.add_body(1.0, (1, 1, 1)), _bb.weld(0, "end", 0), _bb.weld(0, -1, 0), _bb.build()],
     r"rod 0 edge 3 is welded twice"),
    ("weld closed", lambda: [_bb := _closed_b(), _bb.weld(0, "start", 0), _bb.build()], r"rod 0 is closed"),
    ("obstacle type", lambda: _b().add_obstacle("floor"), r"obstacle must be a Plane, Sphere, Capsule, Cylinder or TriangleMesh \(got str\)"),
    ("wind drag", lambda: _b().set_wind((1, 0, 0), 0.0), r"wind drag must be > 0 N s/m\^2 \(got 0.0\)"),
    ("point force vertex", lambda: _b().add_point_force(0, -6, (0, 0, 1)), r"point force vertex of rod 0 must be in \[-5, 4\] \(got -6\)"),
    ("point force value", lambda: _b().add_point_force(0, 2, (0, math.inf, 1)), r"point force must be finite"),
    ("no rods", lambda: WorldBuilder().build(), r"a world needs at least one rod"),
    ("damping", lambda: _b(damping=-0.1).build(), r"damping must be >= 0 1/s \(got -0.1\)"),
    ("gravity", lambda: _b(gravity=(0, math.nan, 0)).build(), r"gravity must be a finite 3-vector m/s\^2"),
    ("straight n", lambda: shapes.straight(1, 1.0), r"n must be an integer >= 2 vertices \(got 1\)"),
    ("straight length", lambda: shapes.straight(5, 0.0), r"length must be > 0 m \(got 0.0\)"),
    ("straight direction", lambda: shapes.straight(5, 1.0, direction=(0, 0, 0)), r"direction must be a nonzero finite 3-vector"),
    ("helix n", lambda: shapes.helix(2, 0.1, 0.1, 1.0), r"n must be an integer >= 3 vertices \(got 2\)"),
    ("helix radius", lambda: shapes.helix(10, -0.1, 0.1, 1.0), r"helix_radius must be > 0 m \(got -0.1\)"),
    ("helix pitch", lambda: shapes.helix(10, 0.1, -0.1, 1.0), r"pitch must be >= 0 m \(got -0.1\)"),
    ("helix turns", lambda: shapes.helix(10, 0.1, 0.1, 0.0), r"turns must be > 0 \(got 0.0\)"),
    ("circle n", lambda: shapes.circle(2, 1.0), r"n must be an integer >= 3 vertices \(got 2\)"),
    ("circle length", lambda: shapes.circle(8, -1.0), r"length must be > 0 m \(got -1.0\)"),
    ("circle center", lambda: shapes.circle(8, 1.0, center=(0, 0)), r"center must be a finite 3-vector"),
    ("plane normal", lambda: Plane((0, 0, 0), (0, 0, 0)), r"plane normal must be nonzero"),
    ("plane point", lambda: Plane((0, 0), (0, 0, 1)), r"plane point must be a finite 3-vector"),
    ("sphere radius", lambda: Sphere((0, 0, 0), 0.0), r"sphere radius must be > 0 m \(got 0.0\)"),
    ("capsule ends", lambda: Capsule((1, 1, 1), (1, 1, 1), 0.1), r"capsule a and b must differ"),
    ("capsule radius", lambda: Capsule((0, 0, 0), (1, 0, 0), -1.0), r"capsule radius must be > 0 m \(got -1.0\)"),
    ("cylinder axis", lambda: Cylinder((0, 0, 0), (0, 0, 0), 0.1), r"cylinder axis must be nonzero"),
    ("cylinder radius", lambda: Cylinder((0, 0, 0), (0, 0, 1), math.inf), r"cylinder radius must be > 0 m \(got inf\)"),
    ("mesh vertices", lambda: TriangleMesh(np.zeros((2, 3)), [[0, 1, 0]]), r"mesh vertices must be a finite \(V, 3\) array with V >= 3"),
    ("mesh triangles", lambda: TriangleMesh(np.eye(3), [[0.0, 1.0, 2.0]]), r"mesh triangles must be an integer \(T, 3\) array"),
    ("mesh indices", lambda: TriangleMesh(np.eye(3), [[0, 1, 3]]), r"mesh triangle indices must be in \[0, 2\]"),
    ("mesh degenerate", lambda: TriangleMesh(np.eye(3), [[0, 1, 1]]), r"degenerate \(zero-area\) triangle"),
]


@pytest.mark.parametrize("case, make, message", BUILDER_ERRORS, ids=[c[0] for c in BUILDER_ERRORS])
def test_bad_input_is_refused_with_the_parameter_and_its_range(case, make, message):
    with pytest.raises(ModelError, match=message):
        make()


def test_point_force_vertex_must_be_an_integer():
    with pytest.raises(ModelError, match=r"point force vertex of rod 0 must be in \[-5, 4\] \(got 1.5\)"):
        _b().add_point_force(0, 1.5, (0, 0, 1))


def test_builder_ends_and_negative_indices():
    b = _b()
    b.clamp(0, "end")
    b.pin(0, -5)
    b.add_point_force(0, -1, (0.0, 0.0, 2.0))
    w = b.build()
    assert w.rods[0].boundary.clamps[0].edge == 3 and w.rods[0].boundary.fixed_vertices == (0,)
    assert w.loads.point_forces[0].force.vertex == 4
    np.testing.assert_array_equal(np.flatnonzero(w.vertex_fixed), [0, 3, 4])
    b2 = _b()
    b2.set_wind((1.0, 2.0, 3.0), 0.5)
    wind = b2.build().loads.wind
    np.testing.assert_array_equal(wind.velocity(np.zeros((4, 3)), 0.0), np.tile([1.0, 2.0, 3.0], (4, 1)))


# ------------------------------------------------------------------------------------ features
def _features_of(**setup):
    b = WorldBuilder()
    kind = setup.get("kind", "material")
    pts = shapes.circle(8, 1.0) if kind == "closed" else shapes.straight(6, 0.5)
    if kind == "stiffness":
        b.add_rod(pts, bending=1e-3, twisting=1e-3, linear_density=0.1)
    elif kind == "anisotropic":
        b.add_rod(pts, E=1e7, G=1e7, rho=1e3, section=CrossSection(0.01, 0.02))
    elif kind == "rest curvature":
        b.add_rod(pts, rest_curvature=np.zeros((4, 4)), **MAT)
    else:
        b.add_rod(pts, closed=kind == "closed", **MAT)
    if "clamp" in setup:
        b.clamp(0, "start", **setup["clamp"])
    if setup.get("pin"):
        b.pin(0, 3)
    if setup.get("body"):
        b.add_body(1.0, (1, 1, 1))
        b.weld(0, "end", 0)
    if setup.get("obstacle"):
        b.add_obstacle(Plane((0, 0, -1), (0, 0, 1)))
    if setup.get("wind"):
        b.set_wind((1, 0, 0), 0.1)
    if setup.get("force"):
        b.add_point_force(0, -1, (0, 0, 1))
    return b.build().features()


FEATURE_CASES = [
    ({}, set()),
    ({"clamp": {}}, set()),
    ({"kind": "closed"}, {"closed rods"}),
    ({"clamp": {"motion": lambda t: (np.eye(3), np.zeros(3))}}, {"prescribed clamp motion"}),
    ({"clamp": {"free_rotation": True}}, {"swivel clamps"}),
    ({"clamp": {"slide_axis": (1, 0, 0)}}, {"sliding clamps"}),
    ({"pin": True}, {"pinned vertices"}),
    ({"kind": "anisotropic"}, {"anisotropic bending", "rods given by stiffness"}),  # elliptical: no RodMaterial
    ({"kind": "rest curvature"}, {"rest curvature overrides"}),
    ({"kind": "stiffness"}, {"rods given by stiffness"}),
    ({"body": True}, {"rigid bodies"}),
    ({"obstacle": True}, {"obstacles"}),
    ({"wind": True}, {"wind"}),
    ({"force": True}, {"point forces"}),
]


@pytest.mark.parametrize("setup, expected", FEATURE_CASES, ids=[" + ".join(sorted(e)) or "plain" for _, e in FEATURE_CASES])
def test_features_name_exactly_what_the_world_uses(setup, expected):
    assert _features_of(**setup) == expected


def test_features_of_the_mixed_world():
    assert mixed_world().features() == {"closed rods", "pinned vertices", "rigid bodies", "rods given by stiffness"}


# ------------------------------------------------------------------------------------ state
def _filled_state():
    w = mixed_world()
    rng = np.random.default_rng(7)
    s = State.zeros_for(w, t=0.125)
    for name in ("vertex_x", "vertex_v", "edge_theta", "joint_ref_twist", "body_x", "body_v", "body_w"):
        getattr(s, name)[...] = rng.normal(size=getattr(s, name).shape)
    q = rng.normal(size=4)
    s.body_q[0] = q / np.linalg.norm(q)
    s.method = "compact"
    s.solver = {"root": rng.normal(size=3), "axis_angle": rng.normal(size=(11, 3)), "iters": np.arange(4)}
    return w, s


def _assert_states_identical(a: State, b: State):
    assert a.t == b.t and a.method == b.method
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist", "body_x", "body_q", "body_v",
                 "body_w", "rod_vertex_start", "rod_edge_start", "rod_joint_start", "rod_closed"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), name
    assert a.solver.keys() == b.solver.keys()
    for k in a.solver:
        assert a.solver[k].dtype == b.solver[k].dtype and np.array_equal(a.solver[k], b.solver[k]), k


def test_state_save_load_round_trip_is_exact(tmp_path):
    _, s = _filled_state()
    path = tmp_path / "state.npz"
    s.save(path, metadata={"scene": "mixed", "dt": 1e-3})
    back = State.load(path)
    _assert_states_identical(s, back)
    meta = State.metadata_of(path)
    assert meta["format"] == "rodlab.State" and meta["format_version"] == STATE_FORMAT_VERSION
    assert meta["scene"] == "mixed" and meta["dt"] == 1e-3 and meta["t"] == 0.125 and meta["method"] == "compact"


def test_state_copy_is_deep_and_assign_restores():
    _, s = _filled_state()
    c = s.copy()
    _assert_states_identical(s, c)
    c.vertex_x[0, 0] += 1.0
    c.solver["root"][0] += 1.0
    c.t = 9.0
    assert s.vertex_x[0, 0] != c.vertex_x[0, 0] and s.solver["root"][0] != c.solver["root"][0] and s.t == 0.125
    keep = s.vertex_x  # assign writes into the existing arrays
    s.assign(c)
    _assert_states_identical(s, c)
    assert s.vertex_x is keep


def test_state_load_refuses_foreign_and_future_files(tmp_path):
    np.savez(tmp_path / "plain.npz", x=np.zeros(3))
    with pytest.raises(ModelError, match="not a rodlab state file"):
        State.load(tmp_path / "plain.npz")
    _, s = _filled_state()
    s.save(tmp_path / "future.npz", metadata={"format_version": STATE_FORMAT_VERSION + 1})
    with pytest.raises(ModelError, match=f"state format version {STATE_FORMAT_VERSION + 1} is not supported"):
        State.load(tmp_path / "future.npz")


def test_material_frames_are_orthonormal_and_normal_to_the_tangent():
    w = mixed_world()
    s = State.zeros_for(w)
    rng = np.random.default_rng(3)
    s.vertex_x += 0.01 * rng.normal(size=s.vertex_x.shape)
    # a valid reference director of the moved polyline: the rest one made normal to the new tangent
    t_new = _tangents(w, s.vertex_x)
    a1 = w.edge_rest_d1 - np.einsum("ij,ij->i", w.edge_rest_d1, t_new)[:, None] * t_new
    s.edge_ref_d1[...] = a1 / np.linalg.norm(a1, axis=1)[:, None]
    s.edge_theta[...] = rng.uniform(-math.pi, math.pi, size=w.n_edges)
    m1, m2 = s.material_frames()
    t = _tangents(w, s.vertex_x)
    np.testing.assert_allclose(np.linalg.norm(m1, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(m2, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ij->i", m1, t), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ij->i", m1, m2), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.cross(t, m1), m2, atol=1e-12)  # m2 = t x m1: right-handed
    # theta = 0 at the rest shape gives back the rest director
    s0 = State.zeros_for(w)
    m1_rest, _ = s0.material_frames()
    np.testing.assert_allclose(m1_rest, w.edge_rest_d1, atol=1e-12)
    # theta rotates m1 towards m2 = t x a1
    s0.edge_theta[...] = 0.5 * math.pi
    m1_q, _ = s0.material_frames()
    np.testing.assert_allclose(m1_q, np.cross(_tangents(w, w.vertex_rest_x), w.edge_rest_d1), atol=1e-12)


def _tangents(w, vertex_x):
    """Unit tangents (E, 3) of every edge, closing edges included."""
    out = []
    for r in range(w.n_rods):
        x = vertex_x[w.rod_vertices(r)]
        e = np.diff(x, axis=0)
        if w.rods[r].closed:
            e = np.vstack([e, x[:1] - x[-1:]])
        out.append(e / np.linalg.norm(e, axis=1)[:, None])
    return np.vstack(out)


# ------------------------------------------------------------------------------------ obstacles
def test_plane_signed_distance():
    p = Plane((0.0, 0.0, 1.0), (0.0, 0.0, 2.0))
    x = np.array([[3.0, -4.0, 1.5], [0.0, 0.0, 1.0], [1.0, 1.0, -2.0]])
    np.testing.assert_allclose(p.distance(x), [0.5, 0.0, -3.0], atol=1e-15)
    tilted = Plane((1.0, 0.0, 0.0), (1.0, 1.0, 0.0))
    assert tilted.distance(np.array([2.0, 1.0, 5.0])) == pytest.approx(2.0 / math.sqrt(2.0), abs=1e-15)


def test_sphere_signed_distance():
    s = Sphere((1.0, 2.0, 3.0), 0.5)
    x = np.array([[1.0, 2.0, 3.0], [4.0, 6.0, 3.0], [1.0, 2.3, 3.0], [1.0, 2.0, 3.5]])
    np.testing.assert_allclose(s.distance(x), [-0.5, 4.5, -0.2, 0.0], atol=1e-15)


def test_capsule_signed_distance():
    c = Capsule((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), 0.1)
    x = np.array([[0.5, 0.3, 0.0],    # beside the segment
                  [-0.3, 0.0, 0.4],   # beyond end a: distance to a
                  [1.3, 0.0, 0.0],    # beyond end b
                  [0.5, 0.05, 0.0],   # inside
                  [0.25, 0.0, 0.0]])  # on the axis: -radius
    np.testing.assert_allclose(c.distance(x), [0.2, 0.4, 0.2, -0.05, -0.1], atol=1e-15)


def test_cylinder_signed_distance_is_infinite_along_its_axis():
    c = Cylinder((1.0, 1.0, 0.0), (0.0, 0.0, 2.0), 0.5)
    x = np.array([[2.0, 1.0, 7.0], [1.3, 1.4, -300.0], [1.0, 1.0, 1e3], [4.0, 5.0, 0.0]])
    np.testing.assert_allclose(c.distance(x), [0.5, 0.0, -0.5, 4.5], atol=1e-12)


def test_unit_square_mesh_distance():
    square = TriangleMesh([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    x = np.array([[0.5, 0.5, 2.0],    # above the face
                  [0.3, 0.2, -0.5],   # below: unsigned
                  [2.0, 0.5, 0.0],    # beside edge x = 1, in plane
                  [2.0, 2.0, 1.0],    # beyond corner (1, 1, 0)
                  [0.5, -1.0, 1.0],   # beyond edge y = 0, above
                  [0.7, 0.7, 0.0]])   # on the diagonal shared by the two triangles
    np.testing.assert_allclose(square.distance(x), [2.0, 0.5, 1.0, math.sqrt(3.0), math.sqrt(2.0), 0.0], atol=1e-15)


# ------------------------------------------------------------------------------------ shapes
def test_straight_spacing_and_direction():
    x = shapes.straight(11, 2.0, start=(1.0, 2.0, 3.0), direction=(0.0, 3.0, 4.0))
    np.testing.assert_allclose(x[0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(x[-1], [1.0, 2.0 + 1.2, 3.0 + 1.6], atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(np.diff(x, axis=0), axis=1), 0.2, rtol=1e-14)


@pytest.mark.parametrize("n", [9, 201])
def test_helix_arc_length_radius_and_pitch(n):
    R, pitch, turns = 0.05, 0.02, 2.5
    x = shapes.helix(n, R, pitch, turns, start=(1.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    axis_pt = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(np.linalg.norm((x - axis_pt)[:, :2], axis=1), R, rtol=1e-14)  # on the cylinder
    assert x[-1, 2] - x[0, 2] == pytest.approx(pitch * turns, rel=1e-14)
    dphi = 2 * math.pi * turns / (n - 1)
    chord = math.hypot(2 * R * math.sin(dphi / 2), pitch * dphi / (2 * math.pi))
    seg = np.linalg.norm(np.diff(x, axis=0), axis=1)
    np.testing.assert_allclose(seg, chord, rtol=1e-12)  # equal spacing in arc length
    exact = turns * math.hypot(2 * math.pi * R, pitch)
    # inscribed polyline: shorter than the helix by O(dphi^2)
    assert 0 < exact - seg.sum() < exact * dphi**2 / 12
    # right-handed about +z: the angle increases
    ang = np.unwrap(np.arctan2(x[:, 1], x[:, 0] - 1.0))
    assert np.all(np.diff(ang) > 0)


@pytest.mark.parametrize("n", [3, 8, 100])
def test_circle_perimeter_and_plane(n):
    length, c, normal = 0.7, np.array([0.1, -0.2, 0.3]), np.array([1.0, 1.0, 0.0]) / math.sqrt(2)
    x = shapes.circle(n, length, center=c, normal=(1.0, 1.0, 0.0))
    closing = np.vstack([np.diff(x, axis=0), x[:1] - x[-1:]])
    seg = np.linalg.norm(closing, axis=1)
    np.testing.assert_allclose(seg, length / n, rtol=1e-13)
    assert seg.sum() == pytest.approx(length, rel=1e-13)
    np.testing.assert_allclose((x - c) @ normal, 0.0, atol=1e-15)
    np.testing.assert_allclose(x.mean(axis=0), c, atol=1e-15)
    r = np.linalg.norm(x - c, axis=1)
    np.testing.assert_allclose(r, length / (2 * n * math.sin(math.pi / n)), rtol=1e-13)
    b = WorldBuilder()
    b.add_rod(x, closed=True, **MAT)
    w = b.build()
    assert w.n_edges == n and w.n_joints == n
    assert w.edge_rest_length.sum() == pytest.approx(length, rel=1e-13)


def test_world_is_frozen():
    w = mixed_world()
    with pytest.raises(AttributeError):
        w.rods = ()
    assert isinstance(w, World)


def test_contact_settings_friction_lookup_and_features():
    from rodlab.world import Plane, WorldBuilder, shapes

    b = WorldBuilder()
    for y in (0.0, 0.1):
        b.add_rod(shapes.straight(5, 1.0, start=(0.0, y, 0.0)), E=1e7, G=3e6, rho=1000.0, radius=0.01)
    b.add_obstacle(Plane((0, 0, -1), (0, 0, 1)))
    assert "friction" not in b.build().features() and "rod contact" not in b.build().features()
    b.set_contact(friction=0.2, pair_friction=[(1, 0, 0.7)])
    w = b.build()
    assert {"rod contact", "friction"} <= w.features()
    assert w.contact.rod_friction(0, 1) == 0.7 and w.contact.rod_friction(0, 0) == 0.2
    assert w.contact.rod_friction_table(2).tolist() == [[0.2, 0.7], [0.7, 0.2]]
    assert w.obstacle_friction(0) == 0.0
    with pytest.raises(ModelError, match="obstacle friction must be >= 0"):
        b.add_obstacle(Plane((0, 0, -1), (0, 0, 1)), friction=-0.1)
    b.set_contact(pair_friction=[(0, 5, 0.1)])
    with pytest.raises(ModelError, match=r"pair friction rod indices must be in \[0, 1\]"):
        b.build()
