"""Narrowphase of rodlab.contact against brute force: dense sampling of the segments' parameters,
an independent nested search, and the signed distances of rodlab.world.obstacles."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rodlab.contact import narrowphase as nph
from rodlab.world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh

coord = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
vec = st.tuples(coord, coord, coord)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def tup(a):
    return tuple(float(c) for c in a)


def seg_points(p0, p1, s):
    p0, p1 = np.asarray(p0), np.asarray(p1)
    return p0 + np.asarray(s)[..., None] * (p1 - p0)


def dense_min(p0, p1, q0, q1, n=301):
    s = np.linspace(0.0, 1.0, n)
    P = seg_points(p0, p1, s)
    Q = seg_points(q0, q1, s)
    return float(np.min(np.linalg.norm(P[:, None, :] - Q[None, :, :], axis=2)))


def nested_min(p0, p1, q0, q1):
    """min over s of (exact min over t), by golden-section on the convex outer function."""
    q0, q1 = np.asarray(q0), np.asarray(q1)
    d = q1 - q0
    dd = float(d @ d)

    def inner(s):
        p = seg_points(p0, p1, s)
        t = 0.0 if dd == 0 else min(max(float((p - q0) @ d) / dd, 0.0), 1.0)
        return float(np.linalg.norm(p - (q0 + t * d)))

    lo, hi = 0.0, 1.0
    g = 0.5 * (math.sqrt(5) - 1)
    for _ in range(90):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if inner(a) <= inner(b):
            hi = b
        else:
            lo = a
    return min(inner(0.5 * (lo + hi)), inner(0.0), inner(1.0))


def check_segment_segment(p0, p1, q0, q1):
    s, t, dist, n = nph.segment_segment(tup(p0), tup(p1), tup(q0), tup(q1))
    assert 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0
    assert all(math.isfinite(v) for v in (s, t, dist, *n))
    P, Q = seg_points(p0, p1, s), seg_points(q0, q1, t)
    assert abs(np.linalg.norm(P - Q) - dist) <= 1e-14
    assert abs(np.linalg.norm(n) - 1.0) <= 1e-12
    assert abs(float(np.dot(n, P - Q)) - dist) <= 1e-12
    scale = 1.0 + np.linalg.norm(np.subtract(p1, p0)) + np.linalg.norm(np.subtract(q1, q0))
    ref = nested_min(p0, p1, q0, q1)
    assert abs(dist - ref) <= 1e-10 * scale, (dist, ref)
    brute = dense_min(p0, p1, q0, q1)
    assert dist <= brute + 1e-12 * scale
    return s, t, dist, n


@SETTINGS
@given(vec, vec, vec, vec)
def test_segment_segment_random(p0, p1, q0, q1):
    check_segment_segment(p0, p1, q0, q1)


@SETTINGS
@given(vec, vec, vec, st.floats(-2.0, 2.0), st.floats(-2.0, 2.0))
def test_segment_segment_parallel_and_collinear(p0, p1, offset, a, b):
    """Q on a line parallel (or anti-parallel, or equal: offset scaled to 0) to P's."""
    d = np.subtract(p1, p0)
    for off in (np.asarray(offset), 0.0 * np.asarray(offset)):
        q0 = np.asarray(p0) + off + a * d
        q1 = np.asarray(p0) + off + b * d
        s, t, dist, n = check_segment_segment(p0, p1, q0, q1)


def test_parallel_overlap_takes_the_middle():
    s, t, dist, n = nph.segment_segment((0., 0., 0.), (1., 0., 0.), (0.5, 0., 1.), (2., 0., 1.))
    assert s == pytest.approx(0.75, abs=1e-15) and t == pytest.approx(0.25 / 1.5, abs=1e-15)
    assert dist == pytest.approx(1.0, abs=1e-15) and n == pytest.approx((0.0, 0.0, -1.0), abs=1e-15)
    # anti-parallel, same overlap
    s2, t2, dist2, _ = nph.segment_segment((0., 0., 0.), (1., 0., 0.), (2., 0., 1.), (0.5, 0., 1.))
    assert (s2, dist2) == pytest.approx((0.75, 1.0), abs=1e-15) and t2 == pytest.approx(1 - 0.25 / 1.5, abs=1e-15)
    # collinear and overlapping: distance 0, a unit normal across the line
    s3, t3, dist3, n3 = nph.segment_segment((0., 0., 0.), (1., 0., 0.), (0.5, 0., 0.), (3., 0., 0.))
    assert dist3 == 0.0 and s3 == pytest.approx(0.75) and abs(np.dot(n3, (1, 0, 0))) < 1e-15
    assert np.linalg.norm(n3) == pytest.approx(1.0)


def test_touching_crossing_and_degenerate():
    # crossing at one point: distance 0, normal along d1 x d2
    s, t, dist, n = nph.segment_segment((-1., 0., 0.), (1., 0., 0.), (0., -1., 0.), (0., 2., 0.))
    assert (s, t, dist) == pytest.approx((0.5, 1 / 3, 0.0), abs=1e-15) and n == pytest.approx((0., 0., 1.))
    # endpoint touching the other's interior
    s, t, dist, n = nph.segment_segment((0., 0., 0.), (1., 0., 0.), (0.25, 0., 0.), (0.25, 0., 1.))
    assert (s, t, dist) == pytest.approx((0.25, 0.0, 0.0), abs=1e-15)
    # zero-length against segment, and both zero-length
    s, t, dist, n = nph.segment_segment((0.3, 0.5, 0.), (0.3, 0.5, 0.), (0., 0., 0.), (1., 0., 0.))
    assert (s, t, dist) == pytest.approx((0.0, 0.3, 0.5), abs=1e-15) and n == pytest.approx((0., 1., 0.))
    s, t, dist, n = nph.segment_segment((1., 2., 3.), (1., 2., 3.), (1., 2., 3.), (1., 2., 3.))
    assert (s, t, dist) == (0.0, 0.0, 0.0) and np.linalg.norm(n) == pytest.approx(1.0)
    # nearly parallel (1e-9 rad) long segments: the true distance, not that of the middle
    eps = 1e-9
    s, t, dist, n = nph.segment_segment((0., 0., 0.), (1., 0., 0.), (0., 0., 1e-3), (1., 0., 1e-3 + eps))
    assert dist == pytest.approx(1e-3, abs=1e-15)


def check_point_obstacle(ob, kind, prm, x):
    sd, q, n = nph.point_obstacle(tup(x), kind, np.asarray(prm, dtype=float))
    assert sd == pytest.approx(float(ob.distance(np.asarray(x)[None])[0]), abs=1e-12)
    assert abs(np.linalg.norm(np.subtract(x, q)) - abs(sd)) <= 1e-12
    assert abs(float(ob.distance(np.asarray(q)[None])[0])) <= 1e-12
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)
    if abs(sd) > 1e-9:
        assert np.allclose(np.subtract(x, q) / sd, n, atol=1e-9)


@SETTINGS
@given(vec, vec, vec, st.floats(0.05, 0.8))
def test_point_against_world_obstacles(x, c, w, radius):
    c = np.asarray(c)
    w = np.asarray(w)
    assume(np.linalg.norm(w) > 1e-3)
    u = w / np.linalg.norm(w)
    check_point_obstacle(Plane(c, w), nph.PLANE, [*c, *u, 0, 0], x)
    check_point_obstacle(Sphere(c, radius), nph.SPHERE, [*c, radius, 0, 0, 0, 0], x)
    check_point_obstacle(Capsule(c, c + w, radius), nph.CAPSULE, [*c, *(c + w), radius, 0], x)
    check_point_obstacle(Cylinder(c, w, radius), nph.CYLINDER, [*c, *u, radius, math.inf], x)


def capped_cylinder_sd(x, c, u, radius, half):
    w = np.asarray(x) - c
    a = w @ u
    r = np.linalg.norm(w - np.outer(a, u) if w.ndim == 2 else w - a * u, axis=-1)
    da, dr = np.abs(a) - half, r - radius
    return np.minimum(np.maximum(da, dr), 0.0) + np.hypot(np.maximum(da, 0.0), np.maximum(dr, 0.0))


@SETTINGS
@given(st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3)), vec, st.floats(0.1, 1.0), st.floats(0.1, 1.5))
def test_point_capped_cylinder(x, w, radius, half):
    w = np.asarray(w)
    assume(np.linalg.norm(w) > 1e-3)
    u = w / np.linalg.norm(w)
    c = np.array([0.1, -0.2, 0.3])
    sd, q, n = nph.point_cylinder(tup(x), tup(c), tup(u), radius, half)
    assert sd == pytest.approx(float(capped_cylinder_sd(x, c, u, radius, half)), abs=1e-12)
    assert abs(float(capped_cylinder_sd(q, c, u, radius, half))) <= 1e-12
    assert abs(np.linalg.norm(np.subtract(x, q)) - abs(sd)) <= 1e-12
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)


@SETTINGS
@given(vec, vec, vec, st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.floats(-2, 2)))
def test_point_triangle_against_mesh_distance(a, b, c, x):
    a, b, c = map(np.asarray, (a, b, c))
    assume(np.linalg.norm(np.cross(b - a, c - a)) > 1e-3)
    mesh = TriangleMesh(np.array([a, b, c]), np.array([[0, 1, 2]]))
    d, q, n, wa, wb, wc = nph.point_triangle(tup(x), tup(a), tup(b), tup(c))
    assert d == pytest.approx(float(mesh.distance(np.asarray(x))[0]), abs=1e-12)
    assert min(wa, wb, wc) >= 0.0 and wa + wb + wc == pytest.approx(1.0, abs=1e-14)
    assert np.allclose(wa * a + wb * b + wc * c, q, atol=1e-14)
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)


def segment_obstacle_brute(dist_fn, p0, p1, n=2001):
    s = np.linspace(0.0, 1.0, n)
    return float(np.min(dist_fn(seg_points(p0, p1, s))))


@SETTINGS
@given(vec, vec, vec, vec, st.floats(0.05, 0.8), st.floats(0.1, 1.0))
def test_segment_against_obstacles(p0, p1, c, w, radius, half):
    c, w = np.asarray(c), np.asarray(w)
    assume(np.linalg.norm(w) > 1e-2)
    u = w / np.linalg.norm(w)
    cases = [
        (nph.PLANE, [*c, *u, 0, 0], Plane(c, w).distance),
        (nph.SPHERE, [*c, radius, 0, 0, 0, 0], Sphere(c, radius).distance),
        (nph.CAPSULE, [*c, *(c + w), radius, 0], Capsule(c, c + w, radius).distance),
        (nph.CYLINDER, [*c, *u, radius, math.inf], Cylinder(c, w, radius).distance),
        (nph.CYLINDER, [*c, *u, radius, half], lambda X: capped_cylinder_sd(X, c, u, radius, half)),
    ]
    length = np.linalg.norm(np.subtract(p1, p0))
    for kind, prm, dist_fn in cases:
        s, sd, q, n = nph.segment_obstacle(tup(p0), tup(p1), kind, np.asarray(prm, dtype=float))
        brute = segment_obstacle_brute(dist_fn, p0, p1)
        assert 0.0 <= s <= 1.0
        assert sd == pytest.approx(float(dist_fn(seg_points(p0, p1, s)[None])[0]), abs=1e-12)
        assert sd <= brute + 1e-12, (kind, sd, brute)
        assert sd >= brute - length / 2000 - 1e-12, (kind, sd, brute)
        assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)


@SETTINGS
@given(vec, vec, vec, vec, vec)
def test_segment_triangle(p0, p1, a, b, c):
    a, b, c = map(np.asarray, (a, b, c))
    assume(np.linalg.norm(np.cross(b - a, c - a)) > 1e-3)
    mesh = TriangleMesh(np.array([a, b, c]), np.array([[0, 1, 2]]))
    s, d, q, n = nph.segment_triangle(tup(p0), tup(p1), tup(a), tup(b), tup(c))
    brute = segment_obstacle_brute(mesh.distance, p0, p1)
    length = np.linalg.norm(np.subtract(p1, p0))
    assert d <= brute + 1e-12 and d >= brute - length / 2000 - 1e-12
    assert d == pytest.approx(np.linalg.norm(seg_points(p0, p1, s) - np.asarray(q)), abs=1e-12)
    assert float(mesh.distance(np.asarray(q))[0]) <= 1e-12
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)


def test_segment_parallel_to_plane_and_axis_takes_the_middle():
    s, sd, q, n = nph.segment_plane((0., 0., 1.), (2., 0., 1.), (0., 0., 0.), (0., 0., 1.))
    assert (s, sd) == (0.5, 1.0) and q == pytest.approx((1., 0., 0.))
    s, sd, q, n = nph.segment_cylinder((2., 0., -1.), (2., 0., 1.), (0., 0., 0.), (0., 0., 1.), 0.5, math.inf)
    assert (s, sd) == (0.5, 1.5) and n == pytest.approx((1., 0., 0.))
    # a segment through a sphere's centre: depth = radius, a normal across the segment
    s, sd, q, n = nph.segment_sphere((-1., 0., 0.), (1., 0., 0.), (0., 0., 0.), 0.5)
    assert sd == -0.5 and abs(n[0]) < 1e-15 and np.linalg.norm(n) == pytest.approx(1.0)
