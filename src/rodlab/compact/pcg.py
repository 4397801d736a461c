"""O(n) products with A = J^T H J and PCG with the preconditioners of Zhao et al. (Sec. 3.2-3.3).

``A`` is never formed (except by the ``direct`` baseline): ``A v = J^T (H (J v))`` is a prefix sum,
a block-tridiagonal product and a suffix sum (Eq. 15-19). Dirichlet conditions on coordinates of
``s`` are eliminated by projection: ``A_F = F A F + (I - F)`` with ``F`` the 0/1 mask of free
coordinates (equivalent to deleting those rows and columns).

Preconditioners (``PRECONDITIONERS``):

* ``none``; ``diagonal`` (diag of A); ``block-diagonal`` (3x3 diagonal blocks of A, as RedMax);
* ``hybrid`` (Eq. 22/23): block diagonal of ``J_p^T H_p J_p`` plus the intact block-tridiagonal
  ``J_q^T H_q J_q``; with ``S_k = sum_{j>=k} h_j`` (Eq. 28) its blocks are
  ``P_00 = S_0 I``, ``P_ii = S_{i+1} Dj_i^T Dj_i + Qj_i^T Hq_ii Qj_i``,
  ``P_i,i+1 = Qj_i^T Hq_i,i+1 Qj_{i+1}``; built and solved (block Thomas) in O(n);
* ``direct``: the dense ``A`` (O(n^2) blocks) and its Cholesky factor, the paper's factorization baseline.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..linalg.block_tridiagonal import block_tridiagonal_factor, block_tridiagonal_solve, invert_spd_small
from .chain import jac_mul, jac_t_mul

JIT = dict(cache=True, error_model="numpy")

PRECONDITIONERS = {"none": 0, "diagonal": 1, "block-diagonal": 2, "hybrid": 3, "direct": 4}


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
def a_mul(Dj, Qj, Hp, Hq_d, Hq_o, G, use_g, free, v, out, tv, tp, tq, yp, yq):
    """``out = A_F v`` (projected ``J^T H J``, Eq. 19, plus the optional block-diagonal ``G``) in O(n);
    tv (n,3), tp/yp (n,3), tq/yq (m,4) scratch."""
    n = v.shape[0]
    for j in range(n):
        for c in range(3):
            tv[j, c] = v[j, c] * free[j, c]
    jac_mul(Dj, Qj, tv, tp, tq)
    hess_mul(Hp, Hq_d, Hq_o, tp, tq, yp, yq)
    jac_t_mul(Dj, Qj, yp, yq, out)
    if use_g:
        for j in range(n):
            for a in range(3):
                out[j, a] += G[j, a, 0] * tv[j, 0] + G[j, a, 1] * tv[j, 1] + G[j, a, 2] * tv[j, 2]
    for j in range(n):
        for c in range(3):
            out[j, c] = out[j, c] * free[j, c] + v[j, c] * (1.0 - free[j, c])


@njit(**JIT)
def build_block_preconditioner(Dj, Qj, Hp, Hq_d, Hq_o, G, use_g, free, kind, diag, off, suffix):
    """Blocks of the diagonal (kind 1), block-diagonal (2) or hybrid (3) preconditioner
    (Zhao et al., Eq. 22/23/28) into ``diag`` (n,3,3) and ``off`` (n-1,3,3); O(n)."""
    n = Hp.shape[0]
    m = n - 1
    acc = 0.0
    for j in range(n - 1, -1, -1):
        acc += Hp[j]
        suffix[j] = acc  # S_j = sum_{k >= j} h_k  (Eq. 28)
    diag[:, :, :] = 0.0
    off[:, :, :] = 0.0
    for c in range(3):
        diag[0, c, c] = suffix[0]
    for i in range(m):
        S = suffix[i + 1]
        for a in range(3):
            for b in range(3):
                t = S * (Dj[i, 0, a] * Dj[i, 0, b] + Dj[i, 1, a] * Dj[i, 1, b] + Dj[i, 2, a] * Dj[i, 2, b])
                for r in range(4):
                    hq = 0.0
                    for c in range(4):
                        hq += Hq_d[i, r, c] * Qj[i, c, b]
                    t += Qj[i, r, a] * hq
                if use_g:
                    t += G[i + 1, a, b]
                diag[i + 1, a, b] = t
        if kind == 3 and i + 1 < m:
            for a in range(3):
                for b in range(3):
                    t = 0.0
                    for r in range(4):
                        hq = 0.0
                        for c in range(4):
                            hq += Hq_o[i, r, c] * Qj[i + 1, c, b]
                        t += Qj[i, r, a] * hq
                    off[i + 1, a, b] = t
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
                    if j < n - 1:
                        off[j, a, b] = 0.0
                    if j > 0:
                        off[j - 1, b, a] = 0.0
                diag[j, a, a] = 1.0


@njit(**JIT)
def build_dense_a(Dj, Qj, Hp, Hq_d, Hq_o, G, use_g, free, A, suffix):
    """The dense projected ``A_F`` (3n x 3n), O(n^2): the direct factorization baseline."""
    n = Hp.shape[0]
    m = n - 1
    acc = 0.0
    for j in range(n - 1, -1, -1):
        acc += Hp[j]
        suffix[j] = acc
    A[:, :] = 0.0
    for c in range(3):
        A[c, c] = suffix[0]
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
                    if k == i or k == i + 1:
                        for r in range(4):
                            hq = 0.0
                            for c in range(4):
                                hq += (Hq_d[i, r, c] if k == i else Hq_o[i, r, c]) * Qj[k, c, b]
                            t += Qj[i, r, a] * hq
                    if use_g and k == i:
                        t += G[i + 1, a, b]
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


@njit(**JIT)
def factor_preconditioner(kind, diag, off, sinv, work, A, L):
    """Factor the preconditioner (3x3 inverses, block Thomas, or dense Cholesky);
    returns False if it is not positive definite."""
    n = diag.shape[0]
    if kind == 0:
        return True
    if kind == 4:
        L[:, :] = np.linalg.cholesky(A)
        return True
    if kind == 3:
        return block_tridiagonal_factor(diag, off, sinv, work) < 0
    ok = True
    for j in range(n):
        if not invert_spd_small(diag[j], sinv[j]):
            ok = False
    return ok


@njit(**JIT)
def apply_preconditioner(kind, sinv, off, r, z, y, L):
    """``z = P^{-1} r``."""
    n = r.shape[0]
    if kind == 0:
        z[:, :] = r
    elif kind == 1 or kind == 2:
        for j in range(n):
            for a in range(3):
                z[j, a] = sinv[j, a, 0] * r[j, 0] + sinv[j, a, 1] * r[j, 1] + sinv[j, a, 2] * r[j, 2]
    elif kind == 3:
        block_tridiagonal_solve(sinv, off, r, z, y)
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


@njit(**JIT)
def pcg_solve(Dj, Qj, Hp, Hq_d, Hq_o, G, use_g, free, kind, sinv, off, L, rhs, x, rtol, atol, maxiter,
              r, z, d, Ad, tv, tp, tq, yp, yq, y):
    """PCG on ``A_F x = rhs`` from ``x = 0`` (Zhao et al., Sec. 3.1/4: stop when |r|_2 <= max(atol, rtol |rhs|)).
    Returns (iterations, final residual norm, success)."""
    n = rhs.shape[0]
    bn = 0.0
    for j in range(n):
        for c in range(3):
            x[j, c] = 0.0
            r[j, c] = rhs[j, c]
            bn += rhs[j, c] * rhs[j, c]
    bn = np.sqrt(bn)
    stop = max(atol, rtol * bn)
    if bn <= stop:
        return 0, bn, True
    apply_preconditioner(kind, sinv, off, r, z, y, L)
    rz = 0.0
    for j in range(n):
        for c in range(3):
            d[j, c] = z[j, c]
            rz += r[j, c] * z[j, c]
    rn = bn
    for it in range(1, maxiter + 1):
        a_mul(Dj, Qj, Hp, Hq_d, Hq_o, G, use_g, free, d, Ad, tv, tp, tq, yp, yq)
        dAd = 0.0
        for j in range(n):
            for c in range(3):
                dAd += d[j, c] * Ad[j, c]
        if not dAd > 0.0:
            return it, rn, False
        alpha = rz / dAd
        rn2 = 0.0
        for j in range(n):
            for c in range(3):
                x[j, c] += alpha * d[j, c]
                r[j, c] -= alpha * Ad[j, c]
                rn2 += r[j, c] * r[j, c]
        rn = np.sqrt(rn2)
        if rn <= stop:
            return it, rn, True
        apply_preconditioner(kind, sinv, off, r, z, y, L)
        rz_new = 0.0
        for j in range(n):
            for c in range(3):
                rz_new += r[j, c] * z[j, c]
        beta = rz_new / rz
        rz = rz_new
        for j in range(n):
            for c in range(3):
                d[j, c] = z[j, c] + beta * d[j, c]
    return maxiter, rn, False
