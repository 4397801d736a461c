"""Broadphase: candidate pairs of boxes, compiled (numba).

* :func:`grid_pairs` - every pair ``i < j`` of axis-aligned boxes that overlap, skipping segments
  that are neighbours along the same rod, by a uniform grid: the cell size is twice the largest
  box side, each box is filed under the cell of its lower corner, the boxes are sorted by cell key
  (``O(n log n)``), and each box visits the (at most 2 x 2 x 2) cells that can hold the lower
  corner of an overlapping box and whose key is not below its own; those cells' runs in the
  sorted order are found by forward-only pointers (a merge of sorted sequences), so after the
  sort the search is linear and reads memory in order. Counting and filling are
  two parallel passes over the boxes in key order, so the output order is deterministic. Below
  :data:`SERIAL_BELOW` boxes :func:`grid_pairs_serial` does the same visit in one compiled pass
  on the calling thread (the same pairs in the same order), callable from compiled code.
* :func:`build_bvh` / :func:`bvh_query` - a bounding volume
  hierarchy over static boxes (mesh triangles): top-down, split at the median of the centroids
  along the widest axis, at most ``BVH_LEAF`` boxes a leaf; queried with a box.

A box is ``(lo, hi)`` rows of two (n, 3) arrays [m]. Two segments ``i``, ``j`` are *neighbours*
when they belong to the same rod and their edge indices differ by at most that rod's ``skip``
(cyclically on a closed rod); ``skip >= 1`` so segments sharing a vertex are always skipped.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange

from ..geometry._vec import JIT

SERIAL_BELOW = 8192
"""Problems smaller than this (boxes, pairs) run on one thread: waking the others costs more."""

BVH_LEAF = 4
"""Most boxes in one BVH leaf."""

_MAX_CELLS = 2.0 ** 62


@njit(**JIT)
def are_neighbours(i, j, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip):
    """Whether segments ``i`` and ``j`` (flat edge ids) are neighbours along one rod."""
    r = edge_rod[i]
    if edge_rod[j] != r:
        return False
    k = abs(edge_local[i] - edge_local[j])
    if rod_closed[r]:
        k = min(k, rod_edge_count[r] - k)
    return k <= rod_skip[r]


@njit(**JIT)
def _boxes_overlap(lo, hi, i, j):
    return (lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1] and lo[j, 1] <= hi[i, 1]
            and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2])


@njit(**JIT)
def _lower_bound(keys, value):
    """First position in sorted ``keys`` whose key is >= ``value``."""
    lo, hi = 0, keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**JIT)
def _run_end(skeys, run_end):
    """``run_end[m]``: the end of the run of equal keys holding sorted position ``m``."""
    n = skeys.shape[0]
    end = n
    for m in range(n - 1, -1, -1):
        if m < n - 1 and skeys[m] != skeys[m + 1]:
            end = m + 1
        run_end[m] = end


@njit(**JIT)
def _grid(lo, hi):
    """Origin, cell size and cell counts of the grid for boxes ``lo``, ``hi``."""
    n = lo.shape[0]
    gmin = np.empty(3)
    gmax = np.empty(3)
    h = 0.0
    for a in range(3):
        gmin[a] = lo[0, a]
        gmax[a] = hi[0, a]
    for i in range(n):
        for a in range(3):
            gmin[a] = min(gmin[a], lo[i, a])
            gmax[a] = max(gmax[a], hi[i, a])
            h = max(h, hi[i, a] - lo[i, a])
    span = max(gmax[0] - gmin[0], gmax[1] - gmin[1], gmax[2] - gmin[2])
    h = 2.0 * max(h, 1e-12 * span, 1e-300)                  # cells of twice the largest box: <= 2 x 2 x 2 to visit
    dims = np.empty(3, dtype=np.int64)
    while True:
        total = 1.0
        for a in range(3):
            total *= math.floor((gmax[a] - gmin[a]) / h) + 1.0
        if total < _MAX_CELLS:
            break
        h *= 2.0                                            # a coarser grid: still correct
    for a in range(3):
        dims[a] = int(math.floor((gmax[a] - gmin[a]) / h)) + 1
    return gmin, h, dims


@njit(**JIT)
def _cell(v, g, h, dim):
    c = int(math.floor((v - g) / h))
    return min(max(c, 0), dim - 1)


@njit(**JIT)
def _grid_keys(lo, gmin, h, dims, keys):
    for i in range(lo.shape[0]):
        cx = _cell(lo[i, 0], gmin[0], h, dims[0])
        cy = _cell(lo[i, 1], gmin[1], h, dims[1])
        cz = _cell(lo[i, 2], gmin[2], h, dims[2])
        keys[i] = (cx * dims[1] + cy) * dims[2] + cz


@njit(**JIT)
def _visit(ii, ptr, order, skeys, run_end, slo, shi, srod, slocal, gmin, h, box, dims, rod_edge_count, rod_closed,
           rod_skip, out, offset):
    """Count (``offset < 0``) or write into ``out[offset:]`` the partners of the box at sorted
    position ``ii`` found at sorted positions ``m > ii`` (arrays ``s*`` are in sorted order, so a
    cell's boxes are contiguous in memory); returns the count. Pairs are written as box ids
    ``(min, max)``. Cells with a smaller key hold only positions before ``ii`` and are skipped;
    the box's own cell is its run; each other cell, at offset ``o`` in the 3 x 3 x 3 block, is
    found by the pointer ``ptr[o]``, which only moves forward while ``ii`` grows (the key at a
    fixed offset grows with the box's own key), so a chunk's lookups cost O(chunk) in all."""
    own = skeys[ii]
    ox = _cell(slo[ii, 0], gmin[0], h, dims[0])
    oy = _cell(slo[ii, 1], gmin[1], h, dims[1])
    oz = _cell(slo[ii, 2], gmin[2], h, dims[2])
    cx0 = _cell(slo[ii, 0] - box, gmin[0], h, dims[0])
    cy0 = _cell(slo[ii, 1] - box, gmin[1], h, dims[1])
    cz0 = _cell(slo[ii, 2] - box, gmin[2], h, dims[2])
    cx1 = _cell(shi[ii, 0], gmin[0], h, dims[0])
    cy1 = _cell(shi[ii, 1], gmin[1], h, dims[1])
    cz1 = _cell(shi[ii, 2], gmin[2], h, dims[2])
    n = skeys.shape[0]
    count = 0
    for cx in range(cx0, cx1 + 1):
        for cy in range(cy0, cy1 + 1):
            for cz in range(cz0, cz1 + 1):
                key = (cx * dims[1] + cy) * dims[2] + cz
                if key < own:
                    continue
                if key == own:
                    first, end = ii + 1, run_end[ii]
                else:
                    o = (cx - ox + 1) * 9 + (cy - oy + 1) * 3 + (cz - oz + 1)
                    p = ptr[o]
                    if p < 0:
                        p = _lower_bound(skeys, key)
                    else:
                        while p < n and skeys[p] < key:
                            p += 1
                    ptr[o] = p
                    if p >= n or skeys[p] != key:
                        continue
                    first, end = p, run_end[p]
                for m in range(first, end):
                    if not _boxes_overlap(slo, shi, ii, m):
                        continue
                    if srod[ii] == srod[m]:
                        r = srod[ii]
                        k = abs(slocal[ii] - slocal[m])
                        if rod_closed[r]:
                            k = min(k, rod_edge_count[r] - k)
                        if k <= rod_skip[r]:
                            continue
                    if offset >= 0:
                        i = order[ii]
                        j = order[m]
                        out[offset + count, 0] = min(i, j)
                        out[offset + count, 1] = max(i, j)
                    count += 1
    return count


@njit(parallel=True, **JIT)
def _grid_pairs(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip, gmin, h, dims, keys, order):
    n = lo.shape[0]
    skeys = keys[order]
    run_end = np.empty(n, dtype=np.int64)
    _run_end(skeys, run_end)
    box = 0.5 * h
    slo = np.empty((n, 3))
    shi = np.empty((n, 3))
    srod = np.empty(n, dtype=np.int64)
    slocal = np.empty(n, dtype=np.int64)
    for ii in prange(n):
        i = order[ii]
        for a in range(3):
            slo[ii, a] = lo[i, a]
            shi[ii, a] = hi[i, a]
        srod[ii] = edge_rod[i]
        slocal[ii] = edge_local[i]
    nchunk = min(n, 256)
    counts = np.zeros(n + 1, dtype=np.int64)
    dummy = np.empty((0, 2), dtype=np.int64)
    for ch in prange(nchunk):
        ptr = np.full(27, -1, dtype=np.int64)
        for ii in range(ch * n // nchunk, (ch + 1) * n // nchunk):
            counts[ii + 1] = _visit(ii, ptr, order, skeys, run_end, slo, shi, srod, slocal, gmin, h, box, dims,
                                    rod_edge_count, rod_closed, rod_skip, dummy, -1)
    for ii in range(n):
        counts[ii + 1] += counts[ii]
    out = np.empty((counts[n], 2), dtype=np.int64)
    for ch in prange(nchunk):
        ptr = np.full(27, -1, dtype=np.int64)
        for ii in range(ch * n // nchunk, (ch + 1) * n // nchunk):
            _visit(ii, ptr, order, skeys, run_end, slo, shi, srod, slocal, gmin, h, box, dims, rod_edge_count,
                   rod_closed, rod_skip, out, counts[ii])
    return out


@njit(**JIT)
def grid_pairs_serial(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip):
    """:func:`grid_pairs` in one compiled call on the calling thread, for small worlds and for
    compiled callers: the same pairs in the same order (the stable sort of the same cell keys,
    then each box's visit of :func:`_visit`, written out here in one pass into a table that
    doubles when full). The two parallel passes of :func:`_grid_pairs`, even on one thread, cost
    about 90 us on 100 segments (a call of ``_visit`` and a pointer table per box), this about 10 us.
    The boxes are first copied in sorted order, so the visit reads its neighbours' boxes from
    contiguous rows (10-20 % faster at 300-3000 segments than reading them through ``order``)."""
    n = lo.shape[0]
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    gmin, h, dims = _grid(lo, hi)
    keys = np.empty(n, dtype=np.int64)
    _grid_keys(lo, gmin, h, dims, keys)
    order = np.argsort(keys, kind="mergesort")
    skeys = keys[order]
    run_end = np.empty(n, dtype=np.int64)
    _run_end(skeys, run_end)
    box = 0.5 * h
    slo = np.empty((n, 3))
    shi = np.empty((n, 3))
    srod = np.empty(n, dtype=np.int64)
    slocal = np.empty(n, dtype=np.int64)
    for ii in range(n):
        i = order[ii]
        for a in range(3):
            slo[ii, a] = lo[i, a]
            shi[ii, a] = hi[i, a]
        srod[ii] = edge_rod[i]
        slocal[ii] = edge_local[i]
    out = np.empty((max(2 * n, 16), 2), dtype=np.int64)
    count = 0
    ptr = np.full(27, -1, dtype=np.int64)
    for ii in range(n):
        own = skeys[ii]
        ox = _cell(slo[ii, 0], gmin[0], h, dims[0])
        oy = _cell(slo[ii, 1], gmin[1], h, dims[1])
        oz = _cell(slo[ii, 2], gmin[2], h, dims[2])
        cx0 = _cell(slo[ii, 0] - box, gmin[0], h, dims[0])
        cy0 = _cell(slo[ii, 1] - box, gmin[1], h, dims[1])
        cz0 = _cell(slo[ii, 2] - box, gmin[2], h, dims[2])
        cx1 = _cell(shi[ii, 0], gmin[0], h, dims[0])
        cy1 = _cell(shi[ii, 1], gmin[1], h, dims[1])
        cz1 = _cell(shi[ii, 2], gmin[2], h, dims[2])
        for cx in range(cx0, cx1 + 1):
            for cy in range(cy0, cy1 + 1):
                for cz in range(cz0, cz1 + 1):
                    key = (cx * dims[1] + cy) * dims[2] + cz
                    if key < own:
                        continue
                    if key == own:
                        first, end = ii + 1, run_end[ii]
                    else:
                        o = (cx - ox + 1) * 9 + (cy - oy + 1) * 3 + (cz - oz + 1)
                        p = ptr[o]
                        if p < 0:
                            p = _lower_bound(skeys, key)
                        else:
                            while p < n and skeys[p] < key:
                                p += 1
                        ptr[o] = p
                        if p >= n or skeys[p] != key:
                            continue
                        first, end = p, run_end[p]
                    for q in range(first, end):
                        if not (slo[ii, 0] <= shi[q, 0] and slo[q, 0] <= shi[ii, 0] and slo[ii, 1] <= shi[q, 1]
                                and slo[q, 1] <= shi[ii, 1] and slo[ii, 2] <= shi[q, 2] and slo[q, 2] <= shi[ii, 2]):
                            continue
                        if srod[ii] == srod[q]:
                            r = srod[ii]
                            d = abs(slocal[ii] - slocal[q])
                            if rod_closed[r]:
                                d = min(d, rod_edge_count[r] - d)
                            if d <= rod_skip[r]:
                                continue
                        if count == out.shape[0]:
                            grown = np.empty((2 * count, 2), dtype=np.int64)
                            for k in range(count):
                                grown[k, 0] = out[k, 0]
                                grown[k, 1] = out[k, 1]
                            out = grown
                        i, j = order[ii], order[q]
                        out[count, 0] = min(i, j)
                        out[count, 1] = max(i, j)
                        count += 1
    return out[:count]


def grid_pairs(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j`` (int64 (P, 2)), of overlapping boxes ``lo``, ``hi`` (n, 3) [m]
    that are not neighbours along a rod (module docstring). ``edge_rod``, ``edge_local`` (n,):
    each box's rod and edge index in it; ``rod_edge_count``, ``rod_closed``, ``rod_skip`` (R,).
    Below :data:`SERIAL_BELOW` boxes: :func:`grid_pairs_serial` (the same pairs, same order)."""
    if lo.shape[0] < 2:
        return np.empty((0, 2), dtype=np.int64)
    if lo.shape[0] < SERIAL_BELOW:
        return grid_pairs_serial(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip)
    gmin, h, dims = _grid(lo, hi)
    keys = np.empty(lo.shape[0], dtype=np.int64)
    _grid_keys(lo, gmin, h, dims, keys)
    order = np.argsort(keys, kind="stable")                 # numpy's radix sort of int64 keys
    with threads_for(lo.shape[0]):
        return _grid_pairs(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip, gmin, h, dims, keys,
                           order)


@contextmanager
def threads_for(size: int):
    """Run the parallel kernels inside on one thread when ``size < SERIAL_BELOW``."""
    if size >= SERIAL_BELOW:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


@njit(**JIT)
def brute_pairs(lo, hi, edge_rod, edge_local, rod_edge_count, rod_closed, rod_skip):
    """The same pairs as :func:`grid_pairs` by testing every pair (``O(n^2)``; for tests)."""
    n = lo.shape[0]
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if _boxes_overlap(lo, hi, i, j) and not are_neighbours(i, j, edge_rod, edge_local, rod_edge_count,
                                                                   rod_closed, rod_skip):
                count += 1
    out = np.empty((count, 2), dtype=np.int64)
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if _boxes_overlap(lo, hi, i, j) and not are_neighbours(i, j, edge_rod, edge_local, rod_edge_count,
                                                                   rod_closed, rod_skip):
                out[count, 0] = i
                out[count, 1] = j
                count += 1
    return out


# ---- bounding volume hierarchy over static boxes ---------------------------------------------------
@njit(**JIT)
def build_bvh(lo, hi):
    """A BVH over boxes ``lo``, ``hi`` (n >= 1, 3): ``(node_lo, node_hi, node_child, node_start,
    node_count, item)``. Node 0 is the root; an inner node's children are ``node_child[k]`` and
    ``node_child[k] + 1``; a leaf (``node_child = -1``) holds ``item[node_start:node_start +
    node_count]``, the box ids."""
    n = lo.shape[0]
    m = max(2 * n - 1, 1)
    node_lo = np.empty((m, 3))
    node_hi = np.empty((m, 3))
    node_child = np.full(m, -1, dtype=np.int64)
    node_start = np.zeros(m, dtype=np.int64)
    node_count = np.zeros(m, dtype=np.int64)
    item = np.arange(n)
    cen = 0.5 * (lo + hi)
    node_start[0] = 0
    node_count[0] = n
    used = 1
    stack = np.empty(2 * 64 + 2 * n, dtype=np.int64)
    top = 0
    stack[top] = 0
    top += 1
    while top > 0:
        top -= 1
        k = stack[top]
        s0 = node_start[k]
        cnt = node_count[k]
        cmin = np.full(3, np.inf)
        cmax = np.full(3, -np.inf)
        for a in range(3):
            node_lo[k, a] = np.inf
            node_hi[k, a] = -np.inf
        for q in range(s0, s0 + cnt):
            b = item[q]
            for a in range(3):
                node_lo[k, a] = min(node_lo[k, a], lo[b, a])
                node_hi[k, a] = max(node_hi[k, a], hi[b, a])
                cmin[a] = min(cmin[a], cen[b, a])
                cmax[a] = max(cmax[a], cen[b, a])
        if cnt <= BVH_LEAF:
            continue
        axis = 0
        for a in range(1, 3):
            if cmax[a] - cmin[a] > cmax[axis] - cmin[axis]:
                axis = a
        seg = item[s0:s0 + cnt].copy()
        order = np.argsort(cen[seg, axis], kind="mergesort")
        for q in range(cnt):
            item[s0 + q] = seg[order[q]]
        half = cnt // 2
        left = used
        used += 2
        node_child[k] = left
        node_start[left] = s0
        node_count[left] = half
        node_start[left + 1] = s0 + half
        node_count[left + 1] = cnt - half
        stack[top] = left
        stack[top + 1] = left + 1
        top += 2
    return node_lo[:used].copy(), node_hi[:used].copy(), node_child[:used].copy(), node_start[:used].copy(), \
        node_count[:used].copy(), item


@njit(**JIT)
def bvh_query(node_lo, node_hi, node_child, node_start, node_count, item, box_lo, box_hi, qlo, qhi, stack, out,
              offset):
    """Ids of the boxes ``box_lo``, ``box_hi`` (those the BVH was built from) that overlap the
    query box ``qlo``, ``qhi`` (tuples) [m]. Writes them into ``out[offset:]`` when ``offset >= 0``;
    returns how many. ``stack``: int64 work array of length >= 130 (the depth of a median-split
    tree is below 64 for any size)."""
    count = 0
    if node_lo.shape[0] == 0:
        return 0
    top = 0
    stack[top] = 0
    top += 1
    while top > 0:
        top -= 1
        k = stack[top]
        if (node_lo[k, 0] > qhi[0] or node_hi[k, 0] < qlo[0] or node_lo[k, 1] > qhi[1] or node_hi[k, 1] < qlo[1]
                or node_lo[k, 2] > qhi[2] or node_hi[k, 2] < qlo[2]):
            continue
        c = node_child[k]
        if c >= 0:
            stack[top] = c
            stack[top + 1] = c + 1
            top += 2
            continue
        for q in range(node_start[k], node_start[k] + node_count[k]):
            b = item[q]
            if (box_lo[b, 0] > qhi[0] or box_hi[b, 0] < qlo[0] or box_lo[b, 1] > qhi[1] or box_hi[b, 1] < qlo[1]
                    or box_lo[b, 2] > qhi[2] or box_hi[b, 2] < qlo[2]):
                continue
            if offset >= 0:
                out[offset + count] = b
            count += 1
    return count
