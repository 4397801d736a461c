"""The contact response of explicit DER, compiled and serial (docs/contact-der.md, "The step").

After each DER step, :func:`respond` (called per step from the compiled loop
:func:`rodlab.der.contact_steps.advance_contact_steps`) runs the clearance skip, detection
(:func:`detect_rows`: the grid broadphase, narrowphase and, when needed, CCD kernels of
:mod:`rodlab.contact`, called from compiled code, serially), impulses and inextensibility
(:func:`rodlab.der.contact.resolve`) in rounds, the velocity step of RATTLE with
``projection="symplectic"``, and the frame update (:func:`rodlab.der.contact.refresh_frames`).
Nothing runs on numba's thread pool: a contact world's step is a few hundred vertices, where
waking threads costs more per step than the work.

Rows (one per contact, and per endpoint of a segment-obstacle contact) are collected in one
growing float table, columns ``C_*``; vertex ids, pair ids and the active-contact key are exact
in float64 (below ``2**53``).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..contact.broadphase import _grid, _grid_keys, grid_pairs_serial
from ..contact.ccd import _mesh_toi_of, ccd_segment_obstacle, ccd_segment_segment
from ..contact.detect import _mesh_of
from ..contact.geometry import ContactGeometry
from ..contact.narrowphase import MESH, point_obstacle, segment_obstacle, segment_segment, segment_triangle, vlerp, vrow
from ..geometry._vec import JIT, JIT_INNER
from ..numba_views import borrow

from .contact import copy_rows, copy_rows2, refresh_frames, resolve, velocity_project_rods

# row table columns
(C_VA0, C_VA1, C_VB0, C_VB1, C_WA0, C_WA1, C_WB0, C_WB1, C_N0, C_N1, C_N2, C_GAP, C_MU, C_KEY, C_A, C_B,
 C_KIND, C_SUB) = range(18)
ROW_COLUMNS = 18
KEY_KIND, KEY_A = float(1 << 40), float(1 << 20)
# C_SUB: what a row is, beyond its pair: the closest points of a segment pair or a segment and an analytic
# obstacle, either endpoint of a segment on an analytic obstacle, a mesh triangle, an impact (CCD)
SUB_MID, SUB_END0, SUB_END1, SUB_MESH, SUB_CCD = 0.0, 1.0, 2.0, 3.0, 4.0
# the warm-start table (docs/contact-der.md): row 0 = (entries, key of the positions it was left at, 0, 0, 0),
# then one row per entry, sorted by its first column: (row key * 8 + C_SUB, lambda_n, lambda_t (3))
WARM_COLUMNS = 5

# The serial grid broadphase is rodlab.contact.broadphase.grid_pairs_serial (one definition, shared
# with compact's detection).


@njit(inline="always", **JIT)
def _borrowed_geometry(g):
    """``g`` (a ContactGeometry) with borrowed arrays (:func:`rodlab.numba_views.borrow`): the
    calls that take it increment and decrement no reference count. Only for a ``g`` that the
    caller keeps alive for the whole call (an argument), and the result must not outlive it."""
    return ContactGeometry(g.n_vertices, borrow(g.edge_v0), borrow(g.edge_v1), borrow(g.edge_rod),
                           borrow(g.edge_local), borrow(g.edge_radius), borrow(g.rod_edge_count), borrow(g.rod_closed),
                           borrow(g.rod_skip), borrow(g.obstacle_kind), borrow(g.obstacle_param), borrow(g.tri_x),
                           borrow(g.tri_obstacle), borrow(g.tri_local), borrow(g.tri_lo), borrow(g.tri_hi),
                           borrow(g.bvh_lo), borrow(g.bvh_hi), borrow(g.bvh_child), borrow(g.bvh_start),
                           borrow(g.bvh_count), borrow(g.bvh_item))


# ---- the segment pairs of a detection from a kept candidate list (a Verlet list) ----------------
@njit(**JIT_INNER)
def _displacement(x, x_ref):
    """Largest vertex displacement [m] from ``x_ref`` to ``x``."""
    worst = 0.0
    for i in range(x.shape[0]):
        worst = max(worst, (x[i, 0] - x_ref[i, 0]) ** 2 + (x[i, 1] - x_ref[i, 1]) ** 2 + (x[i, 2] - x_ref[i, 2]) ** 2)
    return math.sqrt(worst)


@njit(**JIT)
def _pair_order(out, m, rank, nb):
    """The permutation that sorts pairs ``out[:m]`` (box ids) by (lower rank, higher rank) of their
    boxes (``rank`` (E,), ranks ``0..nb-1``): a counting sort by the lower rank, then an insertion
    sort by the higher within each group (a box's few partners). The pairs are distinct, so this
    is the one sorting permutation, the one ``np.argsort`` of ``lower * nb + higher`` gives, in
    ``O(m + nb)`` for a few partners per box."""
    low = np.empty(m, dtype=np.int64)
    high = np.empty(m, dtype=np.int64)
    start = np.zeros(nb + 1, dtype=np.int64)
    for q in range(m):
        ri, rj = rank[out[q, 0]], rank[out[q, 1]]
        low[q] = min(ri, rj)
        high[q] = max(ri, rj)
        start[low[q] + 1] += 1
    for b in range(nb):
        start[b + 1] += start[b]
    fill = start[:nb].copy()
    by = np.empty(m, dtype=np.int64)
    for q in range(m):
        by[fill[low[q]]] = q
        fill[low[q]] += 1
    for b in range(nb):
        for a in range(start[b] + 1, start[b + 1]):
            q = by[a]
            key = high[q]
            c = a
            while c > start[b] and high[by[c - 1]] > key:
                by[c] = by[c - 1]
                c -= 1
            by[c] = q
    return by


@njit(**JIT)
def listed_pairs(lo, hi, x, skin, g, near_x, near):
    """The pairs of :func:`grid_pairs_serial` for the boxes ``lo``, ``hi`` (E, 3) at ``x``, the
    same pairs in the same order, found among a kept list of candidates instead of by visiting
    the grid (a Verlet list: L. Verlet, "Computer 'experiments' on classical fluids. I.", Phys.
    Rev. 159, 1967). ``near`` (P + 1, 2) int64: row 0 = (candidates, times the list was built:
    0 = never), then the candidates; ``near_x`` (N, 3): the positions it was built at. Returns ``(pairs,
    near)`` (``near`` grown or rebuilt when needed).

    *The list.* Built by :func:`grid_pairs_serial` on the boxes grown by ``skin`` [m] on every
    side. A box's faces are the extremes of its two vertices' coordinates less or more a fixed
    radius, so they move by at most the largest vertex displacement ``D`` since the build: two
    boxes that overlap now overlapped, grown by ``D``, at the build. While ``D <= skin`` (checked
    here against the positions kept, at 0.99 ``skin`` against round-off) every overlapping pair is
    on the list; past it the list is rebuilt at ``x``.

    *The order.* The grid visit emits a pair from the one of its two boxes that comes first in
    the stable sort of the boxes by cell key (the other is in a cell of equal or larger key and,
    in the same cell, later), at that box's turn, and a box's partners in the order of their
    cells' keys, then of their sorted positions: in the order of the sorted positions. So the
    overlapping candidates sorted by (lower sorted position, higher sorted position), with the
    sort and the grid of :func:`grid_pairs_serial` (:func:`rodlab.contact.broadphase._grid`,
    ``_grid_keys``, a stable sort), are its output. Only the relative order of the surviving
    pairs' boxes matters, so only those are sorted (by cell key, then id: the stable sort's
    order), not every box."""
    n = lo.shape[0]
    if n < 2:
        return np.empty((0, 2), dtype=np.int64), near
    if near[0, 1] < 1 or near_x.shape[0] != x.shape[0] or _displacement(x, near_x) > 0.99 * skin:
        big_lo = np.empty((n, 3))
        big_hi = np.empty((n, 3))
        for e in range(n):
            for c in range(3):
                big_lo[e, c] = lo[e, c] - skin
                big_hi[e, c] = hi[e, c] + skin
        found = grid_pairs_serial(big_lo, big_hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed,
                                  g.rod_skip)
        builds = near[0, 1]
        if found.shape[0] + 1 > near.shape[0]:
            near = np.empty((max(2 * near.shape[0], found.shape[0] + 1), 2), dtype=np.int64)
        near[0, 0] = found.shape[0]
        near[0, 1] = builds + 1
        copy_rows2(near[1:], found, found.shape[0])
        copy_rows2(near_x, x, x.shape[0])
    count = near[0, 0]
    out = np.empty((count, 2), dtype=np.int64)
    used = np.zeros(n, dtype=np.bool_)
    m = 0
    for p in range(1, count + 1):
        i, j = near[p, 0], near[p, 1]
        if not (lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1] and lo[j, 1] <= hi[i, 1]
                and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2]):
            continue
        out[m, 0] = i
        out[m, 1] = j
        used[i] = True
        used[j] = True
        m += 1
    # the boxes of the surviving pairs in increasing id, ranked by the stable sort of their cell keys: the
    # relative order of their positions in the sort of all boxes (which ranks by (key, id) too)
    box = np.empty(2 * m, dtype=np.int64)
    nb = 0
    for e in range(n):
        if used[e]:
            box[nb] = e
            nb += 1
    gmin, h, dims = _grid(lo, hi)
    keys = np.empty(nb, dtype=np.int64)
    _grid_keys(lo[box[:nb]], gmin, h, dims, keys)
    order = np.argsort(keys, kind="mergesort")
    rank = np.empty(n, dtype=np.int64)
    for q in range(nb):
        rank[box[order[q]]] = q
    by = _pair_order(out, m, rank, nb)
    pairs = np.empty((m, 2), dtype=np.int64)
    for q in range(m):
        pairs[q, 0] = out[by[q], 0]
        pairs[q, 1] = out[by[q], 1]
    return pairs, near


@njit(**JIT)
def rod_min_gap(x, g):
    """:func:`rodlab.contact.min_gap` of segment pairs alone (``obstacles=False``) in one compiled
    call: the smallest gap [m] between non-neighbouring segments at ``x`` (N, 3), ``inf`` when
    there is none. The same search (pairs within a margin that doubles from the largest segment
    diameter until one is found or it spans every segment; the minimum is among those found) and
    the same kernel and arithmetic per pair: the same number."""
    E = g.edge_v0.shape[0]
    r_max = 0.0
    for e in range(E):
        r_max = max(r_max, g.edge_radius[e])
    xmin = np.empty(3)
    xmax = np.empty(3)
    for c in range(3):
        xmin[c] = np.inf
        xmax[c] = -np.inf
    for i in range(x.shape[0]):
        for c in range(3):
            xmin[c] = min(xmin[c], x[i, c])
            xmax[c] = max(xmax[c], x[i, c])
    span = math.sqrt((xmax[0] - xmin[0]) ** 2 + (xmax[1] - xmin[1]) ** 2 + (xmax[2] - xmin[2]) ** 2) + 2.0 * r_max
    margin = max(2.0 * r_max, 1e-9 * span, 1e-300)
    lo = np.empty((E, 3))
    hi = np.empty((E, 3))
    while True:
        for e in range(E):
            a, b = g.edge_v0[e], g.edge_v1[e]
            w = g.edge_radius[e] + 0.5 * margin
            for c in range(3):
                lo[e, c] = min(x[a, c], x[b, c]) - w
                hi[e, c] = max(x[a, c], x[b, c]) + w
        pairs = grid_pairs_serial(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
        best = np.inf
        found = False
        for p in range(pairs.shape[0]):
            i, j = pairs[p, 0], pairs[p, 1]
            _, _, d, _ = segment_segment(vrow(x, g.edge_v0[i]), vrow(x, g.edge_v1[i]), vrow(x, g.edge_v0[j]),
                                         vrow(x, g.edge_v1[j]))
            gap = d - g.edge_radius[i] - g.edge_radius[j]
            if gap <= margin:
                found = True
                best = min(best, gap)
        if found or margin > span:
            return best
        margin *= 2.0


# ---- rows --------------------------------------------------------------------------------------
@njit(inline="always", **JIT)
def _push(rows, k, e_a, e_b, kind, g, s, t, n, gap, mu, sub):
    """Row ``k`` (the table grown when full): segment ``e_a`` at parameter ``s`` (weights
    ``(1 - s, s)`` on its vertices) against segment ``e_b`` at ``t`` (``kind`` 0) or obstacle
    ``e_b`` (``kind`` 1: no vertices, weights 0); ``sub``: one of ``SUB_*``."""
    if k >= rows.shape[0]:
        bigger = np.empty((2 * rows.shape[0], ROW_COLUMNS))
        copy_rows2(bigger, rows, k)
        rows = bigger
    rows[k, C_VA0] = g.edge_v0[e_a]
    rows[k, C_VA1] = g.edge_v1[e_a]
    rows[k, C_WA0] = 1.0 - s
    rows[k, C_WA1] = s
    if kind == 0:
        rows[k, C_VB0] = g.edge_v0[e_b]
        rows[k, C_VB1] = g.edge_v1[e_b]
        rows[k, C_WB0] = 1.0 - t
        rows[k, C_WB1] = t
    else:
        rows[k, C_VB0] = -1.0
        rows[k, C_VB1] = -1.0
        rows[k, C_WB0] = 0.0
        rows[k, C_WB1] = 0.0
    rows[k, C_N0] = n[0]
    rows[k, C_N1] = n[1]
    rows[k, C_N2] = n[2]
    rows[k, C_GAP] = gap
    rows[k, C_MU] = mu
    rows[k, C_KEY] = kind * KEY_KIND + e_a * KEY_A + e_b
    rows[k, C_A] = e_a
    rows[k, C_B] = e_b
    rows[k, C_KIND] = kind
    rows[k, C_SUB] = sub
    return rows


@njit(**JIT_INNER)
def detect_rows(x0, x, margin, ccd, rods_on, ccd_tol, g, rod_mu, obstacle_mu, rows, skin, near_x, near):
    """Contact rows at ``x`` (N, 3) [m] (docs/contact-der.md, step 2), in the order of the
    Python detection it replaces: segment pairs with gap <= ``margin`` (only when rod contact
    is on), segment-obstacle pairs (analytic, segment-major, then mesh triangles), both endpoints
    of each analytic obstacle contact, then with ``ccd`` every pair that touched during the
    step ``x0`` -> ``x`` (CCD tolerance ``ccd_tol`` [m]), its closest points and normal at the
    time of impact. With ``skin > 0`` [m] the segment pairs come from the kept candidate list
    ``near_x``, ``near`` (:func:`listed_pairs`: the same pairs in the same order), else from the
    grid at once. Returns ``(rows table, row count, candidate list)``."""
    E = g.edge_v0.shape[0]
    M = g.obstacle_kind.shape[0]
    nt = g.tri_x.shape[0]
    k = 0
    if rods_on:
        lo = np.empty((E, 3))
        hi = np.empty((E, 3))
        for e in range(E):
            a, b = g.edge_v0[e], g.edge_v1[e]
            inflate = g.edge_radius[e] + 0.5 * margin
            for c in range(3):
                lo[e, c] = min(x[a, c], x[b, c]) - inflate
                hi[e, c] = max(x[a, c], x[b, c]) + inflate
        if skin > 0.0:
            pairs, near = listed_pairs(lo, hi, x, skin, g, near_x, near)
        else:
            pairs = grid_pairs_serial(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
        for p in range(pairs.shape[0]):
            i, j = pairs[p, 0], pairs[p, 1]
            s, t, d, n = segment_segment(vrow(x, g.edge_v0[i]), vrow(x, g.edge_v1[i]), vrow(x, g.edge_v0[j]),
                                         vrow(x, g.edge_v1[j]))
            gap = d - g.edge_radius[i] - g.edge_radius[j]
            if gap <= margin:
                rows = _push(rows, k, i, j, 0, g, s, t, n, gap, rod_mu[g.edge_rod[i], g.edge_rod[j]], SUB_MID)
                k += 1
    first_obstacle = k
    if M:
        for e in range(E):
            p0 = vrow(x, g.edge_v0[e])
            p1 = vrow(x, g.edge_v1[e])
            for m in range(M):
                if g.obstacle_kind[m] == MESH:
                    continue
                s, d, q, n = segment_obstacle(p0, p1, g.obstacle_kind[m], g.obstacle_param[m])
                gap = d - g.edge_radius[e]
                if gap <= margin:
                    rows = _push(rows, k, e, m, 1, g, s, 0.0, n, gap, obstacle_mu[m], SUB_MID)
                    k += 1
        if nt:
            stack = np.empty(130, dtype=np.int64)
            buf = np.empty(nt, dtype=np.int64)
            a_out, f_out = np.empty(nt, dtype=np.int64), np.empty(nt, dtype=np.int64)
            s_out, gap_out = np.empty(nt), np.empty(nt)
            q_out, n_out = np.empty((nt, 3)), np.empty((nt, 3))
            for e in range(E):
                nc = _mesh_of(e, x, g.edge_v0, g.edge_v1, g.edge_radius, g.tri_x, g.tri_lo, g.tri_hi, g.bvh_lo,
                              g.bvh_hi, g.bvh_child, g.bvh_start, g.bvh_count, g.bvh_item, margin, stack, buf, a_out,
                              f_out, s_out, q_out, n_out, gap_out, 0)
                for c in range(nc):
                    m = g.tri_obstacle[f_out[c]]
                    rows = _push(rows, k, e, m, 1, g, s_out[c], 0.0, n_out[c], gap_out[c], obstacle_mu[m], SUB_MESH)
                    k += 1
        # both endpoints of each analytic obstacle contact
        end = k
        for r in range(first_obstacle, end):
            e = int(rows[r, C_A])
            m = int(rows[r, C_B])
            if g.obstacle_kind[m] == MESH:
                continue
            for i in range(2):
                p = vrow(x, g.edge_v0[e]) if i == 0 else vrow(x, g.edge_v1[e])
                d, _, n = point_obstacle(p, g.obstacle_kind[m], g.obstacle_param[m])
                rows = _push(rows, k, e, m, 1, g, float(i), 0.0, n, d - g.edge_radius[e], obstacle_mu[m], SUB_END0 + i)
                k += 1
    if ccd:
        rows, k = _impact_rows(x0, x, rods_on, ccd_tol, g, rod_mu, obstacle_mu, rows, k)
    return rows, k, near


@njit(inline="always", **JIT)
def _impact_row(x0, x1, kind, a, b, f, toi, g):
    """Closest points and normal of an impact at time ``toi`` (positions interpolated from ``x0``
    to ``x1``), gap along that normal at ``x1`` (:func:`rodlab.der.contact.impact_rows`)."""
    tau = min(max(toi, 0.0), 1.0)
    pa0 = vlerp(vrow(x0, g.edge_v0[a]), vrow(x1, g.edge_v0[a]), tau)
    pa1 = vlerp(vrow(x0, g.edge_v1[a]), vrow(x1, g.edge_v1[a]), tau)
    t = 0.0
    if kind == 0:
        qb0 = vlerp(vrow(x0, g.edge_v0[b]), vrow(x1, g.edge_v0[b]), tau)
        qb1 = vlerp(vrow(x0, g.edge_v1[b]), vrow(x1, g.edge_v1[b]), tau)
        s, t, _, n = segment_segment(pa0, pa1, qb0, qb1)
        q = vlerp(vrow(x1, g.edge_v0[b]), vrow(x1, g.edge_v1[b]), t)
        thick = g.edge_radius[a] + g.edge_radius[b]
    else:
        if f >= 0:
            s, _, q, n = segment_triangle(pa0, pa1, vrow(g.tri_x[f], 0), vrow(g.tri_x[f], 1), vrow(g.tri_x[f], 2))
        else:
            s, _, q, n = segment_obstacle(pa0, pa1, g.obstacle_kind[b], g.obstacle_param[b])
        thick = g.edge_radius[a]
    p = vlerp(vrow(x1, g.edge_v0[a]), vrow(x1, g.edge_v1[a]), s)
    gap = (p[0] - q[0]) * n[0] + (p[1] - q[1]) * n[1] + (p[2] - q[2]) * n[2] - thick
    return s, t, n, gap


@njit(**JIT_INNER)
def _impact_rows(x0, x1, rods_on, tol, g, rod_mu, obstacle_mu, rows, k):
    """Rows of every pair that touches during the step (:func:`rodlab.contact.impacts`, serial):
    segment pairs (rod contact on), analytic obstacles (segment-major), mesh triangles."""
    E = g.edge_v0.shape[0]
    M = g.obstacle_kind.shape[0]
    nt = g.tri_x.shape[0]
    if rods_on:
        lo = np.empty((E, 3))
        hi = np.empty((E, 3))
        for e in range(E):
            a, b = g.edge_v0[e], g.edge_v1[e]
            w = g.edge_radius[e] + 0.5 * tol
            for c in range(3):
                lo[e, c] = min(min(x0[a, c], x0[b, c]), min(x1[a, c], x1[b, c])) - w
                hi[e, c] = max(max(x0[a, c], x0[b, c]), max(x1[a, c], x1[b, c])) + w
        pairs = grid_pairs_serial(lo, hi, g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip)
        for p in range(pairs.shape[0]):
            i, j = pairs[p, 0], pairs[p, 1]
            toi = ccd_segment_segment(vrow(x0, g.edge_v0[i]), vrow(x0, g.edge_v1[i]), vrow(x1, g.edge_v0[i]),
                                      vrow(x1, g.edge_v1[i]), vrow(x0, g.edge_v0[j]), vrow(x0, g.edge_v1[j]),
                                      vrow(x1, g.edge_v0[j]), vrow(x1, g.edge_v1[j]),
                                      g.edge_radius[i] + g.edge_radius[j], tol)
            if toi <= 1.0:
                s, t, n, gap = _impact_row(x0, x1, 0, i, j, -1, toi, g)
                rows = _push(rows, k, i, j, 0, g, s, t, n, gap, rod_mu[g.edge_rod[i], g.edge_rod[j]], SUB_CCD)
                k += 1
    for e in range(E):
        for m in range(M):
            if g.obstacle_kind[m] == MESH:
                continue
            toi = ccd_segment_obstacle(vrow(x0, g.edge_v0[e]), vrow(x0, g.edge_v1[e]), vrow(x1, g.edge_v0[e]),
                                       vrow(x1, g.edge_v1[e]), g.edge_radius[e], g.obstacle_kind[m],
                                       g.obstacle_param[m], tol)
            if toi <= 1.0:
                s, t, n, gap = _impact_row(x0, x1, 1, e, m, -1, toi, g)
                rows = _push(rows, k, e, m, 1, g, s, 0.0, n, gap, obstacle_mu[m], SUB_CCD)
                k += 1
    if nt:
        stack = np.empty(130, dtype=np.int64)
        buf = np.empty(nt, dtype=np.int64)
        a_out, f_out, toi_out = np.empty(nt, dtype=np.int64), np.empty(nt, dtype=np.int64), np.empty(nt)
        for e in range(E):
            nc = _mesh_toi_of(e, x0, x1, g.edge_v0, g.edge_v1, g.edge_radius, g.tri_x, g.tri_lo, g.tri_hi, g.bvh_lo,
                              g.bvh_hi, g.bvh_child, g.bvh_start, g.bvh_count, g.bvh_item, tol, stack, buf, a_out,
                              f_out, toi_out, 0)
            for c in range(nc):
                f = f_out[c]
                m = g.tri_obstacle[f]
                s, t, n, gap = _impact_row(x0, x1, 1, e, m, f, toi_out[c], g)
                rows = _push(rows, k, e, m, 1, g, s, 0.0, n, gap, obstacle_mu[m], SUB_CCD)
                k += 1
    return rows, k


# ---- the response ------------------------------------------------------------------------------
@njit(inline="always", **JIT)
def _max_move(x, x0):
    worst = 0.0
    for i in range(x.shape[0]):
        d = (x[i, 0] - x0[i, 0]) ** 2 + (x[i, 1] - x0[i, 1]) ** 2 + (x[i, 2] - x0[i, 2]) ** 2
        worst = max(worst, d)
    return math.sqrt(worst)


@njit(inline="always", **JIT)
def _key(x):
    """The clearance bound's key: the sum of the positions it was left at."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i, 0] + x[i, 1] + x[i, 2]
    return s


@njit(inline="always", **JIT)
def _row_gap(rows, k, x, g):
    """Row ``k``'s gap [m] at ``x`` (a discrete row: ``SUB_MID``, ``SUB_END0``, ``SUB_END1``), by the
    kernel and with the arguments that :func:`detect_rows` uses for it: the same pair gives the same
    number bit for bit."""
    a, b, sub = int(rows[k, C_A]), int(rows[k, C_B]), rows[k, C_SUB]
    if rows[k, C_KIND] == 0.0:
        _, _, d, _ = segment_segment(vrow(x, g.edge_v0[a]), vrow(x, g.edge_v1[a]), vrow(x, g.edge_v0[b]),
                                     vrow(x, g.edge_v1[b]))
        return d - g.edge_radius[a] - g.edge_radius[b]
    if sub == SUB_MID:
        _, d, _, _ = segment_obstacle(vrow(x, g.edge_v0[a]), vrow(x, g.edge_v1[a]), g.obstacle_kind[b],
                                      g.obstacle_param[b])
        return d - g.edge_radius[a]
    p = vrow(x, g.edge_v0[a]) if sub == SUB_END0 else vrow(x, g.edge_v1[a])
    d, _, _ = point_obstacle(p, g.obstacle_kind[b], g.obstacle_param[b])
    return d - g.edge_radius[a]


@njit(**JIT_INNER)
def recheck_gap(rows, K, x, g, reach):
    """Smallest gap [m] at ``x`` of the pairs of rows ``0..K-1`` (discrete rows only), each computed
    as :func:`detect_rows` computes it (:func:`_row_gap`), so the same pair gives the same number
    bit for bit. ``reach`` [m]: a bound on how much any row's gap can have fallen since its
    ``C_GAP`` was measured (twice the largest vertex displacement: a distance between two
    points moves by at most the sum of their displacements, and each point is a convex
    combination of its vertices; plus a margin for round-off). A row whose ``C_GAP - reach`` is
    above the smallest gap found so far cannot be the smallest: it is not recomputed (the row of
    the smallest ``C_GAP`` is computed first), the same minimum."""
    if K == 0:
        return np.inf
    first = 0
    for k in range(1, K):
        if rows[k, C_GAP] < rows[first, C_GAP]:
            first = k
    best = _row_gap(rows, first, x, g)
    for k in range(K):
        if k == first or rows[k, C_GAP] - reach > best:
            continue
        best = min(best, _row_gap(rows, k, x, g))
    return best


@njit(inline="always", **JIT)
def _warm_key(rows, k):
    """A row's warm-start key: exact in float64 (``C_KEY < 2**42``)."""
    return rows[k, C_KEY] * 8.0 + rows[k, C_SUB]


@njit(**JIT_INNER)
def warm_lookup(warm, n, rows, K, normal, mu, lam_n, lam_t):
    """Start impulses ``lam_n`` (K,), ``lam_t`` (K, 3) [N s] of rows ``0..K-1`` from the previous
    step's (``warm``: the table of ``WARM_COLUMNS``, sorted, ``n`` entries): a row whose pair and kind were
    there gets its normal impulse and its tangential impulse projected onto its own tangent
    plane and cut to its Coulomb bound ``mu lambda_n``; impacts and mesh rows start at zero.
    Returns the number of rows started."""
    found = 0
    for k in range(K):
        if rows[k, C_SUB] > SUB_END1:
            continue
        key = _warm_key(rows, k)
        lo, hi = 1, n + 1
        while lo < hi:  # first entry >= key
            mid = (lo + hi) // 2
            if warm[mid, 0] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo > n or warm[lo, 0] != key or warm[lo, 1] <= 0.0:
            continue
        lam_n[k] = warm[lo, 1]
        jn = warm[lo, 2] * normal[k, 0] + warm[lo, 3] * normal[k, 1] + warm[lo, 4] * normal[k, 2]
        for c in range(3):
            lam_t[k, c] = warm[lo, 2 + c] - jn * normal[k, c]
        size = math.sqrt(lam_t[k, 0] ** 2 + lam_t[k, 1] ** 2 + lam_t[k, 2] ** 2)
        limit = mu[k] * lam_n[k]
        if size > limit:
            scale = limit / size if size > 0.0 else 0.0
            for c in range(3):
                lam_t[k, c] *= scale
        found += 1
    return found


@njit(**JIT_INNER)
def warm_store(warm, rows, K, lam_n, lam_t):
    """The warm-start table of this step: the discrete rows (``sub <= SUB_END1``) of ``0..K-1``
    with a normal impulse ``lam_n`` (K,), ``lam_t`` (K, 3) [N s] (the first alternation's:
    :func:`rodlab.der.contact.resolve`), sorted by key (the table grown when full). Returns the
    table."""
    n = 0
    for k in range(K):
        if rows[k, C_SUB] <= SUB_END1 and lam_n[k] > 0.0:
            n += 1
    if n + 1 > warm.shape[0]:
        warm = np.zeros((2 * (n + 1), WARM_COLUMNS))
    keys = np.empty(n)
    which = np.empty(n, dtype=np.int64)
    q = 0
    for k in range(K):
        if rows[k, C_SUB] <= SUB_END1 and lam_n[k] > 0.0:
            keys[q] = _warm_key(rows, k)
            which[q] = k
            q += 1
    order = np.argsort(keys)
    for q in range(n):
        k = which[order[q]]
        warm[q + 1, 0] = keys[order[q]]
        warm[q + 1, 1] = lam_n[k]
        for c in range(3):
            warm[q + 1, 2 + c] = lam_t[k, c]
    warm[0, 0] = n
    return warm


@njit(**JIT_INNER)
def respond(m, x0, x_step, x, v, theta, ref_d1, ref_twist, m1_step, g, rod_mu, obstacle_mu, cfg, icfg, vertex_rod,
            rod_closed, rod_uniform, rod_twist_free, clear, stats, rows, warm, near_x, near, scratch_e3, scratch_s,
            scratch_kb, scratch_omega):
    """The contact response after one DER step from ``x0`` to ``x_step`` (= ``x`` on entry)
    (docs/contact-der.md, steps 2-5), in place on the state arrays. ``cfg`` = (margin, smallest
    radius, penetration tolerance, impulse tolerance, CCD tolerance, h, skin of the candidate pair
    list (0: none; :func:`listed_pairs`), the dormant rows' reach factor
    (:func:`rodlab.der.contact.solve_impulses`; 0: none)), ``icfg`` = (Gauss-Seidel
    sweeps, rounds, impulse/projection alternations, rod contact on, has mesh, warm start on, round-1
    check on round 0's pairs on, Newton after that many sweeps (-1: never), rows of the largest
    Newton cluster, Newton iterations).
    ``clear`` (2,): the clearance bound and its key; ``warm``: the warm-start table
    (``WARM_COLUMNS``; used when its key is that of ``x0``); ``near_x``, ``near``: the candidate
    pair list; ``scratch_*``: the serial driver's per-rod work arrays, where the frame update of
    the rods the response moved leaves their new geometry (:func:`rodlab.der.contact.refresh_frames`;
    every other rod's state is left as it was). Returns ``(active contacts, smallest row gap at the
    end, rows table, warm-start table, candidate pair list)``."""
    # borrowed views of the arguments (they outlive this call; the tables it may return are not borrowed):
    # the calls below pass them on without atomic reference counting
    x0, x_step, x, v, theta, ref_d1, ref_twist = (borrow(x0), borrow(x_step), borrow(x), borrow(v), borrow(theta),
                                                  borrow(ref_d1), borrow(ref_twist))
    m1_step, g, rod_mu, obstacle_mu, vertex_rod = (borrow(m1_step), _borrowed_geometry(g), borrow(rod_mu),
                                                   borrow(obstacle_mu), borrow(vertex_rod))
    rod_closed, rod_uniform, rod_twist_free, clear, stats = (borrow(rod_closed), borrow(rod_uniform),
                                                             borrow(rod_twist_free), borrow(clear), borrow(stats))
    near_x, scratch_e3, scratch_s, scratch_kb, scratch_omega = (borrow(near_x), borrow(scratch_e3), borrow(scratch_s),
                                                                borrow(scratch_kb), borrow(scratch_omega))
    margin, rmin, pen_tol, tolerance, ccd_tol = cfg[0], cfg[1], cfg[2], cfg[3], cfg[4]
    max_iter, max_rounds, max_outer = icfg[0], icfg[1], icfg[2]
    rods_on, has_mesh, warm_on = icfg[3] != 0, icfg[4] != 0, icfg[5] != 0
    key0 = _key(x0)
    warm_n = int(warm[0, 0]) if warm_on and warm[0, 1] == key0 else 0
    warm[0, 0] = 0.0
    if clear[0] > 0.0 and not has_mesh and clear[1] == key0:
        budget = clear[0] - 2.0 * _max_move(x, x0)
        if budget > 0.0:
            clear[0] = budget
            clear[1] = _key(x)
            return 0, np.inf, rows, warm, near
    clear[0] = 0.0
    clear[1] = 0.0
    h = cfg[5]
    touched = np.zeros(rod_closed.shape[0], dtype=np.bool_)
    keys = np.empty(16)
    nkeys = 0
    end_gap = np.inf
    inextensible = m.option_int[2] != 0
    symplectic = m.option_int[3] != 0
    K = 0
    discrete = False  # round 0 found its rows without CCD
    for rnd in range(max_rounds):
        ccd = has_mesh or _max_move(x, x0) > 0.5 * rmin
        if rnd == 1 and discrete and not ccd and icfg[6] != 0:
            # the check of round 1 on round 0's pairs: any other pair was farther than the margin at
            # x_step and has come closer by at most twice the largest displacement since
            moved = _max_move(x, x_step)
            gap = recheck_gap(rows, K, x, g, 2.0 * moved + 1e-6 * rmin)
            if -pen_tol <= gap <= margin - 2.0 * moved - 1e-6 * rmin:
                end_gap = gap
                stats[4] += 1
                break
        rows, K, near = detect_rows(x0, x, margin, ccd, rods_on, ccd_tol, g, rod_mu, obstacle_mu, rows, cfg[6], near_x,
                                    near)
        stats[0] += 1
        if rnd == 0:
            discrete = not ccd
        end_gap = np.inf
        for k in range(K):
            end_gap = min(end_gap, rows[k, C_GAP])
        if rnd == 0 and K == 0:
            clear[0] = margin
            clear[1] = _key(x)
        if K == 0 or (end_gap >= -pen_tol and rnd > 0):
            break
        va = np.empty((K, 2), dtype=np.int64)
        vb = np.empty((K, 2), dtype=np.int64)
        wa = np.empty((K, 2))
        wb = np.empty((K, 2))
        normal = np.empty((K, 3))
        target = np.empty(K)
        mu = np.empty(K)
        needed = False
        friction = False
        for k in range(K):
            va[k, 0], va[k, 1] = int(rows[k, C_VA0]), int(rows[k, C_VA1])
            vb[k, 0], vb[k, 1] = int(rows[k, C_VB0]), int(rows[k, C_VB1])
            wa[k, 0], wa[k, 1] = rows[k, C_WA0], rows[k, C_WA1]
            wb[k, 0], wb[k, 1] = rows[k, C_WB0], rows[k, C_WB1]
            normal[k, 0], normal[k, 1], normal[k, 2] = rows[k, C_N0], rows[k, C_N1], rows[k, C_N2]
            mu[k] = rows[k, C_MU]
            # least normal relative velocity: g + h n . dv_rel >= 0
            vn = 0.0
            for c in range(3):
                vr = wa[k, 0] * v[va[k, 0], c] + wa[k, 1] * v[va[k, 1], c]
                if vb[k, 0] >= 0:
                    vr -= wb[k, 0] * v[vb[k, 0], c] + wb[k, 1] * v[vb[k, 1], c]
                vn += vr * normal[k, c]
            target[k] = vn - rows[k, C_GAP] / h
            if target[k] > vn + 1e-300:
                needed = True
            if mu[k] > 0:
                friction = True
        if not needed and not friction:
            break
        lam_n = np.zeros(K)
        lam_t = np.zeros((K, 3))
        started = warm_lookup(warm, warm_n, rows, K, normal, mu, lam_n, lam_t) if rnd == 0 and warm_n else 0
        lam_n_first = np.empty(K)
        lam_t_first = np.empty((K, 3))
        outer, _, sweeps = resolve(va, vb, wa, wb, normal, target, mu, m.vertex_inv_mass, x, v, lam_n, lam_t, started > 0,
                                   lam_n_first, lam_t_first, h, max_iter, tolerance, icfg[7], icfg[8], icfg[9],
                                   cfg[7], stats[5:9], pen_tol, max_outer, inextensible, vertex_rod, touched,
                                   m.rod_vertex_start, m.rod_edge_start, m.rod_slide_start, rod_closed,
                                   m.edge_rest_length, m.slide_vertex, m.slide_axis, m.slide_w, m.slide_edge,
                                   m.slide_side, m.option_float[0], m.option_int[0], symplectic)
        stats[1] += outer
        stats[2] += K
        stats[3] += sweeps
        if rnd == 0 and warm_on:
            warm = warm_store(warm, rows, K, lam_n_first, lam_t_first)
        for k in range(K):
            if lam_n[k] > 0:
                if nkeys >= keys.shape[0]:
                    bigger = np.empty(2 * keys.shape[0])
                    copy_rows(bigger, keys, nkeys)
                    keys = bigger
                keys[nkeys] = rows[k, C_KEY]
                nkeys += 1
    rods = np.flatnonzero(touched).astype(np.int64)
    if rods.shape[0]:
        if symplectic and inextensible:
            velocity_project_rods(rods, x, v, m.vertex_inv_mass, m.rod_vertex_start, m.rod_edge_start,
                                  m.rod_slide_start, rod_closed, m.slide_vertex, m.slide_axis, m.slide_w, m.slide_edge,
                                  m.slide_side)
        refresh_frames(rods, x_step, x, theta, ref_d1, ref_twist, m.rod_vertex_start, m.rod_edge_start,
                       m.rod_joint_start, m.rod_clamp_start, rod_closed, rod_uniform, rod_twist_free, m.clamp_edge,
                       m1_step, m.edge_rest_length, m.edge_bend_stiffness, m.edge_stretch_stiffness, m.edge_free_theta,
                       m.joint_voronoi_length, m.joint_rest_curvature, m.joint_rest_twist, m.joint_twist_stiffness,
                       m.rod_twist_tol, m.option_int[1], scratch_e3, scratch_s, scratch_kb, scratch_omega)
    n_active = 0
    if nkeys:
        srt = np.sort(keys[:nkeys])
        n_active = 1
        for q in range(1, nkeys):
            if srt[q] != srt[q - 1]:
                n_active += 1
    warm[0, 1] = _key(x)
    return n_active, end_gap, rows, warm, near


__all__ = ["detect_rows", "grid_pairs_serial", "listed_pairs", "respond", "rod_min_gap"]
