"""The exact O(n) solve of the compact rod's Gauss-Newton system ``A_F x = r`` (our addition to
Zhao et al., "Efficient and Stable Simulation of Inextensible Cosserat Rods by a Compact
Representation", CGF 2024, Sec. 3.2-3.3, where ``A`` is only applied, in O(n), inside PCG).

``A = J_p^T H_p J_p + B_q`` (Eq. 18-21) is dense, but its dense part has an inverse that is
banded. Vertex ``j`` moves by ``(J_p x)_j = sum_{k <= j} D_k x_k`` with ``D_0 = I`` (root
translation) and ``D_k = Dj_{k-1}`` (segment ``k - 1``'s rotation), i.e. ``J_p = L D`` with ``L``
the block prefix sum. ``M = L^T H_p L`` (entries ``S_max(k,l) I``, ``S_k`` the suffix sums of
``h``) has the block-tridiagonal inverse ``T = L^-1 H_p^-1 L^-T``:

    T_kk = (1/h_k + 1/h_{k-1}) I  (T_00 = I / h_0),   T_k,k+1 = T_k+1,k = -I / h_k.

With ``y = M D x`` the system ``(D^T M D + B) x = r`` is the saddle-point system

    [ B   D^T ] [x]   [r]
    [ D   -T  ] [y] = [0],

block-tridiagonal in the pairs ``(x_k, y_k)``: 6x6 blocks ``K_kk = [[B_kk, D_k^T], [D_k, -T_kk]]``,
``K_k,k+1 = [[B_k,k+1, 0], [0, I / h_k]]``. Dirichlet conditions enter as in ``A_F = F A F + (I - F)``
(``B -> F B F + I - F``, ``D -> D F``). Block Gaussian elimination without pivoting between blocks
(the Schur complements ``S_k`` are those of the leading block rows; ``S_k`` is non-singular while
the rotation blocks of ``B`` are positive definite: the segments' rotational inertia) and with
partial pivoting inside each 6x6 block (``S_k`` is indefinite) factors it in O(n). Used as the
preconditioner ``exact`` of :func:`rodlab.compact.pcg.pcg_solve`, PCG stops after one iteration
unless round-off leaves the residual above its tolerance (it then goes on as usual).

Factor storage ``F`` (18 n, 6), three 6x6 blocks per vertex: rows ``18 k : 18 k + 6`` hold
``S_k^-1``, the next six ``S_k^-1 K_k,k+1``, the next six ``K_k,k+1`` (the last two unused at
``k = n - 1``). A 2-D array, sliced by rows, so that strided views of a larger store work too.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT


def factor_rows(n: int) -> int:
    """Rows of the factor array ``F`` (rows, 6) of an ``n``-vertex rod (module docstring)."""
    return 18 * n


@njit(**JIT)
def _block(F, k, which):
    """The 6x6 block ``which`` (0: S_k^-1, 1: S_k^-1 K_k,k+1, 2: K_k,k+1) of vertex ``k``."""
    return F[18 * k + 6 * which:18 * k + 6 * which + 6]


@njit(**JIT)
def _inv6(S, out, work):
    """``out = S^-1`` (6x6) by Gauss-Jordan elimination with partial pivoting; ``work`` (6, 6)
    scratch. False when a pivot is zero or not finite."""
    for i in range(6):
        for j in range(6):
            work[i, j] = S[i, j]
            out[i, j] = 1.0 if i == j else 0.0
    for c in range(6):
        p = c
        best = abs(work[c, c])
        for i in range(c + 1, 6):
            if abs(work[i, c]) > best:
                best, p = abs(work[i, c]), i
        if not (best > 0.0 and best < np.inf):
            return False
        if p != c:
            for j in range(6):
                work[c, j], work[p, j] = work[p, j], work[c, j]
                out[c, j], out[p, j] = out[p, j], out[c, j]
        inv = 1.0 / work[c, c]
        for j in range(6):
            work[c, j] *= inv
            out[c, j] *= inv
        for i in range(6):
            if i == c:
                continue
            f = work[i, c]
            if f != 0.0:
                for j in range(6):
                    work[i, j] -= f * work[c, j]
                    out[i, j] -= f * out[c, j]
    return True


@njit(**JIT)
def factor_augmented(Dj, Hp, Bd, Bo, free, F):
    """Factor the saddle-point system of ``A_F`` (module docstring) into ``F`` (18 n, 6) from
    the segment Jacobians ``Dj`` (m, 3, 3), the vertex weights ``Hp`` (n,) and the blocks ``Bd``
    (n, 3, 3), ``Bo`` (n - 1, 3, 3) of ``B_q``, with the Dirichlet mask ``free`` (n, 3). O(n).
    False when a vertex weight is not positive or a block is singular."""
    n = Hp.shape[0]
    for k in range(n):
        if not (Hp[k] > 0.0 and Hp[k] < np.inf):
            return False
    S = np.empty((6, 6))
    work = np.empty((6, 6))
    for k in range(n):
        for a in range(3):
            fa = free[k, a]
            for b in range(3):
                S[a, b] = fa * Bd[k, a, b] * free[k, b]
                S[3 + a, 3 + b] = 0.0
            S[a, a] += 1.0 - fa
            t = 1.0 / Hp[k]
            if k > 0:
                t += 1.0 / Hp[k - 1]
            S[3 + a, 3 + a] = -t
        for a in range(3):  # D_k F (row a of the y block, column b of the x block)
            for b in range(3):
                if k == 0:
                    dab = 1.0 if a == b else 0.0
                else:
                    dab = Dj[k - 1, a, b]
                v = dab * free[k, b]
                S[3 + a, b] = v
                S[b, 3 + a] = v
        if k > 0:  # S_k = K_kk - K_k-1,k^T U_k-1
            U = _block(F, k - 1, 1)
            K = _block(F, k - 1, 2)
            for a in range(3):
                for j in range(6):
                    acc = 0.0
                    for b in range(3):
                        acc += K[b, a] * U[b, j]
                    S[a, j] -= acc
                    S[3 + a, j] -= K[3 + a, 3 + a] * U[3 + a, j]
        if not _inv6(S, _block(F, k, 0), work):
            return False
        if k + 1 < n:
            K = _block(F, k, 2)
            for i in range(6):
                for j in range(6):
                    K[i, j] = 0.0
            for a in range(3):
                for b in range(3):
                    K[a, b] = free[k, a] * Bo[k, a, b] * free[k + 1, b]
                K[3 + a, 3 + a] = 1.0 / Hp[k]
            Sinv = _block(F, k, 0)
            U = _block(F, k, 1)
            for i in range(6):
                for b in range(3):
                    U[i, b] = Sinv[i, 0] * K[0, b] + Sinv[i, 1] * K[1, b] + Sinv[i, 2] * K[2, b]
                    U[i, 3 + b] = Sinv[i, 3 + b] * K[3 + b, 3 + b]
    return True


@njit(**JIT)
def solve_augmented(F, rhs, out, y):
    """``out = A_F^-1 rhs`` (n, 3) with the factor ``F`` of :func:`factor_augmented`; ``y`` (n, 3)
    gets the auxiliary unknowns ``M D x``. O(n)."""
    n = rhs.shape[0]
    t = np.empty(6)
    for k in range(n):  # forward: g_k = S_k^-1 (rhs_k - K_k-1,k^T g_k-1)
        for a in range(3):
            t[a] = rhs[k, a]
            t[3 + a] = 0.0
        if k > 0:
            K = _block(F, k - 1, 2)
            for a in range(3):
                t[a] -= K[0, a] * out[k - 1, 0] + K[1, a] * out[k - 1, 1] + K[2, a] * out[k - 1, 2]
                t[3 + a] -= K[3 + a, 3 + a] * y[k - 1, a]
        Sinv = _block(F, k, 0)
        for a in range(3):
            acc_x = 0.0
            acc_y = 0.0
            for j in range(6):
                acc_x += Sinv[a, j] * t[j]
                acc_y += Sinv[3 + a, j] * t[j]
            out[k, a] = acc_x
            y[k, a] = acc_y
    for k in range(n - 2, -1, -1):  # backward: z_k = g_k - U_k z_k+1
        U = _block(F, k, 1)
        for j in range(3):
            t[j] = out[k + 1, j]
            t[3 + j] = y[k + 1, j]
        for a in range(3):
            acc_x = 0.0
            acc_y = 0.0
            for j in range(6):
                acc_x += U[a, j] * t[j]
                acc_y += U[3 + a, j] * t[j]
            out[k, a] -= acc_x
            y[k, a] -= acc_y


__all__ = ["factor_augmented", "factor_rows", "solve_augmented"]
