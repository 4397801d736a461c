"""The one-call serial kernels of rodlab.contact (grid_pairs_serial, segment_contacts,
segment_impacts) against the parallel kernels they replace below SERIAL_BELOW segments: the same
pairs in the same order and the same values bit for bit, on random worlds of open and closed
rods; detect and impacts give the same contact sets through either path."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from rodlab.contact import broadphase as bp
from rodlab.contact import ccd, from_arrays

det = importlib.import_module("rodlab.contact.detect")  # the module (the package's `detect` is its function)
from rodlab.world.obstacles import Plane, Sphere


def random_world(seed, n_rods=4, closed=(False, True, False, True)):
    """Random walks of 20-60 vertices in a 0.5 m box (dense enough for several pairs a segment)."""
    rng = np.random.default_rng(seed)
    xs = []
    for _ in range(n_rods):
        n = int(rng.integers(20, 61))
        xs.append(np.cumsum(rng.normal(size=(n, 3)) * 0.04, axis=0) + rng.uniform(-0.25, 0.25, 3))
    vs = np.concatenate([[0], np.cumsum([len(x) for x in xs])])
    return np.concatenate(xs), vs, np.array(closed[:n_rods]), rng.uniform(0.005, 0.015, n_rods)


def parallel_pairs(lo, hi, g):
    """The pairs of the parallel grid kernel (grid_pairs' path from SERIAL_BELOW boxes on)."""
    gmin, h, dims = bp._grid(lo, hi)
    keys = np.empty(lo.shape[0], dtype=np.int64)
    bp._grid_keys(lo, gmin, h, dims, keys)
    order = np.argsort(keys, kind="stable")
    return bp._grid_pairs(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip, gmin, h, dims,
                          keys, order)


def geometry_args(g):
    return g.edge_v0, g.edge_v1, g.edge_radius, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip


@pytest.mark.parametrize("seed, skip, inflate", [(0, 1, 0.0), (1, 2, 0.02), (2, 1, 0.3), (3, 3, 0.05)])
def test_grid_pairs_serial_is_the_parallel_grid(seed, skip, inflate):
    x, vs, closed, radius = random_world(seed)
    g = from_arrays(vs, closed, radius, skip=skip)
    lo, hi = np.empty((g.n_edges, 3)), np.empty((g.n_edges, 3))
    det.segment_boxes(x, g.edge_v0, g.edge_v1, g.edge_radius + inflate, lo, hi)
    ref = parallel_pairs(lo, hi, g)
    got = bp.grid_pairs_serial(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
    assert ref.shape[0] > 2 * g.n_edges or inflate < 0.3  # the 0.3 m boxes grow the table past its first size
    assert np.array_equal(got, ref)
    brute = bp.brute_pairs(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
    assert {tuple(p) for p in got.tolist()} == {tuple(p) for p in brute.tolist()}


@pytest.mark.parametrize("seed, margin", [(4, 0.0), (5, 0.03)])
def test_segment_contacts_is_the_parallel_detection(seed, margin):
    x, vs, closed, radius = random_world(seed)
    g = from_arrays(vs, closed, radius)
    lo, hi = np.empty((g.n_edges, 3)), np.empty((g.n_edges, 3))
    det.segment_boxes(x, g.edge_v0, g.edge_v1, g.edge_radius + 0.5 * margin, lo, hi)
    cand = parallel_pairs(lo, hi, g)
    P = cand.shape[0]
    s, t, point, normal, gap = np.empty(P), np.empty(P), np.empty((P, 3)), np.empty((P, 3)), np.empty(P)
    det.eval_segment_pairs(x, g.edge_v0, g.edge_v1, g.edge_radius, cand, s, t, point, normal, gap)
    keep = gap <= margin
    assert 0 < keep.sum() < P
    got = det.segment_contacts(x, *geometry_args(g), margin)
    for a, b in zip(got, (cand[keep], s[keep], t[keep], point[keep], normal[keep], gap[keep])):
        assert np.array_equal(a, b)


def test_segment_impacts_is_the_parallel_ccd_without_the_known_pairs():
    x0, vs, closed, radius = random_world(6)
    rng = np.random.default_rng(7)
    x1 = x0 + rng.normal(size=x0.shape) * 0.03
    g = from_arrays(vs, closed, radius)
    tol = ccd.default_tolerance(g, x0, x1)
    lo, hi = np.empty((g.n_edges, 3)), np.empty((g.n_edges, 3))
    ccd._swept_boxes(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius + 0.5 * tol, lo, hi)
    cand = parallel_pairs(lo, hi, g)
    toi = np.empty(cand.shape[0])
    ccd.eval_pair_toi(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius, cand, tol, toi)
    hit = toi <= 1.0
    assert hit.sum() > 4
    pairs, got = ccd.segment_impacts(x0, x1, *geometry_args(g), tol, np.empty(0, dtype=np.int64))
    assert np.array_equal(pairs, cand[hit]) and np.array_equal(got, toi[hit])
    known = np.sort(cand[hit][::2, 0] * g.n_edges + cand[hit][::2, 1])  # every other hit already handled
    pairs, got = ccd.segment_impacts(x0, x1, *geometry_args(g), tol, known)
    assert np.array_equal(pairs, cand[hit][1::2]) and np.array_equal(got, toi[hit][1::2])


def test_detect_and_impacts_agree_through_either_path(monkeypatch):
    x0, vs, closed, radius = random_world(8)
    x1 = x0 + np.random.default_rng(9).normal(size=x0.shape) * 0.02
    g = from_arrays(vs, closed, radius, obstacles=[Plane((0, 0, -0.2), (0, 0, 1)), Sphere((0, 0, 0), 0.1)])
    serial = det.detect(g, x0, 0.02), ccd.impacts(g, x0, x1)
    monkeypatch.setattr(det, "SERIAL_BELOW", 0)  # the parallel kernels, as for large worlds
    monkeypatch.setattr(ccd, "SERIAL_BELOW", 0)
    monkeypatch.setattr(bp, "SERIAL_BELOW", 0)
    parallel = det.detect(g, x0, 0.02), ccd.impacts(g, x0, x1)
    for a, b in zip(serial, parallel):
        assert a.kind.shape[0] > 0
        for fa, fb in zip(a, b):
            assert np.array_equal(fa, fb)
