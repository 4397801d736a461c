"""The active-set QP of the compact contact world (Zhao et al., "Efficient and Stable Simulation
of Inextensible Cosserat Rods by a Compact Representation", CGF 2024, Alg. 2 and Eq. 14) as one
compiled call.

The QP of one SQP iteration of :class:`rodlab.compact.contact_world.WorldContactSolver`,

    min 1/2 d^T A d + b^T d   s.t.   C_k + G_k d >= 0 (inequality rows),  = 0 (the last n_eq rows),

is solved by a primal active set with step control (Nocedal and Wright, "Numerical Optimization",
2006, Alg. 16.3): the working set ``W`` starts from the last step's active rows, the equality rows
and every violated or touching row; each equality sub-problem is the Schur
complement of Eq. 14, ``(G A^-1 G^T) lambda = -(G z + c)``, ``z = -A^-1 b``, ``d = z + A^-1 G^T
lambda``; a step is cut at the first row outside ``W`` it runs into, which enters ``W`` unless it
is linearly dependent on ``W`` (rows of one touching point: a crossing near a vertex makes two to
four nearly equal rows), in which case it is skipped while ``W`` keeps it or exchanged for a row
of ``W`` (Goldfarb and Idnani 1983), so the Schur complement stays non-singular; an inequality row
with a negative multiplier leaves it. ``A`` is block-diagonal over rods, so ``A^-1 g`` is one PCG solve
(:func:`rodlab.compact.pcg.pcg_solve`) per rod that ``g`` touches; a row's column
``(grad_s C_k, A^-1 grad_s C_k)`` is computed once per QP when the row first enters ``W``, and the
Schur entries ``G_i . A^-1 G_j^T`` and ``G_i . z`` once per pair (they do not depend on ``W``).

Every rod's arrays live in flat world arrays (:class:`WorldArrays`): rod ``r`` owns vertices
``vstart[r] : vstart[r + 1]`` and edges ``vstart[r] - r : vstart[r + 1] - r - 1``, and its
:class:`rodlab.compact.sqp.Workspace` holds views of them, so the kernels slice them without
copies.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from .chain import jac_mul, jac_t_mul
from .pcg import pcg_solve

# counters of one QP, ``counts`` (int64, 6): PCG iterations, linear solves, QP iterations, PCG failures,
# dependent blocking rows exchanged for a working-set row, and found redundant (``world_qp``)
C_PCG, C_SOLVES, C_QP, C_FAIL, C_EXCHANGE, C_REDUNDANT = 0, 1, 2, 3, 4, 5

DEPENDENCE_TOL = 1e-6
"""A row whose Schur pivot against the working set is below this fraction of its own diagonal
``G_k A^-1 G_k^T`` (the squared sine of its angle to the working set's span in the ``A^-1`` inner
product) counts as linearly dependent on the working set (:func:`_dependence`)."""


@njit(**JIT)
def _reset_skip(skip, inW):
    """``skip = inW``: after the working set lost a row, no row counts as redundant any more."""
    for k in range(inW.shape[0]):
        skip[k] = inW[k]


class WorldArrays:
    """Flat world arrays of the rods' Jacobians, Hessian blocks, preconditioners and Dirichlet masks;
    each rod's workspace (``sol.ws``) and mask (``sol.free``) are rebound to views of them.

    ``solvers``: one :class:`rodlab.compact.active_set.ConstrainedSolver` per rod, in world order
    (open rods: ``m = n - 1`` edges). The per-rod PCG options become arrays (``kind``, ``rtol``,
    ``atol``, ``maxiter``)."""

    def __init__(self, solvers, vstart):
        self.vstart = np.ascontiguousarray(vstart, dtype=np.int64)
        R = len(solvers)
        N = int(self.vstart[-1])
        for r, sol in enumerate(solvers):
            n = int(self.vstart[r + 1] - self.vstart[r])
            if sol.model.n != n or sol.model.m != n - 1:
                raise ValueError(f"rod {r}: the solver has {sol.model.n} vertices, {sol.model.m} edges; the world {n}")
        # each rod's preconditioner factor (L: dense Cholesky, the exact one's blocks, or 1 x 1)
        self.lshape = np.array([sol.ws.L.shape for sol in solvers], dtype=np.int64).reshape(-1, 2)
        self.lstart = np.concatenate([[0], np.cumsum(self.lshape[:, 0] * self.lshape[:, 1])]).astype(np.int64)
        z = np.zeros
        self.Dj, self.Qj = z((N - R, 3, 3)), z((N - R, 4, 3))
        self.Bo, self.W = z((N - R, 3, 3)), z((N - R, 3, 3))
        self.Hp, self.Bd, self.sinv, self.free = z(N), z((N, 3, 3)), z((N, 3, 3)), z((N, 3))
        self.L = z(int(self.lstart[-1]))
        for r, sol in enumerate(solvers):
            v0, v1 = int(self.vstart[r]), int(self.vstart[r + 1])
            e0, e1 = v0 - r, v1 - r - 1
            ws = sol.ws
            for name, lo, hi in (("Dj", e0, e1), ("Qj", e0, e1), ("Bo", e0, e1), ("W", e0, e1), ("Hp", v0, v1),
                                 ("Bd", v0, v1), ("sinv", v0, v1)):
                view = getattr(self, name)[lo:hi]
                view[...] = getattr(ws, name)
                setattr(ws, name, view)
            lv = self.L[int(self.lstart[r]):int(self.lstart[r + 1])].reshape(ws.L.shape)
            lv[...] = ws.L
            ws.L = lv
            fv = self.free[v0:v1]
            fv[...] = sol.free
            sol.free = fv
        self.kind = np.array([sol.kind for sol in solvers], dtype=np.int64)
        self.rtol = np.array([sol.options.pcg_rtol for sol in solvers], dtype=float)
        self.atol = np.array([sol.options.pcg_atol for sol in solvers], dtype=float)
        self.maxiter = np.array([sol.options.pcg_maxiter for sol in solvers], dtype=np.int64)

    def args(self):
        """The arrays every kernel of this module takes, in order."""
        return (self.vstart, self.Dj, self.Qj, self.Hp, self.Bd, self.Bo, self.free, self.sinv, self.W, self.L,
                self.lstart, self.lshape, self.kind, self.rtol, self.atol, self.maxiter)


@njit(**JIT)
def _zero_rows(a, lo, hi):
    """``a[lo:hi] = 0`` for an (N, 3) array."""
    for j in range(lo, hi):
        a[j, 0] = 0.0
        a[j, 1] = 0.0
        a[j, 2] = 0.0


@njit(**JIT)
def rods_solve(rhs, out, touched, vstart, Dj, Qj, Hp, Bd, Bo, free, sinv, W, L, lstart, lshape, kind, rtol, atol,
               maxiter, scratch, counts):
    """``out = A^-1 rhs`` (N, 3), one PCG solve per rod with ``touched[r]`` (the others: 0).
    ``scratch`` (7, N, 3); ``counts`` gets the PCG iterations, solves and failures."""
    R = vstart.shape[0] - 1
    for r in range(R):
        v0, v1 = vstart[r], vstart[r + 1]
        if not touched[r]:
            _zero_rows(out, v0, v1)
            continue
        e0, e1 = v0 - r, v1 - r - 1
        it, res, ok = pcg_solve(Dj[e0:e1], Hp[v0:v1], Bd[v0:v1], Bo[e0:e1], free[v0:v1], kind[r], sinv[v0:v1],
                                W[e0:e1], L[lstart[r]:lstart[r + 1]].reshape((lshape[r, 0], lshape[r, 1])),
                                rhs[v0:v1], out[v0:v1],
                                rtol[r], atol[r], maxiter[r], scratch[0, v0:v1], scratch[1, v0:v1], scratch[2, v0:v1],
                                scratch[3, v0:v1], scratch[4, v0:v1], scratch[5, v0:v1], scratch[6, v0:v1])
        counts[C_PCG] += it
        counts[C_SOLVES] += 1
        if not ok:
            counts[C_FAIL] += 1


@njit(**JIT)
def row_gradient(verts, coef, vstart, Dj, Qj, free, yp, yq, g, touched):
    """``g = grad_s C`` (N, 3) of one row ``C = sum_v coef[v] . x[verts[v]] - delta`` (``verts``
    (4,), ``coef`` (4, 3)): ``J^T`` of the row's vertex gradient per rod it touches (O(n)),
    Dirichlet-projected; ``touched`` (R,) bool gets the rods whose vertex gradient is not zero.
    ``yp`` (N, 3) and ``yq`` (N - R, 4) scratch (``yq`` stays zero)."""
    _zero_rows(yp, 0, yp.shape[0])
    for v in range(verts.shape[0]):
        for c in range(3):
            yp[verts[v], c] += coef[v, c]
    R = vstart.shape[0] - 1
    for r in range(R):
        v0, v1 = vstart[r], vstart[r + 1]
        any_nz = False
        for j in range(v0, v1):
            if yp[j, 0] != 0.0 or yp[j, 1] != 0.0 or yp[j, 2] != 0.0:
                any_nz = True
                break
        touched[r] = any_nz
        if not any_nz:
            _zero_rows(g, v0, v1)
            continue
        e0, e1 = v0 - r, v1 - r - 1
        jac_t_mul(Dj[e0:e1], Qj[e0:e1], yp[v0:v1], yq[e0:e1], g[v0:v1])
        for j in range(v0, v1):
            for c in range(3):
                g[j, c] = g[j, c] * free[j, c]


@njit(**JIT)
def rods_jac_mul(vstart, Dj, Qj, d, out, tq):
    """``out = J_p d`` (N, 3): every rod's vertex motion for a step ``d`` (N, 3) of its coordinates."""
    R = vstart.shape[0] - 1
    for r in range(R):
        v0, v1 = vstart[r], vstart[r + 1]
        e0, e1 = v0 - r, v1 - r - 1
        jac_mul(Dj[e0:e1], Qj[e0:e1], d[v0:v1], out[v0:v1], tq[e0:e1])


@njit(**JIT)
def _flat_dot(a, b):
    """``a . b`` of two (N, 3) arrays, summed in memory order."""
    acc = 0.0
    for j in range(a.shape[0]):
        for c in range(3):
            acc += a[j, c] * b[j, c]
    return acc


@njit(**JIT)
def min_norm_solve(S, rhs, rcond):
    """Least-squares multipliers of minimum norm for a symmetric positive semi-definite ``S``:
    eigen-directions below ``rcond`` times the largest eigenvalue are dropped (stick rows make
    many rows dependent; :mod:`rodlab.compact.friction`)."""
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    top = max(w[-1], 1e-300)
    k = S.shape[0]
    out = np.zeros(k)
    for e in range(k):
        if w[e] > rcond * top:
            proj = 0.0
            for i in range(k):
                proj += V[i, e] * rhs[i]
            proj /= w[e]
            for i in range(k):
                out[i] += V[i, e] * proj
    return out


@njit(**JIT)
def schur_multipliers(S, rhs, min_norm):
    """Multipliers of the Schur system ``S lambda = rhs`` (Eq. 14), ``S`` overwritten: the minimum-
    norm solution (``min_norm``: with stick rows) or the solution of ``S + eps I`` with the relative
    Tikhonov shift ``eps = 1e-9 max|diag S|`` that splits the multiplier of dependent rows (a
    crossing at a vertex makes two to four equal rows). Non-finite input gives NaN multipliers."""
    k = S.shape[0]
    for i in range(k):
        if not np.isfinite(rhs[i]):
            return np.full(k, np.nan)
        for j in range(k):
            if not np.isfinite(S[i, j]):
                return np.full(k, np.nan)
    if min_norm:
        return min_norm_solve(S, rhs, 1e-10)
    top = 0.0
    for i in range(k):
        top = max(top, abs(S[i, i]))
    shift = 1e-9 * top + 1e-300
    for i in range(k):
        S[i, i] += shift
    try:
        return np.linalg.solve(S, rhs)
    except Exception:  # exactly singular: the least-squares solution of minimum norm
        return min_norm_solve(S, rhs, 2.220446049250313e-16 * k)


@njit(**JIT)
def _ratio_test(verts, coef, cvals, skip, jd, jp):
    """The first row outside the working set (``skip`` false) that the step ``jp`` (vertex motion,
    from the current ``jd``) runs into: (fraction of the step, row), (1.0, -1) when none blocks it."""
    alpha, block = 1.0, -1
    best = np.inf
    for k in range(cvals.shape[0]):
        if skip[k]:
            continue
        rate = 0.0
        for v in range(4):
            for c in range(3):
                rate += coef[k, v, c] * jp[verts[k, v], c]
        if not rate < 0.0:
            continue
        at = cvals[k]
        for v in range(4):
            for c in range(3):
                at += coef[k, v, c] * jd[verts[k, v], c]
        ratio = max(at, 0.0) / -rate
        if ratio < best:
            best, block = ratio, k
    if block >= 0 and best < 1.0:
        return best, block
    return alpha, -1


@njit(**JIT)
def _drop_row(W, nW, lam, n_in, pinned):
    """Position in ``W[:nW]`` of the inequality row (not pinned) with the most negative multiplier
    below ``-1e-12 (1 + max|lambda|)``, or -1."""
    pos = -1
    for i in range(nW):
        k = W[i]
        if k < n_in and not pinned[k] and (pos < 0 or lam[i] < lam[pos]):
            pos = i
    if pos < 0:
        return -1
    top = 0.0
    for i in range(lam.shape[0]):
        top = max(top, abs(lam[i]))
    if lam[pos] < -1e-12 * (1.0 + top):
        return pos
    return -1


@njit(**JIT)
def _grown(G, Y, Gz, Scache, known, used, cap):
    """The column store with room for ``cap`` rows, the first ``used`` copied."""
    N = G.shape[1]
    G2, Y2, Gz2 = np.empty((cap, N, 3)), np.empty((cap, N, 3)), np.empty(cap)
    S2, known2 = np.empty((cap, cap)), np.zeros((cap, cap), dtype=np.bool_)
    for i in range(used):
        Gz2[i] = Gz[i]
        for j in range(N):
            for c in range(3):
                G2[i, j, c] = G[i, j, c]
                Y2[i, j, c] = Y[i, j, c]
        for j in range(used):
            S2[i, j] = Scache[i, j]
            known2[i, j] = known[i, j]
    return G2, Y2, Gz2, S2, known2


@njit(**JIT)
def _fill_column(k, at, verts, coef, z, G, Y, Gz, yp, yq, touched, scratch, counts, vstart, Dj, Qj, Hp, Bd, Bo, free,
                 sinv, Wp, L, lstart, lshape, kind, rtol, atol, maxiter):
    """Column slot ``at`` of row ``k``: ``G[at] = grad_s C_k``, ``Y[at] = A^-1 G[at]`` (one PCG
    solve per rod the row touches) and ``Gz[at] = G[at] . z``."""
    row_gradient(verts[k], coef[k], vstart, Dj, Qj, free, yp, yq, G[at], touched)
    rods_solve(G[at], Y[at], touched, vstart, Dj, Qj, Hp, Bd, Bo, free, sinv, Wp, L, lstart, lshape, kind, rtol, atol,
               maxiter, scratch, counts)
    Gz[at] = _flat_dot(G[at], z)


@njit(**JIT)
def _schur_entry(G, Y, Scache, known, si, sj):
    """``G_si . A^-1 G_sj^T``, computed once per pair of column slots and kept."""
    if not known[si, sj]:
        Scache[si, sj] = _flat_dot(G[si], Y[sj])
        known[si, sj] = True
    return Scache[si, sj]


@njit(**JIT)
def _dependence(W, nW, slot, G, Y, Scache, known, sk, tol):
    """Whether the row of column slot ``sk`` is linearly dependent on the working set ``W[:nW]``,
    and its coefficients ``c`` (nW,) on the working set's rows.

    Its Schur pivot ``S_kk - S_kW S_WW^-1 S_Wk`` (the squared distance of ``a_k`` from the span of
    the working set's rows in the ``A^-1`` inner product) at most ``tol S_kk`` makes it dependent:
    ``a_k = sum_i c_i a_i`` with ``c = S_WW^-1 S_Wk`` to that tolerance. Appending such a row would
    leave the Schur complement singular, with multipliers growing like ``1 / pivot`` whenever the
    rows' values disagree (``S_WW`` gets the shift of :func:`schur_multipliers`)."""
    c = np.zeros(nW)
    if nW == 0:
        return False, c
    skk = _schur_entry(G, Y, Scache, known, sk, sk)
    if not skk > 0.0:
        return False, c
    Sw = np.empty((nW, nW))
    swk = np.empty(nW)
    top = 0.0
    for i in range(nW):
        si = slot[W[i]]
        for j in range(nW):
            Sw[i, j] = _schur_entry(G, Y, Scache, known, si, slot[W[j]])
        swk[i] = _schur_entry(G, Y, Scache, known, si, sk)
        top = max(top, abs(Sw[i, i]))
    shift = 1e-9 * top + 1e-300
    for i in range(nW):
        Sw[i, i] += shift
    try:
        c = np.linalg.solve(Sw, swk)
    except Exception:  # an exactly singular working set: no test
        return False, np.zeros(nW)
    pivot = skk
    for i in range(nW):
        pivot -= swk[i] * c[i]
    return pivot <= tol * skk, c


@njit(**JIT)
def _exchange_position(W, nW, c, lam, n_in, pinned):
    """The working-set row a dependent blocking row ``a_k = sum_i c_i a_i`` replaces (Goldfarb and
    Idnani, "A numerically stable dual method for solving strictly convex quadratic programs",
    Math. Programming 27, 1983, Sec. 3, the dependent case): among the inequality rows that may
    leave (not pinned) with ``c_j > 0``, the one minimising ``lambda_j / c_j``, whose multiplier
    the new row takes over first; -1 when there is none (the new row opposes the working set).
    The working set keeps its span and stays independent, and row ``j`` holds at the next
    solution: ``a_j d = (a_k d - sum_(i != j) c_i a_i d) / c_j`` is above ``-C_j`` exactly when the
    new row is the tighter one (``C_k < sum_i c_i C_i``), the case in which it is exchanged."""
    cmax = 0.0
    for i in range(nW):
        cmax = max(cmax, abs(c[i]))
    pos = -1
    best = np.inf
    for i in range(nW):
        k = W[i]
        if k >= n_in or pinned[k] or not c[i] > 1e-12 * cmax:
            continue
        ratio = lam[i] / c[i] if i < lam.shape[0] else 0.0
        if ratio < best:
            best, pos = ratio, i
    return pos


@njit(**JIT)
def _row_at(verts, coef, cvals, k, jd):
    """Row ``k``'s linearised value ``C_k + a_k . d`` at the vertex motion ``jd`` of the step."""
    at = cvals[k]
    for v in range(4):
        for c in range(3):
            at += coef[k, v, c] * jd[verts[k, v], c]
    return at


@njit(**JIT)
def world_qp(b, verts, coef, cvals, start, n_eq, pinned, min_norm, max_qp, dep_tol, redundant_tol,
             vstart, Dj, Qj, Hp, Bd, Bo, free, sinv, Wp, L, lstart, lshape, kind, rtol, atol, maxiter, d, g_lam, counts):
    """One QP of the SQP (module docstring) in one call. ``b`` (N, 3) the objective's gradient;
    rows ``verts`` (K, 4), ``coef`` (K, 4, 3), ``cvals`` (K,) [m], the last ``n_eq`` equality rows;
    ``start`` (K,) bool the rows that start in the working set besides the violated or touching
    ones and the equality rows; ``pinned`` (K,) bool inequality rows that may not leave it;
    ``min_norm`` minimum-norm multipliers (stick rows present); ``dep_tol`` the relative Schur pivot
    below which a blocking row is dependent on the working set and exchanged for one of its rows
    (:func:`_dependent_exchange`; 0: never). Writes the step ``d`` (N, 3) and ``g_lam = G^T lambda``
    (N, 3); ``counts`` (5,) gets PCG iterations, solves, QP iterations, PCG failures and exchanges.
    Returns (multipliers, working set), in the working set's order."""
    N = b.shape[0]
    R = vstart.shape[0] - 1
    K = cvals.shape[0]
    n_in = K - n_eq
    scratch = np.empty((7, N, 3))
    yp, yq = np.empty((N, 3)), np.zeros((max(N - R, 1), 4))
    touched = np.ones(R, dtype=np.bool_)
    z = np.empty((N, 3))
    neg_b = -b
    rods_solve(neg_b, z, touched, vstart, Dj, Qj, Hp, Bd, Bo, free, sinv, Wp, L, lstart, lshape, kind, rtol, atol,
               maxiter, scratch, counts)
    # working set: positions W[:nW]; columns by slot (slot[k] = -1 until row k first enters W)
    W = np.empty(K, dtype=np.int64)
    inW = np.zeros(K, dtype=np.bool_)
    nW = 0
    for k in range(K):
        if start[k] or cvals[k] <= 0.0 or k >= n_in:
            W[nW] = k
            inW[k] = True
            nW += 1
    skip = inW.copy()  # rows the ratio test skips: the working set and the rows redundant to it
    slot = np.full(K, -1, dtype=np.int64)
    cap = min(K, max(2 * nW, 16))
    G = np.empty((cap, N, 3))
    Y = np.empty((cap, N, 3))
    Gz = np.empty(cap)
    Scache = np.empty((cap, cap))
    known = np.zeros((cap, cap), dtype=np.bool_)
    used = 0
    _zero_rows(d, 0, N)
    jd = np.zeros((N, 3))
    jp = np.empty((N, 3))
    step = np.empty((N, 3))
    tq = np.empty((max(N - R, 1), 4))
    lam = np.zeros(0)
    for _ in range(max_qp):
        counts[C_QP] += 1
        if nW:
            for i in range(nW):  # columns of rows new to W: one PCG solve per rod the row touches
                k = W[i]
                if slot[k] >= 0:
                    continue
                if used == cap:
                    cap = min(K, 2 * cap)
                    G, Y, Gz, Scache, known = _grown(G, Y, Gz, Scache, known, used, cap)
                _fill_column(k, used, verts, coef, z, G, Y, Gz, yp, yq, touched, scratch, counts, vstart, Dj, Qj, Hp,
                             Bd, Bo, free, sinv, Wp, L, lstart, lshape, kind, rtol, atol, maxiter)
                slot[k] = used
                used += 1
            S = np.empty((nW, nW))
            rhs = np.empty(nW)
            for i in range(nW):
                si = slot[W[i]]
                for j in range(nW):
                    S[i, j] = _schur_entry(G, Y, Scache, known, si, slot[W[j]])
                rhs[i] = -(Gz[si] + cvals[W[i]])
            lam = schur_multipliers(S, rhs, min_norm)
            for j in range(N):  # d_eqp - d
                for c in range(3):
                    acc = 0.0
                    for i in range(nW):
                        acc += Y[slot[W[i]], j, c] * lam[i]
                    step[j, c] = z[j, c] + acc - d[j, c]
        else:
            lam = np.zeros(0)
            for j in range(N):
                for c in range(3):
                    step[j, c] = z[j, c] - d[j, c]
        alpha, block = 1.0, -1
        if K:
            rods_jac_mul(vstart, Dj, Qj, step, jp, tq)
            if nW < K:
                alpha, block = _ratio_test(verts, coef, cvals, skip, jd, jp)
        for j in range(N):
            for c in range(3):
                d[j, c] = d[j, c] + alpha * step[j, c]
        if K:
            for j in range(N):
                for c in range(3):
                    jd[j, c] += alpha * jp[j, c]
        if block >= 0:  # the first row the step runs into (Alg. 2: insert)
            dependent, c = False, np.zeros(0)
            if dep_tol > 0.0 and nW:
                if slot[block] < 0:  # its column now, for the dependence test
                    if used == cap:
                        cap = min(K, 2 * cap)
                        G, Y, Gz, Scache, known = _grown(G, Y, Gz, Scache, known, used, cap)
                    _fill_column(block, used, verts, coef, z, G, Y, Gz, yp, yq, touched, scratch, counts, vstart, Dj,
                                 Qj, Hp, Bd, Bo, free, sinv, Wp, L, lstart, lshape, kind, rtol, atol, maxiter)
                    slot[block] = used
                    used += 1
                dependent, c = _dependence(W, nW, slot, G, Y, Scache, known, slot[block], dep_tol)
            if dependent:
                # the row's value at the working set's solution (the rest of this step)
                rate = 0.0
                for v in range(4):
                    for cc in range(3):
                        rate += coef[block, v, cc] * jp[verts[block, v], cc]
                if _row_at(verts, coef, cvals, block, jd) + (1.0 - alpha) * rate >= -redundant_tol:
                    skip[block] = True  # redundant: the working set keeps it (to the tolerance)
                    counts[C_REDUNDANT] += 1
                    continue
                pos = _exchange_position(W, nW, c, lam, n_in, pinned)
                if pos >= 0:  # tighter than the working set's rows it depends on: it takes W[pos]'s place
                    inW[W[pos]] = False
                    W[pos] = block
                    inW[block] = True
                    _reset_skip(skip, inW)
                    counts[C_EXCHANGE] += 1
                    continue
            W[nW] = block
            inW[block] = True
            skip[block] = True
            nW += 1
            continue
        pos = _drop_row(W, nW, lam, n_in, pinned)
        if pos >= 0:  # a row that pulls: remove it (Alg. 2)
            inW[W[pos]] = False
            _reset_skip(skip, inW)  # rows found redundant may no longer be
            for i in range(pos, nW - 1):
                W[i] = W[i + 1]
            nW -= 1
            continue
        break
    _zero_rows(g_lam, 0, N)
    for i in range(min(nW, lam.shape[0])):
        s = slot[W[i]]
        for j in range(N):
            for c in range(3):
                g_lam[j, c] += lam[i] * G[s, j, c]
    return lam, W[:nW].copy()


__all__ = ["DEPENDENCE_TOL", "WorldArrays", "min_norm_solve", "row_gradient", "rods_jac_mul", "rods_solve", "schur_multipliers",
           "world_qp"]
