"""Inextensibility projection that keeps the pressed contacts: the later rounds of the impulse /
projection alternation of explicit DER's contact response (:func:`rodlab.der.contact.resolve`).

The alternation (docs/contact-der.md, steps 2-3) solves the rows' impulses with the vertices as
free particles, then projects each touched rod back onto inextensibility (fast projection,
Goldenthal et al., "Efficient simulation of inextensible cloth", 2007; Bergou et al., "Discrete
Elastic Rods", 2008, Sec. 8.1). Where rods press on each other under tension (a chain pulled apart,
a knot pulled tight) the projection pulls the pressed points back into each other, the next
impulses push them apart again, and the alternation converges only linearly: 16-23 rounds per
step in ``hanging-chain`` before its break (docs/contact-der-speed.md).

Here the projection carries the pressed rows along as constraints of the same Newton step. A row
``k`` is linear in the positions for its fixed normal ``n_k`` and barycentric weights,

    phi_k(x) = n_k . (sum_i wa_ki x_i - sum_i wb_ki x_i),

and a pressed row (accumulated normal impulse ``lambda_k > 0``) holds with equality after the
impulses, so the projection keeps ``phi_k`` at its value on entry while it makes the edges
inextensible, ``C_j = e_j . e_j - ebar_j^2 = 0``. Each iteration is Goldenthal's Newton step on
both sets: with the gradients ``J = [G; N]`` at the current positions,

    [G M^-1 G^T   G M^-1 N^T] [mu ]   [C        ]
    [N M^-1 G^T   N M^-1 N^T] [nu ] = [phi - phi0],     x <- x - M^-1 (G^T mu + N^T nu),

solved through the Schur complement of the edge block, which is (cyclic) tridiagonal per rod:
``S = N M^-1 N^T - B^T A^-1 B`` (``A = G M^-1 G^T``, ``B = G M^-1 N^T``, a few entries per row), a
small dense system (one per call's round, at most :data:`MAX_ROWS` rows). The rows are
inequalities ``phi_k >= phi0_k`` of the first step (:func:`_active_set`): a row whose multiplier
would pull its two sides together (``nu_k > 0``: adhesion) is released and the step solved again
without it, a released row the step would press through is taken back; the later steps keep that
set (a set chosen anew at each step can cycle where a row grazes, and Newton then stalls; a row
left out and pressed through is caught by the alternation's check); nearly redundant rows (the segment pairs around one crossing) are dropped by
the pivots of a Cholesky factorisation with a threshold. The contact part of the move is a normal
impulse ``-nu_k / h`` of row ``k``: it is added to the row's accumulated impulse, so that Coulomb's
bound and later Gauss-Seidel sweeps see it. The velocities get the whole move over ``h``, as in the
plain projection. Rows on obstacles enter with their rod side only.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from ..linalg.tridiagonal import solve_tridiagonal_masked
from .projection import _apply_multipliers, _constraint_matrix, _mark_active, _violation

MAX_ROWS = 96  # pressed rows per projection at most; more: the caller uses the plain projection
PIVOT_DROP = 1e-10  # a Cholesky pivot below this fraction of its diagonal drops a redundant row
COUPLED_FIRST_WORK = 2048  # pressed rows x edges at most for the coupled solve in a round's first alternation
COUPLED_MAX_ITER = 12  # Newton steps at most (4-6 where it converges); then the plain projection finishes
PHI_TOL = 1e-13  # [m] a released row pressed through by more than this is taken back


@njit(**JIT)
def _row_gradient_entries(k, va, vb, wa, wb, vid, wgt):
    """Vertices and signed weights of row ``k`` (side a ``+wa``, side b ``-wb``; an obstacle row has
    side a only) into ``vid`` (4,), ``wgt`` (4,); returns how many."""
    m = 0
    for i in range(2):
        vid[m] = va[k, i]
        wgt[m] = wa[k, i]
        m += 1
    if vb[k, 0] >= 0:
        for i in range(2):
            vid[m] = vb[k, i]
            wgt[m] = -wb[k, i]
            m += 1
    return m


@njit(**JIT)
def _cholesky_drop(S, keep, L):
    """Cholesky ``S = L L^T`` of the rows with ``keep`` true; a row whose pivot falls below
    :data:`PIVOT_DROP` of its diagonal (it depends on the rows before it) gets ``keep`` false."""
    K = S.shape[0]
    for j in range(K):
        for i in range(K):
            L[i, j] = 0.0
    for j in range(K):
        if not keep[j]:
            continue
        d = S[j, j]
        for p in range(j):
            d -= L[j, p] * L[j, p]
        if d <= PIVOT_DROP * S[j, j] or d <= 0.0:
            keep[j] = False
            continue
        ljj = np.sqrt(d)
        L[j, j] = ljj
        for i in range(j + 1, K):
            if not keep[i]:
                continue
            s = S[i, j]
            for p in range(j):
                s -= L[i, p] * L[j, p]
            L[i, j] = s / ljj


@njit(**JIT)
def _cholesky_solve(L, keep, b, out):
    """``out = S^-1 b`` on the kept rows by the factor of :func:`_cholesky_drop`; 0 elsewhere."""
    K = b.shape[0]
    for i in range(K):
        if not keep[i]:
            out[i] = 0.0
            continue
        s = b[i]
        for p in range(i):
            s -= L[i, p] * out[p]
        out[i] = s / L[i, i]
    for i in range(K - 1, -1, -1):
        if not keep[i]:
            continue
        s = out[i]
        for p in range(i + 1, K):
            s -= L[p, i] * out[p]
        out[i] = s / L[i, i]


@njit(**JIT)
def _active_set(S, rc, on, keep, L, nu):
    """The rows' multipliers ``nu`` of one Newton step with the rows as inequalities
    ``phi_k >= phi0_k``: ``S nu = rc`` on the rows ``on`` (those that push, ``nu <= 0``), the others
    at ``nu = 0`` and not pressed through (``rc - S nu >= 0``, the row's ``phi - phi0`` after the
    step). Starts with every row on; releases a pulling row, else takes back the most violated
    one; ``keep`` marks the rows solved for (on and independent, :func:`_cholesky_drop`)."""
    K = S.shape[0]
    for a in range(K):
        on[a] = True
    for _ in range(2 * K + 2):
        for a in range(K):
            keep[a] = on[a]
        _cholesky_drop(S, keep, L)
        _cholesky_solve(L, keep, rc, nu)
        changed = False
        for a in range(K):
            if keep[a] and nu[a] > 0.0:
                on[a] = False
                changed = True
        if changed:
            continue
        worst, back = -PHI_TOL, -1
        for a in range(K):
            if on[a]:
                continue
            d = rc[a]
            for b in range(K):
                d -= S[a, b] * nu[b]
            if d < worst:
                worst, back = d, a
        if back < 0:
            return
        on[back] = True


@njit(**JIT)
def project_keeping_contacts(rods, pressed, va, vb, wa, wb, normal, lam_n, x, v, h, inv_mass, rod_vertex_start,
                             rod_edge_start, rod_closed, edge_rest_length, tol, max_iter, rod_viol):
    """Project the rods ``rods`` (no sliders) onto inextensibility keeping the rows ``pressed``
    (every vertex of each in one of ``rods``, or fixed) at their values on entry (module
    docstring), in place on ``x``; ``v += (x_end - x_start) / h`` on their vertices, and each kept
    row's normal impulse is added to ``lam_n``. ``rod_viol`` (len(rods),) gets each rod's relative
    length violation left. Returns the largest."""
    n_r = rods.shape[0]
    K = pressed.shape[0]
    nv_all = x.shape[0]
    # the edges of the projected rods, one slot each; vertex -> (rod slot, local index)
    slot0 = np.empty(n_r + 1, dtype=np.int64)
    slot0[0] = 0
    for q in range(n_r):
        r = rods[q]
        slot0[q + 1] = slot0[q] + rod_edge_start[r + 1] - rod_edge_start[r]
    E = slot0[n_r]
    vq = np.full(nv_all, -1, dtype=np.int64)
    for q in range(n_r):
        r = rods[q]
        for i in range(rod_vertex_start[r], rod_vertex_start[r + 1]):
            vq[i] = q
    edges = np.empty((E, 3))
    a_diag, a_lower, rhs, y = np.empty(E), np.empty(E), np.empty(E), np.empty(E)
    active = np.empty(E, dtype=np.bool_)
    empty_i, empty_f = np.empty(0, dtype=np.int64), np.empty(0)
    empty_iv, empty_fv = np.empty((0, 2), dtype=np.int64), np.empty((0, 3))
    for q in range(n_r):
        r = rods[q]
        vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
        _mark_active(inv_mass[vs:ve], ve - vs, slot0[q + 1] - slot0[q], empty_i, active[slot0[q]:slot0[q + 1]])
    # the rows' gradients (constant: fixed normals and weights) and N M^-1 N^T
    row_n = np.zeros(K, dtype=np.int64)
    row_v = np.empty((K, 4), dtype=np.int64)
    row_w = np.empty((K, 4))
    phi0 = np.empty(K)
    for a in range(K):
        k = pressed[a]
        row_n[a] = _row_gradient_entries(k, va, vb, wa, wb, row_v[a], row_w[a])
        s = 0.0
        for m in range(row_n[a]):
            i = row_v[a, m]
            s += row_w[a, m] * (normal[k, 0] * x[i, 0] + normal[k, 1] * x[i, 1] + normal[k, 2] * x[i, 2])
        phi0[a] = s
    Ncc = np.zeros((K, K))
    for a in range(K):
        ka = pressed[a]
        for b in range(a, K):
            kb = pressed[b]
            nn = normal[ka, 0] * normal[kb, 0] + normal[ka, 1] * normal[kb, 1] + normal[ka, 2] * normal[kb, 2]
            s = 0.0
            for ma in range(row_n[a]):
                for mb in range(row_n[b]):
                    if row_v[a, ma] == row_v[b, mb]:
                        s += inv_mass[row_v[a, ma]] * row_w[a, ma] * row_w[b, mb]
            Ncc[a, b] = s * nn
            Ncc[b, a] = s * nn
    # positions on entry, to give the velocities the whole move
    n_moved = 0
    for q in range(n_r):
        n_moved += rod_vertex_start[rods[q] + 1] - rod_vertex_start[rods[q]]
    before = np.empty((n_moved, 3))
    o = 0
    for q in range(n_r):
        r = rods[q]
        for i in range(rod_vertex_start[r], rod_vertex_start[r + 1]):
            for c in range(3):
                before[o, c] = x[i, c]
            o += 1
    # B = G M^-1 N^T as up to 8 entries per row: (edge slot, value)
    b_slot = np.empty((K, 8), dtype=np.int64)
    b_val = np.empty((K, 8))
    b_cnt = np.zeros(K, dtype=np.int64)
    Z = np.zeros((E, K))
    S = np.empty((K, K))
    L = np.empty((K, K))
    keep = np.empty(K, dtype=np.bool_)
    on = np.empty(K, dtype=np.bool_)
    rc = np.empty(K)
    nu = np.empty(K)
    col = np.empty(E)
    zcol = np.empty(E)
    worst = 0.0
    for it in range(max_iter + 1):
        worst = 0.0
        for q in range(n_r):
            r = rods[q]
            vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
            es, ee = rod_edge_start[r], rod_edge_start[r + 1]
            s0, s1 = slot0[q], slot0[q + 1]
            rod_viol[q] = _violation(x[vs:ve], rod_closed[r], edge_rest_length[es:ee], active[s0:s1], edges[s0:s1],
                                     rhs[s0:s1])
            worst = max(worst, rod_viol[q])
        if worst <= tol or it == max_iter:
            break
        for q in range(n_r):
            r = rods[q]
            vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
            s0, s1 = slot0[q], slot0[q + 1]
            _constraint_matrix(edges[s0:s1], inv_mass[vs:ve], rod_closed[r], active[s0:s1], empty_fv, empty_f, empty_i,
                               a_diag[s0:s1], a_lower[s0:s1])
            solve_tridiagonal_masked(a_diag[s0:s1], a_lower[s0:s1], rhs[s0:s1], active[s0:s1], rod_closed[r], y[s0:s1])
        # B's entries: edge j's gradient at its first vertex is -2 e_j, at its second +2 e_j
        for a in range(K):
            k = pressed[a]
            cnt = 0
            for m in range(row_n[a]):
                i = row_v[a, m]
                q = vq[i]
                if q < 0 or inv_mass[i] == 0.0:
                    continue
                r = rods[q]
                ne = slot0[q + 1] - slot0[q]
                li = i - rod_vertex_start[r]
                g = inv_mass[i] * row_w[a, m]
                for side in range(2):
                    j = li if side == 0 else li - 1
                    if j < 0:
                        if not rod_closed[r]:
                            continue
                        j += ne
                    if j >= ne:
                        continue
                    e = slot0[q] + j
                    sgn = -2.0 if side == 0 else 2.0
                    val = sgn * g * (edges[e, 0] * normal[k, 0] + edges[e, 1] * normal[k, 1] + edges[e, 2] * normal[k, 2])
                    b_slot[a, cnt] = e
                    b_val[a, cnt] = val
                    cnt += 1
            b_cnt[a] = cnt
        # Z = A^-1 B, column by column on the rods the row touches
        for a in range(K):
            for e in range(E):
                Z[e, a] = 0.0
            for q in range(n_r):
                s0, s1 = slot0[q], slot0[q + 1]
                hit = False
                for m in range(b_cnt[a]):
                    if s0 <= b_slot[a, m] < s1:
                        hit = True
                if not hit:
                    continue
                for e in range(s0, s1):
                    col[e] = 0.0
                for m in range(b_cnt[a]):
                    if s0 <= b_slot[a, m] < s1:
                        col[b_slot[a, m]] += b_val[a, m]
                solve_tridiagonal_masked(a_diag[s0:s1], a_lower[s0:s1], col[s0:s1], active[s0:s1], rod_closed[rods[q]],
                                         zcol[s0:s1])
                for e in range(s0, s1):
                    Z[e, a] = zcol[e]
        # S = N M^-1 N^T - B^T A^-1 B and its right-hand side phi - phi0 - B^T A^-1 C
        for a in range(K):
            k = pressed[a]
            s = -phi0[a]
            for m in range(row_n[a]):
                i = row_v[a, m]
                s += row_w[a, m] * (normal[k, 0] * x[i, 0] + normal[k, 1] * x[i, 1] + normal[k, 2] * x[i, 2])
            for m in range(b_cnt[a]):
                s -= b_val[a, m] * y[b_slot[a, m]]
            rc[a] = s
            for b in range(K):
                t = Ncc[a, b]
                for m in range(b_cnt[a]):
                    t -= b_val[a, m] * Z[b_slot[a, m], b]
                S[a, b] = t
        if it == 0:  # the rows that push, chosen once on the entry's linearisation
            _active_set(S, rc, on, keep, L, nu)
        else:
            for a in range(K):
                keep[a] = on[a]
            _cholesky_drop(S, keep, L)
            _cholesky_solve(L, keep, rc, nu)
        # mu = y - Z nu; move x -= M^-1 (G^T mu + N^T nu)
        for e in range(E):
            s = y[e]
            for a in range(K):
                if nu[a] != 0.0:
                    s -= Z[e, a] * nu[a]
            col[e] = s
        for q in range(n_r):
            r = rods[q]
            vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
            s0, s1 = slot0[q], slot0[q + 1]
            _apply_multipliers(x[vs:ve], inv_mass[vs:ve], edges[s0:s1], col[s0:s1], empty_iv, empty_fv, empty_f,
                               empty_i, empty_f)
        for a in range(K):
            if nu[a] == 0.0:
                continue
            k = pressed[a]
            for m in range(row_n[a]):
                i = row_v[a, m]
                f = inv_mass[i] * row_w[a, m] * nu[a]
                for c in range(3):
                    x[i, c] -= f * normal[k, c]
            lam_n[k] += -nu[a] / h
    inv_h = 1.0 / h
    o = 0
    for q in range(n_r):
        r = rods[q]
        for i in range(rod_vertex_start[r], rod_vertex_start[r + 1]):
            for c in range(3):
                v[i, c] += (x[i, c] - before[o, c]) * inv_h
            o += 1
    return worst


__all__ = ["COUPLED_FIRST_WORK", "COUPLED_MAX_ITER", "MAX_ROWS", "project_keeping_contacts"]
