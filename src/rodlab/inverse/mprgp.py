"""Box-constrained convex QPs on banded SPD matrices: MPRGP with preconditioners, PGS, interior point.

Problem: ``min 1/2 x^T A x - b^T x`` subject to ``lo <= x <= hi`` (entries may be infinite), ``A`` given
by its lower band (see :mod:`rodlab.linalg.banded_ldlt`).

* :func:`mprgp` - Modified Proportioning with Reduced Gradient Projections (Dostal and Schoberl 2005):
  conjugate gradients on the free set, proportioning steps along the chopped gradient when it
  dominates, expansion steps (feasible half-step, then a projected gradient step of fixed length
  ``abar = 1.9 / ||A||``, ``||A||`` bounded by the largest absolute row sum). Our addition: the
  expansion first tries the projected *preconditioned* step ``P(x - a M_F^{-1} phi)``, ``a`` in
  {1, 1/2, 1/4}, and takes it as soon as it lowers the objective (else the fixed-length step).
  The fixed step is ~1/||A|| and does almost nothing on the stiff sag-free systems (condition
  numbers beyond 1e10), where each expansion would add a single bound; the preconditioned step
  keeps the iteration monotone and activates many bounds at once. (This replaces the rate
  guarantee of the fixed step by monotone decrease; the reference-solution tests check the result.) Preconditioning acts on the free set only (``PC_*`` codes):

  - ``PC_NONE``, ``PC_DIAG`` (Jacobi), ``PC_WJ`` (two weighted-Jacobi sweeps, weight 2/3, from zero),
    ``PC_SSOR`` (symmetric SOR, weight 1.2);
  - ``PC_IC`` / ``PC_MIC``: incomplete LDL^T on the nonzero pattern of ``A`` (modified: dropped
    fill added to the pivot), ``PC_ASC``: the complete banded LDL^T (Takahashi and Batty, Sec. V-A).
    All three are applied by the **filtered symmetric substitution** of Takahashi and Batty
    (Eqs. 32-35): forward ``y_i = f_i (r_i - sum_{j<i} L_ij y_j)``, scaling ``y_i / D_i``, backward
    ``z_i = f_i (y_i/D_i - sum_{j>i} L_ji z_j)`` with ``f_i = 0`` on active entries. The operator is
    ``L_F^{-T} F D^{-1} F L_F^{-1}`` with ``L_F = I + F (L - I) F``: symmetric, reuses the factor whatever
    the active set, and equal to ``A^{-1}`` when nothing is active (one iteration).
  - ``PC_ASCS`` ("asc-schur", our extension): the same complete factor, applied as an exact solve on
    the free set through a Schur-complement (capacitance) correction over the active set
    (:func:`schur_apply`). With ``k`` active bounds the filtered factor differs from ``A_FF`` by a
    rank-``k`` term, so plain ASC needs about ``k + 1`` CG steps per active set; the corrected one needs
    one, at the price of one cached solve per newly active index and a ``k x k`` Cholesky per change.
    Its compiled fast path (:func:`_schur_fast` inside :func:`mprgp_fast`, the default of the sag-free
    optimizer) updates that Cholesky factor by one appended row per newly active index.

* :func:`pgs` - projected Gauss-Seidel. :func:`ipm` - primal-dual interior point (Mehrotra-free,
  centering 0.1, fraction to the boundary 0.995) with a banded LDL^T of ``A + diag`` per iteration.

Every solver records the projected-gradient norm per iteration into ``hist`` (for the convergence
figures) and returns ``(iterations, final residual)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..linalg.banded_ldlt import band_matvec, ldlt_factor_band, ldlt_solve_band

JIT = dict(cache=True, error_model="numpy")

PC_NONE = 0
PC_DIAG = 1
PC_WJ = 2
PC_SSOR = 3
PC_IC = 4
PC_MIC = 5
PC_ASC = 6
PC_ASCS = 7
PC_NAMES = {"none": PC_NONE, "diag": PC_DIAG, "wj": PC_WJ, "ssor": PC_SSOR, "ic": PC_IC, "mic": PC_MIC, "asc": PC_ASC,
            "asc-schur": PC_ASCS}
SCHUR_CAP = 48

WJ_WEIGHT = 2.0 / 3.0
SSOR_WEIGHT = 1.2


@njit(**JIT)
def ic_factor_band(band, D, modified, pivot_eps):
    """Incomplete LDL^T on the nonzero pattern of the lower band (IC(0)); ``modified`` adds dropped
    fill to the pivots (MIC). In place like :func:`ldlt_factor_band`. Returns #clamped pivots."""
    n = band.shape[0]
    p = band.shape[1] - 1
    pattern = np.empty((n, p + 1), dtype=np.bool_)
    for i in range(n):
        for k in range(p + 1):
            pattern[i, k] = band[i, k] != 0.0
    t = np.empty(p + 1)
    for i in range(n):
        D[i] = band[i, 0]
    clamped = 0
    for j in range(n):
        ref = abs(D[j])
        if ref < 1e-300:
            ref = 1e-300
        d = band[j, 0]
        if not d > pivot_eps * ref:
            d = pivot_eps * ref
            clamped += 1
        D[j] = d
        inv = 1.0 / d
        amax = n - 1 - j
        if amax > p:
            amax = p
        for a in range(1, amax + 1):
            t[a] = band[j + a, a]
            band[j + a, a] = t[a] * inv
        for a in range(1, amax + 1):
            if t[a] == 0.0:
                continue
            ta = t[a] * inv
            for b in range(1, a + 1):
                upd = ta * t[b]
                if pattern[j + a, a - b]:
                    band[j + a, a - b] -= upd
                elif modified:
                    band[j + a, 0] -= upd
                    band[j + b, 0] -= upd
    return clamped


@njit(**JIT)
def apply_filtered_ldlt(L, D, free, r, z):
    """``z = L_F^{-T} F D^{-1} F L_F^{-1} r`` (filtered symmetric substitution, Takahashi and Batty Eqs. 34-35)."""
    n = L.shape[0]
    p = L.shape[1] - 1
    for i in range(n):
        if free[i]:
            s = r[i]
            k0 = p if i >= p else i
            for k in range(1, k0 + 1):
                s -= L[i, k] * z[i - k]
            z[i] = s
        else:
            z[i] = 0.0
    for i in range(n):
        z[i] /= D[i]
    for i in range(n - 1, -1, -1):
        if free[i]:
            s = z[i]
            kmax = n - 1 - i
            if kmax > p:
                kmax = p
            for k in range(1, kmax + 1):
                s -= L[i + k, k] * z[i + k]
            z[i] = s
        else:
            z[i] = 0.0


@njit(**JIT)
def _free_matvec(A, free, x, out):
    """``out = A_FF x_F`` (zero outside the free set)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    for i in range(n):
        out[i] = A[i, 0] * x[i] if free[i] else 0.0
    for i in range(n):
        if not free[i]:
            continue
        k0 = p if i >= p else i
        s = 0.0
        xi = x[i]
        for k in range(1, k0 + 1):
            if free[i - k]:
                a = A[i, k]
                s += a * x[i - k]
                out[i - k] += a * xi
        out[i] += s


@njit(**JIT)
def schur_apply(L, D, free, lo, hi, r, z, Y, slot, act, st, C, w):
    """Exact free-set solve ``z = A_FF^{-1} r_F`` from the complete factor ``A = L D L^T`` and a
    capacitance (Schur-complement) correction over the active set ``E``:
    ``z = A^{-1}(r_F + E mu)`` with ``mu`` chosen so that ``z_E = 0``, i.e. ``C mu = -(A^{-1} r_F)_E``,
    ``C = E^T A^{-1} E`` (a principal block of ``A^{-1}``, SPD). Columns ``A^{-1} e_k`` are computed once
    per newly active index (two band sweeps) and cached in ``Y``; ``C`` is refactored (dense Cholesky)
    whenever the active set changes. Variables pinned by ``lo == hi`` are decoupled and left out.
    Falls back to the filtered substitution beyond ``SCHUR_CAP`` active or cached indices.
    ``st = [active count, cached columns]``."""
    n = r.shape[0]
    cap = Y.shape[0]
    m = 0
    changed = False
    for i in range(n):
        if (not free[i]) and lo[i] < hi[i]:
            if m >= cap:
                apply_filtered_ldlt(L, D, free, r, z)
                return
            if act[m] != i:
                changed = True
            act[m] = i
            m += 1
    if m != st[0]:
        changed = True
    st[0] = m
    for a in range(m):
        i = act[a]
        if slot[i] < 0:
            if st[1] >= cap:
                apply_filtered_ldlt(L, D, free, r, z)
                return
            k = st[1]
            st[1] += 1
            slot[i] = k
            for t in range(n):
                Y[k, t] = 0.0
            Y[k, i] = 1.0
            ldlt_solve_band(L, D, Y[k])
    if changed and m > 0:
        for a in range(m):
            for b in range(m):
                C[a, b] = Y[slot[act[a]], act[b]]
        # dense Cholesky in place (lower)
        for j in range(m):
            d = C[j, j]
            for k in range(j):
                d -= C[j, k] * C[j, k]
            if not d > 0.0:
                d = 1e-300
            d = math.sqrt(d)
            C[j, j] = d
            for i2 in range(j + 1, m):
                v = C[i2, j]
                for k in range(j):
                    v -= C[i2, k] * C[j, k]
                C[i2, j] = v / d
    for i in range(n):
        z[i] = r[i] if free[i] else 0.0
    ldlt_solve_band(L, D, z)
    if m > 0:
        for a in range(m):
            w[a] = -z[act[a]]
        for a in range(m):  # forward
            v = w[a]
            for k in range(a):
                v -= C[a, k] * w[k]
            w[a] = v / C[a, a]
        for a in range(m - 1, -1, -1):  # backward
            v = w[a]
            for k in range(a + 1, m):
                v -= C[k, a] * w[k]
            w[a] = v / C[a, a]
        for a in range(m):
            row = slot[act[a]]
            mu = w[a]
            for t in range(n):
                z[t] += mu * Y[row, t]
    for i in range(n):
        if not free[i]:
            z[i] = 0.0


@njit(**JIT)
def apply_pc(pc, A, L, D, free, r, z, tmp):
    """Preconditioner ``z = M_F^{-1} r`` restricted to the free set (see module docstring)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    if pc == PC_NONE:
        for i in range(n):
            z[i] = r[i] if free[i] else 0.0
    elif pc == PC_DIAG:
        for i in range(n):
            z[i] = r[i] / A[i, 0] if free[i] else 0.0
    elif pc == PC_WJ:
        for i in range(n):
            z[i] = WJ_WEIGHT * r[i] / A[i, 0] if free[i] else 0.0
        _free_matvec(A, free, z, tmp)
        for i in range(n):
            if free[i]:
                z[i] += WJ_WEIGHT * (r[i] - tmp[i]) / A[i, 0]
    elif pc == PC_SSOR:
        w = SSOR_WEIGHT
        for i in range(n):
            if free[i]:
                s = r[i]
                k0 = p if i >= p else i
                for k in range(1, k0 + 1):
                    if free[i - k]:
                        s -= A[i, k] * z[i - k]
                z[i] = s * w / A[i, 0]
            else:
                z[i] = 0.0
        for i in range(n):
            z[i] *= A[i, 0] / w
        for i in range(n - 1, -1, -1):
            if free[i]:
                s = z[i]
                kmax = n - 1 - i
                if kmax > p:
                    kmax = p
                for k in range(1, kmax + 1):
                    if free[i + k]:
                        s -= A[i + k, k] * z[i + k]
                z[i] = s * w / A[i, 0]
        for i in range(n):
            z[i] *= (2.0 - w) / w * 1.0
    else:
        apply_filtered_ldlt(L, D, free, r, z)


@njit(**JIT)
def prepare_pc(pc, A, L, D):
    """Factor ``A`` for the Cholesky-type preconditioners (into ``L``, ``D``); returns #clamped pivots."""
    if pc == PC_ASC or pc == PC_ASCS or pc == PC_IC or pc == PC_MIC:
        L[:, :] = A
        if pc == PC_ASC or pc == PC_ASCS:
            return ldlt_factor_band(L, D, 1e-12)
        return ic_factor_band(L, D, pc == PC_MIC, 1e-12)
    return 0


@njit(**JIT)
def _state(x, g, lo, hi, free, phi, beta, abar, phit):
    """Free set, free gradient ``phi``, chopped gradient ``beta`` and reduced free gradient ``phit``;
    returns (|phi + beta|^2, beta.beta, phit.phi)."""
    n = x.shape[0]
    r2 = 0.0
    bb = 0.0
    pp = 0.0
    for i in range(n):
        gi = g[i]
        if x[i] <= lo[i]:
            free[i] = False
            phi[i] = 0.0
            phit[i] = 0.0
            beta[i] = gi if (gi < 0.0 and hi[i] > lo[i]) else 0.0
        elif x[i] >= hi[i]:
            free[i] = False
            phi[i] = 0.0
            phit[i] = 0.0
            beta[i] = gi if gi > 0.0 else 0.0
        else:
            free[i] = True
            phi[i] = gi
            beta[i] = 0.0
            if gi > 0.0:
                v = (x[i] - lo[i]) / abar
                phit[i] = v if v < gi else gi
            else:
                v = (x[i] - hi[i]) / abar
                phit[i] = v if v > gi else gi
        r2 += (phi[i] + beta[i]) ** 2
        bb += beta[i] * beta[i]
        pp += phit[i] * phi[i]
    return r2, bb, pp


@njit(**JIT)
def _feasible_step(x, d, lo, hi):
    """Largest ``a >= 0`` with ``lo <= x - a d <= hi``."""
    amax = np.inf
    for i in range(x.shape[0]):
        if d[i] > 0.0:
            a = (x[i] - lo[i]) / d[i]
            if a < amax:
                amax = a
        elif d[i] < 0.0:
            a = (x[i] - hi[i]) / d[i]
            if a < amax:
                amax = a
    return amax


@njit(**JIT)
def norm_bound(A):
    """Largest absolute row sum of the symmetric banded ``A`` (an upper bound of its 2-norm)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    rs = np.zeros(n)
    for i in range(n):
        rs[i] += abs(A[i, 0])
        k0 = p if i >= p else i
        for k in range(1, k0 + 1):
            a = abs(A[i, k])
            rs[i] += a
            rs[i - k] += a
    return rs.max()


@njit(**JIT)
def _qp_value(A, b, x, tmp):
    band_matvec(A, x, tmp)
    v = 0.0
    for i in range(x.shape[0]):
        v += x[i] * (0.5 * tmp[i] - b[i])
    return v


@njit(**JIT)
def _precond(pc, A, L, D, free, lo, hi, r, z, tmp, Y, slot, act, st, C, w):
    if pc == PC_ASCS:
        schur_apply(L, D, free, lo, hi, r, z, Y, slot, act, st, C, w)
    else:
        apply_pc(pc, A, L, D, free, r, z, tmp)


@njit(**JIT)
def mprgp_core(A, b, lo, hi, x, pc, L, D, rtol, atol, maxit, hist, counts, gamma):
    """MPRGP (module docstring) from ``x`` (projected first), in place. ``L``, ``D``: the factor from
    :func:`prepare_pc` (ignored by non-Cholesky preconditioners). Returns ``(iterations, residual)``
    with residual the norm of the projected gradient ``phi + beta``. ``counts`` (4,) accumulates CG,
    expansion, proportioning and accepted preconditioned-expansion steps; ``gamma`` is the
    proportioning constant Gamma."""
    n = x.shape[0]
    abar = 1.9 / norm_bound(A)
    for i in range(n):
        if x[i] < lo[i]:
            x[i] = lo[i]
        elif x[i] > hi[i]:
            x[i] = hi[i]
    g = np.empty(n)
    band_matvec(A, x, g)
    for i in range(n):
        g[i] -= b[i]
    free = np.empty(n, dtype=np.bool_)
    phi = np.empty(n)
    beta = np.empty(n)
    phit = np.empty(n)
    z = np.empty(n)
    pdir = np.empty(n)
    Ap = np.empty(n)
    tmp = np.empty(n)
    cap = SCHUR_CAP if pc == PC_ASCS else 1
    Y = np.empty((cap, n))
    slot = np.full(n, -1, dtype=np.int64)
    act = np.full(cap, -1, dtype=np.int64)
    st = np.zeros(2, dtype=np.int64)
    C = np.empty((cap, cap))
    w = np.empty(cap)
    r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
    res0 = math.sqrt(r2)
    tol = max(atol, rtol * res0)
    _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
    pdir[:] = z
    it = 0
    res = res0
    while it < maxit:
        res = math.sqrt(r2)
        if it < hist.shape[0]:
            hist[it] = res
        if res <= tol:
            break
        it += 1
        if bb <= gamma * gamma * pp:
            band_matvec(A, pdir, Ap)
            pAp = 0.0
            gz = 0.0
            for i in range(n):
                pAp += pdir[i] * Ap[i]
                gz += g[i] * pdir[i]
            if not pAp > 0.0:
                break
            acg = gz / pAp
            af = _feasible_step(x, pdir, lo, hi)
            if acg <= af:
                counts[0] += 1
                for i in range(n):
                    x[i] -= acg * pdir[i]
                    g[i] -= acg * Ap[i]
                r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
                _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
                zAp = 0.0
                for i in range(n):
                    zAp += z[i] * Ap[i]
                gam = zAp / pAp
                for i in range(n):
                    pdir[i] = z[i] - gam * pdir[i] if free[i] else 0.0
            else:
                counts[1] += 1
                for i in range(n):
                    x[i] -= af * pdir[i]
                    g[i] -= af * Ap[i]
                    if x[i] < lo[i]:
                        x[i] = lo[i]
                    elif x[i] > hi[i]:
                        x[i] = hi[i]
                # snap the blocking entries onto their bound
                for i in range(n):
                    if pdir[i] > 0.0 and x[i] - lo[i] <= 1e-14 * (1.0 + abs(x[i])):
                        x[i] = lo[i]
                    elif pdir[i] < 0.0 and hi[i] - x[i] <= 1e-14 * (1.0 + abs(x[i])):
                        x[i] = hi[i]
                r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
                # expansion. Ours: the projected preconditioned step P(x - a M_F^{-1} phi), a = 1, 1/2, 1/4,
                # accepted as soon as it lowers the objective; otherwise Dostal and Schoberl's projected
                # gradient step of fixed length abar. f(x) = x.(g - b)/2 needs no product with A, and
                # the product computed for the candidate becomes the new gradient.
                fx = 0.0
                for i in range(n):
                    fx += 0.5 * x[i] * (g[i] - b[i])
                _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
                a = 1.0
                accepted = False
                for trial in range(3):
                    for i in range(n):
                        xi = x[i] - a * z[i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        pdir[i] = xi
                    band_matvec(A, pdir, Ap)
                    ft = 0.0
                    for i in range(n):
                        ft += pdir[i] * (0.5 * Ap[i] - b[i])
                    if ft < fx:
                        counts[3] += 1
                        accepted = True
                        for i in range(n):
                            x[i] = pdir[i]
                            g[i] = Ap[i] - b[i]
                        break
                    a *= 0.5
                if not accepted:
                    for i in range(n):
                        xi = x[i] - abar * phi[i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        x[i] = xi
                    band_matvec(A, x, g)
                    for i in range(n):
                        g[i] -= b[i]
                r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
                _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
                pdir[:] = z
        else:
            # proportioning along the chopped gradient
            counts[2] += 1
            band_matvec(A, beta, Ap)
            dAd = 0.0
            gd = 0.0
            for i in range(n):
                dAd += beta[i] * Ap[i]
                gd += g[i] * beta[i]
            a = gd / dAd
            af = _feasible_step(x, beta, lo, hi)
            if af < a:
                a = af
            for i in range(n):
                x[i] -= a * beta[i]
                g[i] -= a * Ap[i]
                if x[i] < lo[i]:
                    x[i] = lo[i]
                elif x[i] > hi[i]:
                    x[i] = hi[i]
            r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, abar, phit)
            _precond(pc, A, L, D, free, lo, hi, phi, z, tmp, Y, slot, act, st, C, w)
            pdir[:] = z
    return it, math.sqrt(r2) if it > 0 else res


# ---------------------------------------------------------------------------------------------------
# Fast path of the filtered-factor preconditioners (PC_ASC, PC_IC, PC_MIC) and of PC_ASCS (the complete
# factor with the Schur correction, :func:`_schur_fast`): "row-aligned" band layout
#
# The factor: ``Lr[i, j] = L[i, i - p + j]`` for ``j = 0..p-1`` (row i's band entries left of the diagonal
# in increasing column order; zero where ``i - p + j < 0``) and ``Lr[i, p] = 1 / D_i``. The matrix: full
# rows ``F[i, j] = A[i, i - p + j]``, ``j = 0..2p``. Vectors are padded with ``p`` zeros at both ends
# (entry ``i`` at ``p + i``). Row i then meets the vector entries ``i - p .. i (+ p)`` at the contiguous
# padded positions ``i .. i + p (+ p)``: the product (dot products), the forward substitution (dot
# products) and the backward substitution (axpys) all run unit-stride over a row and a window of a
# vector, with no boundary branches.
# These kernels use ``fastmath`` reassociation (and contraction into FMAs) only, so that their dot
# products vectorize: this changes the rounding of each dot product (relative 1e-16 per entry), never
# the handling of infinities or NaNs, which the bound logic of the solver (in the non-fastmath caller)
# relies on.
# ---------------------------------------------------------------------------------------------------

FAST_PCS = (PC_ASC, PC_IC, PC_MIC)
FM = {"reassoc", "contract", "nsz"}
NWS = 9  # padded work vectors of mprgp_fast


@njit(fastmath=FM, **JIT)
def rband_matvec(F, xp, op):
    """``op = M xp`` for the symmetric ``M`` stored as full rows ``F[i, j] = M[i, i - p + j]``, ``j = 0..2p``
    (zero outside the matrix), on vectors padded with ``p`` zeros at both ends (entry ``i`` at ``p + i``):
    one contiguous dot product per row, no dependency between rows."""
    n = F.shape[0]
    w = F.shape[1]
    p = (w - 1) // 2
    for i in range(n):
        s = 0.0
        for j in range(w):
            s += F[i, j] * xp[i + j]
        op[p + i] = s


@njit(fastmath=FM, **JIT)
def rfiltered_apply(Lr, free, r, yp, zp, v):
    """Filtered symmetric substitution (Takahashi and Batty Eqs. 32-35) with the row-aligned factor
    ``Lr`` (diagonal column ``1/D``): ``z = L_F^{-T} F D^{-1} F L_F^{-1} r`` into the padded ``zp``
    (``yp``: padded scratch, both with zero padding). Forward in dot-product form, backward in axpy form
    (each contiguous). Returns ``z . v`` (``v`` padded), accumulated as the backward sweep finalizes
    each ``z_i`` (the CG recurrence needs it)."""
    n = Lr.shape[0]
    p = Lr.shape[1] - 1
    for i in range(n):
        if free[i]:
            s = r[i]
            for j in range(p):
                s -= Lr[i, j] * yp[i + j]
            yp[p + i] = s
            zp[p + i] = s * Lr[i, p]
        else:
            yp[p + i] = 0.0
            zp[p + i] = 0.0
    zv = 0.0
    for i in range(n - 1, -1, -1):
        if free[i]:
            zi = zp[p + i]
            zv += zi * v[p + i]
            for j in range(p):
                zp[i + j] -= Lr[i, j] * zi
        else:
            zp[p + i] = 0.0
    return zv


@njit(fastmath={"contract"}, **JIT)
def _filtered18(Lf, free, r, zp, v):
    """:func:`rfiltered_apply` for half bandwidth 18 (the sag-free Hessian, ``kernels.HBW``): both sweeps in
    axpy form with the 18 pending entries held in registers (``s0..s18`` forward over the column-aligned
    factor ``Lf[1]``, ``t0..t18`` backward over the row-aligned ``Lf[0]``), so that consecutive rows depend on
    each other through one multiply-subtract, not through a store and a reload. Same operations as the
    textbook substitutions, multiply-subtracts contracted into FMAs (``fastmath`` contraction only: 1.47 ->
    1.22 us per application at n = 196). ``r``: entries 0..n-1 used; ``zp``, ``v`` padded by 18; returns
    ``z . v``."""
    n = Lf.shape[1]
    Lr = Lf[0]
    Lc = Lf[1]
    s0 = r[0] if 0 < n else 0.0
    s1 = r[1] if 1 < n else 0.0
    s2 = r[2] if 2 < n else 0.0
    s3 = r[3] if 3 < n else 0.0
    s4 = r[4] if 4 < n else 0.0
    s5 = r[5] if 5 < n else 0.0
    s6 = r[6] if 6 < n else 0.0
    s7 = r[7] if 7 < n else 0.0
    s8 = r[8] if 8 < n else 0.0
    s9 = r[9] if 9 < n else 0.0
    s10 = r[10] if 10 < n else 0.0
    s11 = r[11] if 11 < n else 0.0
    s12 = r[12] if 12 < n else 0.0
    s13 = r[13] if 13 < n else 0.0
    s14 = r[14] if 14 < n else 0.0
    s15 = r[15] if 15 < n else 0.0
    s16 = r[16] if 16 < n else 0.0
    s17 = r[17] if 17 < n else 0.0
    s18 = r[18] if 18 < n else 0.0
    for j in range(n):
        y = s0 if free[j] else 0.0
        zp[18 + j] = y * Lc[j, 0]
        s0 = s1 - Lc[j, 1] * y
        s1 = s2 - Lc[j, 2] * y
        s2 = s3 - Lc[j, 3] * y
        s3 = s4 - Lc[j, 4] * y
        s4 = s5 - Lc[j, 5] * y
        s5 = s6 - Lc[j, 6] * y
        s6 = s7 - Lc[j, 7] * y
        s7 = s8 - Lc[j, 8] * y
        s8 = s9 - Lc[j, 9] * y
        s9 = s10 - Lc[j, 10] * y
        s10 = s11 - Lc[j, 11] * y
        s11 = s12 - Lc[j, 12] * y
        s12 = s13 - Lc[j, 13] * y
        s13 = s14 - Lc[j, 14] * y
        s14 = s15 - Lc[j, 15] * y
        s15 = s16 - Lc[j, 16] * y
        s16 = s17 - Lc[j, 17] * y
        s17 = s18 - Lc[j, 18] * y
        s18 = r[j + 19] if j + 19 < n else 0.0
    t0 = zp[18 + n - 1 - 0] if n - 1 - 0 >= 0 else 0.0
    t1 = zp[18 + n - 1 - 1] if n - 1 - 1 >= 0 else 0.0
    t2 = zp[18 + n - 1 - 2] if n - 1 - 2 >= 0 else 0.0
    t3 = zp[18 + n - 1 - 3] if n - 1 - 3 >= 0 else 0.0
    t4 = zp[18 + n - 1 - 4] if n - 1 - 4 >= 0 else 0.0
    t5 = zp[18 + n - 1 - 5] if n - 1 - 5 >= 0 else 0.0
    t6 = zp[18 + n - 1 - 6] if n - 1 - 6 >= 0 else 0.0
    t7 = zp[18 + n - 1 - 7] if n - 1 - 7 >= 0 else 0.0
    t8 = zp[18 + n - 1 - 8] if n - 1 - 8 >= 0 else 0.0
    t9 = zp[18 + n - 1 - 9] if n - 1 - 9 >= 0 else 0.0
    t10 = zp[18 + n - 1 - 10] if n - 1 - 10 >= 0 else 0.0
    t11 = zp[18 + n - 1 - 11] if n - 1 - 11 >= 0 else 0.0
    t12 = zp[18 + n - 1 - 12] if n - 1 - 12 >= 0 else 0.0
    t13 = zp[18 + n - 1 - 13] if n - 1 - 13 >= 0 else 0.0
    t14 = zp[18 + n - 1 - 14] if n - 1 - 14 >= 0 else 0.0
    t15 = zp[18 + n - 1 - 15] if n - 1 - 15 >= 0 else 0.0
    t16 = zp[18 + n - 1 - 16] if n - 1 - 16 >= 0 else 0.0
    t17 = zp[18 + n - 1 - 17] if n - 1 - 17 >= 0 else 0.0
    t18 = zp[18 + n - 1 - 18] if n - 1 - 18 >= 0 else 0.0
    zv = 0.0
    for i in range(n - 1, -1, -1):
        z = t0 if free[i] else 0.0
        zp[18 + i] = z
        zv += z * v[18 + i]
        t0 = t1 - Lr[i, 17] * z
        t1 = t2 - Lr[i, 16] * z
        t2 = t3 - Lr[i, 15] * z
        t3 = t4 - Lr[i, 14] * z
        t4 = t5 - Lr[i, 13] * z
        t5 = t6 - Lr[i, 12] * z
        t6 = t7 - Lr[i, 11] * z
        t7 = t8 - Lr[i, 10] * z
        t8 = t9 - Lr[i, 9] * z
        t9 = t10 - Lr[i, 8] * z
        t10 = t11 - Lr[i, 7] * z
        t11 = t12 - Lr[i, 6] * z
        t12 = t13 - Lr[i, 5] * z
        t13 = t14 - Lr[i, 4] * z
        t14 = t15 - Lr[i, 3] * z
        t15 = t16 - Lr[i, 2] * z
        t16 = t17 - Lr[i, 1] * z
        t17 = t18 - Lr[i, 0] * z
        t18 = zp[18 + i - 19] if i - 19 >= 0 else 0.0
    return zv


@njit(**JIT)
def _apply(Lf, free, r, yp, zp, v):
    """Filtered substitution with the factor pair ``Lf`` (row-aligned ``Lf[0]``, column-aligned ``Lf[1]``):
    :func:`_filtered18` for half bandwidth 18, else :func:`rfiltered_apply`. Returns ``z . v``."""
    if Lf.shape[2] == 19:
        return _filtered18(Lf, free, r, zp, v)
    return rfiltered_apply(Lf[0], free, r, yp, zp, v)


@njit(fastmath=FM, **JIT)
def band_to_rows(A, Ar):
    """Lower band ``A[i, k] = M[i, i - k]`` of the symmetric ``M`` into the full rows ``Ar[i, j] = M[i, i - p + j]``
    (zeros outside the matrix): the left half is row i of the band reversed (contiguous), the right half
    column i of the lower triangle (``A[i + k, k]``, strided)."""
    n = A.shape[0]
    p = A.shape[1] - 1
    for i in range(n):
        k0 = p if i >= p else i
        for j in range(p - k0):
            Ar[i, j] = 0.0
        for k in range(k0 + 1):
            Ar[i, p - k] = A[i, k]
    for i in range(n):
        kmax = n - 1 - i
        if kmax > p:
            kmax = p
        for k in range(1, kmax + 1):
            Ar[i, p + k] = A[i + k, k]
        for k in range(kmax + 1, p + 1):
            Ar[i, p + k] = 0.0


@njit(fastmath=FM, **JIT)
def _column_copy(Ar, Lc):
    """The right half of the full rows (``Lc[j, k] = M[j + k, j]``, the column-aligned lower triangle,
    contiguous) and ``||M||_inf`` (largest absolute row sum, an upper bound of the 2-norm)."""
    n = Ar.shape[0]
    p = Lc.shape[1] - 1
    anorm = 0.0
    for i in range(n):
        s = 0.0
        for j in range(2 * p + 1):
            s += abs(Ar[i, j])
        if s > anorm:
            anorm = s
        for k in range(p + 1):
            Lc[i, k] = Ar[i, p + k]
    return anorm


@njit(fastmath=FM, **JIT)
def cldlt_factor(F, Lc, Lr, t, pivot_eps):
    """Banded LDL^T in the column-aligned layout, in place: on entry ``Lc[j, k] = A[j + k, j]`` (column j of
    the lower triangle, contiguous), on exit ``Lc[j, k] = L[j + k, j]`` (``k >= 1``) and ``Lc[j, 0] = 1/D_j``;
    each finished column is also scattered into the row-aligned copy ``Lr[i, j] = L[i, i - p + j]``,
    ``Lr[i, p] = 1/D_i`` (zeros outside the matrix), which the backward substitution needs (fused: cheaper
    than a separate strided pass). Right-looking like :func:`ldlt_factor_band` (the same products, the
    rank-1 update of the trailing triangle column by column), but each column's update is one contiguous
    axpy. Pivots not above ``pivot_eps |A_jj|`` (``A_jj`` read from the full rows ``F``) are clamped to it;
    returns their number. ``t``: scratch of length >= p + 1."""
    n = Lc.shape[0]
    p = Lc.shape[1] - 1
    clamped = 0
    for i in range(min(n, p)):
        for j in range(p - i):
            Lr[i, j] = 0.0
    for j in range(n):
        ref = abs(F[j, p])
        if ref < 1e-300:
            ref = 1e-300
        d = Lc[j, 0]
        if not d > pivot_eps * ref:
            d = pivot_eps * ref
            clamped += 1
        inv = 1.0 / d
        amax = n - 1 - j
        if amax > p:
            amax = p
        for a in range(1, amax + 1):
            t[a] = Lc[j, a]
            la = t[a] * inv
            Lc[j, a] = la
            Lr[j + a, p - a] = la
        for a in range(1, amax + 1):
            la = Lc[j, a]
            for m in range(amax - a + 1):
                Lc[j + a, m] -= la * t[a + m]
        Lc[j, 0] = inv
        Lr[j, p] = inv
    return clamped


@njit(**JIT)
def prepare_rows(pc, Ar, Lb, Lf, D):
    """Set-up of :func:`mprgp_fast` for ``pc`` in ``FAST_PCS`` or ``PC_ASCS`` from the full rows ``Ar``
    (n, 2p + 1) of ``A`` (:func:`band_to_rows`, or assembled so by the caller): the factor into the pair
    ``Lf`` (2, n, p + 1): row-aligned ``Lf[0][i, j] = L[i, i - p + j]`` with ``Lf[0][i, p] = 1/D_i``, and
    column-aligned ``Lf[1][j, k] = L[j + k, j]`` (``k >= 1``, zero beyond the matrix) with
    ``Lf[1][j, 0] = 1/D_j``. The complete factor (ASC, ASC-Schur) by :func:`cldlt_factor` in the column
    layout; the incomplete ones (IC, MIC) by :func:`ic_factor_band` in the band scratch ``Lb``, ``D`` and
    copied. ``Lb[0]`` is scratch for the complete factor. Returns ``(#clamped pivots, ||A||_inf)``."""
    n = Ar.shape[0]
    p = Lf.shape[2] - 1
    Lr = Lf[0]
    Lc = Lf[1]
    anorm = _column_copy(Ar, Lc)
    if pc == PC_ASC or pc == PC_ASCS:
        clamped = cldlt_factor(Ar, Lc, Lr, Lb[0], 1e-12)
        return clamped, anorm
    for i in range(n):
        for k in range(p + 1):
            Lb[i, k] = Ar[i, p - k]
    clamped = ic_factor_band(Lb, D, pc == PC_MIC, 1e-12)
    for i in range(n):
        k0 = p if i >= p else i
        for j in range(p - k0):
            Lr[i, j] = 0.0
        for k in range(1, k0 + 1):
            Lr[i, p - k] = Lb[i, k]
        inv = 1.0 / D[i]
        Lr[i, p] = inv
        Lc[i, 0] = inv
        kmax = n - 1 - i
        if kmax > p:
            kmax = p
        for k in range(1, kmax + 1):
            Lc[i, k] = Lb[i + k, k]
        for k in range(kmax + 1, p + 1):
            Lc[i, k] = 0.0
    return clamped, anorm


@njit(**JIT)
def prepare_fast(pc, A, Ar, Lb, Lf, D):
    """:func:`prepare_rows` from the lower band ``A`` (converted into the full rows ``Ar`` first by
    :func:`band_to_rows`). Returns ``(#clamped pivots, ||A||_inf)``."""
    band_to_rows(A, Ar)
    return prepare_rows(pc, Ar, Lb, Lf, D)


@njit(**JIT)
def _state_fast(x, g, lo, hi, free, phi, beta, abar, bp):
    """:func:`_state` without storing the reduced free gradient (only its product with ``phi`` is used);
    ``beta`` is written into the padded ``beta`` at offset ``bp``."""
    n = x.shape[0]
    r2 = 0.0
    bb = 0.0
    pp = 0.0
    for i in range(n):
        gi = g[i]
        if x[i] <= lo[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if (gi < 0.0 and hi[i] > lo[i]) else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        elif x[i] >= hi[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if gi > 0.0 else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        else:
            free[i] = True
            phi[i] = gi
            beta[bp + i] = 0.0
            if gi > 0.0:
                v = (x[i] - lo[i]) / abar
                pt = v if v < gi else gi
            else:
                v = (x[i] - hi[i]) / abar
                pt = v if v > gi else gi
            r2 += gi * gi
            pp += pt * gi
    return r2, bb, pp


@njit(**JIT)
def _move_state(x, g, pd, Ap, step, lo, hi, free, phi, beta, abar, bp):
    """The CG move ``x -= step p``, ``g -= step A p`` (padded ``pd``, ``Ap`` at offset ``bp``) fused with
    :func:`_state_fast` in one pass (the same operations per entry). The per-entry logic is written out
    in both on purpose: moving it into a shared per-entry function returning a tuple made the hard-QP
    solve 5x slower (0.13 -> 0.61-0.67 ms, numba 0.68, with or without ``inline="always"``)."""
    n = x.shape[0]
    r2 = 0.0
    bb = 0.0
    pp = 0.0
    for i in range(n):
        xi = x[i] - step * pd[bp + i]
        gi = g[i] - step * Ap[bp + i]
        x[i] = xi
        g[i] = gi
        if xi <= lo[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if (gi < 0.0 and hi[i] > lo[i]) else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        elif xi >= hi[i]:
            free[i] = False
            phi[i] = 0.0
            be = gi if gi > 0.0 else 0.0
            beta[bp + i] = be
            r2 += be * be
            bb += be * be
        else:
            free[i] = True
            phi[i] = gi
            beta[bp + i] = 0.0
            if gi > 0.0:
                v = (xi - lo[i]) / abar
                pt = v if v < gi else gi
            else:
                v = (xi - hi[i]) / abar
                pt = v if v > gi else gi
            r2 += gi * gi
            pp += pt * gi
    return r2, bb, pp


@njit(**JIT)
def _curvature_slope_reach(d, Ad, g, x, lo, hi, p):
    """Along the padded direction ``d`` (offset ``p``) with ``Ad = A d``: the curvature ``d.A d``, the
    slope ``g.d`` and the largest feasible step ``x - a d`` in ``[lo, hi]`` (a CG or proportioning step)."""
    n = x.shape[0]
    dAd = 0.0
    gd = 0.0
    reach = np.inf
    for i in range(n):
        di = d[p + i]
        dAd += di * Ad[p + i]
        gd += g[i] * di
        if di > 0.0:
            a = (x[i] - lo[i]) / di
            if a < reach:
                reach = a
        elif di < 0.0:
            a = (x[i] - hi[i]) / di
            if a < reach:
                reach = a
    return dAd, gd, reach


@njit(**JIT)
def _schur_fast(Lf, free, lo, hi, r, yp, zp, v, fm, e, Y, C, w, iw):
    """:func:`schur_apply` on the fast layouts, incrementally: ``z = A_FF^{-1} r_F`` into the padded ``zp``
    from the complete factor ``Lf`` (see :func:`prepare_fast`) and a capacitance correction over the active
    set ``E`` (non-pinned entries with ``free`` False): ``z = A^{-1}(r_F + E mu)``, ``C mu = -(A^{-1} r_F)_E``,
    ``C = E^T A^{-1} E``. One unfiltered substitution (``_apply`` with the all-true mask ``fm``), two
    ``k x k`` triangular solves and ``k`` axpys with the cached columns ``A^{-1} e_i`` (padded rows of ``Y``,
    each computed once per solve by one substitution of the unit vector ``e``, n-vector of zeros).
    The Cholesky factor of ``C`` (lower, in ``C``) is kept in the order in which indices became active:
    a newly active index appends one row (``O(k^2)``), a released one compacts the list and refactors.
    Beyond ``cap = Y.shape[0]`` active or cached indices, or for a numerically singular ``C``, this
    application falls back to the filtered substitution. ``iw`` (int64, ``2n + cap + 2``): ``slot`` (cached
    column of index i or -1), ``pos`` (position in the active list or -1), the active list, ``[k, #cached]``;
    set ``slot = pos = -1`` and both counters to 0 for a new factor. Returns ``z . v``."""
    n = free.shape[0]
    p = Lf.shape[2] - 1
    cap = Y.shape[0]
    m = iw[2 * n + cap]
    # released indices leave the list (order kept); then the factor of C is rebuilt
    keep = 0
    for a in range(m):
        i = iw[2 * n + a]
        if free[i]:
            iw[n + i] = -1
        else:
            iw[2 * n + keep] = i
            iw[n + i] = keep
            keep += 1
    ok = True
    if keep < m:
        m = keep
        for a in range(m):
            ya = iw[iw[2 * n + a]]
            for c in range(a + 1):
                s = Y[ya, p + iw[2 * n + c]]
                for q in range(c):
                    s -= C[a, q] * C[c, q]
                if c < a:
                    C[a, c] = s / C[c, c]
                elif s > 1e-12 * Y[ya, p + iw[2 * n + a]]:
                    C[a, a] = math.sqrt(s)
                else:
                    ok = False
            if not ok:
                break
    # newly active indices: cached column, one appended row of the Cholesky factor
    if ok:
        for i in range(n):
            if free[i] or not lo[i] < hi[i] or iw[n + i] >= 0:
                continue
            if m >= cap:
                ok = False
                break
            k = iw[i]
            if k < 0:
                k = iw[2 * n + cap + 1]
                if k >= cap:
                    ok = False
                    break
                iw[2 * n + cap + 1] = k + 1
                iw[i] = k
                e[i] = 1.0
                _apply(Lf, fm, e, yp, Y[k], Y[k])
                e[i] = 0.0
            s2 = 0.0
            for a in range(m):
                s = Y[k, p + iw[2 * n + a]]
                for q in range(a):
                    s -= C[m, q] * C[a, q]
                s /= C[a, a]
                C[m, a] = s
                s2 += s * s
            d = Y[k, p + i] - s2
            if not d > 1e-12 * Y[k, p + i]:
                ok = False
                break
            C[m, m] = math.sqrt(d)
            iw[2 * n + m] = i
            iw[n + i] = m
            m += 1
    if not ok:
        for a in range(m):
            iw[n + iw[2 * n + a]] = -1
        iw[2 * n + cap] = 0
        return _apply(Lf, free, r, yp, zp, v)
    iw[2 * n + cap] = m
    _apply(Lf, fm, r, yp, zp, zp)
    if m > 0:
        for a in range(m):  # C mu = -(A^{-1} r_F)_E: forward, then backward
            s = -zp[p + iw[2 * n + a]]
            for q in range(a):
                s -= C[a, q] * w[q]
            w[a] = s / C[a, a]
        for a in range(m - 1, -1, -1):
            s = w[a]
            for q in range(a + 1, m):
                s -= C[q, a] * w[q]
            w[a] = s / C[a, a]
        for a in range(m):
            _axpy_row(w[a], Y[iw[iw[2 * n + a]]], zp, p, n)
    zv = 0.0
    for i in range(n):
        if free[i]:
            zv += zp[p + i] * v[p + i]
        else:
            zp[p + i] = 0.0
    return zv


@njit(fastmath=FM, **JIT)
def _axpy_row(a, y, z, p, n):
    """``z += a y`` on the padded entries ``p .. p + n - 1`` (contiguous, vectorized)."""
    for t in range(p, p + n):
        z[t] += a * y[t]


@njit(**JIT)
def mprgp_fast(Ar, Lf, anorm, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, ws, free, pexp, sch, fm, Y, C, w, iw):
    """:func:`mprgp_core` for the filtered-factor preconditioners (ASC, IC, MIC) on the row-aligned
    layout: the same algorithm, the same steps and tests in the same order, with fused passes (CG move
    and free-set update in one pass; the CG coefficient ``z.Ap`` accumulated by the backward
    substitution; ``p.Ap``, ``g.p`` and the feasible step in one pass) and no allocation: ``ws``
    (``NWS``, n + 2p) and ``free`` (n,) are caller-provided, reusable across calls (their contents on
    entry do not matter). ``Ar``, ``Lf``, ``anorm``: from :func:`prepare_fast`. Returns ``(iterations,
    residual)`` like :func:`mprgp_core`. ``pexp=False`` leaves out our preconditioned expansion candidate
    (module docstring): every expansion is then Dostal and Schoberl's fixed-length projected gradient step,
    as in the paper, and costs one product with ``A`` instead of up to four plus a preconditioner
    application. ``sch``: apply the complete factor ``Lf`` exactly on the free set (:func:`_schur_fast`,
    ``PC_ASCS``; scratch ``fm``, ``Y``, ``C``, ``w``, ``iw``, reset here) instead of the filtered
    substitution; the scratch is not touched (and may be empty) otherwise."""
    n = x.shape[0]
    p = Lf.shape[2] - 1
    abar = 1.9 / anorm
    pd = ws[0]
    Ap = ws[1]
    yp = ws[2]
    zp = ws[3]
    cand = ws[4]
    beta = ws[5]
    g = ws[6]
    phi = ws[7]
    e = ws[8]
    for k in range(NWS):
        for j in range(p):
            ws[k, j] = 0.0
            ws[k, n + p + j] = 0.0
    if sch:
        # a new factor: no cached column, empty active list; e = 0, fm = all true
        for i in range(n):
            e[i] = 0.0
            fm[i] = True
            iw[i] = -1
            iw[n + i] = -1
        iw[2 * n + Y.shape[0]] = 0
        iw[2 * n + Y.shape[0] + 1] = 0
    for i in range(n):
        if x[i] < lo[i]:
            x[i] = lo[i]
        elif x[i] > hi[i]:
            x[i] = hi[i]
        cand[p + i] = x[i]
    rband_matvec(Ar, cand, Ap)
    for i in range(n):
        g[i] = Ap[p + i] - b[i]
    r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
    res0 = math.sqrt(r2)
    tol = max(atol, rtol * res0)
    it = 0
    res = res0
    cg = False
    pAp = 1.0
    while True:
        # one application per iteration, at a single call site (keeps the compiled code small): after a
        # CG step the conjugate direction continues, after any other step (or at the start) it restarts
        if sch:
            zAp = _schur_fast(Lf, free, lo, hi, phi, yp, zp, Ap, fm, e, Y, C, w, iw)
        else:
            zAp = _apply(Lf, free, phi, yp, zp, Ap)
        if cg:
            gam = zAp / pAp
            for i in range(n):
                pd[p + i] = zp[p + i] - gam * pd[p + i] if free[i] else 0.0
        else:
            for i in range(n):
                pd[p + i] = zp[p + i]
        if it >= maxit:
            break
        res = math.sqrt(r2)
        if it < hist.shape[0]:
            hist[it] = res
        if res <= tol:
            break
        it += 1
        cg = False
        pAp = 1.0
        if bb <= gamma * gamma * pp:
            rband_matvec(Ar, pd, Ap)
            pAp, gz, af = _curvature_slope_reach(pd, Ap, g, x, lo, hi, p)
            if not pAp > 0.0:
                break
            acg = gz / pAp
            if acg <= af:
                counts[0] += 1
                r2, bb, pp = _move_state(x, g, pd, Ap, acg, lo, hi, free, phi, beta, abar, p)
                cg = True
            else:
                counts[1] += 1
                for i in range(n):
                    di = pd[p + i]
                    xi = x[i] - af * di
                    g[i] -= af * Ap[p + i]
                    if xi < lo[i]:
                        xi = lo[i]
                    elif xi > hi[i]:
                        xi = hi[i]
                    # snap the blocking entries onto their bound
                    if di > 0.0 and xi - lo[i] <= 1e-14 * (1.0 + abs(xi)):
                        xi = lo[i]
                    elif di < 0.0 and hi[i] - xi <= 1e-14 * (1.0 + abs(xi)):
                        xi = hi[i]
                    x[i] = xi
                r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
                # expansion (see mprgp_core): projected preconditioned step, a = 1, 1/2, 1/4 (if pexp),
                # else the fixed-length projected gradient step
                accepted = False
                fx = 0.0
                if pexp:
                    for i in range(n):
                        fx += 0.5 * x[i] * (g[i] - b[i])
                    if sch:
                        _schur_fast(Lf, free, lo, hi, phi, yp, zp, zp, fm, e, Y, C, w, iw)
                    else:
                        # (the generic substitution: one inlined copy of the band-18 kernel is enough)
                        rfiltered_apply(Lf[0], free, phi, yp, zp, zp)
                a = 1.0
                for trial in range(3 if pexp else 0):
                    for i in range(n):
                        xi = x[i] - a * zp[p + i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        cand[p + i] = xi
                    rband_matvec(Ar, cand, Ap)
                    ft = 0.0
                    for i in range(n):
                        ft += cand[p + i] * (0.5 * Ap[p + i] - b[i])
                    if ft < fx:
                        counts[3] += 1
                        accepted = True
                        for i in range(n):
                            x[i] = cand[p + i]
                            g[i] = Ap[p + i] - b[i]
                        break
                    a *= 0.5
                if not accepted:
                    for i in range(n):
                        xi = x[i] - abar * phi[i]
                        if xi < lo[i]:
                            xi = lo[i]
                        elif xi > hi[i]:
                            xi = hi[i]
                        x[i] = xi
                        cand[p + i] = xi
                    rband_matvec(Ar, cand, Ap)
                    for i in range(n):
                        g[i] = Ap[p + i] - b[i]
                r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
        else:
            # proportioning along the chopped gradient
            counts[2] += 1
            rband_matvec(Ar, beta, Ap)
            dAd, gd, af = _curvature_slope_reach(beta, Ap, g, x, lo, hi, p)
            a = gd / dAd
            if af < a:
                a = af
            for i in range(n):
                xi = x[i] - a * beta[p + i]
                g[i] -= a * Ap[p + i]
                if xi < lo[i]:
                    xi = lo[i]
                elif xi > hi[i]:
                    xi = hi[i]
                x[i] = xi
            r2, bb, pp = _state_fast(x, g, lo, hi, free, phi, beta, abar, p)
    return it, math.sqrt(r2) if it > 0 else res


@njit(**JIT)
def mprgp_fast_solve(pc, A, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Ar, Lb, Lf, D, ws, free, pexp, fm, Y, C, w,
                     iw):
    """Factor and solve in one compiled call: :func:`prepare_fast` then :func:`mprgp_fast` for ``pc`` in
    ``FAST_PCS`` or ``PC_ASCS`` (the Schur-corrected application :func:`_schur_fast`, scratch ``fm``, ``Y``,
    ``C``, ``w``, ``iw``; unused, and may be empty, for the others). All scratch caller-provided, see
    :class:`MprgpWorkspace`. Returns ``(iterations, residual, #clamped pivots)``."""
    clamped, anorm = prepare_fast(pc, A, Ar, Lb, Lf, D)
    it, res = mprgp_fast(Ar, Lf, anorm, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, ws, free, pexp, pc == PC_ASCS,
                         fm, Y, C, w, iw)
    return it, res, clamped


@njit(**JIT)
def mprgp_rows_solve(pc, Ar, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Lb, Lf, D, ws, free, pexp, fm, Y, C, w, iw):
    """:func:`mprgp_fast_solve` for a caller that provides ``A`` as full rows ``Ar`` (:func:`prepare_rows`;
    saves the band conversion). Returns ``(iterations, residual, #clamped pivots)``."""
    clamped, anorm = prepare_rows(pc, Ar, Lb, Lf, D)
    it, res = mprgp_fast(Ar, Lf, anorm, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, ws, free, pexp, pc == PC_ASCS,
                         fm, Y, C, w, iw)
    return it, res, clamped


def schur_scratch(n: int, p: int, cap: int = SCHUR_CAP):
    """Scratch ``(fm, Y, C, w, iw)`` of the Schur-corrected fast path for ``n`` unknowns, half bandwidth ``p``
    and at most ``cap`` active (non-pinned) bounds with an exact application (beyond: filtered)."""
    cap = max(1, min(cap, n))
    return (np.ones(n, dtype=np.bool_), np.zeros((cap, n + 2 * p)), np.zeros((cap, cap)), np.zeros(cap),
            np.full(2 * n + cap + 2, -1, dtype=np.int64))


@njit(**JIT)
def mprgp_asc_solve(pc, A, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Ar, Lb, Lf, D, ws, free, pexp):
    """:func:`mprgp_fast_solve` without the Schur scratch (allocated here for ``PC_ASCS``, empty otherwise);
    the signature of the filtered-factor fast path before ``asc-schur`` had one."""
    n = x.shape[0]
    cap = 0
    if pc == PC_ASCS:
        cap = min(SCHUR_CAP, n)
    fm = np.ones(n if cap > 0 else 0, dtype=np.bool_)
    Y = np.zeros((cap, ws.shape[1]))
    C = np.zeros((cap, cap))
    w = np.zeros(cap)
    iw = np.full(2 * n + cap + 2 if cap > 0 else 0, -1, dtype=np.int64)
    return mprgp_fast_solve(pc, A, b, lo, hi, x, rtol, atol, maxit, hist, counts, gamma, Ar, Lb, Lf, D, ws, free, pexp, fm, Y, C,
                            w, iw)


class MprgpWorkspace:
    """Scratch of :func:`mprgp_fast_solve` for ``n`` unknowns and half bandwidth ``p``, reusable across solves
    (ASC, IC, MIC and the Schur-corrected ASC)."""

    def __init__(self, n: int, p: int, cap: int = SCHUR_CAP):
        self.Ar = np.zeros((n, 2 * p + 1))
        self.Lb = np.zeros((n, p + 1))
        self.Lf = np.zeros((2, n, p + 1))
        self.D = np.zeros(n)
        self.ws = np.zeros((NWS, n + 2 * p))
        self.free = np.zeros(n, dtype=np.bool_)
        self.counts = np.zeros(4)
        self.fm, self.Y, self.C, self.w, self.iw = schur_scratch(n, p, cap)

    @property
    def schur(self):
        """The Schur scratch as passed to :func:`mprgp_fast_solve`: ``(fm, Y, C, w, iw)``."""
        return self.fm, self.Y, self.C, self.w, self.iw

    def solve(self, pc, A, b, lo, hi, x, rtol=1e-8, atol=1e-14, maxit=10000, hist=None, gamma=1.0, pexp=True):
        """Factor ``A`` (lower band) and solve the box QP from ``x`` (in place); ``(iterations, residual, #clamped)``.
        ``counts`` accumulates the step counts (see :func:`mprgp_core`)."""
        h = np.zeros(0) if hist is None else hist
        return mprgp_fast_solve(int(pc), A, b, lo, hi, x, float(rtol), float(atol), int(maxit), h, self.counts, float(gamma),
                                self.Ar, self.Lb, self.Lf, self.D, self.ws, self.free, bool(pexp), *self.schur)


@njit(**JIT)
def mprgp(A, b, lo, hi, x, pc, L, D, rtol, atol, maxit, hist):
    """:func:`mprgp_core` with ``Gamma = 1`` and no step counters (every preconditioner, band layout). The
    fast path of ASC/IC/MIC/ASC-Schur is :func:`mprgp_fast_solve` / :class:`MprgpWorkspace` (kept out of this function
    so that its callers do not compile both)."""
    counts = np.zeros(4)
    return mprgp_core(A, b, lo, hi, x, pc, L, D, rtol, atol, maxit, hist, counts, 1.0)


@njit(**JIT)
def pgs(A, b, lo, hi, x, rtol, atol, maxit, hist):
    """Projected Gauss-Seidel sweeps; residual = projected-gradient norm after each sweep."""
    n = x.shape[0]
    p = A.shape[1] - 1
    g = np.empty(n)
    free = np.empty(n, dtype=np.bool_)
    phi = np.empty(n)
    beta = np.empty(n)
    phit = np.empty(n)
    for i in range(n):
        x[i] = min(max(x[i], lo[i]), hi[i])
    band_matvec(A, x, g)
    for i in range(n):
        g[i] -= b[i]
    r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, 1.0, phit)
    res0 = math.sqrt(r2)
    tol = max(atol, rtol * res0)
    it = 0
    res = res0
    while it < maxit:
        if it < hist.shape[0]:
            hist[it] = res
        if res <= tol:
            break
        it += 1
        for i in range(n):
            s = A[i, 0] * x[i]
            k0 = p if i >= p else i
            for k in range(1, k0 + 1):
                s += A[i, k] * x[i - k]
            kmax = n - 1 - i
            if kmax > p:
                kmax = p
            for k in range(1, kmax + 1):
                s += A[i + k, k] * x[i + k]
            xi = x[i] - (s - b[i]) / A[i, 0]
            x[i] = min(max(xi, lo[i]), hi[i])
        band_matvec(A, x, g)
        for i in range(n):
            g[i] -= b[i]
        r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, 1.0, phit)
        res = math.sqrt(r2)
    return it, res


@njit(**JIT)
def ipm(A, b, lo, hi, x, rtol, atol, maxit, hist):
    """Primal-dual interior point for the box QP; one banded LDL^T of ``A + Z_l/S_l + Z_u/S_u`` per iteration.
    Residual recorded: projected-gradient norm of the current (strictly interior) iterate."""
    n = x.shape[0]
    p = A.shape[1] - 1
    g = np.empty(n)
    zl = np.zeros(n)
    zu = np.zeros(n)
    hasl = np.empty(n, dtype=np.bool_)
    hasu = np.empty(n, dtype=np.bool_)
    pinned = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if lo[i] >= hi[i]:
            # a variable pinned by its bounds is fixed, not a barrier term (its slack would be zero)
            pinned[i] = True
            x[i] = lo[i]
            hasl[i] = False
            hasu[i] = False
            continue
        hasl[i] = math.isfinite(lo[i])
        hasu[i] = math.isfinite(hi[i])
        # strictly interior start
        if hasl[i] and hasu[i]:
            w = hi[i] - lo[i]
            x[i] = min(max(x[i], lo[i] + 0.1 * w), hi[i] - 0.1 * w)
        elif hasl[i]:
            x[i] = max(x[i], lo[i] + 1e-3 * (1.0 + abs(lo[i])))
        elif hasu[i]:
            x[i] = min(x[i], hi[i] - 1e-3 * (1.0 + abs(hi[i])))
        if hasl[i]:
            zl[i] = 1.0
        if hasu[i]:
            zu[i] = 1.0
    K = np.empty_like(A)
    D = np.empty(n)
    rhs = np.empty(n)
    dx = np.empty(n)
    free = np.empty(n, dtype=np.bool_)
    phi = np.empty(n)
    beta = np.empty(n)
    phit = np.empty(n)
    res0 = -1.0
    it = 0
    res = 0.0
    while it <= maxit:
        band_matvec(A, x, g)
        for i in range(n):
            g[i] -= b[i]
        # projected-gradient residual of the iterate (comparable with MPRGP)
        r2, bb, pp = _state(x, g, lo, hi, free, phi, beta, 1.0, phit)
        mu = 0.0
        m = 0
        rd = 0.0
        for i in range(n):
            ri = g[i] - zl[i] + zu[i]
            if not pinned[i]:
                rd += ri * ri
            if hasl[i]:
                mu += (x[i] - lo[i]) * zl[i]
                m += 1
            if hasu[i]:
                mu += (hi[i] - x[i]) * zu[i]
                m += 1
        mu = mu / m if m > 0 else 0.0
        res = math.sqrt(rd) + mu * n  # KKT residual
        if res0 < 0.0:
            res0 = math.sqrt(r2) if r2 > 0 else res
        if it < hist.shape[0]:
            hist[it] = res
        if res <= max(atol, rtol * res0):
            break
        if it == maxit:
            break
        it += 1
        sigma = 0.1
        K[:, :] = A
        for i in range(n):
            rhs[i] = -(g[i] - zl[i] + zu[i])
            if hasl[i]:
                s = x[i] - lo[i]
                K[i, 0] += zl[i] / s
                rhs[i] += sigma * mu / s - zl[i]
            if hasu[i]:
                s = hi[i] - x[i]
                K[i, 0] += zu[i] / s
                rhs[i] += -sigma * mu / s + zu[i]
        for i in range(n):
            if pinned[i]:
                rhs[i] = 0.0
                for k in range(p + 1):
                    K[i, k] = 0.0
                for k in range(1, p + 1):
                    if i + k < n:
                        K[i + k, k] = 0.0
                K[i, 0] = 1.0
        ldlt_factor_band(K, D, 1e-14)
        dx[:] = rhs
        # solve
        for j in range(n):
            bj = dx[j]
            amax = n - 1 - j
            if amax > p:
                amax = p
            for a in range(1, amax + 1):
                dx[j + a] -= K[j + a, a] * bj
        for i in range(n):
            dx[i] /= D[i]
        for i in range(n - 1, -1, -1):
            bi = dx[i]
            kmax = i if i < p else p
            for k in range(1, kmax + 1):
                dx[i - k] -= K[i, k] * bi
        # dual steps and fraction to the boundary
        ap = 1.0
        ad = 1.0
        for i in range(n):
            if hasl[i]:
                s = x[i] - lo[i]
                dzl = (sigma * mu - zl[i] * dx[i]) / s - zl[i]
                if dx[i] < 0.0:
                    ap = min(ap, -0.995 * s / dx[i])
                if dzl < 0.0:
                    ad = min(ad, -0.995 * zl[i] / dzl)
                phi[i] = dzl
            if hasu[i]:
                s = hi[i] - x[i]
                dzu = (sigma * mu + zu[i] * dx[i]) / s - zu[i]
                if dx[i] > 0.0:
                    ap = min(ap, 0.995 * s / dx[i])
                if dzu < 0.0:
                    ad = min(ad, -0.995 * zu[i] / dzu)
                beta[i] = dzu
        for i in range(n):
            x[i] += ap * dx[i]
            if hasl[i]:
                zl[i] += ad * phi[i]
            if hasu[i]:
                zu[i] += ad * beta[i]
    return it, res
