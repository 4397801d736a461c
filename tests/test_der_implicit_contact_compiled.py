"""der-implicit's compiled contact Newton pieces (contact_table, contact_solve) against the shared
detection and dense linear algebra."""
from __future__ import annotations

import numpy as np
import pytest

from rodlab.contact import OBSTACLE, SEGMENT, detect, impacts
from rodlab.contact.broadphase import brute_pairs
from rodlab.contact.detect import segment_boxes
from rodlab.der_implicit.contact import SEG_FIXPT, SEG_FIXSEG, SEG_SEG, VERT_FIXTRI, VERT_PLANE
from rodlab.der_implicit.contact_solve import band_solve_local, solve_banded_plus
from rodlab.der_implicit.contact_table import contact_table, earliest_impact, sweep_pairs
from rodlab.linalg.banded_ldlt import ldlt_factor_band10, ldlt_solve_band
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder
from rodlab.world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh


def _world(seed=3):
    """Four wiggly rods in a 6 cm box over every obstacle kind, rod contact on."""
    rng = np.random.default_rng(seed)
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    for r in range(4):
        start = rng.uniform(-0.03, 0.03, 3) + np.array([0.0, 0.0, 0.03])
        steps = rng.normal(0.0, 1.0, (11, 3))
        steps /= np.linalg.norm(steps, axis=1)[:, None]
        pts = start + np.cumsum(0.01 * steps, axis=0)
        b.add_rod(pts, E=1e7, G=4e6, rho=1000.0, radius=0.003)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.1, 0.0, 1.0)), friction=0.3)
    b.add_obstacle(Sphere((0.0, 0.0, 0.03), 0.01), friction=0.2)
    b.add_obstacle(Capsule((-0.03, 0.0, 0.02), (0.03, 0.01, 0.04), 0.006), friction=0.1)
    b.add_obstacle(Cylinder((0.0, 0.0, 0.04), (1.0, 1.0, 0.0), 0.005), friction=0.4)
    v = np.array([[-0.05, -0.05, 0.02], [0.05, -0.05, 0.02], [0.05, 0.05, 0.03], [-0.05, 0.05, 0.03],
                  [0.0, 0.0, 0.025]])
    b.add_obstacle(TriangleMesh(v, np.array([[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]])), friction=0.5)
    b.set_contact(rods=True, friction=0.6)
    world = b.build()
    sim = make_simulator(world, "der-implicit", contact_dhat=0.004)
    return np.ascontiguousarray(sim.initial_state().vertex_x), sim._contact


def test_sweep_pairs_are_the_brute_force_pairs():
    x0, cs = _world()
    g = cs.geometry
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = x0 + rng.normal(0.0, 0.005, x0.shape)
        lo, hi = np.empty((g.n_edges, 3)), np.empty((g.n_edges, 3))
        segment_boxes(x, g.edge_v0, g.edge_v1, g.edge_radius + 0.004, lo, hi)
        args = (g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
        want = {tuple(p) for p in brute_pairs(lo, hi, *args)}
        got = sweep_pairs(lo, hi, g)
        assert len(got) == len(want) and {tuple(p) for p in got} == want


def test_contact_table_holds_the_detected_contacts():
    """Every detected pair within dhat becomes its primitives: segment pairs, each vertex of a segment
    on a plane once, sphere / capsule / cylinder per segment, mesh rows per (vertex, triangle) and
    (segment, mesh edge) once."""
    x0, cs = _world()
    g, ts = cs.geometry, cs.table_statics
    x = x0
    ptype, pv, pfix, prsum, pmu = contact_table(x, g, ts)
    cs_ = detect(g, x, ts.dhat)
    seg = cs_.kind == SEGMENT
    want = {(g.edge_v0[a], g.edge_v1[a], g.edge_v0[b], g.edge_v1[b]) for a, b in zip(cs_.pair_a[seg], cs_.pair_b[seg])}
    assert {tuple(r) for r in pv[ptype == SEG_SEG]} == want and np.sum(ptype == SEG_SEG) == len(want)
    obs = cs_.kind == OBSTACLE
    kinds = g.obstacle_kind[cs_.pair_b[obs]]
    e = cs_.pair_a[obs]
    plane_v = np.unique(np.concatenate([g.edge_v0[e[kinds == 0]], g.edge_v1[e[kinds == 0]]]))
    assert sorted(pv[ptype == VERT_PLANE, 0]) == sorted(plane_v)
    assert np.sum(ptype == SEG_FIXPT) == np.sum(kinds == 1)
    mesh_pairs = {(a, f) for a, f, k in zip(e, cs_.element_b[obs], kinds) if k == 4}
    tri_rows = {(v, f) for a, f in mesh_pairs for v in (g.edge_v0[a], g.edge_v1[a])}
    assert np.sum(ptype == VERT_FIXTRI) == len(tri_rows)
    n_seg_fix = np.sum(kinds == 2) + np.sum(kinds == 3)
    assert np.sum(ptype == SEG_FIXSEG) >= n_seg_fix + len({a for a, _ in mesh_pairs})
    assert len(want) and len(plane_v) and np.any(kinds == 1) and np.any(kinds == 2) and np.any(kinds == 3) \
        and mesh_pairs, "the configuration should touch every kind"
    assert np.all(np.isfinite(pfix)) and np.all(prsum > 0) and np.all((pmu >= 0) & (pmu <= 0.6))


def test_earliest_impact_is_that_of_impacts():
    x0, cs = _world()
    g, ts = cs.geometry, cs.table_statics
    rng = np.random.default_rng(1)
    for _ in range(4):
        x1 = x0 + rng.normal(0.0, 0.01, x0.shape)
        hits = impacts(g, x0, x1)
        assert earliest_impact(x0, x1, g, ts) == hits.earliest


def _spd_band_plus(D, rods, n_extra, rng):
    """A random SPD matrix: a lower band (half bandwidth 10, no entry across the rods' blocks) plus
    ``n_extra`` symmetric entries more than 10 apart; returns (band, extra, dense)."""
    H = np.zeros((D, D))
    starts = np.linspace(0, D, rods + 1).astype(int)
    for a, b in zip(starts[:-1], starts[1:]):
        for i in range(a, b):
            for j in range(max(a, i - 10), i + 1):
                H[i, j] = H[j, i] = rng.normal()
    extra = []
    for _ in range(n_extra):
        i, j = rng.integers(0, D, 2)
        if abs(i - j) > 10:
            i, j = max(i, j), min(i, j)
            v = rng.normal()
            H[i, j] += v
            H[j, i] += v
            extra.append((i, j, v))
    H += np.diag(np.abs(H).sum(axis=1) + 1.0)  # diagonally dominant: SPD
    band = np.zeros((D, 11))
    for i in range(D):
        for k in range(min(i, 10) + 1):
            band[i, k] = H[i, i - k]
    return band, np.array(extra, dtype=float).reshape(-1, 3), H


@pytest.mark.parametrize("n_extra", [0, 1, 40])
def test_banded_plus_solve_matches_dense(n_extra):
    rng = np.random.default_rng(n_extra)
    D = 90
    band, extra, H = _spd_band_plus(D, 3, n_extra, rng)
    rhs = rng.normal(size=D)
    x = solve_banded_plus(band.copy(), extra, extra.shape[0], rhs)
    np.testing.assert_allclose(x, np.linalg.solve(H, rhs), rtol=1e-10, atol=1e-12)


def test_local_band_substitution_equals_the_full_one():
    rng = np.random.default_rng(5)
    D = 60
    band, _, _ = _spd_band_plus(D, 2, 0, rng)
    piv = np.empty(D)
    ldlt_factor_band10(band, piv, 1e-13)
    for s in (0, 7, 35, 52):
        y = np.zeros(D)
        y[s:s + 5] = rng.normal(size=min(5, D - s))
        full = y.copy()
        ldlt_solve_band(band, piv, full)
        first, end = band_solve_local(band, piv, y, s, min(s + 4, D - 1))
        assert np.array_equal(y, full)
        assert np.all(full[:first] == 0.0) and np.all(full[end:] == 0.0)


@pytest.mark.parametrize("case", ["edge-edge", "point-edge", "point-point", "parallel"])
def test_segment_pair_projection_in_its_span_equals_the_full_one(case):
    """barrier_eval projects a segment pair's 12 x 12 Hessian in the rank <= 5 span of its terms: the
    same as clamping the eigenvalues of the whole matrix."""
    from rodlab.der_implicit.contact import barrier, barrier_eval, gap_derivatives
    base = {"edge-edge": [[0, 0, 0], [1, 0, 0], [0.5, -0.5, 0.012], [0.4, 0.5, 0.013]],
            "point-edge": [[0, 0, 0], [1, 0, 0], [1.008, -0.5, 0.01], [1.01, 0.5, 0.011]],
            "point-point": [[0, 0, 0], [1, 0, 0], [1.006, 0.005, 0.005], [2.4, 0.5, 0.35]],
            "parallel": [[0, 0, 0], [1, 0, 0], [0.2, 0.004, 0.009], [0.9, 0.004, 0.009]]}[case]
    rng = np.random.default_rng(11)
    for _ in range(3):
        X = np.array(base, float) + rng.normal(0.0, 1e-4, (4, 3)) * (case != "parallel")
        rsum, dhat, kappa = 0.002, 0.02, 3.0
        dg, d2g = np.zeros(12), np.zeros((12, 12))
        gap = gap_derivatives(SEG_SEG, X, rsum, 2, dg, d2g)[0]
        _, b1, b2 = barrier(gap, dhat)
        assert 0 < gap < dhat
        H = kappa * (b2 * np.outer(dg, dg) + b1 * 0.5 * (d2g + d2g.T))
        lam, V = np.linalg.eigh(H)
        want = (V * np.maximum(lam, 0.0)) @ V.T
        lh, lg, gaps = np.zeros((1, 12, 12)), np.zeros((1, 12)), np.zeros(1)
        barrier_eval(np.array([SEG_SEG]), np.arange(4)[None], np.zeros((1, 4, 3)), np.array([rsum]), X, dhat, kappa, 2,
                     lg, lh, gaps)
        np.testing.assert_allclose(lh[0], want, rtol=0, atol=1e-9 * np.abs(want).max())
