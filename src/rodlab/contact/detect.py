"""Discrete contact detection over a whole world: :func:`detect` -> :class:`ContactSet`, and
:func:`min_gap`, the ``min_gap`` metric of the contact scenes.

A contact is a pair (segment ``a``, segment or obstacle ``b``) whose surfaces are within
``margin`` [m]: for two segments the gap is the distance between their centre lines minus both
radii; for a segment and an obstacle it is the obstacle's signed distance (unsigned for a mesh)
of the segment's nearest centre-line point minus the segment's radius. Negative gaps are
penetrations. Conventions in ``docs/contact.md``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..geometry._vec import JIT
from ..model import require
from .broadphase import SERIAL_BELOW, bvh_query, grid_pairs, grid_pairs_serial, threads_for
from .geometry import ContactGeometry
from .narrowphase import (MESH, segment_obstacle, segment_segment, segment_triangle, vlerp, vrow)

SEGMENT, OBSTACLE = 0, 1
"""``ContactSet.kind`` codes: ``b`` is a segment, or an obstacle."""


class ContactSet(NamedTuple):
    """Contacts as arrays (K entries; segment-segment pairs first, then segment-obstacle):

    - ``kind`` (K,) int8: :data:`SEGMENT` (``pair_b`` a segment) or :data:`OBSTACLE`;
    - ``pair_a`` (K,) int64: segment id (the world's flat edge numbering);
    - ``pair_b`` (K,) int64: segment id (``> pair_a``) or obstacle id (index in ``world.obstacles``);
    - ``element_b`` (K,) int64: triangle index within the mesh for a mesh obstacle, else -1;
    - ``weight_a`` (K,): ``s`` in [0, 1], the contact point ``(1 - s) x[v0] + s x[v1]`` of segment a;
    - ``weight_b`` (K,): ``t`` in [0, 1] on segment b; 0 for an obstacle (use ``point_b``);
    - ``point_b`` (K, 3) [m]: the closest point on b (on its centre line for a segment, on the
      surface for an obstacle);
    - ``normal`` (K, 3): unit, from b toward a;
    - ``gap`` (K,) [m]: signed distance minus both radii (obstacle: its signed distance minus a's
      radius); negative = penetration.
    """

    kind: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    element_b: np.ndarray
    weight_a: np.ndarray
    weight_b: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    gap: np.ndarray

    @property
    def n_contacts(self) -> int:
        return int(self.gap.shape[0])


# ---- kernels --------------------------------------------------------------------------------------
@njit(**JIT)
def segment_boxes(x, edge_v0, edge_v1, inflate, lo, hi):
    """Boxes of the segments inflated by ``inflate[e]`` [m] (outputs ``lo``, ``hi`` (E, 3))."""
    for e in range(edge_v0.shape[0]):
        a = edge_v0[e]
        b = edge_v1[e]
        for k in range(3):
            lo[e, k] = min(x[a, k], x[b, k]) - inflate[e]
            hi[e, k] = max(x[a, k], x[b, k]) + inflate[e]


@njit(parallel=True, **JIT)
def eval_segment_pairs(x, edge_v0, edge_v1, edge_radius, pairs, s_out, t_out, point_out, normal_out, gap_out):
    """Closest points of each segment pair ``pairs`` (P, 2): parameters, the point on b, normal
    (b toward a) and gap [m]."""
    for k in prange(pairs.shape[0]):
        i = pairs[k, 0]
        j = pairs[k, 1]
        q0 = vrow(x, edge_v0[j])
        q1 = vrow(x, edge_v1[j])
        s, t, d, n = segment_segment(vrow(x, edge_v0[i]), vrow(x, edge_v1[i]), q0, q1)
        q = vlerp(q0, q1, t)
        s_out[k] = s
        t_out[k] = t
        gap_out[k] = d - edge_radius[i] - edge_radius[j]
        for c in range(3):
            point_out[k, c] = q[c]
            normal_out[k, c] = n[c]


@njit(parallel=True, **JIT)
def eval_segment_obstacles(x, edge_v0, edge_v1, edge_radius, kind, param, s_out, point_out, normal_out, gap_out):
    """Every segment against every analytic obstacle (dense, (E, M) outputs: parameter ``s``,
    closest surface point, outward normal, gap [m]); mesh columns get gap ``inf``."""
    for e in prange(edge_v0.shape[0]):
        p0 = vrow(x, edge_v0[e])
        p1 = vrow(x, edge_v1[e])
        for m in range(kind.shape[0]):
            if kind[m] == MESH:
                s_out[e, m] = 0.0
                gap_out[e, m] = np.inf
                for c in range(3):
                    point_out[e, m, c] = 0.0
                    normal_out[e, m, c] = 0.0
                continue
            s, d, q, n = segment_obstacle(p0, p1, kind[m], param[m])
            s_out[e, m] = s
            gap_out[e, m] = d - edge_radius[e]
            for c in range(3):
                point_out[e, m, c] = q[c]
                normal_out[e, m, c] = n[c]


@njit(**JIT)
def segment_contacts(x, edge_v0, edge_v1, edge_radius, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip,
                     margin):
    """The segment pairs of :func:`detect` (gap <= ``margin`` [m] at ``x`` (N, 3)) in one compiled
    call on the calling thread: boxes, :func:`rodlab.contact.broadphase.grid_pairs_serial` and
    the closest points. Returns ``(pairs (K, 2), s (K,), t (K,), point_b (K, 3), normal (K, 3),
    gap (K,))``, the same values in the same order as :func:`detect`'s segment pairs."""
    E = edge_v0.shape[0]
    lo = np.empty((E, 3))
    hi = np.empty((E, 3))
    for e in range(E):
        a = edge_v0[e]
        b = edge_v1[e]
        w = edge_radius[e] + 0.5 * margin
        for c in range(3):
            lo[e, c] = min(x[a, c], x[b, c]) - w
            hi[e, c] = max(x[a, c], x[b, c]) + w
    cand = grid_pairs_serial(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip)
    P = cand.shape[0]
    pairs = np.empty((P, 2), dtype=np.int64)
    s_out = np.empty(P)
    t_out = np.empty(P)
    point_out = np.empty((P, 3))
    normal_out = np.empty((P, 3))
    gap_out = np.empty(P)
    K = 0
    for k in range(P):
        i = cand[k, 0]
        j = cand[k, 1]
        q0 = vrow(x, edge_v0[j])
        q1 = vrow(x, edge_v1[j])
        s, t, d, n = segment_segment(vrow(x, edge_v0[i]), vrow(x, edge_v1[i]), q0, q1)
        gap = d - edge_radius[i] - edge_radius[j]
        if not gap <= margin:
            continue
        q = vlerp(q0, q1, t)
        pairs[K, 0] = i
        pairs[K, 1] = j
        s_out[K] = s
        t_out[K] = t
        gap_out[K] = gap
        for c in range(3):
            point_out[K, c] = q[c]
            normal_out[K, c] = n[c]
        K += 1
    return pairs[:K], s_out[:K], t_out[:K], point_out[:K], normal_out[:K], gap_out[:K]


def _obstacle_table(g: ContactGeometry, x):
    E, M = g.n_edges, g.n_obstacles
    s = np.empty((E, M))
    point = np.empty((E, M, 3))
    normal = np.empty((E, M, 3))
    gap = np.empty((E, M))
    with threads_for(E * M):
        eval_segment_obstacles(x, g.edge_v0, g.edge_v1, g.edge_radius, g.obstacle_kind, g.obstacle_param, s, point,
                               normal, gap)
    return s, point, normal, gap


@njit(**JIT)
def _mesh_of(e, x, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi, bvh_child, bvh_start,
             bvh_count, bvh_item, margin, stack, buf, a_out, b_out, s_out, point_out, normal_out, gap_out, offset):
    p0 = vrow(x, edge_v0[e])
    p1 = vrow(x, edge_v1[e])
    w = edge_radius[e] + margin
    qlo = (min(p0[0], p1[0]) - w, min(p0[1], p1[1]) - w, min(p0[2], p1[2]) - w)
    qhi = (max(p0[0], p1[0]) + w, max(p0[1], p1[1]) + w, max(p0[2], p1[2]) + w)
    nc = bvh_query(bvh_lo, bvh_hi, bvh_child, bvh_start, bvh_count, bvh_item, tri_lo, tri_hi, qlo, qhi, stack,
                   buf, 0)
    count = 0
    for c in range(nc):
        f = buf[c]
        s, d, q, n = segment_triangle(p0, p1, vrow(tri_x[f], 0), vrow(tri_x[f], 1), vrow(tri_x[f], 2))
        g = d - edge_radius[e]
        if g <= margin:
            if offset >= 0:
                k = offset + count
                a_out[k] = e
                b_out[k] = f
                s_out[k] = s
                gap_out[k] = g
                for z in range(3):
                    point_out[k, z] = q[z]
                    normal_out[k, z] = n[z]
            count += 1
    return count


@njit(parallel=True, **JIT)
def eval_segment_meshes(x, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi, bvh_child,
                        bvh_start, bvh_count, bvh_item, margin):
    """Segment-triangle contacts with gap <= ``margin`` through the BVH: ``(a, triangle, s,
    point_b, normal, gap)`` arrays (triangle = flat triangle id)."""
    ne = edge_v0.shape[0]
    nt = tri_x.shape[0]
    nchunk = min(ne, 64)
    counts = np.zeros(ne + 1, dtype=np.int64)
    ei = np.empty(0, dtype=np.int64)
    ef = np.empty(0)
    ep = np.empty((0, 3))
    for ch in prange(nchunk):
        stack = np.empty(130, dtype=np.int64)
        buf = np.empty(nt, dtype=np.int64)
        for e in range(ch * ne // nchunk, (ch + 1) * ne // nchunk):
            counts[e + 1] = _mesh_of(e, x, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi,
                                     bvh_child, bvh_start, bvh_count, bvh_item, margin, stack, buf, ei, ei, ef, ep,
                                     ep, ef, -1)
    for e in range(ne):
        counts[e + 1] += counts[e]
    n = counts[ne]
    a_out = np.empty(n, dtype=np.int64)
    b_out = np.empty(n, dtype=np.int64)
    s_out = np.empty(n)
    point_out = np.empty((n, 3))
    normal_out = np.empty((n, 3))
    gap_out = np.empty(n)
    for ch in prange(nchunk):
        stack = np.empty(130, dtype=np.int64)
        buf = np.empty(nt, dtype=np.int64)
        for e in range(ch * ne // nchunk, (ch + 1) * ne // nchunk):
            _mesh_of(e, x, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi, bvh_child,
                     bvh_start, bvh_count, bvh_item, margin, stack, buf, a_out, b_out, s_out, point_out, normal_out,
                     gap_out, counts[e])
    return a_out, b_out, s_out, point_out, normal_out, gap_out


# ---- wrappers -------------------------------------------------------------------------------------
def check_positions(geometry: ContactGeometry, vertex_x, name: str = "vertex_x") -> np.ndarray:
    """``vertex_x`` as a contiguous float64 (N, 3) array, checked against the geometry."""
    x = np.ascontiguousarray(vertex_x, dtype=float)
    require(x.shape == (geometry.n_vertices, 3), f"{name} must have shape ({geometry.n_vertices}, 3) (got {x.shape})")
    require(bool(np.all(np.isfinite(x))), f"{name} must be finite (it holds NaN or inf)")
    return x


def _check_margin(margin) -> float:
    margin = float(margin)
    require(math.isfinite(margin) and margin >= 0, f"margin must be a finite number >= 0 m (got {margin})")
    return margin


def segment_pairs(geometry: ContactGeometry, vertex_x, margin: float = 0.0) -> np.ndarray:
    """Candidate segment pairs ``(i, j)``, ``i < j`` (P, 2), whose boxes, inflated by each
    segment's radius plus ``margin / 2``, overlap: a superset of the pairs with gap <= margin."""
    x = check_positions(geometry, vertex_x)
    margin = _check_margin(margin)
    g = geometry
    lo = np.empty((g.n_edges, 3))
    hi = np.empty((g.n_edges, 3))
    segment_boxes(x, g.edge_v0, g.edge_v1, g.edge_radius + 0.5 * margin, lo, hi)
    return grid_pairs(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)


def detect(geometry: ContactGeometry, vertex_x, margin: float = 0.0, *, obstacles: bool = True) -> ContactSet:
    """Every contact with gap <= ``margin`` [m] at positions ``vertex_x`` (N, 3) [m].

    Segment pairs that are neighbours along a rod (``geometry.rod_skip``) are never reported;
    pairs across rods always are. With ``obstacles`` the segments are also tested against every
    obstacle of the geometry (meshes through their BVH). Returns a :class:`ContactSet`.
    """
    x = check_positions(geometry, vertex_x)
    margin = _check_margin(margin)
    g = geometry
    if g.n_edges < SERIAL_BELOW:  # one compiled call, the same pairs and values
        pairs, s, t, point, normal, gap = segment_contacts(x, g.edge_v0, g.edge_v1, g.edge_radius, g.edge_rod,
                                                           g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip,
                                                           margin)
        K = gap.shape[0]
        parts = [(np.zeros(K, dtype=np.int8), pairs[:, 0], pairs[:, 1], np.full(K, -1, dtype=np.int64), s, t, point,
                  normal, gap)]
    else:
        pairs = segment_pairs(g, x, margin)
        P = pairs.shape[0]
        s = np.empty(P)
        t = np.empty(P)
        point = np.empty((P, 3))
        normal = np.empty((P, 3))
        gap = np.empty(P)
        if P:
            with threads_for(P):
                eval_segment_pairs(x, g.edge_v0, g.edge_v1, g.edge_radius, pairs, s, t, point, normal, gap)
        keep = gap <= margin
        parts = [(np.zeros(int(keep.sum()), dtype=np.int8), pairs[keep, 0], pairs[keep, 1],
                  np.full(int(keep.sum()), -1, dtype=np.int64), s[keep], t[keep], point[keep], normal[keep], gap[keep])]
    if obstacles and g.n_obstacles:
        s_o, q, n, gp = _obstacle_table(g, x)
        a, b = np.nonzero(gp <= margin)
        s_o, q, n, gp = s_o[a, b], q[a, b], n[a, b], gp[a, b]
        parts.append((np.ones(a.shape[0], dtype=np.int8), a.astype(np.int64), b.astype(np.int64),
                      np.full(a.shape[0], -1, dtype=np.int64), s_o,
                      np.zeros(a.shape[0]), q, n, gp))
        if g.tri_x.shape[0]:
            with threads_for(g.n_edges):
                a, f, s_o, q, n, gp = eval_segment_meshes(x, g.edge_v0, g.edge_v1, g.edge_radius, g.tri_x, g.tri_lo,
                                                          g.tri_hi, g.bvh_lo, g.bvh_hi, g.bvh_child, g.bvh_start,
                                                          g.bvh_count, g.bvh_item, margin)
            parts.append((np.ones(a.shape[0], dtype=np.int8), a, g.tri_obstacle[f], g.tri_local[f], s_o,
                          np.zeros(a.shape[0]), q, n, gp))
    fields = [np.concatenate([p[k] for p in parts]) for k in range(9)]
    fields[6] = fields[6].reshape(-1, 3)
    fields[7] = fields[7].reshape(-1, 3)
    return ContactSet(*fields)


def min_gap(geometry: ContactGeometry, vertex_x, *, obstacles: bool = True) -> float:
    """The smallest gap [m] between the surfaces of two non-neighbouring segments, or of a segment
    and an obstacle (negative: penetration); ``inf`` when there is no such pair at all.

    Exact: contacts are detected with a margin that doubles, from the largest segment diameter,
    until one is found or the margin spans every segment and mesh (a pair found within the margin
    bounds the minimum, so the minimum is among those found)."""
    x = check_positions(geometry, vertex_x)
    g = geometry
    best = math.inf
    if obstacles and g.n_obstacles and np.any(g.obstacle_kind != MESH):
        best = float(_obstacle_table(g, x)[3].min())
    meshes = obstacles and g.tri_x.shape[0] > 0
    pts = np.concatenate([x, g.tri_x.reshape(-1, 3)]) if meshes else x
    span = float(np.linalg.norm(pts.max(axis=0) - pts.min(axis=0))) + 2.0 * float(g.edge_radius.max(initial=0.0))
    margin = max(2.0 * float(g.edge_radius.max(initial=0.0)), 1e-9 * span, 1e-300)
    while True:
        found = detect(g, x, margin, obstacles=False)
        gaps = [found.gap]
        if meshes:
            with threads_for(g.n_edges):
                    gaps.append(eval_segment_meshes(x, g.edge_v0, g.edge_v1, g.edge_radius, g.tri_x, g.tri_lo, g.tri_hi,
                                                g.bvh_lo, g.bvh_hi, g.bvh_child, g.bvh_start, g.bvh_count, g.bvh_item,
                                                margin)[5])
        gaps = np.concatenate(gaps)
        if gaps.shape[0] or margin > span:
            return min(best, float(gaps.min())) if gaps.shape[0] else best
        margin *= 2.0
