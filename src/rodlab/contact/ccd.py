"""Continuous collision detection (CCD) over a step, by conservative advancement.

Over one step every vertex moves on a straight line from ``x0`` to ``x1``; the normalised time is
``tau`` in [0, 1]. The *time of impact* (TOI) of a pair is the first ``tau`` at which their gap
(distance minus the thickness: both radii, or the segment's radius against an obstacle) reaches
zero. Conservative advancement (B. Mirtich, *Impulse-based dynamic simulation of rigid body
systems*, PhD thesis, 1996; X. Zhang, S. Redon, M. Lee, Y. J. Kim, *Continuous collision detection
for articulated models using Taylor models and temporal culling*, 2007) steps
``tau += gap(tau) / L`` where ``L`` bounds ``|d gap / d tau|``: for two segments the largest
relative speed of any pair of their points, which is the largest over the four endpoint pairs
(the relative velocity is bilinear in ``s``, ``t``); against a static obstacle the larger endpoint
speed (a distance field is 1-Lipschitz). Every step is safe, so no crossing is ever stepped over,
however thin the rods or large the step; the loop stops when the gap is below ``tolerance`` (the
TOI returned is then at most ``tolerance / approach speed`` early) or when ``tau`` passes 1 (no
impact: :data:`NO_IMPACT`). A pair already within ``tolerance`` at ``tau = 0`` has TOI 0. After
``max_iter`` steps (grazing motion) the current ``tau`` is returned: still a safe lower bound.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..geometry._vec import JIT
from ..model import require
from .broadphase import SERIAL_BELOW, bvh_query, grid_pairs, grid_pairs_serial, threads_for
from .detect import OBSTACLE, SEGMENT, check_positions
from .geometry import ContactGeometry
from .narrowphase import MESH, segment_obstacle, segment_segment, segment_triangle, vlerp, vnorm, vrow, vsub

NO_IMPACT = 2.0
"""The TOI reported when nothing touches during the step (any value > 1 means none)."""

MAX_ITER = 10000
"""Conservative-advancement steps before the current (safe) ``tau`` is returned."""


@njit(**JIT)
def ccd_segment_segment(a0, a1, a0_end, a1_end, b0, b1, b0_end, b1_end, thickness, tolerance):
    """TOI in [0, 1] of segments ``a`` (endpoints ``a0``, ``a1`` moving to ``a0_end``, ``a1_end``)
    and ``b``, whose centre lines touch at distance ``thickness`` [m]; :data:`NO_IMPACT` if none.
    ``tolerance`` [m]: gap accepted as contact."""
    va0 = vsub(a0_end, a0)
    va1 = vsub(a1_end, a1)
    vb0 = vsub(b0_end, b0)
    vb1 = vsub(b1_end, b1)
    lip = max(max(vnorm(vsub(va0, vb0)), vnorm(vsub(va0, vb1))), max(vnorm(vsub(va1, vb0)), vnorm(vsub(va1, vb1))))
    tau = 0.0
    for _ in range(MAX_ITER):
        _, _, d, _ = segment_segment(vlerp(a0, a0_end, tau), vlerp(a1, a1_end, tau), vlerp(b0, b0_end, tau),
                                     vlerp(b1, b1_end, tau))
        gap = d - thickness
        if gap <= tolerance:
            return tau
        if not lip > 0.0:
            return NO_IMPACT
        tau += gap / lip
        if tau > 1.0:
            return NO_IMPACT
    return tau


@njit(**JIT)
def ccd_segment_obstacle(p0, p1, p0_end, p1_end, radius, kind, prm, tolerance):
    """TOI of a moving segment of ``radius`` [m] against static analytic obstacle row ``prm``
    (kind codes of :mod:`rodlab.contact.narrowphase`; not a mesh)."""
    lip = max(vnorm(vsub(p0_end, p0)), vnorm(vsub(p1_end, p1)))
    tau = 0.0
    for _ in range(MAX_ITER):
        _, d, _, _ = segment_obstacle(vlerp(p0, p0_end, tau), vlerp(p1, p1_end, tau), kind, prm)
        gap = d - radius
        if gap <= tolerance:
            return tau
        if not lip > 0.0:
            return NO_IMPACT
        tau += gap / lip
        if tau > 1.0:
            return NO_IMPACT
    return tau


@njit(**JIT)
def ccd_segment_triangle(p0, p1, p0_end, p1_end, radius, a, b, c, tolerance):
    """TOI of a moving segment of ``radius`` [m] against the static triangle ``abc`` (a zero-length
    segment is a moving vertex)."""
    lip = max(vnorm(vsub(p0_end, p0)), vnorm(vsub(p1_end, p1)))
    tau = 0.0
    for _ in range(MAX_ITER):
        _, d, _, _ = segment_triangle(vlerp(p0, p0_end, tau), vlerp(p1, p1_end, tau), a, b, c)
        gap = d - radius
        if gap <= tolerance:
            return tau
        if not lip > 0.0:
            return NO_IMPACT
        tau += gap / lip
        if tau > 1.0:
            return NO_IMPACT
    return tau


@njit(**JIT)
def _swept_boxes(x0, x1, edge_v0, edge_v1, inflate, lo, hi):
    for e in range(edge_v0.shape[0]):
        a = edge_v0[e]
        b = edge_v1[e]
        for k in range(3):
            lo[e, k] = min(min(x0[a, k], x0[b, k]), min(x1[a, k], x1[b, k])) - inflate[e]
            hi[e, k] = max(max(x0[a, k], x0[b, k]), max(x1[a, k], x1[b, k])) + inflate[e]


@njit(parallel=True, **JIT)
def eval_pair_toi(x0, x1, edge_v0, edge_v1, edge_radius, pairs, tolerance, toi):
    """TOI of each segment pair (P, 2) over the step ``x0`` -> ``x1`` (output ``toi`` (P,))."""
    for k in prange(pairs.shape[0]):
        i = pairs[k, 0]
        j = pairs[k, 1]
        toi[k] = ccd_segment_segment(vrow(x0, edge_v0[i]), vrow(x0, edge_v1[i]), vrow(x1, edge_v0[i]),
                                     vrow(x1, edge_v1[i]), vrow(x0, edge_v0[j]), vrow(x0, edge_v1[j]),
                                     vrow(x1, edge_v0[j]), vrow(x1, edge_v1[j]),
                                     edge_radius[i] + edge_radius[j], tolerance)


@njit(**JIT)
def segment_impacts(x0, x1, edge_v0, edge_v1, edge_radius, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip,
                    tolerance, known):
    """The segment pairs of :func:`impacts` in one compiled call on the calling thread: swept boxes,
    :func:`rodlab.contact.broadphase.grid_pairs_serial`, the TOI of each pair (the same pairs and
    TOIs in the same order), leaving out the pairs whose key ``a * E + b`` (``E`` segments) is in
    the sorted int64 array ``known`` (a caller's pairs already handled: their TOI is not computed).
    Returns ``(pairs (H, 2), toi (H,))`` of the pairs with TOI <= 1."""
    E = edge_v0.shape[0]
    lo = np.empty((E, 3))
    hi = np.empty((E, 3))
    for e in range(E):
        a = edge_v0[e]
        b = edge_v1[e]
        w = edge_radius[e] + 0.5 * tolerance
        for c in range(3):
            lo[e, c] = min(min(x0[a, c], x0[b, c]), min(x1[a, c], x1[b, c])) - w
            hi[e, c] = max(max(x0[a, c], x0[b, c]), max(x1[a, c], x1[b, c])) + w
    cand = grid_pairs_serial(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip)
    P = cand.shape[0]
    hits = np.empty((P, 2), dtype=np.int64)
    toi = np.empty(P)
    H = 0
    nk = known.shape[0]
    for k in range(P):
        i = cand[k, 0]
        j = cand[k, 1]
        if nk:
            key = i * E + j
            lo_k, hi_k = 0, nk  # binary search in the sorted keys
            while lo_k < hi_k:
                mid = (lo_k + hi_k) >> 1
                if known[mid] < key:
                    lo_k = mid + 1
                else:
                    hi_k = mid
            if lo_k < nk and known[lo_k] == key:
                continue
        tau = ccd_segment_segment(vrow(x0, edge_v0[i]), vrow(x0, edge_v1[i]), vrow(x1, edge_v0[i]),
                                  vrow(x1, edge_v1[i]), vrow(x0, edge_v0[j]), vrow(x0, edge_v1[j]),
                                  vrow(x1, edge_v0[j]), vrow(x1, edge_v1[j]), edge_radius[i] + edge_radius[j],
                                  tolerance)
        if tau <= 1.0:
            hits[H, 0] = i
            hits[H, 1] = j
            toi[H] = tau
            H += 1
    return hits[:H], toi[:H]


def default_tolerance(geometry: ContactGeometry, x0, x1) -> float:
    """The default ``tolerance`` [m] of :func:`impacts`: ``1e-6`` times the smallest segment radius,
    or ``1e-12`` times the size of the motion ``x0``, ``x1`` (N, 3) when every radius is zero."""
    rmin = float(geometry.edge_radius.min(initial=0.0))
    if rmin > 0:
        return 1e-6 * rmin
    span = float(np.linalg.norm(np.ptp(np.concatenate([x0, x1]), axis=0)))
    return max(1e-12 * span, 1e-300)


@njit(parallel=True, **JIT)
def eval_obstacle_toi(x0, x1, edge_v0, edge_v1, edge_radius, kind, param, tolerance, toi):
    """TOI of every segment against every analytic obstacle (output ``toi`` (E, M); meshes get
    :data:`NO_IMPACT`)."""
    for e in prange(edge_v0.shape[0]):
        for m in range(kind.shape[0]):
            if kind[m] == MESH:
                toi[e, m] = NO_IMPACT
            else:
                toi[e, m] = ccd_segment_obstacle(vrow(x0, edge_v0[e]), vrow(x0, edge_v1[e]), vrow(x1, edge_v0[e]),
                                                 vrow(x1, edge_v1[e]), edge_radius[e], kind[m], param[m], tolerance)


@njit(**JIT)
def _mesh_toi_of(e, x0, x1, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi, bvh_child,
                 bvh_start, bvh_count, bvh_item, tolerance, stack, buf, a_out, f_out, toi_out, offset):
    p0 = vrow(x0, edge_v0[e])
    p1 = vrow(x0, edge_v1[e])
    q0 = vrow(x1, edge_v0[e])
    q1 = vrow(x1, edge_v1[e])
    w = edge_radius[e] + tolerance
    qlo = (min(min(p0[0], p1[0]), min(q0[0], q1[0])) - w, min(min(p0[1], p1[1]), min(q0[1], q1[1])) - w,
           min(min(p0[2], p1[2]), min(q0[2], q1[2])) - w)
    qhi = (max(max(p0[0], p1[0]), max(q0[0], q1[0])) + w, max(max(p0[1], p1[1]), max(q0[1], q1[1])) + w,
           max(max(p0[2], p1[2]), max(q0[2], q1[2])) + w)
    nc = bvh_query(bvh_lo, bvh_hi, bvh_child, bvh_start, bvh_count, bvh_item, tri_lo, tri_hi, qlo, qhi, stack,
                   buf, 0)
    count = 0
    for c in range(nc):
        f = buf[c]
        t = ccd_segment_triangle(p0, p1, q0, q1, edge_radius[e], vrow(tri_x[f], 0), vrow(tri_x[f], 1),
                                 vrow(tri_x[f], 2), tolerance)
        if t <= 1.0:
            if offset >= 0:
                a_out[offset + count] = e
                f_out[offset + count] = f
                toi_out[offset + count] = t
            count += 1
    return count


@njit(parallel=True, **JIT)
def eval_mesh_toi(x0, x1, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi, bvh_child,
                  bvh_start, bvh_count, bvh_item, tolerance):
    """Segment-triangle impacts (TOI <= 1) through the BVH: ``(segment, flat triangle, toi)``."""
    ne = edge_v0.shape[0]
    nchunk = min(ne, 64)
    counts = np.zeros(ne + 1, dtype=np.int64)
    ei = np.empty(0, dtype=np.int64)
    ef = np.empty(0)
    for ch in prange(nchunk):
        stack = np.empty(130, dtype=np.int64)
        buf = np.empty(tri_x.shape[0], dtype=np.int64)
        for e in range(ch * ne // nchunk, (ch + 1) * ne // nchunk):
            counts[e + 1] = _mesh_toi_of(e, x0, x1, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo,
                                         bvh_hi, bvh_child, bvh_start, bvh_count, bvh_item, tolerance, stack, buf,
                                         ei, ei, ef, -1)
    for e in range(ne):
        counts[e + 1] += counts[e]
    a_out = np.empty(counts[ne], dtype=np.int64)
    f_out = np.empty(counts[ne], dtype=np.int64)
    toi_out = np.empty(counts[ne])
    for ch in prange(nchunk):
        stack = np.empty(130, dtype=np.int64)
        buf = np.empty(tri_x.shape[0], dtype=np.int64)
        for e in range(ch * ne // nchunk, (ch + 1) * ne // nchunk):
            _mesh_toi_of(e, x0, x1, edge_v0, edge_v1, edge_radius, tri_x, tri_lo, tri_hi, bvh_lo, bvh_hi, bvh_child,
                         bvh_start, bvh_count, bvh_item, tolerance, stack, buf, a_out, f_out, toi_out, counts[e])
    return a_out, f_out, toi_out


class ImpactSet(NamedTuple):
    """Pairs that touch during a step (K entries, segment pairs first): ``kind`` (K,) int8
    (:data:`rodlab.contact.detect.SEGMENT` or ``OBSTACLE``), ``pair_a`` (segment), ``pair_b``
    (segment ``> pair_a`` or obstacle id), ``element_b`` (triangle in its mesh, else -1), ``toi``
    (K,) in [0, 1]: the normalised time of impact."""

    kind: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    element_b: np.ndarray
    toi: np.ndarray

    @property
    def earliest(self) -> float:
        """The smallest TOI, or :data:`NO_IMPACT` when there is none."""
        return float(self.toi.min()) if self.toi.shape[0] else NO_IMPACT


def impacts(geometry: ContactGeometry, vertex_x0, vertex_x1, *, tolerance: float | None = None,
            obstacles: bool = True) -> ImpactSet:
    """Every pair (non-neighbouring segments, or a segment and an obstacle) whose gap reaches zero
    while the vertices move linearly from ``vertex_x0`` to ``vertex_x1`` (N, 3) [m].

    Swept boxes (each segment's box over the step, inflated by its radius and ``tolerance``) go
    through the grid broadphase and meshes' BVH; each candidate gets its TOI by conservative
    advancement (module docstring). ``tolerance`` [m]: default ``1e-6`` times the smallest segment
    radius (or ``1e-12`` times the scene's size when every radius is zero).
    """
    g = geometry
    x0 = check_positions(g, vertex_x0, "vertex_x0")
    x1 = check_positions(g, vertex_x1, "vertex_x1")
    if tolerance is None:
        tolerance = default_tolerance(g, x0, x1)
    tolerance = float(tolerance)
    require(math.isfinite(tolerance) and tolerance > 0, f"tolerance must be a finite number > 0 m (got {tolerance})")
    if g.n_edges < SERIAL_BELOW:  # one compiled call, the same pairs and TOIs
        hits, toi = segment_impacts(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius, g.edge_rod, g.edge_local,
                                    g.rod_edge_count, g.rod_closed, g.rod_skip, tolerance, np.empty(0, dtype=np.int64))
        nh = toi.shape[0]
        parts = [(np.full(nh, SEGMENT, dtype=np.int8), hits[:, 0], hits[:, 1], np.full(nh, -1, dtype=np.int64), toi)]
    else:
        lo = np.empty((g.n_edges, 3))
        hi = np.empty((g.n_edges, 3))
        _swept_boxes(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius + 0.5 * tolerance, lo, hi)
        pairs = grid_pairs(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
        toi = np.empty(pairs.shape[0])
        if pairs.shape[0]:
            with threads_for(pairs.shape[0]):
                eval_pair_toi(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius, pairs, tolerance, toi)
        hit = toi <= 1.0
        nh = int(hit.sum())
        parts = [(np.full(nh, SEGMENT, dtype=np.int8), pairs[hit, 0], pairs[hit, 1], np.full(nh, -1, dtype=np.int64),
                  toi[hit])]
    if obstacles and g.n_obstacles:
        tm = np.empty((g.n_edges, g.n_obstacles))
        with threads_for(tm.size):
            eval_obstacle_toi(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius, g.obstacle_kind, g.obstacle_param,
                              tolerance, tm)
        e, m = np.nonzero(tm <= 1.0)
        parts.append((np.full(e.shape[0], OBSTACLE, dtype=np.int8), e.astype(np.int64), m.astype(np.int64),
                      np.full(e.shape[0], -1, dtype=np.int64), tm[e, m]))
        if g.tri_x.shape[0]:
            with threads_for(g.n_edges):
                e, f, t = eval_mesh_toi(x0, x1, g.edge_v0, g.edge_v1, g.edge_radius, g.tri_x, g.tri_lo, g.tri_hi,
                                        g.bvh_lo, g.bvh_hi, g.bvh_child, g.bvh_start, g.bvh_count, g.bvh_item,
                                        tolerance)
            parts.append((np.full(e.shape[0], OBSTACLE, dtype=np.int8), e, g.tri_obstacle[f], g.tri_local[f], t))
    return ImpactSet(*[np.concatenate([p[k] for p in parts]) for k in range(5)])
