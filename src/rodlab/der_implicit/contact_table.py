"""Compiled contact table and time of impact of der-implicit's barrier contact (IPC), for the Newton
loop of :mod:`.contact_newton`.

:func:`contact_table` turns every pair within ``dhat`` at positions ``x`` into the barrier
primitives of :mod:`.contact` (their kinds, moving vertices, fixed points, radius sums and friction
coefficients); :func:`earliest_impact` is the earliest normalised time of impact of the linear
motion ``x0 -> x1`` (conservative advancement, Li et al., "Incremental Potential Contact", 2020,
Sec. 4.4 and its CCD-filtered line search). Both make the decisions of the shared detection
(:func:`rodlab.contact.detect`, :func:`rodlab.contact.impacts`) with its own narrowphase and CCD
kernels, on one thread and in one call: the same boxes (each segment's, inflated by its radius and
half the margin), the same neighbour rule and the same gap tests, so the same contacts. Candidate
segment pairs come from a sweep along x over the boxes sorted by their lower x bound (sort and
prune: ``O(n log n)`` plus the pairs that overlap in x), not from the grid of
:mod:`rodlab.contact.broadphase` (whose parallel kernels pay a thread launch per call, too much
for the few dozen segments of a Newton iterate). Rows come in the order of the Python table the
loop replaced: segment pairs, vertex-plane (sorted by vertex, then plane), segment-sphere,
segment-capsule, segment-cylinder (edge-major), then the mesh rows of each segment-triangle contact
(the vertices against the triangle, the segment against each triangle edge, each once).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..contact.broadphase import _boxes_overlap, are_neighbours
from ..contact.ccd import NO_IMPACT, _mesh_toi_of, ccd_segment_obstacle, ccd_segment_segment
from ..contact.detect import _mesh_of
from ..contact.narrowphase import CAPSULE, CYLINDER, MESH, PLANE, SPHERE, segment_obstacle, segment_segment, vrow
from ..geometry._vec import JIT
from .contact import SEG_FIXPT, SEG_FIXSEG, SEG_SEG, VERT_FIXTRI, VERT_PLANE

BVH_STACK = 130  # the BVH traversal stack of rodlab.contact.detect's mesh kernels


class TableStatics(NamedTuple):
    """What the table needs beyond :class:`rodlab.contact.ContactGeometry`: per vertex the edge whose
    radius it takes (``vertex_edge`` (N,)); the friction coefficients ``rod_mu`` (R, R) and
    ``obstacle_mu`` (M,); each obstacle's unit direction ``obstacle_unit`` (M, 3) (plane normal,
    cylinder axis); each mesh triangle's vertex ids in its mesh ``tri_vid`` (T, 3); ``rods`` (rod
    contact on); ``dhat`` [m]; ``ccd_tolerance`` [m] (that of :func:`rodlab.contact.impacts`)."""

    vertex_edge: np.ndarray
    rod_mu: np.ndarray
    obstacle_mu: np.ndarray
    obstacle_unit: np.ndarray
    tri_vid: np.ndarray
    rods: bool
    dhat: float
    ccd_tolerance: float


@njit(**JIT)
def sweep_pairs(lo, hi, g):
    """Pairs ``(i, j)``, ``i < j`` (P, 2), of overlapping boxes ``lo``, ``hi`` (E, 3) of segments that
    are not neighbours along a rod (``g`` the contact geometry): the pairs of
    :func:`rodlab.contact.broadphase.grid_pairs`, by a sweep along x."""
    n = lo.shape[0]
    order = np.argsort(lo[:, 0], kind="mergesort")
    out = np.empty((4 * n + 16, 2), dtype=np.int64)
    count = 0
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if lo[j, 0] > hi[i, 0]:
                break
            if _boxes_overlap(lo, hi, i, j) and not are_neighbours(i, j, g.edge_rod, g.edge_local, g.rod_edge_count,
                                                                   g.rod_closed, g.rod_skip):
                if count == out.shape[0]:
                    grown = np.empty((2 * count, 2), dtype=np.int64)
                    grown[:count] = out
                    out = grown
                out[count, 0] = min(i, j)
                out[count, 1] = max(i, j)
                count += 1
    return out[:count]


@njit(**JIT)
def _segment_boxes(x0, x1, g, inflate):
    """Boxes (E, 3) of the segments swept from ``x0`` to ``x1``, inflated by ``inflate`` (E,)."""
    E = g.edge_v0.shape[0]
    lo = np.empty((E, 3))
    hi = np.empty((E, 3))
    for e in range(E):
        a = g.edge_v0[e]
        b = g.edge_v1[e]
        for k in range(3):
            lo[e, k] = min(min(x0[a, k], x0[b, k]), min(x1[a, k], x1[b, k])) - inflate[e]
            hi[e, k] = max(max(x0[a, k], x0[b, k]), max(x1[a, k], x1[b, k])) + inflate[e]
    return lo, hi


@njit(**JIT)
def _mesh_hits(x, g, margin):
    """Segment-triangle contacts with gap <= ``margin``: ``(segment, flat triangle)`` arrays, per
    segment in order (as :func:`rodlab.contact.detect.eval_segment_meshes`)."""
    T = g.tri_x.shape[0]
    E = g.edge_v0.shape[0]
    stack = np.empty(BVH_STACK, dtype=np.int64)
    buf = np.empty(T, dtype=np.int64)
    a_out = np.empty(T, dtype=np.int64)
    f_out = np.empty(T, dtype=np.int64)
    s_out = np.empty(T)
    p_out = np.empty((T, 3))
    n_out = np.empty((T, 3))
    gap_out = np.empty(T)
    seg = np.empty(0, dtype=np.int64)
    tri = np.empty(0, dtype=np.int64)
    for e in range(E):
        c = _mesh_of(e, x, g.edge_v0, g.edge_v1, g.edge_radius, g.tri_x, g.tri_lo, g.tri_hi, g.bvh_lo, g.bvh_hi,
                     g.bvh_child, g.bvh_start, g.bvh_count, g.bvh_item, margin, stack, buf, a_out, f_out, s_out, p_out,
                     n_out, gap_out, 0)
        if c:
            seg = np.concatenate((seg, a_out[:c]))
            tri = np.concatenate((tri, f_out[:c]))
    return seg, tri


@njit(**JIT)
def _seen(key, n, a, b, c, d, f):
    """Whether one of the first ``n`` rows of ``key`` is ``(a, b, c, d, f)``."""
    for r in range(n):
        if key[r, 0] == a and key[r, 1] == b and key[r, 2] == c and key[r, 3] == d and key[r, 4] == f:
            return True
    return False


@njit(**JIT)
def _put(key, r, a, b, c, d, f):
    key[r, 0] = a
    key[r, 1] = b
    key[r, 2] = c
    key[r, 3] = d
    key[r, 4] = f


@njit(**JIT)
def contact_table(x, g, st):
    """Barrier primitives ``(ptype, pv, pfix, prsum, pmu)`` of every pair with gap <= ``st.dhat`` at
    positions ``x`` (N, 3) [m] (module docstring; the row layout of :mod:`.contact`)."""
    E = g.edge_v0.shape[0]
    M = g.obstacle_kind.shape[0]
    dhat = st.dhat
    er = g.edge_radius
    ev0 = g.edge_v0
    ev1 = g.edge_v1
    # segment pairs
    pairs = np.empty((0, 2), dtype=np.int64)
    if st.rods and E > 1:
        infl = er + 0.5 * dhat
        lo, hi = _segment_boxes(x, x, g, infl)
        cand = sweep_pairs(lo, hi, g)
        keep = np.zeros(cand.shape[0], dtype=np.bool_)
        for k in range(cand.shape[0]):
            i = cand[k, 0]
            j = cand[k, 1]
            d = segment_segment(vrow(x, ev0[i]), vrow(x, ev1[i]), vrow(x, ev0[j]), vrow(x, ev1[j]))[2]
            keep[k] = d - er[i] - er[j] <= dhat
        pairs = cand[keep]
    # analytic obstacles: hits (edge, obstacle), edge-major
    hit_e = np.empty(E * M, dtype=np.int64)
    hit_m = np.empty(E * M, dtype=np.int64)
    nh = 0
    for e in range(E):
        p0 = vrow(x, ev0[e])
        p1 = vrow(x, ev1[e])
        for m in range(M):
            if g.obstacle_kind[m] == MESH:
                continue
            d = segment_obstacle(p0, p1, g.obstacle_kind[m], g.obstacle_param[m])[1]
            if d - er[e] <= dhat:
                hit_e[nh] = e
                hit_m[nh] = m
                nh += 1
    # planes: each vertex of a touching segment once per plane, sorted by (vertex, plane)
    Mk = max(M, 1)
    nplane = 0
    for k in range(nh):
        if g.obstacle_kind[hit_m[k]] == PLANE:
            nplane += 1
    keys = np.empty(2 * nplane, dtype=np.int64)
    c = 0
    for k in range(nh):
        if g.obstacle_kind[hit_m[k]] == PLANE:
            keys[c] = ev0[hit_e[k]] * Mk + hit_m[k]
            keys[nplane + c] = ev1[hit_e[k]] * Mk + hit_m[k]
            c += 1
    keys = np.unique(keys)
    nrest = nh - nplane
    mesh_e, mesh_f = _mesh_hits(x, g, dhat) if g.tri_x.shape[0] else (np.empty(0, dtype=np.int64),
                                                                     np.empty(0, dtype=np.int64))
    cap = pairs.shape[0] + keys.shape[0] + nrest + 5 * mesh_e.shape[0]
    ptype = np.empty(cap, dtype=np.int64)
    pv = np.full((cap, 4), -1, dtype=np.int64)
    pfix = np.zeros((cap, 4, 3))
    prsum = np.empty(cap)
    pmu = np.empty(cap)
    K = 0
    for k in range(pairs.shape[0]):
        a = pairs[k, 0]
        b = pairs[k, 1]
        ptype[K] = SEG_SEG
        pv[K, 0], pv[K, 1], pv[K, 2], pv[K, 3] = ev0[a], ev1[a], ev0[b], ev1[b]
        prsum[K] = er[a] + er[b]
        pmu[K] = st.rod_mu[g.edge_rod[a], g.edge_rod[b]]
        K += 1
    for k in range(keys.shape[0]):
        v = keys[k] // Mk
        m = keys[k] % Mk
        ptype[K] = VERT_PLANE
        pv[K, 0] = v
        for z in range(3):
            pfix[K, 1, z] = g.obstacle_param[m, z]
            pfix[K, 2, z] = st.obstacle_unit[m, z]
        prsum[K] = er[st.vertex_edge[v]]
        pmu[K] = st.obstacle_mu[m]
        K += 1
    for kind in (SPHERE, CAPSULE, CYLINDER):
        for k in range(nh):
            m = hit_m[k]
            if g.obstacle_kind[m] != kind:
                continue
            e = hit_e[k]
            prm = g.obstacle_param[m]
            pv[K, 0], pv[K, 1] = ev0[e], ev1[e]
            pmu[K] = st.obstacle_mu[m]
            if kind == SPHERE:
                ptype[K] = SEG_FIXPT
                for z in range(3):
                    pfix[K, 2, z] = prm[z]
                prsum[K] = prm[3] + er[e]
            elif kind == CAPSULE:
                ptype[K] = SEG_FIXSEG
                for z in range(3):
                    pfix[K, 2, z] = prm[z]
                    pfix[K, 3, z] = prm[3 + z]
                prsum[K] = prm[6] + er[e]
            else:
                ptype[K] = SEG_FIXSEG
                u = st.obstacle_unit[m]
                p = prm[0:3].copy()
                half = prm[7]
                if not math.isfinite(half):  # infinite: an axis segment far longer than the gap, about the segment
                    s = 0.0
                    dl = 0.0
                    for z in range(3):
                        s += (0.5 * (x[ev0[e], z] + x[ev1[e], z]) - p[z]) * u[z]
                        dz = x[ev1[e], z] - x[ev0[e], z]
                        dl += dz * dz
                    for z in range(3):
                        p[z] += s * u[z]
                    half = 10.0 * (math.sqrt(dl) + prm[6] + dhat + er[e])
                for z in range(3):
                    pfix[K, 2, z] = p[z] - half * u[z]
                    pfix[K, 3, z] = p[z] + half * u[z]
                prsum[K] = prm[6] + er[e]
            K += 1
    # meshes: per segment-triangle contact, its vertices against the triangle and the segment against
    # the triangle's edges, each (vertex, triangle) and (segment, mesh, mesh edge) once
    K0 = K
    key = np.empty((cap - K0, 5), dtype=np.int64)  # kind, vertex or segment, triangle or mesh, mesh edge or -1
    for k in range(mesh_e.shape[0]):
        e = mesh_e[k]
        f = mesh_f[k]
        m = g.tri_obstacle[f]
        for v in (ev0[e], ev1[e]):
            if not _seen(key, K - K0, VERT_FIXTRI, v, f, -1, -1):
                _put(key, K - K0, VERT_FIXTRI, v, f, -1, -1)
                ptype[K] = VERT_FIXTRI
                pv[K, 0] = v
                pfix[K, 1:4] = g.tri_x[f]
                prsum[K] = er[e]
                pmu[K] = st.obstacle_mu[m]
                K += 1
        for i, j in ((0, 1), (1, 2), (2, 0)):
            lo_v = min(st.tri_vid[f, i], st.tri_vid[f, j])
            hi_v = max(st.tri_vid[f, i], st.tri_vid[f, j])
            if not _seen(key, K - K0, SEG_FIXSEG, e, m, lo_v, hi_v):
                _put(key, K - K0, SEG_FIXSEG, e, m, lo_v, hi_v)
                ptype[K] = SEG_FIXSEG
                pv[K, 0], pv[K, 1] = ev0[e], ev1[e]
                pfix[K, 2] = g.tri_x[f, i]
                pfix[K, 3] = g.tri_x[f, j]
                prsum[K] = er[e]
                pmu[K] = st.obstacle_mu[m]
                K += 1
    return ptype[:K], pv[:K], pfix[:K], prsum[:K], pmu[:K]


@njit(**JIT)
def earliest_impact(x0, x1, g, st):
    """The earliest time of impact in [0, 1] of the motion ``x0 -> x1`` (N, 3) [m] over every pair
    :func:`rodlab.contact.impacts` tests (segment pairs only with rod contact), or
    :data:`rodlab.contact.NO_IMPACT` when nothing touches."""
    E = g.edge_v0.shape[0]
    tol = st.ccd_tolerance
    ev0 = g.edge_v0
    ev1 = g.edge_v1
    er = g.edge_radius
    best = NO_IMPACT
    if st.rods and E > 1:
        lo, hi = _segment_boxes(x0, x1, g, er + 0.5 * tol)
        pairs = sweep_pairs(lo, hi, g)
        for k in range(pairs.shape[0]):
            i = pairs[k, 0]
            j = pairs[k, 1]
            t = ccd_segment_segment(vrow(x0, ev0[i]), vrow(x0, ev1[i]), vrow(x1, ev0[i]), vrow(x1, ev1[i]),
                                    vrow(x0, ev0[j]), vrow(x0, ev1[j]), vrow(x1, ev0[j]), vrow(x1, ev1[j]),
                                    er[i] + er[j], tol)
            if t < best:
                best = t
    M = g.obstacle_kind.shape[0]
    for e in range(E):
        for m in range(M):
            if g.obstacle_kind[m] == MESH:
                continue
            t = ccd_segment_obstacle(vrow(x0, ev0[e]), vrow(x0, ev1[e]), vrow(x1, ev0[e]), vrow(x1, ev1[e]), er[e],
                                     g.obstacle_kind[m], g.obstacle_param[m], tol)
            if t < best:
                best = t
    T = g.tri_x.shape[0]
    if T:
        stack = np.empty(BVH_STACK, dtype=np.int64)
        buf = np.empty(T, dtype=np.int64)
        a_out = np.empty(T, dtype=np.int64)
        f_out = np.empty(T, dtype=np.int64)
        toi = np.empty(T)
        for e in range(E):
            c = _mesh_toi_of(e, x0, x1, ev0, ev1, er, g.tri_x, g.tri_lo, g.tri_hi, g.bvh_lo, g.bvh_hi, g.bvh_child,
                             g.bvh_start, g.bvh_count, g.bvh_item, tol, stack, buf, a_out, f_out, toi, 0)
            for k in range(c):
                if toi[k] < best:
                    best = toi[k]
    return best
