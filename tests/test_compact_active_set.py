"""Active-set constraints of the compact rod (Zhao et al., Alg. 2, Eq. 13-14)."""
import math

import numpy as np
import pytest

from rodlab.compact.active_set import ClampFrame, ConstrainedSolver, FixedVertex, Floor, SlideAlongAxis, Sphere
from rodlab.compact.sqp import CompactModel, CompactState, SolverOptions, alignment_violation, inextensibility_violation

OPTS = SolverOptions(max_newton=20, tol=1e-9, pcg_rtol=1e-12, pcg_atol=0.0)


def _straight(n=16, L=1.0, z0=0.0, E=1e6, rho=500.0, radius=0.01):
    x = np.linspace(0.0, L, n)
    pts = np.stack([x, 0 * x, 0 * x + z0], 1)
    return CompactModel.from_polyline(pts, E=E, G=E / 3, rho=rho, radius=radius)


def test_rod_falls_onto_floor_and_rests():
    md = _straight(z0=0.05)
    solver = ConstrainedSolver(md, OPTS, obstacles=[Floor((0, 0, 1), 0.0)], gravity=(0, 0, -9.81), damping=5.0)
    st = CompactState.at_rest(md)
    for _ in range(60):
        stats = solver.step(st, 0.01)
        assert stats.success, stats.message
        assert np.all(st.p[:, 2] >= md.radius - 1e-9)
    assert np.allclose(st.p[:, 2], md.radius, atol=1e-6)  # lying flat on the floor
    assert stats.active_constraints == md.n
    assert inextensibility_violation(st.p, md.lengths) < 1e-13
    assert alignment_violation(st.p, st.q) < 1e-12


def test_rod_drapes_over_sphere_without_penetration():
    md = _straight(n=21, z0=0.25, E=1e5)
    md_c = md.rest_p.mean(0)
    sphere = Sphere(center=(md_c[0], 0.0, 0.0), radius=0.2)
    solver = ConstrainedSolver(md, OPTS, obstacles=[sphere], gravity=(0, 0, -9.81), damping=2.0)
    st = CompactState.at_rest(md)
    touched = 0
    for _ in range(40):
        stats = solver.step(st, 0.01)
        assert stats.success, stats.message
        dist = np.linalg.norm(st.p - np.asarray(sphere.center), axis=1) - sphere.radius - md.radius
        assert dist.min() > -1e-6  # vertices stay outside (linearised constraint, curved surface)
        touched = max(touched, stats.active_constraints)
    assert touched >= 1
    # the middle rests on top of the sphere, the ends hang lower
    assert st.p[10, 2] == pytest.approx(0.2 + md.radius, abs=2e-3)
    assert st.p[0, 2] < st.p[10, 2] - 0.05


def test_fixed_tip_and_clamped_root_sag():
    md = _straight(n=21, E=1e6)
    fixed = np.zeros((md.n, 3), bool)
    fixed[0] = fixed[1] = True  # clamp at the root (coordinate Dirichlet)
    tip = md.rest_p[-1] - np.array([0.02, 0.0, 0.0])  # pushed in slightly: buckles/sags
    solver = ConstrainedSolver(md, OPTS, fixed=fixed, equalities=[FixedVertex(-1, tip)], gravity=(0, 0, -9.81), damping=5.0)
    st = CompactState.at_rest(md)
    for _ in range(30):
        stats = solver.step(st, 0.01)
        assert stats.success
    assert np.allclose(st.p[-1], tip, atol=1e-9)
    assert st.p[10, 2] < -1e-3


def test_prescribed_vertex_motion_and_slide():
    md = _straight(n=11)
    axis_pt = md.rest_p[-1]

    def target(t):
        return md.rest_p[3] + [0, 0, 0.1 * math.sin(5 * t)]

    solver = ConstrainedSolver(md, OPTS, equalities=[SlideAlongAxis(-1, axis_pt, (1, 0, 0)), FixedVertex(3, target)],
                               gravity=(0, 0, -9.81))
    st = CompactState.at_rest(md)
    for _ in range(20):
        stats = solver.step(st, 0.02)
        assert stats.success and stats.message == "converged", stats
        assert abs(st.p[-1, 1]) < 1e-9 and abs(st.p[-1, 2]) < 1e-9
        assert np.allclose(st.p[3], target(st.t), atol=1e-9)
    assert st.p[-1, 0] < md.rest_p[-1, 0] - 1e-4  # the end slid inwards along its axis


def test_clamp_frame_of_last_segment():
    md = _straight(n=11)
    fixed = np.zeros((md.n, 3), bool)
    fixed[0] = fixed[1] = True
    q_end = md.rest_q[-1].copy()
    solver = ConstrainedSolver(md, OPTS, fixed=fixed, equalities=[ClampFrame(-1, q_end), FixedVertex(-1, md.rest_p[-1])],
                               gravity=(0, 0, -9.81))
    st = CompactState.at_rest(md)
    for _ in range(10):
        assert solver.step(st, 0.02).success
    assert abs(abs(st.q[-1] @ q_end) - 1.0) < 1e-10
    assert st.p[5, 2] < 0


def test_drop_cylinders_scene_small():
    from rodlab.scenes import run_scene

    r = run_scene("drop-cylinders", n=31, t_end=0.4)  # n counts vertices
    m = r.metrics
    assert m["success"], m["message"]
    assert m["max_contacts"] >= 3  # rests on all three cylinders
    assert m["min_clearance"] > -1e-6
    assert m["inextensibility"] < 1e-12 and m["alignment"] < 1e-12
    assert "kinetic_energy" in r.trajectory


def test_cylinder_distance():
    from rodlab.compact.active_set import Cylinder

    c = Cylinder((0.0, 0.0, 0.0), (0.0, 2.0, 0.0), 0.5)
    vals, grads = c.values(np.array([[1.0, 3.0, 0.0], [0.0, -1.0, 2.0]]), 0.1)
    assert np.allclose(vals, [0.4, 1.4])
    assert np.allclose(grads, [[1, 0, 0], [0, 0, 1]])
