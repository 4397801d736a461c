"""Continuous collision detection of rodlab.contact: analytic times of impact for segments thrown
at 10 m/s with a 0.01 s step (100x the radius per step), no false positives on separating motion,
random motions against dense sampling in time, obstacles, and a whole world."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rodlab.contact import NO_IMPACT, OBSTACLE, SEGMENT, detect, from_arrays, impacts
from rodlab.contact import ccd
from rodlab.contact import narrowphase as nph
from rodlab.world.obstacles import Cylinder, Plane, Sphere, TriangleMesh

SPEED, DT, RADIUS = 10.0, 0.01, 0.001       # 0.1 m per step against a 2 mm thickness
TOL = 1e-6 * RADIUS


def tup(a):
    return tuple(float(c) for c in a)


def toi_ss(a0, a1, va0, va1, b0, b1, vb0, vb1, thickness):
    a0, a1, b0, b1 = map(np.asarray, (a0, a1, b0, b1))
    return ccd.ccd_segment_segment(tup(a0), tup(a1), tup(a0 + np.asarray(va0) * DT), tup(a1 + np.asarray(va1) * DT),
                                   tup(b0), tup(b1), tup(b0 + np.asarray(vb0) * DT), tup(b1 + np.asarray(vb1) * DT),
                                   thickness, TOL)


def test_segment_thrown_through_another_is_caught():
    """A along y, 5 cm above B (along x), thrown down at 10 m/s: over one step it ends 5 cm below,
    so a check at the step's ends sees no contact; the centre lines reach 2 r at
    tau = (0.05 - 2 r) / (v dt)."""
    v = (0.0, 0.0, -SPEED)
    t = toi_ss((0, -0.5, 0.05), (0, 0.5, 0.05), v, v, (-0.5, 0, 0), (0.5, 0, 0), (0, 0, 0), (0, 0, 0), 2 * RADIUS)
    assert t == pytest.approx((0.05 - 2 * RADIUS) / (SPEED * DT), abs=1e-6)
    # both moving, obliquely (closest points stay inside): distance |h + (vza - vzb) t dt|
    va, vb = (3.0, -2.0, -6.0), (-1.0, 1.5, 4.0)
    t = toi_ss((0, -0.5, 0.05), (0, 0.5, 0.05), va, va, (-0.5, 0, 0), (0.5, 0, 0), vb, vb, 2 * RADIUS)
    assert t == pytest.approx((0.05 - 2 * RADIUS) / (10.0 * DT), abs=1e-6)


def test_endpoint_hitting_a_segment_side():
    """A's end moves along x into B's side (B along y at x = 0.08): tau = (0.08 - 2 r) / 0.1."""
    v = (SPEED, 0.0, 0.0)
    t = toi_ss((-0.5, 0, 0), (0, 0, 0), v, v, (0.08, -0.5, 0), (0.08, 0.5, 0), (0, 0, 0), (0, 0, 0), 2 * RADIUS)
    assert t == pytest.approx((0.08 - 2 * RADIUS) / (SPEED * DT), abs=1e-6)


def test_no_false_positive_on_separating_or_missing_motion():
    v = (0.0, 0.0, SPEED)
    # moving apart from 3 mm (1 mm gap)
    assert toi_ss((0, -0.5, 0.003), (0, 0.5, 0.003), v, v, (-0.5, 0, 0), (0.5, 0, 0), (0, 0, 0), (0, 0, 0),
                  2 * RADIUS) > 1.0
    # sliding past in parallel at a 1 mm gap, and passing beside B's end
    vx = (SPEED, 0.0, 0.0)
    assert toi_ss((-0.5, 0, 0.003), (0, 0, 0.003), vx, vx, (-0.5, 0, 0), (0.5, 0, 0), (0, 0, 0), (0, 0, 0),
                  2 * RADIUS) > 1.0
    vz = (0.0, 0.0, -SPEED)
    assert toi_ss((0.503, -0.5, 0.05), (0.503, 0.5, 0.05), vz, vz, (-0.5, 0, 0), (0.5, 0, 0), (0, 0, 0), (0, 0, 0),
                  2 * RADIUS) > 1.0
    # touching the thickness at the end of the step exactly is a contact; a hair short of it is not
    z0 = 2 * RADIUS + SPEED * DT
    assert toi_ss((0, -0.5, z0), (0, 0.5, z0), vz, vz, (-0.5, 0, 0), (0.5, 0, 0), (0, 0, 0), (0, 0, 0),
                  2 * RADIUS) == pytest.approx(1.0, abs=1e-6)
    assert toi_ss((0, -0.5, z0 + 1e-6), (0, 0.5, z0 + 1e-6), vz, vz, (-0.5, 0, 0), (0.5, 0, 0), (0, 0, 0), (0, 0, 0),
                  2 * RADIUS) > 1.0


coord = st.floats(-0.5, 0.5, allow_nan=False)
vec = st.tuples(coord, coord, coord)


def gap_at(ends, tau, thickness):
    a0, a1, a0e, a1e, b0, b1, b0e, b1e = ends
    lerp = lambda p, q: tup(np.asarray(p) + tau * (np.asarray(q) - np.asarray(p)))  # noqa: E731
    return nph.segment_segment(lerp(a0, a0e), lerp(a1, a1e), lerp(b0, b0e), lerp(b1, b1e))[2] - thickness


@settings(max_examples=60, deadline=None, derandomize=True)
@given(vec, vec, vec, vec, vec, vec, vec, vec, st.floats(0.0, 0.05))
def test_random_motion_never_misses_a_contact(a0, a1, a0e, a1e, b0, b1, b0e, b1e, thickness):
    """Rotating, stretching segments: nothing in the dense time sampling touches before the
    returned TOI, the first sample that touches is not before it, and at the TOI the gap is
    within the tolerance."""
    ends = (a0, a1, a0e, a1e, b0, b1, b0e, b1e)
    tol = 1e-7
    toi = ccd.ccd_segment_segment(*map(tup, ends), thickness, tol)
    taus = np.linspace(0.0, 1.0, 801)
    gaps = np.array([gap_at(ends, tau, thickness) for tau in taus])
    assert np.all(gaps[taus < toi] > -1e-12)
    if np.any(gaps < 0):
        assert toi <= taus[np.argmax(gaps < 0)]
    if toi <= 1.0:
        assert gap_at(ends, toi, thickness) <= tol + 1e-12
    else:
        assert toi == NO_IMPACT


def test_segment_against_static_obstacles():
    v = np.array([0.0, 0.0, -SPEED])
    p0, p1 = np.array([-0.2, 0.0, 0.05]), np.array([0.2, 0.1, 0.05])
    end0, end1 = p0 + v * DT, p1 + v * DT
    plane = np.array([0, 0, 0, 0, 0, 1, 0, 0], dtype=float)
    t = ccd.ccd_segment_obstacle(tup(p0), tup(p1), tup(end0), tup(end1), RADIUS, nph.PLANE, plane, TOL)
    assert t == pytest.approx((0.05 - RADIUS) / (SPEED * DT), abs=1e-6)
    sphere = np.array([0, 0.05, -0.02, 0.01, 0, 0, 0, 0], dtype=float)   # under the segment's midpoint
    t = ccd.ccd_segment_obstacle(tup(p0), tup(p1), tup(end0), tup(end1), RADIUS, nph.SPHERE, sphere, TOL)
    assert t == pytest.approx((0.05 + 0.02 - 0.01 - RADIUS) / (SPEED * DT), abs=1e-6)
    cyl = np.array([0, 0, -0.03, 0, 1, 0, 0.02, np.inf], dtype=float)    # axis along y, top at z = -0.01
    t = ccd.ccd_segment_obstacle(tup(p0), tup(p1), tup(end0), tup(end1), RADIUS, nph.CYLINDER, cyl, TOL)
    assert t == pytest.approx((0.05 + 0.01 - RADIUS) / (SPEED * DT), abs=1e-6)
    # a vertex (zero-length segment) thrown through a triangle, and one passing beside it
    a, b, c = (-0.1, -0.1, 0.0), (0.1, -0.1, 0.0), (0.0, 0.1, 0.0)
    q, qe = (0.0, 0.0, 0.05), (0.0, 0.0, -0.05)
    t = ccd.ccd_segment_triangle(q, q, qe, qe, RADIUS, a, b, c, TOL)
    assert t == pytest.approx((0.05 - RADIUS) / (SPEED * DT), abs=1e-6)
    q, qe = (0.2, 0.0, 0.05), (0.2, 0.0, -0.05)
    assert ccd.ccd_segment_triangle(q, q, qe, qe, RADIUS, a, b, c, TOL) == NO_IMPACT


def test_world_rod_thrown_at_rod_is_caught():
    """Two 20-segment rods crossing at right angles, one thrown at the other at 10 m/s with a
    0.01 s step: positions at the step's ends show no contact, CCD finds the crossing at the
    analytic time; a plane, a sphere and a mesh below are hit at theirs."""
    n = 21
    s = np.linspace(-0.5, 0.5, n)
    rod_a = np.c_[np.zeros(n), s, np.full(n, 0.05)]
    rod_b = np.c_[s, np.zeros(n), np.zeros(n)]
    mesh = TriangleMesh(np.array([[-1, -1, -0.2], [1, -1, -0.2], [0, 1, -0.2]]), np.array([[0, 1, 2]]))
    obstacles = [Plane((0, 0, -0.04), (0, 0, 1)), Sphere((0.0, 0.0, 0.5), 0.1), Cylinder((3, 0, 0), (0, 1, 0), 0.1),
                 mesh]
    g = from_arrays([0, n, 2 * n], [False, False], RADIUS, obstacles=obstacles)
    x0 = np.concatenate([rod_a, rod_b])
    x1 = x0.copy()
    x1[:n, 2] -= SPEED * DT                     # rod a ends 5 cm below rod b; rod b is static
    assert not np.any(detect(g, x1, 0.0, obstacles=False).kind == SEGMENT)
    hits = impacts(g, x0, x1)
    seg = hits.kind == SEGMENT
    assert hits.toi[seg].min() == pytest.approx((0.05 - 2 * RADIUS) / (SPEED * DT), abs=1e-6)
    assert set(hits.pair_a[seg]) <= {9, 10} and set(hits.pair_b[seg]) <= {29, 30}
    ob = hits.kind == OBSTACLE
    by_obstacle = {int(m): float(hits.toi[ob][hits.pair_b[ob] == m].min()) for m in set(hits.pair_b[ob].tolist())}
    assert set(by_obstacle) == {0}                # rod a stops at z = -0.05, above the mesh at -0.2
    assert by_obstacle[0] == pytest.approx((0.05 + 0.04 - RADIUS) / (SPEED * DT), abs=1e-6)
    assert hits.earliest == pytest.approx(hits.toi[seg].min())
    x2 = x0.copy()
    x2[:n, 2] -= 0.3                             # 30 m/s: now through the mesh as well
    hits = impacts(g, x0, x2)
    mesh_hits = hits.toi[(hits.kind == OBSTACLE) & (hits.pair_b == 3)]
    assert mesh_hits.size and mesh_hits.min() == pytest.approx((0.05 + 0.2 - RADIUS) / 0.3, abs=1e-6)
    # moving apart: nothing
    x3 = x0.copy()
    x3[:n, 2] += SPEED * DT
    hits = impacts(g, x0, x3)
    assert hits.toi.shape == (0,) and hits.earliest == NO_IMPACT
