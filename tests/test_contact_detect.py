"""Broadphase and discrete detection of rodlab.contact against brute force on random worlds of
several rods (open and closed) and obstacles; min_gap; geometry from a World."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rodlab.contact import OBSTACLE, SEGMENT, detect, from_arrays, from_world, min_gap, segment_pairs
from rodlab.contact import narrowphase as nph
from rodlab.contact.broadphase import brute_pairs, build_bvh, bvh_query
from rodlab.contact.detect import segment_boxes
from rodlab.model import ModelError
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh


def tup(a):
    return tuple(float(c) for c in a)


def random_world(seed, n_rods=5, closed=(False, True, False, True, False)):
    """Hair-like random walks of 20-40 vertices in a 0.6 m box, per-rod radii 5-15 mm."""
    rng = np.random.default_rng(seed)
    xs = []
    for r in range(n_rods):
        n = int(rng.integers(20, 41))
        step = rng.normal(size=(n, 3)) * 0.04
        xs.append(np.cumsum(step, axis=0) + rng.uniform(-0.3, 0.3, 3))
    vs = np.concatenate([[0], np.cumsum([len(x) for x in xs])])
    radius = rng.uniform(0.005, 0.015, n_rods)
    return np.concatenate(xs), vs, np.array(closed[:n_rods]), radius


def brute_segment_pairs(g, x, margin):
    """Every non-neighbouring pair with gap <= margin, by testing all pairs."""
    found = {}
    for i in range(g.n_edges):
        for j in range(i + 1, g.n_edges):
            if g.edge_rod[i] == g.edge_rod[j]:
                r = g.edge_rod[i]
                k = abs(g.edge_local[i] - g.edge_local[j])
                if g.rod_closed[r]:
                    k = min(k, g.rod_edge_count[r] - k)
                if k <= g.rod_skip[r]:
                    continue
            s, t, d, n = nph.segment_segment(tup(x[g.edge_v0[i]]), tup(x[g.edge_v1[i]]), tup(x[g.edge_v0[j]]),
                                             tup(x[g.edge_v1[j]]))
            gap = d - g.edge_radius[i] - g.edge_radius[j]
            if gap <= margin:
                found[(i, j)] = gap
    return found


@pytest.mark.parametrize("seed, skip, margin", [(0, 1, 0.0), (1, 2, 0.01), (2, 1, 0.05), (3, 3, 0.02)])
def test_detect_equals_brute_force_pairs(seed, skip, margin):
    x, vs, closed, radius = random_world(seed)
    g = from_arrays(vs, closed, radius, skip=skip)
    c = detect(g, x, margin)
    ref = brute_segment_pairs(g, x, margin)
    assert len(ref) > 20                                   # the random world has contacts to find
    got = {(int(a), int(b)): gap for a, b, gap in zip(c.pair_a, c.pair_b, c.gap)}
    assert set(got) == set(ref)
    for key, gap in ref.items():
        assert got[key] == pytest.approx(gap, abs=1e-14)
    assert np.all(c.kind == SEGMENT) and np.all(c.element_b == -1)
    # weights, points and normals are those of the narrowphase
    i, j = c.pair_a, c.pair_b
    pa = x[g.edge_v0[i]] + c.weight_a[:, None] * (x[g.edge_v1[i]] - x[g.edge_v0[i]])
    pb = x[g.edge_v0[j]] + c.weight_b[:, None] * (x[g.edge_v1[j]] - x[g.edge_v0[j]])
    assert np.allclose(pb, c.point_b, atol=1e-15)
    assert np.allclose(np.linalg.norm(c.normal, axis=1), 1.0, atol=1e-12)
    d = np.linalg.norm(pa - pb, axis=1)
    assert np.allclose(np.einsum("ij,ij->i", c.normal, pa - pb), d, atol=1e-12)   # from b toward a
    assert np.allclose(d - g.edge_radius[i] - g.edge_radius[j], c.gap, atol=1e-14)
    # the box broadphase is a superset, equal to the all-pairs box test
    boxes = segment_pairs(g, x, margin)
    assert set(got) <= set(map(tuple, boxes.tolist()))
    lo = np.empty((g.n_edges, 3))
    hi = np.empty((g.n_edges, 3))
    segment_boxes(x, g.edge_v0, g.edge_v1, g.edge_radius + 0.5 * margin, lo, hi)
    ref_boxes = brute_pairs(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
    assert sorted(map(tuple, boxes.tolist())) == sorted(map(tuple, ref_boxes.tolist()))


def test_neighbours_skipped_on_closed_and_open_rods():
    """A tight ring and a tight open coil: every pair is within the margin, so exactly the pairs
    further apart than ``skip`` along the rod (cyclically on the ring) are reported."""
    theta = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    ring = np.c_[0.05 * np.cos(theta), 0.05 * np.sin(theta), np.zeros(12)]
    coil = np.c_[0.05 * np.cos(theta), 0.05 * np.sin(theta), np.linspace(0, 0.01, 12)] + [1.0, 0, 0]
    x = np.concatenate([ring, coil])
    for skip in (1, 2, 4):
        g = from_arrays([0, 12, 24], [True, False], 0.1, skip=skip)
        got = {(int(a), int(b)) for a, b in zip(*detect(g, x, 0.0)[1:3])}
        ring_pairs = {(i, j) for i in range(12) for j in range(i + 1, 12) if min(j - i, 12 - (j - i)) > skip}
        coil_pairs = {(12 + i, 12 + j) for i in range(11) for j in range(i + 1, 11) if j - i > skip}
        assert got == ring_pairs | coil_pairs


def test_pairs_across_rods_are_always_considered():
    x = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 0.01], [1, 0, 0.01], [2, 0, 0.01]], dtype=float)
    g = from_arrays([0, 3, 6], [False, False], 0.001, skip=5)
    got = {(int(a), int(b)) for a, b in zip(*detect(g, x, 0.0)[1:3])}
    assert got == set()
    got = {(int(a), int(b)) for a, b in zip(*detect(g, x, 0.01)[1:3])}
    assert got == {(0, 2), (0, 3), (1, 2), (1, 3)}


def world_obstacles():
    grid = np.linspace(-0.4, 0.4, 5)
    vx, vy = np.meshgrid(grid, grid, indexing="ij")
    vz = -0.15 + 0.05 * np.sin(4 * vx) * np.cos(3 * vy)
    verts = np.c_[vx.ravel(), vy.ravel(), vz.ravel()]
    tris = []
    for i in range(4):
        for j in range(4):
            a, b, c, d = 5 * i + j, 5 * (i + 1) + j, 5 * (i + 1) + j + 1, 5 * i + j + 1
            tris += [[a, b, c], [a, c, d]]
    return [Plane((0, 0, -0.3), (0.1, 0, 1)), Sphere((0.1, 0.0, 0.05), 0.12), Capsule((-0.3, 0.2, 0), (0.3, 0.25, 0.1), 0.04),
            Cylinder((0, 0, 0.2), (0, 1, 0.2), 0.06), TriangleMesh(verts, np.array(tris))]


def test_segment_obstacle_contacts_match_world_distances():
    x, vs, closed, radius = random_world(4)
    obstacles = world_obstacles()
    g = from_arrays(vs, closed, radius, obstacles=obstacles)
    margin = 0.03
    c = detect(g, x, margin)
    ob = c.kind == OBSTACLE
    got = {(int(a), int(b), int(e)): (gap, s) for a, b, e, gap, s in
           zip(c.pair_a[ob], c.pair_b[ob], c.element_b[ob], c.gap[ob], c.weight_a[ob])}
    ref = set()
    for e in range(g.n_edges):
        p0, p1 = x[g.edge_v0[e]], x[g.edge_v1[e]]
        for m, o in enumerate(obstacles):
            if isinstance(o, TriangleMesh):
                for f, tri in enumerate(o.triangles):
                    a, b, cc = o.vertices[tri]
                    _, d, _, _ = nph.segment_triangle(tup(p0), tup(p1), tup(a), tup(b), tup(cc))
                    if d - g.edge_radius[e] <= margin:
                        ref.add((e, m, f))
            else:
                _, d, _, _ = nph.segment_obstacle(tup(p0), tup(p1), g.obstacle_kind[m], g.obstacle_param[m])
                if d - g.edge_radius[e] <= margin:
                    ref.add((e, m, -1))
    assert len(ref) > 30 and {k[1] for k in ref} == set(range(5))
    assert set(got) == ref
    # each gap is the world obstacle's own (signed) distance at the contact point, minus the radius
    for (e, m, f), (gap, s) in got.items():
        p = x[g.edge_v0[e]] + s * (x[g.edge_v1[e]] - x[g.edge_v0[e]])
        o = obstacles[m]
        d = float(o.distance(p[None])[0]) if f < 0 else float(TriangleMesh(o.vertices, o.triangles[f:f + 1]).distance(p)[0])
        assert gap == pytest.approx(d - g.edge_radius[e], abs=1e-12)
    assert np.allclose(np.linalg.norm(c.normal[ob], axis=1), 1.0, atol=1e-12)


def test_min_gap_is_the_brute_force_minimum():
    x, vs, closed, radius = random_world(5)
    obstacles = world_obstacles()
    g = from_arrays(vs, closed, radius, obstacles=obstacles)
    seg = brute_segment_pairs(g, x, math.inf)
    everything = detect(g, x, 10.0)
    obs = everything.gap[everything.kind == OBSTACLE]
    assert min_gap(g, x) == pytest.approx(min(min(seg.values()), obs.min()), abs=1e-15)
    assert min_gap(g, x, obstacles=False) == pytest.approx(min(seg.values()), abs=1e-15)
    # spread apart: no pair within the first margin, the search widens until it finds the minimum
    far = x * 30.0
    seg_far = brute_segment_pairs(g, far, math.inf)
    assert min_gap(g, far, obstacles=False) == pytest.approx(min(seg_far.values()), abs=1e-13)
    # a single straight rod has no non-neighbouring pair at skip = its edge count
    g1 = from_arrays([0, 4], [False], 0.01, skip=3)
    assert min_gap(g1, np.c_[np.arange(4.0), np.zeros(4), np.zeros(4)]) == math.inf


def test_from_world_matches_world_arrays():
    b = WorldBuilder()
    r0 = b.add_rod(shapes.straight(11, 1.0), E=1e7, G=4e6, rho=1000, radius=0.02)
    theta = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    b.add_rod(np.c_[0.2 * np.cos(theta), 0.2 * np.sin(theta), 0.05 + 0 * theta], E=1e7, G=4e6, rho=1000,
              radius=0.01, closed=True)
    b.add_obstacle(Plane((0, 0, -0.1), (0, 0, 1)))
    world = b.build()
    g = from_world(world)
    assert g.n_edges == world.n_edges == 10 + 16 and g.n_vertices == world.n_vertices
    assert g.edge_v0[10] == 11 and g.edge_v1[25] == 11           # the ring's last edge wraps to its first vertex
    assert np.allclose(g.edge_radius, np.r_[np.full(10, 0.02), np.full(16, 0.01)])
    assert r0 == 0 and list(g.rod_skip) == [1, 1]
    g_auto = from_world(world, skip="auto")
    # rod 0: l = 0.1 m, 2 r = 0.04 m -> 1; ring: l = 2 * 0.2 * sin(pi / 16) = 0.078, 2 r = 0.02 -> 1
    assert list(g_auto.rod_skip) == [1, 1]
    c = detect(g, world.vertex_rest_x, 0.2)
    assert set(c.pair_b[c.kind == OBSTACLE]) == {0}
    assert c.gap[c.kind == OBSTACLE].min() == pytest.approx(0.1 - 0.02, abs=1e-14)


def test_auto_skip_leaves_no_negative_gap_at_rest():
    x = np.c_[np.linspace(0, 1, 51), np.zeros(51), np.zeros(51)]
    g = from_arrays([0, 51], [False], 0.05, skip="auto", edge_rest_length=np.full(50, 0.02))
    assert g.rod_skip[0] == 5 and min_gap(g, x) == pytest.approx(0.0, abs=1e-14)


def test_bvh_query_returns_exactly_the_overlapping_boxes():
    rng = np.random.default_rng(7)
    lo = rng.uniform(-1, 1, (300, 3))
    hi = lo + rng.uniform(0, 0.2, (300, 3))
    tree = build_bvh(lo, hi)
    stack = np.empty(130, dtype=np.int64)
    out = np.empty(300, dtype=np.int64)
    for _ in range(50):
        qlo = rng.uniform(-1, 1, 3)
        qhi = qlo + rng.uniform(0, 0.5, 3)
        k = bvh_query(*tree, lo, hi, tup(qlo), tup(qhi), stack, out, 0)
        ref = np.nonzero(np.all(lo <= qhi, axis=1) & np.all(hi >= qlo, axis=1))[0]
        assert sorted(out[:k].tolist()) == ref.tolist()


def test_bad_input_is_refused_with_named_parameter():
    g = from_arrays([0, 4], [False], 0.01)
    x = np.zeros((4, 3))
    with pytest.raises(ModelError, match="vertex_x must have shape"):
        detect(g, np.zeros((5, 3)))
    with pytest.raises(ModelError, match="vertex_x must be finite"):
        detect(g, np.full((4, 3), np.nan))
    with pytest.raises(ModelError, match="margin must be"):
        detect(g, x, -1.0)
    with pytest.raises(ModelError, match="skip must be"):
        from_arrays([0, 4], [False], 0.01, skip=0)
    with pytest.raises(ModelError, match="edge_radius"):
        from_arrays([0, 4], [False], [0.01, 0.02])
    with pytest.raises(ModelError, match="rod_closed"):
        from_arrays([0, 4], [False, True], 0.01)
