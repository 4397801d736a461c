"""Semismooth Newton on the contact rows of one cluster: the exact solution of the impulse problem
that projected Gauss-Seidel (:func:`rodlab.der.contact.solve_impulses`) converges to, reached in a
few iterations where Gauss-Seidel crawls (docs/contact-der.md, step 3).

Rows of explicit DER's contact response couple only through the vertices they share (lumped
masses), so the rows fall into independent **clusters** (connected components of "shares a
vertex with nonzero inverse mass"). Within a cluster, the relative velocity of row ``k`` is
affine in the impulses ``P_l`` (3-vectors, N s) of the cluster's rows,

    u_k = u0_k + sum_l C_kl P_l,    C_kl = sum_{i shared} s_ki s_li w_ki w_li / M_i

(``s = +1`` on side a, ``-1`` on side b, ``w`` the barycentric weights): the Delassus operator
of these rows is ``C (x) I_3`` (a scalar coupling per pair of rows, because every row applies a
3-vector through scalar weights). In each row's frame ``(n, t1, t2)`` the unknowns are
``y_k = (lambda_n, lambda_t1, lambda_t2)`` and Gauss-Seidel's fixed point is the root of the
natural map of the Signorini-Coulomb conditions (P. Alart, A. Curnier, "A mixed formulation for
frictional contact problems prone to Newton like solution methods", Comput. Methods Appl. Mech.
Eng. 1991), with ``r_k = 1 / C_kk``:

    F_n = lambda_n - max(0, lambda_n - r_k (u_n - target_k))
    F_t = lambda_t - proj_{|.| <= mu_k max(lambda_n, 0)}(lambda_t - r_k u_t)

(``F = 0``: normal complementarity; sticking with ``u_t = 0`` inside the cone, or sliding on its
edge against the slip). Its generalised Jacobian is piecewise linear; Newton's step is solved by
Gaussian elimination with partial pivoting and damped by backtracking on ``|F|^2``. Redundant
rows (the four segment pairs around one crossing of two links, normals 20-30 degrees apart, the
rows' coupling 0.96-0.998 of the diagonal) make Gauss-Seidel converge at ~0.9 per sweep
(hundreds of sweeps); Newton reaches round-off in 4-10 iterations on them (measured on
``hanging-chain``).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry._vec import JIT


@njit(**JIT)
def contact_clusters(va, vb, weff, inv_mass, n_vertices, cluster_start, cluster_rows):
    """Clusters of the rows (connected through shared vertices with nonzero inverse mass); rows
    with ``weff <= 0`` (every vertex fixed) belong to none. Writes the rows of cluster ``c`` to
    ``cluster_rows[cluster_start[c]:cluster_start[c + 1]]`` in increasing order
    (``cluster_start`` (K + 1,), ``cluster_rows`` (K,)). Returns the number of clusters."""
    K = va.shape[0]
    parent = np.arange(K)
    owner = np.full(n_vertices, -1, dtype=np.int64)
    for k in range(K):
        if weff[k] <= 0.0:
            continue
        for side in range(2):
            if side == 1 and vb[k, 0] < 0:
                break
            for i in range(2):
                vid = va[k, i] if side == 0 else vb[k, i]
                if inv_mass[vid] <= 0.0:
                    continue
                o = owner[vid]
                if o < 0:
                    owner[vid] = k
                    continue
                # union of the roots of k and o (path halving, no recursion)
                a = k
                while parent[a] != a:
                    parent[a] = parent[parent[a]]
                    a = parent[a]
                b = o
                while parent[b] != b:
                    parent[b] = parent[parent[b]]
                    b = parent[b]
                if a != b:
                    parent[max(a, b)] = min(a, b)
    label = np.full(K, -1, dtype=np.int64)
    size = np.zeros(K + 1, dtype=np.int64)
    n = 0
    for k in range(K):
        if weff[k] <= 0.0:
            continue
        a = k
        while parent[a] != a:
            a = parent[a]
        if label[a] < 0:
            label[a] = n
            n += 1
        label[k] = label[a]
        size[label[k] + 1] += 1
    cluster_start[0] = 0
    for c in range(n):
        cluster_start[c + 1] = cluster_start[c] + size[c + 1]
    fill = np.zeros(n, dtype=np.int64)
    for k in range(K):
        c = label[k]
        if c >= 0:
            cluster_rows[cluster_start[c] + fill[c]] = k
            fill[c] += 1
    return n


@njit(inline="always", **JIT)
def _frame(n, E, q):
    """Row frame ``E[q]`` (3, 3), columns ``(n, t1, t2)``: ``t1`` normal to ``n`` and to the
    coordinate axis least aligned with it, ``t2 = n x t1``."""
    if abs(n[0]) < 0.6:
        ax, ay, az = 1.0, 0.0, 0.0
    else:
        ax, ay, az = 0.0, 1.0, 0.0
    t1x = n[1] * az - n[2] * ay
    t1y = n[2] * ax - n[0] * az
    t1z = n[0] * ay - n[1] * ax
    s = 1.0 / math.sqrt(t1x * t1x + t1y * t1y + t1z * t1z)
    t1x, t1y, t1z = t1x * s, t1y * s, t1z * s
    E[q, 0, 0], E[q, 1, 0], E[q, 2, 0] = n[0], n[1], n[2]
    E[q, 0, 1], E[q, 1, 1], E[q, 2, 1] = t1x, t1y, t1z
    E[q, 0, 2] = n[1] * t1z - n[2] * t1y
    E[q, 1, 2] = n[2] * t1x - n[0] * t1z
    E[q, 2, 2] = n[0] * t1y - n[1] * t1x


@njit(**JIT)
def _residual(y, U0, G, glo, ghi, target, r, mu, off, F, J, jacobian, U):
    """The natural map ``F(y)`` (module docstring) of a cluster whose row ``p`` has unknowns
    ``y[off[p]:off[p + 1]]`` (3: normal and tangential; 1: normal only, a frictionless row), and
    with ``jacobian`` an element of its generalised Jacobian in ``J``. Row ``a`` of ``G`` is zero
    outside columns ``glo[a]:ghi[a]`` (the unknowns of the rows that share a vertex with its
    row); ``J`` must be zero on entry (:func:`_solve_band` leaves it so). ``U`` (n,): work array for
    the relative velocities. Returns ``|F|^2``."""
    n = y.shape[0]
    m = off.shape[0] - 1
    for a in range(n):
        U[a] = U0[a]
    for a in range(n):
        for b in range(glo[a], ghi[a]):
            U[a] += G[a, b] * y[b]
    for k in range(m):
        i = off[k]
        rk = r[k]
        un = U[i] - target[k]
        if y[i] - rk * un > 0.0:
            F[i] = rk * un
            if jacobian:
                for b in range(glo[i], ghi[i]):
                    J[i, b] = rk * G[i, b]
        else:
            F[i] = y[i]
            if jacobian:
                J[i, i] = 1.0
        if off[k + 1] - i == 1:
            continue
        rho = mu[k] * max(y[i], 0.0)
        z1 = y[i + 1] - rk * U[i + 1]
        z2 = y[i + 2] - rk * U[i + 2]
        nz = math.sqrt(z1 * z1 + z2 * z2)
        if nz <= rho:
            F[i + 1] = rk * U[i + 1]
            F[i + 2] = rk * U[i + 2]
            if jacobian:
                for b in range(glo[i], ghi[i]):
                    J[i + 1, b] = rk * G[i + 1, b]
                    J[i + 2, b] = rk * G[i + 2, b]
        else:
            h1, h2 = z1 / nz, z2 / nz
            F[i + 1] = y[i + 1] - rho * h1
            F[i + 2] = y[i + 2] - rho * h2
            if jacobian:
                # d(z / |z|) = (I - h h^T) / |z| dz,  dz = dy_t - r dU_t
                c = rho / nz
                p11, p12, p22 = c * (1.0 - h1 * h1), -c * h1 * h2, c * (1.0 - h2 * h2)
                for b in range(glo[i], ghi[i]):
                    dz1 = -rk * G[i + 1, b]
                    dz2 = -rk * G[i + 2, b]
                    if b == i + 1:
                        dz1 += 1.0
                    if b == i + 2:
                        dz2 += 1.0
                    J[i + 1, b] = -(p11 * dz1 + p12 * dz2)
                    J[i + 2, b] = -(p12 * dz1 + p22 * dz2)
                J[i + 1, i + 1] += 1.0
                J[i + 2, i + 2] += 1.0
                if y[i] > 0.0:
                    J[i + 1, i] -= mu[k] * h1
                    J[i + 2, i] -= mu[k] * h2
    s = 0.0
    for a in range(n):
        s += F[a] * F[a]
    return s


@njit(**JIT)
def _solve_dense(A, b):
    """``A d = b`` in place by Gaussian elimination with partial pivoting (``A`` and ``b`` are
    overwritten; ``b`` holds ``d``): :func:`_solve_band` with every row's band the whole row."""
    n = b.shape[0]
    return _solve_band(A, b, np.zeros(n, dtype=np.int64), np.full(n, n, dtype=np.int64),
                       np.empty(4 * n, dtype=np.int64), np.empty(n, dtype=np.bool_))


@njit(**JIT)
def _solve_band(A, b, lo, hi, iwork, free):
    """``A d = b`` in place by Gaussian elimination with partial pivoting, for an ``A`` whose row
    ``i`` is zero outside columns ``lo[i]:hi[i]`` (which hold ``i``); ``b`` gets ``d`` and ``A``
    is left all zero (every entry the elimination may have written is reset), ready for the next
    Jacobian of the same band. A column whose best pivot is below ``1e-12`` of ``A``'s largest
    entry is a free unknown, set to 0: duplicate rows (two segment pairs that meet at one shared
    vertex give the same contact twice) make the Newton system singular, and a pair that has
    passed through gives rows with opposite normals that no impulse satisfies both (an
    inconsistent system); either way the step stays bounded. Returns False when ``A`` is zero or
    not finite. ``iwork`` (4 n,) int64 and ``free`` (n,) bool: work arrays (a Newton solve calls
    this once per iteration: no allocation here).

    Each row's first and last nonzero columns are tracked: a row's fill-in from a pivot row ends
    where the pivot row's nonzeros end (the updates and the back substitution stop there), and no
    row gets an entry left of its first nonzero, so at column ``col`` only the rows up to the
    lowest one whose first nonzero is at or before ``col`` can hold a nonzero in it: the pivot
    search and the updates visit those alone (rows swap only within that bound, so a row below
    it has not moved). The same arithmetic on every entry that can be nonzero, the skipped terms
    being exact zeros (a zero never wins the strict pivot comparison): for a banded system (a
    cluster's rows ordered along the rods: :func:`newton_cluster`) ``O(n w^2)`` for ``w`` nonzeros
    per row instead of ``O(n^3)``, and no ``O(n^2)`` column scans. The entries left of the pivot
    column are never read again and are left until the final reset."""
    n = b.shape[0]
    scale = 0.0
    first, last, start, reach = iwork[:n], iwork[n:2 * n], iwork[2 * n:3 * n], iwork[3 * n:4 * n]
    for i in range(n):
        first[i] = i
        last[i] = i
        reach[i] = -1
        free[i] = False
        for j in range(lo[i], hi[i]):
            a = abs(A[i, j])
            scale = max(scale, a)
            if a != 0.0:
                first[i] = min(first[i], j)
                last[i] = max(last[i], j)
    # every entry a row can hold after the elimination lies in min(first, i) .. last
    for i in range(n):
        start[i] = min(first[i], i)
        reach[first[i]] = max(reach[first[i]], i)
    ok = scale > 0.0 and scale < np.inf
    bottom = -1
    for col in range(n if ok else 0):
        bottom = max(bottom, max(reach[col], col))
        p = col
        best = abs(A[col, col])
        for i in range(col + 1, bottom + 1):
            if abs(A[i, col]) > best:
                best = abs(A[i, col])
                p = i
        if best <= 1e-12 * scale:
            free[col] = True
            continue
        if p != col:
            # columns left of ``col`` are never read again
            for j in range(col, max(last[col], last[p]) + 1):
                A[col, j], A[p, j] = A[p, j], A[col, j]
            b[col], b[p] = b[p], b[col]
            last[col], last[p] = last[p], last[col]
        inv = 1.0 / A[col, col]
        end = last[col] + 1
        for i in range(col + 1, bottom + 1):
            f = A[i, col] * inv
            if f != 0.0:
                for j in range(col + 1, end):
                    A[i, j] -= f * A[col, j]
                b[i] -= f * b[col]
                if last[col] > last[i]:
                    last[i] = last[col]
    for i in range(n - 1, -1, -1):
        if not ok:
            break
        if free[i]:
            b[i] = 0.0
            continue
        s = b[i]
        for j in range(i + 1, last[i] + 1):
            s -= A[i, j] * b[j]
        b[i] = s / A[i, i]
    for i in range(n):
        for j in range(start[i], max(last[i], hi[i] - 1) + 1):
            A[i, j] = 0.0
    return ok


@njit(**JIT)
def _along_rods(rows, va, vb):
    """The rows of a cluster ordered by their smallest vertex id (stable): rows that share a
    vertex then lie close together (a line of contact between two strands: neighbouring rows share
    the vertices of both), so the Newton system is banded (:func:`_solve_dense`)."""
    m = rows.shape[0]
    key = np.empty(m, dtype=np.int64)
    for p in range(m):
        k = rows[p]
        lo = min(va[k, 0], va[k, 1])
        if vb[k, 0] >= 0:
            lo = min(lo, min(vb[k, 0], vb[k, 1]))
        key[p] = lo
    order = _stable_order(key, m)
    out = np.empty(m, dtype=np.int64)
    for p in range(m):
        out[p] = rows[order[p]]
    return out


@njit(**JIT)
def _stable_order(key, n):
    """The stable sorting permutation of ``key[:n]`` (int64): by insertion for up to 32 keys (a
    small cluster: no allocation beyond the result, nothing to do when already sorted), else
    ``np.argsort(kind="mergesort")``; the same permutation either way."""
    if n > 32:
        return np.argsort(key[:n], kind="mergesort")
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = key[i]
        j = i
        while j > 0 and key[order[j - 1]] > k:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    return order


@njit(**JIT)
def _cluster_coupling(rows, va, vb, wa, wb, inv_mass):
    """``C`` (m, m) of the cluster's rows ``rows`` (m,): ``C[p, q]`` the velocity of row ``p``'s
    relative point per unit impulse of row ``q`` [1/kg], ``sum_i s_pi s_qi w_pi w_qi / M_i`` over
    the vertices ``i`` the two rows share (module docstring), found through the rows' vertex slots sorted by vertex
    (``O(m)`` slots, not ``O(m^2)`` row pairs); exactly 0 for rows that share no vertex."""
    m = rows.shape[0]
    vid = np.empty(4 * m, dtype=np.int64)
    wgt = np.empty(4 * m)
    who = np.empty(4 * m, dtype=np.int64)
    ns = 0
    for p in range(m):
        k = rows[p]
        for side in range(2):
            if side == 1 and vb[k, 0] < 0:
                break
            for i in range(2):
                vk = va[k, i] if side == 0 else vb[k, i]
                if inv_mass[vk] == 0.0:
                    continue
                vid[ns] = vk
                wgt[ns] = wa[k, i] if side == 0 else -wb[k, i]
                who[ns] = p
                ns += 1
    order = _stable_order(vid, ns)
    C = np.zeros((m, m))
    g0 = 0
    while g0 < ns:
        g1 = g0 + 1
        while g1 < ns and vid[order[g1]] == vid[order[g0]]:
            g1 += 1
        im = inv_mass[vid[order[g0]]]
        for a in range(g0, g1):
            sa = order[a]
            for b in range(g0, g1):
                sb = order[b]
                C[who[sa], who[sb]] += wgt[sa] * wgt[sb] * im
        g0 = g1
    return C


@njit(**JIT)
def newton_cluster(rows, va, vb, wa, wb, normal, target, mu, inv_mass, v, lam_n, lam_t, max_iter, tolerance, travel):
    """Semismooth Newton (module docstring) on the rows ``rows`` (m,) of one cluster, from their
    accumulated impulses ``lam_n`` (K,), ``lam_t`` (K, 3) [N s]; the impulses' change is applied
    to ``v`` (N, 3) [m/s] through the lumped masses (as :func:`rodlab.der.contact.solve_impulses`
    does) and the impulses are updated in place. A frictionless row (``mu = 0``: no tangential
    impulse, Gauss-Seidel's and its own) has its normal impulse as its only unknown. Stops when
    every row's residual, as a velocity (``C_kk |F_k|``), is at most ``tolerance`` [m/s], after
    ``max_iter`` iterations, or when the damped step makes no progress (a singular Jacobian, or
    no decrease of ``|F|^2``): the iterate reached is kept (each accepted step decreases
    ``|F|^2``). ``travel`` (K,) accumulates the size of each row's applied impulse change (the sum
    of its components' magnitudes [N s], as :func:`rodlab.der.contact.gauss_seidel` counts it).
    Returns the iterations."""
    rows = _along_rods(rows, va, vb)
    m = rows.shape[0]
    off = np.empty(m + 1, dtype=np.int64)
    off[0] = 0
    for p in range(m):
        off[p + 1] = off[p] + (3 if mu[rows[p]] > 0.0 else 1)
    n = off[m]
    # work arrays, as views of two buffers (a chain step makes ~40 small solves: one allocation each)
    fw = np.empty(12 * m + 8 * n + 6)
    E = fw[:9 * m].reshape((m, 3, 3))
    r, tg, mus = fw[9 * m:10 * m], fw[10 * m:11 * m], fw[11 * m:12 * m]
    o = 12 * m
    y, y0, U0, F = fw[o:o + n], fw[o + n:o + 2 * n], fw[o + 2 * n:o + 3 * n], fw[o + 3 * n:o + 4 * n]
    F2, trial, d, U = fw[o + 4 * n:o + 5 * n], fw[o + 5 * n:o + 6 * n], fw[o + 6 * n:o + 7 * n], fw[o + 7 * n:o + 8 * n]
    u, j = fw[o + 8 * n:o + 8 * n + 3], fw[o + 8 * n + 3:o + 8 * n + 6]
    iw = np.empty(6 * n, dtype=np.int64)
    # the unknowns each unknown's row couples to: those of rows lo[p]..hi[p] (the rows sharing a vertex)
    glo, ghi, iwork = iw[:n], iw[n:2 * n], iw[2 * n:]
    free = np.empty(n, dtype=np.bool_)
    C = _cluster_coupling(rows, va, vb, wa, wb, inv_mass)
    for p in range(m):
        k = rows[p]
        _frame(normal[k], E, p)
        r[p] = 1.0 / C[p, p]
        tg[p] = target[k]
        mus[p] = mu[k]
        lo, hi = p, p
        for q in range(m):
            if C[p, q] != 0.0:
                lo = min(lo, q)
                hi = max(hi, q)
        for a in range(off[p], off[p + 1]):
            glo[a] = off[lo]
            ghi[a] = off[hi + 1]
    # G: the coupling in the rows' frames, (E_p^T E_q) C_pq
    G = np.zeros((n, n))
    for p in range(m):
        for q in range(m):
            if C[p, q] == 0.0:
                continue
            for a in range(off[p + 1] - off[p]):
                for b in range(off[q + 1] - off[q]):
                    dot = E[p, 0, a] * E[q, 0, b] + E[p, 1, a] * E[q, 1, b] + E[p, 2, a] * E[q, 2, b]
                    G[off[p] + a, off[q] + b] = C[p, q] * dot
    # start: the accumulated impulses in the rows' frames; U0 the relative velocities without them
    for p in range(m):
        k = rows[p]
        for c in range(3):
            u[c] = wa[k, 0] * v[va[k, 0], c] + wa[k, 1] * v[va[k, 1], c]
            if vb[k, 0] >= 0:
                u[c] -= wb[k, 0] * v[vb[k, 0], c] + wb[k, 1] * v[vb[k, 1], c]
        for a in range(off[p + 1] - off[p]):
            y[off[p] + a] = lam_n[k] if a == 0 else (lam_t[k, 0] * E[p, 0, a] + lam_t[k, 1] * E[p, 1, a]
                                                     + lam_t[k, 2] * E[p, 2, a])
            U0[off[p] + a] = u[0] * E[p, 0, a] + u[1] * E[p, 1, a] + u[2] * E[p, 2, a]
    for a in range(n):
        y0[a] = y[a]
    for a in range(n):
        s = 0.0
        for b in range(glo[a], ghi[a]):
            s += G[a, b] * y[b]
        U0[a] -= s
    J = np.zeros((n, n))  # zero outside each row's band; _solve_band leaves it zero
    it = 0
    merit = _residual(y, U0, G, glo, ghi, tg, r, mus, off, F, J, True, U)
    while it < max_iter:
        worst = 0.0
        for p in range(m):
            for a in range(off[p], off[p + 1]):
                worst = max(worst, abs(F[a]) * C[p, p])
        if worst <= tolerance:
            break
        it += 1
        for a in range(n):
            d[a] = -F[a]
        if not _solve_band(J, d, glo, ghi, iwork, free):
            break
        step = 1.0
        accepted = False
        while step >= 1e-6:
            for a in range(n):
                trial[a] = y[a] + step * d[a]
            m2 = _residual(trial, U0, G, glo, ghi, tg, r, mus, off, F2, J, False, U)
            if m2 <= (1.0 - 1e-4 * step) * merit:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        for a in range(n):
            y[a] = trial[a]
        merit = _residual(y, U0, G, glo, ghi, tg, r, mus, off, F, J, True, U)
    # the impulses' change, applied through the lumped masses; the impulses written back
    for p in range(m):
        k = rows[p]
        i = off[p]
        dim = off[p + 1] - i
        for c in range(3):
            j[c] = E[p, c, 0] * (y[i] - y0[i])
            if dim == 3:
                j[c] += E[p, c, 1] * (y[i + 1] - y0[i + 1]) + E[p, c, 2] * (y[i + 2] - y0[i + 2])
        lam_n[k] = y[i]
        if dim == 3:
            for c in range(3):
                lam_t[k, c] = E[p, c, 1] * y[i + 1] + E[p, c, 2] * y[i + 2]
        apply_impulse(k, v, inv_mass, va, vb, wa, wb, j)
        travel[k] += abs(j[0]) + abs(j[1]) + abs(j[2])
    return it


@njit(inline="always", **JIT)
def apply_impulse(k, v, inv_mass, va, vb, wa, wb, j):
    """Row ``k``'s impulse ``j`` [N s] on the velocities of its two segments through the lumped
    masses and barycentric weights: ``+j`` on side a, ``-j`` on side b (absent for an obstacle row,
    ``vb[k, 0] < 0``)."""
    for i in range(2):
        ia = va[k, i]
        sa = inv_mass[ia] * wa[k, i]
        for c in range(3):
            v[ia, c] += sa * j[c]
        if vb[k, 0] >= 0:
            ib = vb[k, i]
            sb = inv_mass[ib] * wb[k, i]
            for c in range(3):
                v[ib, c] -= sb * j[c]


__all__ = ["contact_clusters", "newton_cluster"]
