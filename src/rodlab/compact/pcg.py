"""O(n) products with A = J^T H J and PCG with the preconditioners of Zhao et al. (Sec. 3.2-3.3).

``A`` is never formed (except by the ``direct`` baseline): ``A v = J^T (H (J v))`` is a prefix sum,
a block-tridiagonal product and a suffix sum (Eq. 15-19). Using Eq. 20-21, the production
product splits ``A = J_p^T H_p J_p + B_q``: the first term by a prefix sum, a diagonal scaling and
a suffix sum, the second, ``B_q = J_q^T H_q J_q``, is block-tridiagonal with 3x3 blocks that are
reduced once per Newton iteration (they are the hybrid preconditioner's blocks anyway). The
optional tension stiffness ``G`` (block diagonal) is folded into ``B_q``'s diagonal. Dirichlet conditions on coordinates of
``s`` are eliminated by projection: ``A_F = F A F + (I - F)`` with ``F`` the 0/1 mask of free
coordinates (equivalent to deleting those rows and columns).

Preconditioners (``PRECONDITIONERS``):

* ``none``; ``diagonal`` (diag of A); ``block-diagonal`` (3x3 diagonal blocks of A, as RedMax);
* ``hybrid`` (Eq. 22/23): block diagonal of ``J_p^T H_p J_p`` plus the intact block-tridiagonal
  ``J_q^T H_q J_q``; with ``S_k = sum_{j>=k} h_j`` (Eq. 28) its blocks are
  ``P_00 = S_0 I``, ``P_ii = S_{i+1} Dj_i^T Dj_i + Qj_i^T Hq_ii Qj_i``,
  ``P_i,i+1 = Qj_i^T Hq_i,i+1 Qj_{i+1}``; built and solved (block Thomas) in O(n);
* ``direct``: the dense ``A`` (O(n^2) blocks) and its Cholesky factor, the paper's factorization baseline;
* ``exact``: ``A``'s exact inverse in O(n) by a block-tridiagonal saddle-point system
  (:mod:`rodlab.compact.augmented`, our addition): PCG stops after one iteration (two or three
  where round-off leaves the residual above the tolerance). ``L`` then holds that factor,
  ``(augmented.factor_rows(n), 6)``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_FM
from ..linalg.block_tridiagonal import _inv3_into, block_tridiagonal3_factor, block_tridiagonal3_solve
from .augmented import solve_augmented
from .chain import jac_mul, jac_t_mul

PRECONDITIONERS = {"none": 0, "diagonal": 1, "block-diagonal": 2, "hybrid": 3, "direct": 4, "exact": 5}


@njit(**JIT)
def hess_mul(Hp, Hq_d, Hq_o, vp, vq, out_p, out_q):
    """``H [vp; vq]`` with H = blockdiag(Hp I3, block-tridiagonal Hq) (Eq. 15). O(n)."""
    n = vp.shape[0]
    m = vq.shape[0]
    for j in range(n):
        h = Hp[j]
        out_p[j, 0] = h * vp[j, 0]
        out_p[j, 1] = h * vp[j, 1]
        out_p[j, 2] = h * vp[j, 2]
    for i in range(m):
        for a in range(4):
            acc = 0.0
            for b in range(4):
                acc += Hq_d[i, a, b] * vq[i, b]
            if i + 1 < m:
                for b in range(4):
                    acc += Hq_o[i, a, b] * vq[i + 1, b]
            if i > 0:
                for b in range(4):
                    acc += Hq_o[i - 1, b, a] * vq[i - 1, b]
            out_q[i, a] = acc


@njit(**JIT)
def a_mul_q(Dj, Qj, Hp, Hq_d, Hq_o, free, v, out, tv, tp, tq, yp, yq):
    """Reference ``out = A_F v = F J^T H J F v + (I - F) v`` through x-space (Eq. 19), O(n)."""
    n = v.shape[0]
    for j in range(n):
        for c in range(3):
            tv[j, c] = v[j, c] * free[j, c]
    jac_mul(Dj, Qj, tv, tp, tq)
    hess_mul(Hp, Hq_d, Hq_o, tp, tq, yp, yq)
    jac_t_mul(Dj, Qj, yp, yq, out)
    for j in range(n):
        for c in range(3):
            out[j, c] = out[j, c] * free[j, c] + v[j, c] * (1.0 - free[j, c])


@njit(**JIT)
def reduce_q_blocks(Qj, Hq_d, Hq_o, G, use_g, Bd, Bo):
    """3x3 blocks of ``B_q = J_q^T H_q J_q`` (Eq. 21; block (i+1, i+1) and (i+1, i+2) in s-block
    numbering, block 0 = p_c is zero) plus the block-diagonal ``G`` if ``use_g``. O(n)."""
    m = Qj.shape[0]
    T = np.empty((4, 3))
    for a in range(3):
        for b in range(3):
            Bd[0, a, b] = G[0, a, b] if use_g else 0.0
            Bo[0, a, b] = 0.0
    for i in range(m):
        for r in range(4):
            for b in range(3):
                T[r, b] = Hq_d[i, r, 0] * Qj[i, 0, b] + Hq_d[i, r, 1] * Qj[i, 1, b] + Hq_d[i, r, 2] * Qj[i, 2, b] + Hq_d[i, r, 3] * Qj[i, 3, b]
        for a in range(3):
            for b in range(3):
                Bd[i + 1, a, b] = Qj[i, 0, a] * T[0, b] + Qj[i, 1, a] * T[1, b] + Qj[i, 2, a] * T[2, b] + Qj[i, 3, a] * T[3, b]
                if use_g:
                    Bd[i + 1, a, b] += G[i + 1, a, b]
        if i + 1 < m:
            for r in range(4):
                for b in range(3):
                    T[r, b] = (Hq_o[i, r, 0] * Qj[i + 1, 0, b] + Hq_o[i, r, 1] * Qj[i + 1, 1, b]
                               + Hq_o[i, r, 2] * Qj[i + 1, 2, b] + Hq_o[i, r, 3] * Qj[i + 1, 3, b])
            for a in range(3):
                for b in range(3):
                    Bo[i + 1, a, b] = Qj[i, 0, a] * T[0, b] + Qj[i, 1, a] * T[1, b] + Qj[i, 2, a] * T[2, b] + Qj[i, 3, a] * T[3, b]


@njit(**JIT)
def a_mul(Dj, Hp, Bd, Bo, free, v, out, tv, tp):
    """``out = A_F v`` with ``A = J_p^T H_p J_p + B_q`` (Eq. 18-21): prefix sum, scaling, suffix
    sum and a 3x3 block-tridiagonal product; O(n), no allocation. tv, tp: (n, 3) scratch."""
    n = v.shape[0]
    m = n - 1
    for j in range(n):
        tv[j, 0] = v[j, 0] * free[j, 0]
        tv[j, 1] = v[j, 1] * free[j, 1]
        tv[j, 2] = v[j, 2] * free[j, 2]
    # prefix sum: tp_j = (J_p v)_j, scaled by h_j
    x0 = tv[0, 0]
    x1 = tv[0, 1]
    x2 = tv[0, 2]
    tp[0, 0] = Hp[0] * x0
    tp[0, 1] = Hp[0] * x1
    tp[0, 2] = Hp[0] * x2
    for i in range(m):
        a0 = tv[i + 1, 0]
        a1 = tv[i + 1, 1]
        a2 = tv[i + 1, 2]
        x0 += Dj[i, 0, 0] * a0 + Dj[i, 0, 1] * a1 + Dj[i, 0, 2] * a2
        x1 += Dj[i, 1, 0] * a0 + Dj[i, 1, 1] * a1 + Dj[i, 1, 2] * a2
        x2 += Dj[i, 2, 0] * a0 + Dj[i, 2, 1] * a1 + Dj[i, 2, 2] * a2
        h = Hp[i + 1]
        tp[i + 1, 0] = h * x0
        tp[i + 1, 1] = h * x1
        tp[i + 1, 2] = h * x2
    # suffix sum and D^T, plus B_q v
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for i in range(m - 1, -1, -1):
        s0 += tp[i + 1, 0]
        s1 += tp[i + 1, 1]
        s2 += tp[i + 1, 2]
        b = i + 1
        v0 = tv[b, 0]
        v1 = tv[b, 1]
        v2 = tv[b, 2]
        for c in range(3):
            acc = Dj[i, 0, c] * s0 + Dj[i, 1, c] * s1 + Dj[i, 2, c] * s2
            acc += Bd[b, c, 0] * v0 + Bd[b, c, 1] * v1 + Bd[b, c, 2] * v2
            if b + 1 < n:
                acc += Bo[b, c, 0] * tv[b + 1, 0] + Bo[b, c, 1] * tv[b + 1, 1] + Bo[b, c, 2] * tv[b + 1, 2]
            acc += Bo[b - 1, 0, c] * tv[b - 1, 0] + Bo[b - 1, 1, c] * tv[b - 1, 1] + Bo[b - 1, 2, c] * tv[b - 1, 2]
            out[b, c] = acc
    s0 += tp[0, 0]
    s1 += tp[0, 1]
    s2 += tp[0, 2]
    out[0, 0] = s0 + Bd[0, 0, 0] * tv[0, 0] + Bd[0, 0, 1] * tv[0, 1] + Bd[0, 0, 2] * tv[0, 2]
    out[0, 1] = s1 + Bd[0, 1, 0] * tv[0, 0] + Bd[0, 1, 1] * tv[0, 1] + Bd[0, 1, 2] * tv[0, 2]
    out[0, 2] = s2 + Bd[0, 2, 0] * tv[0, 0] + Bd[0, 2, 1] * tv[0, 1] + Bd[0, 2, 2] * tv[0, 2]
    for j in range(n):
        for c in range(3):
            out[j, c] = out[j, c] * free[j, c] + v[j, c] * (1.0 - free[j, c])


@njit(**JIT)
def build_block_preconditioner(Dj, Hp, Bd, Bo, free, kind, diag, off, suffix):
    """Blocks of the diagonal (kind 1), block-diagonal (2) or hybrid (3) preconditioner
    (Zhao et al., Eq. 22/23/28) into ``diag`` (n,3,3) and ``off`` (n-1,3,3); O(n).
    ``diag[0] = S_0 I``, ``diag[i+1] = S_{i+1} Dj_i^T Dj_i + B_q[i+1, i+1]``,
    ``off[i+1] = B_q[i+1, i+2]`` (hybrid only) with ``S_k = sum_{j>=k} h_j`` (Eq. 28)."""
    n = Hp.shape[0]
    m = n - 1
    acc = 0.0
    for j in range(n - 1, -1, -1):
        acc += Hp[j]
        suffix[j] = acc
    for a in range(3):
        for b in range(3):
            diag[0, a, b] = Bd[0, a, b]
        diag[0, a, a] += suffix[0]
    for i in range(m):
        S = suffix[i + 1]
        for a in range(3):
            for b in range(3):
                diag[i + 1, a, b] = S * (Dj[i, 0, a] * Dj[i, 0, b] + Dj[i, 1, a] * Dj[i, 1, b] + Dj[i, 2, a] * Dj[i, 2, b]) + Bd[i + 1, a, b]
    if kind == 3:
        for k in range(n - 1):
            for a in range(3):
                for b in range(3):
                    off[k, a, b] = Bo[k, a, b]
    if kind == 1:
        for j in range(n):
            for a in range(3):
                for b in range(3):
                    if a != b:
                        diag[j, a, b] = 0.0
    # Dirichlet: identity rows/columns for fixed coordinates
    for j in range(n):
        for a in range(3):
            if free[j, a] == 0.0:
                for b in range(3):
                    diag[j, a, b] = 0.0
                    diag[j, b, a] = 0.0
                    if kind == 3:
                        if j < n - 1:
                            off[j, a, b] = 0.0
                        if j > 0:
                            off[j - 1, b, a] = 0.0
                diag[j, a, a] = 1.0


@njit(**JIT)
def build_dense_a(Dj, Hp, Bd, Bo, free, A, suffix):
    """The dense projected ``A_F`` (3n x 3n), O(n^2): the direct factorization baseline."""
    n = Hp.shape[0]
    m = n - 1
    acc = 0.0
    for j in range(n - 1, -1, -1):
        acc += Hp[j]
        suffix[j] = acc
    A[:, :] = 0.0
    for a in range(3):
        for b in range(3):
            A[a, b] = Bd[0, a, b]
        A[a, a] += suffix[0]
    for k in range(m):
        for a in range(3):
            for c in range(3):
                A[a, 3 * (k + 1) + c] = suffix[k + 1] * Dj[k, a, c]
                A[3 * (k + 1) + c, a] = suffix[k + 1] * Dj[k, a, c]
    for i in range(m):
        for k in range(i, m):
            S = suffix[k + 1]
            for a in range(3):
                for b in range(3):
                    t = S * (Dj[i, 0, a] * Dj[k, 0, b] + Dj[i, 1, a] * Dj[k, 1, b] + Dj[i, 2, a] * Dj[k, 2, b])
                    if k == i:
                        t += Bd[i + 1, a, b]
                    elif k == i + 1:
                        t += Bo[i + 1, a, b]
                    A[3 * (i + 1) + a, 3 * (k + 1) + b] = t
                    A[3 * (k + 1) + b, 3 * (i + 1) + a] = t
    N = 3 * n
    for j in range(n):
        for a in range(3):
            if free[j, a] == 0.0:
                r = 3 * j + a
                for c in range(N):
                    A[r, c] = 0.0
                    A[c, r] = 0.0
                A[r, r] = 1.0


@njit(inline="always", **JIT)
def _factor_once(kind, diag, off, sinv, W):
    n = diag.shape[0]
    if kind == 3:
        return block_tridiagonal3_factor(diag, off, sinv, W) < 0
    ok = True
    for j in range(n):
        if not _inv3_into(diag[j, 0, 0], diag[j, 0, 1], diag[j, 0, 2], diag[j, 1, 1], diag[j, 1, 2], diag[j, 2, 2], sinv[j]):
            ok = False
    return ok


@njit(**JIT)
def _copy_square(src, dst):
    """``dst[:, :] = src`` for two (N, N) arrays, as a loop: an array-to-array slice assignment
    compiles numba's shape-mismatch error path (string formatting, ~1.5 s of cold start)."""
    for i in range(src.shape[0]):
        for k in range(src.shape[1]):
            dst[i, k] = src[i, k]


@njit(inline="always", **JIT)
def factor_preconditioner(kind, diag, off, sinv, W, A, L):
    """Factor the preconditioner (3x3 inverses, block Thomas with ``W_i = S_i^-1 off_i``, or
    dense Cholesky); returns False if it is not positive definite.

    A preconditioner that is SPD in exact arithmetic can fail to factor in floating point when
    its blocks are very ill-conditioned (soft rods at large dt: eigenvalues 1e-12 .. 1e-3 inside
    one 3x3 block). Then ``alpha I`` is added to its diagonal blocks (the paper's remedy in the
    proof of Eq. 26), ``alpha = 1e-12 max|diag|``, growing 100x per retry (at most 5)."""
    n = diag.shape[0]
    if kind == 0:
        return True
    if kind == 4:
        if L is None:  # no dense storage (see rodlab.compact.sqp.prepare_preconditioner)
            return False
        _copy_square(np.linalg.cholesky(A), L)
        return True
    if _factor_once(kind, diag, off, sinv, W):
        return True
    scale = 0.0
    for j in range(n):
        for a in range(3):
            scale = max(scale, abs(diag[j, a, a]))
    alpha = 1e-12 * scale
    added = 0.0
    for _ in range(5):
        for j in range(n):
            for a in range(3):
                diag[j, a, a] += alpha - added
        added = alpha
        if _factor_once(kind, diag, off, sinv, W):
            return True
        alpha *= 100.0
    return False


@njit(inline="always", **JIT)
def apply_preconditioner(kind, sinv, W, r, z, y, L):
    """``z = P^{-1} r`` (``W`` from :func:`factor_preconditioner`, hybrid only; ``L`` the factor
    of ``direct`` or ``exact``)."""
    n = r.shape[0]
    if kind == 0:
        for j in range(n):
            z[j, 0] = r[j, 0]
            z[j, 1] = r[j, 1]
            z[j, 2] = r[j, 2]
    elif kind == 1 or kind == 2:
        for j in range(n):
            r0 = r[j, 0]
            r1 = r[j, 1]
            r2 = r[j, 2]
            z[j, 0] = sinv[j, 0, 0] * r0 + sinv[j, 0, 1] * r1 + sinv[j, 0, 2] * r2
            z[j, 1] = sinv[j, 1, 0] * r0 + sinv[j, 1, 1] * r1 + sinv[j, 1, 2] * r2
            z[j, 2] = sinv[j, 2, 0] * r0 + sinv[j, 2, 1] * r1 + sinv[j, 2, 2] * r2
    elif kind == 3:
        block_tridiagonal3_solve(sinv, W, r, z, y)
    elif L is not None:  # direct or exact (L None: neither is compiled, see pcg_solve)
        if kind == 5:
            solve_augmented(L, r, z, y)
        else:
            N = 3 * n
            yf = y.reshape(N)
            rf = r.reshape(N)
            zf = z.reshape(N)
            for i in range(N):
                acc = rf[i]
                for k in range(i):
                    acc -= L[i, k] * yf[k]
                yf[i] = acc / L[i, i]
            for i in range(N - 1, -1, -1):
                acc = yf[i]
                for k in range(i + 1, N):
                    acc -= L[k, i] * zf[k]
                zf[i] = acc / L[i, i]


@njit(**JIT_FM)
def _dot(a, b):
    """Dot product of two flat arrays; fastmath lets LLVM split the sum over SIMD lanes."""
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@njit(**JIT_FM)
def _update_xr(alpha, d, Ad, x, r):
    """x += alpha d, r -= alpha Ad; returns |r|^2 (one pass)."""
    acc = 0.0
    for i in range(d.shape[0]):
        x[i] += alpha * d[i]
        ri = r[i] - alpha * Ad[i]
        r[i] = ri
        acc += ri * ri
    return acc


@njit(**JIT)
def pcg_solve(Dj, Hp, Bd, Bo, free, kind, sinv, W, L, rhs, x, rtol, atol, maxiter, r, z, d, Ad, tv, tp, y):
    """PCG on ``A_F x = rhs`` from ``x = 0`` (Zhao et al., Sec. 3.1/4: stop when |r|_2 <= max(atol, rtol |rhs|)).
    Returns (iterations, final residual norm, success). ``L``: the factor of ``direct`` or ``exact``,
    or None for the other kinds (a compilation for None holds neither dense solve)."""
    n = rhs.shape[0]
    N = 3 * n
    xf = x.reshape(N)
    rf = r.reshape(N)
    zf = z.reshape(N)
    df = d.reshape(N)
    Af = Ad.reshape(N)
    bf = rhs.reshape(N)
    for i in range(N):
        xf[i] = 0.0
        rf[i] = bf[i]
    bn = np.sqrt(_dot(bf, bf))
    stop = max(atol, rtol * bn)
    if bn <= stop:
        return 0, bn, True
    apply_preconditioner(kind, sinv, W, r, z, y, L)
    for i in range(N):
        df[i] = zf[i]
    rz = _dot(rf, zf)
    rn = bn
    for it in range(1, maxiter + 1):
        a_mul(Dj, Hp, Bd, Bo, free, d, Ad, tv, tp)
        dAd = _dot(df, Af)
        if not dAd > 0.0:
            return it, rn, False
        alpha = rz / dAd
        rn = np.sqrt(_update_xr(alpha, df, Af, xf, rf))
        if rn <= stop:
            return it, rn, True
        apply_preconditioner(kind, sinv, W, r, z, y, L)
        rz_new = _dot(rf, zf)
        beta = rz_new / rz
        rz = rz_new
        for i in range(N):
            df[i] = zf[i] + beta * df[i]
    return maxiter, rn, False
