"""Newton iterations of one generalized-alpha step, compiled (GA paper, Algorithm 1, lines 10-23):
boundary values written into the unknowns (Sec. 3.4.1), the pinned root's frame and Jacobian
chain rule, the block LU of the Newton matrix with a Woodbury term for the end loads, and the
chord Newton loop with adaptive under-relaxation (Sec. 4.3). :mod:`rodlab.galpha.solver` drives
them; :mod:`rodlab.galpha.stepping` runs whole steps around :func:`newton_kernel`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_INNER, python_entry
from ..linalg.banded_lu import block_lu
from .residual import NV, _inv_one_plus_skew, _residual_blocks, _tip_sensitivity
from .state import _cayley, _integrate_frames, _integrate_positions

@njit(**JIT)
def apply_bc(x, R, kind, vals, khat, K, gw):
    """Write the boundary values into x (GA paper, Sec. 3.4.1), kinematic root: see
    :func:`apply_bc_kinds` with ``root_kind = 0``."""
    _apply_bc_kinds(x, R, 0, kind, vals, khat, K, gw)


@njit(**JIT_INNER)
def _apply_bc_kinds(x, R, root_kind, kind, vals, khat, K, gw):
    """Write the boundary values into x (GA paper, Sec. 3.4.1). Root: g(0) = R0^T gw; u = R0^T
    vals[0] (world velocity); kinematic root (root_kind 0): omega = R0^T vals[1]; pinned root
    (1): kappa = khat (no end couple). Tip: natural (kind 1) n = R^T vals[2], kappa = khat +
    K^-1 R^T vals[3]; kinematic (0) u = R^T vals[2], omega = R^T vals[3]; pin (2) u = R^T
    vals[2], kappa = khat + K^-1 R^T vals[3]; slide (3) u1, u2 = (R^T vals[2])_1,2, omega = R^T
    vals[3], n3 = vals[4, 0]."""
    N = x.shape[0]
    for q in range(3):
        x[0, q] = R[0, 0, q] * vals[0, 0] + R[0, 1, q] * vals[0, 1] + R[0, 2, q] * vals[0, 2]
        if root_kind == 1:
            x[0, 6 + q] = khat[0, q]
        else:
            x[0, 3 + q] = R[0, 0, q] * vals[1, 0] + R[0, 1, q] * vals[1, 1] + R[0, 2, q] * vals[1, 2]
        x[0, 12 + q] = R[0, 0, q] * gw[0] + R[0, 1, q] * gw[1] + R[0, 2, q] * gw[2]
    L = N - 1
    for q in range(3):
        a = R[L, 0, q] * vals[2, 0] + R[L, 1, q] * vals[2, 1] + R[L, 2, q] * vals[2, 2]
        b = R[L, 0, q] * vals[3, 0] + R[L, 1, q] * vals[3, 1] + R[L, 2, q] * vals[3, 2]
        if kind == 1:
            x[L, 9 + q] = a
            x[L, 6 + q] = khat[L, q] + b / K[q]
        elif kind == 0:
            x[L, q] = a
            x[L, 3 + q] = b
        elif kind == 2:
            x[L, q] = a
            x[L, 6 + q] = khat[L, q] + b / K[q]
        else:
            if q < 2:
                x[L, q] = a
            x[L, 3 + q] = b
    if kind == 3:
        x[L, 11] = vals[4, 0]


@njit(**JIT_INNER)
def _root_pin_frame(x, rootinfo, R0):
    """Pinned root: ``R0 = R0_old cay(h)``, ``h = c_new omega(0) + h_old`` (rootinfo: [root kind,
    c_new, h_old (3), R0_old (9, row-major)])."""
    c = rootinfo[1]
    E = np.empty((3, 3))
    _cayley(c * x[0, 3] + rootinfo[2], c * x[0, 4] + rootinfo[3], c * x[0, 5] + rootinfo[4], E)
    for a in range(3):
        for b in range(3):
            R0[a, b] = (rootinfo[5 + 3 * a] * E[0, b] + rootinfo[6 + 3 * a] * E[1, b]
                        + rootinfo[7 + 3 * a] * E[2, b])


@njit(**JIT_INNER)
def _root_pin_jacobian(x, rootinfo, gw, Jb):
    """Chain rule for the pinned root: ``g(0) = R0^T gw = cay(-h) p`` (p = R0_old^T gw) depends
    on omega(0) through h; ``(I + [h]/2) dg = [(p + g)/2]x dh`` (differentiating ``(I + [h]/2)
    g = (I - [h]/2) p``), ``dh = c_new d omega(0)``. Adds ``J_g dg/domega`` to the omega(0)
    columns of segment 0's block (g(0) only enters segment 0)."""
    c = rootinfo[1]
    h0 = 0.5 * (c * x[0, 3] + rootinfo[2])
    h1 = 0.5 * (c * x[0, 4] + rootinfo[3])
    h2 = 0.5 * (c * x[0, 5] + rootinfo[4])
    p = np.empty(3)
    for q in range(3):
        p[q] = rootinfo[5 + q] * gw[0] + rootinfo[8 + q] * gw[1] + rootinfo[11 + q] * gw[2]
    m0 = 0.5 * (p[0] + x[0, 12])
    m1 = 0.5 * (p[1] + x[0, 13])
    m2 = 0.5 * (p[2] + x[0, 14])
    Minv = np.empty((3, 3))
    _inv_one_plus_skew(h0, h1, h2, Minv)
    G = np.empty((3, 3))
    for r in range(3):
        G[r, 0] = c * (Minv[r, 1] * m2 - Minv[r, 2] * m1)
        G[r, 1] = c * (-Minv[r, 0] * m2 + Minv[r, 2] * m0)
        G[r, 2] = c * (Minv[r, 0] * m1 - Minv[r, 1] * m0)
    blk = Jb[0]
    for r in range(blk.shape[0]):
        for q in range(3):
            blk[r, 3 + q] += blk[r, 12] * G[0, q] + blk[r, 13] * G[1, q] + blk[r, 14] * G[2, q]


@njit(**JIT_INNER)
def _init_gravity_field(x, R0, gw, ds):
    """g field consistent with the discrete kinematics: g[0] = R0^T gw, then the Cayley step
    ``g[j] = cay(-kappa_mid ds) g[j-1]`` that solves the g rows of the residual exactly."""
    N = x.shape[0]
    E = np.empty((3, 3))
    for q in range(3):
        x[0, 12 + q] = R0[0, q] * gw[0] + R0[1, q] * gw[1] + R0[2, q] * gw[2]
    for j in range(1, N):
        _cayley(-0.5 * (x[j - 1, 6] + x[j, 6]) * ds, -0.5 * (x[j - 1, 7] + x[j, 7]) * ds,
                -0.5 * (x[j - 1, 8] + x[j, 8]) * ds, E)
        for q in range(3):
            x[j, 12 + q] = E[q, 0] * x[j - 1, 12] + E[q, 1] * x[j - 1, 13] + E[q, 2] * x[j - 1, 14]


@njit(**JIT)
def initial_fields(x, R0, gw, ds, cayley, R, r0, r):
    """A rod's first state from its Darboux vectors ``x[:, 6:9]`` and root pose ``R0`` (3, 3),
    ``r0`` (3,) [m], in one compiled call (one compilation at setup instead of three): the g field
    (:func:`init_gravity_field`), the frames ``R`` (N, 3, 3)
    (:func:`rodlab.galpha.state.integrate_frames`) and the positions ``r`` (N, 3) [m]
    (:func:`rodlab.galpha.state.integrate_positions`)."""
    _init_gravity_field(x, R0, gw, ds)
    _integrate_frames(x, R0, ds, cayley, R)
    _integrate_positions(x, R, r0, ds, r)


@njit(**JIT_INNER)
def _update_free(x, colmap, delta, mu):
    """x_free += mu delta; returns max |mu delta_i| / max(|x_i|, 1e-300 + |mu delta_i|) (relative step)."""
    flat = x.reshape(-1)
    rel = 0.0
    for i in range(flat.size):
        c = colmap[i]
        if c >= 0:
            d = mu * delta[c]
            flat[i] += d
            a = abs(d) / (abs(flat[i]) + abs(d) + 1e-300)
            if a > rel:
                rel = a
    return rel


# block LU for the Newton matrix: 15 unknowns per node, 9 of them (u, omega, g) fixed at the root; inner
# kernels (compiled callers only: Python gets the same code from block_lu(NV, 9, 6))
_LU_FACTOR, _LU_SOLVE, _LU_SOLVE1 = block_lu(NV, 9, 6, inner=True)  # 6 right-hand sides: the Woodbury term

# integer / float option slots of newton_kernel
I_MAXIT, I_ADAPT, I_EXACT, I_NEEDF, I_COUPLED, I_KIND, I_CAY = range(7)
F_TOL, F_RELAX, F_MINRELAX, F_REUSE = range(4)
# return codes
NEWTON_CONVERGED, NEWTON_CONVERGED_STEP, NEWTON_MAXIT, NEWTON_SINGULAR = range(4)
# what the chord Newton's factors are (GAlphaSolver.bind_factors): valid (1/0), carry a Woodbury
# term (1/0), the tip kind and the step parameters (_prm, 11 values) they were made with
M_VALID, M_COUPLED, M_KIND, M_PRM = range(4)
META_SIZE = M_PRM + 11


@njit(**JIT_INNER)
def _inv_small(A, Ainv):
    """Gauss-Jordan inverse with partial pivoting of a small dense matrix; False if singular."""
    n = A.shape[0]
    M = A.copy()
    for i in range(n):
        for j in range(n):
            Ainv[i, j] = 1.0 if i == j else 0.0
    for k in range(n):
        p = k
        best = abs(M[k, k])
        for i in range(k + 1, n):
            if abs(M[i, k]) > best:
                best = abs(M[i, k])
                p = i
        if best == 0.0 or not np.isfinite(best):
            return False
        if p != k:
            for j in range(n):
                t = M[k, j]; M[k, j] = M[p, j]; M[p, j] = t
                t = Ainv[k, j]; Ainv[k, j] = Ainv[p, j]; Ainv[p, j] = t
        inv = 1.0 / M[k, k]
        for j in range(n):
            M[k, j] *= inv
            Ainv[k, j] *= inv
        for i in range(n):
            if i != k:
                f = M[i, k]
                if f != 0.0:
                    for j in range(n):
                        M[i, j] -= f * M[k, j]
                        Ainv[i, j] -= f * Ainv[k, j]
    return True


@njit(**JIT_INNER)
def _woodbury_kernel(x, R, ds, vals, kind, colmap, K, tipblock, W, piv, T, tpiv, D, C, Y, Cz, Sinv):
    """Exact coupling of the end loads / end velocities through the tip frame R_L (which
    depends on every kappa): Newton matrix ``A + C D`` with A the block Jacobian, C = dF/d(tip
    values) (last segment rows only) and D = d(tip values)/d kappa (:func:`tip_sensitivity`);
    prepares the Sherman-Morrison-Woodbury solve: ``Y = A^-1 C`` (6 block solves) and
    ``Sinv = (I + D Y)^-1``. Returns False if ``I + D Y`` is singular."""
    N = x.shape[0]
    _tip_sensitivity(x, R, ds, vals[2:4], colmap, D)
    C[:, :] = 0.0
    r0 = NV * (N - 2)
    for r in range(NV):
        for q in range(3):
            if kind == 1:
                C[r0 + r, q] = tipblock[r, 9 + q]
                C[r0 + r, 3 + q] = tipblock[r, 6 + q] / K[q]
            elif kind == 2:
                C[r0 + r, q] = tipblock[r, q]
                C[r0 + r, 3 + q] = tipblock[r, 6 + q] / K[q]
            else:
                C[r0 + r, q] = tipblock[r, q] if (kind == 0 or q < 2) else 0.0
                C[r0 + r, 3 + q] = tipblock[r, 3 + q]
    _LU_SOLVE(W, piv, T, tpiv, C, Y, Cz)
    Smat = np.zeros((6, 6))
    for a in range(6):
        Smat[a, a] = 1.0
        for b in range(6):
            acc = 0.0
            for i in range(D.shape[1]):
                acc += D[a, i] * Y[i, b]
            Smat[a, b] += acc
    return _inv_small(Smat, Sinv)


@njit(**JIT_INNER)
def _newton_kernel(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, R0, vals, gw, colmap, root_free, tip_free,
                  iopt, fopt, P, dP, F, Jb, tipblock, R, W, piv, T, tpiv, rhs, delta, zwork, D, C, Y, Cz, Sinv,
                  x_base, out, rootinfo):
    """Newton iterations of one step (GA paper, Algorithm 1, lines 10-23), all in compiled code.

    Per iteration: frames (Eq. 23), boundary values (Sec. 3.4.1), residual and (when needed)
    block Jacobian, block LU (:func:`rodlab.linalg.banded_lu.make_block_lu`), Woodbury term for
    the tip frame, ``x <- x + mu dx`` with adaptive under-relaxation (Sec. 4.3). The LU factors
    (W, piv, T, tpiv, and D, Y, Sinv of the Woodbury term) are reused across iterations -- and
    across calls if ``iopt[I_NEEDF] == 0`` -- while each iterate still reduces the residual by the
    factor ``fopt[F_REUSE]`` (chord Newton); otherwise the Jacobian is refactored.

    iopt (int64): max_iter, adaptive, exact_end_loads, need_factor (in), coupled (in/out: the
    current factors carry a Woodbury term), tip kind, cayley. fopt: tol, relaxation,
    min_relaxation, reuse_ratio. out (float64, 6): iterations, residual, relaxation,
    factorizations, factors valid (1/0), zero-pivot column. rootinfo: see
    :func:`root_pin_frame` (rootinfo[0] = 1: pinned root, R0 is recomputed from omega(0) in
    every iteration and written back; the Jacobian gets :func:`root_pin_jacobian`). Returns a
    NEWTON_* code.
    """
    pinned = rootinfo[0] == 1.0
    kind = iopt[I_KIND]
    cay = iopt[I_CAY] != 0
    max_iter = iopt[I_MAXIT]
    adaptive = iopt[I_ADAPT] != 0
    need_factor = iopt[I_NEEDF] != 0
    coupled = iopt[I_COUPLED] != 0
    tol = fopt[F_TOL]
    relax = fopt[F_RELAX]
    min_relax = fopt[F_MINRELAX]
    reuse_ratio = fopt[F_REUSE]
    ds = prm[0]
    n_all = delta.shape[0]
    xf = x.reshape(-1)
    xb = x_base.reshape(-1)
    Ff = F.reshape(-1)
    nr = Ff.shape[0]
    mu = relax
    for i in range(n_all):
        xb[i] = xf[i]
    f_base = np.inf
    fn = np.inf
    it = 0
    rejects = 0
    stale = False
    rel_step = 1.0
    nfact = 0
    valid = 1.0
    code = NEWTON_MAXIT
    dtmp = np.empty(6)
    etmp = np.empty(6)
    while True:
        if pinned:
            _root_pin_frame(x, rootinfo, R0)
        _integrate_frames(x, R0, ds, cay, R)
        _apply_bc_kinds(x, R, 1 if pinned else 0, kind, vals, khat, K, gw)
        fn = _residual_blocks(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, need_factor, F, Jb, tipblock)
        if pinned and need_factor:
            _root_pin_jacobian(x, rootinfo, gw, Jb)
        if not np.isfinite(fn):
            fn = np.inf
        if fn < tol:
            code = NEWTON_CONVERGED
            break
        if it > 0 and rel_step < 1e-13 and fn < 1e3 * tol:
            code = NEWTON_CONVERGED_STEP
            break
        if it > 0 and fn > f_base:
            if stale:  # the stale factors gave a bad direction: redo from x_base with a fresh Jacobian
                for i in range(n_all):
                    xf[i] = xb[i]
                need_factor = True
                stale = False
                it += 1
                if it > max_iter:
                    break
                continue
            if adaptive and mu > min_relax and rejects < 8:
                mu *= 0.5
                rejects += 1
                for i in range(n_all):
                    xf[i] = xb[i]
                _update_free(x, colmap, delta, mu)
                continue
        if it >= max_iter:
            break
        if stale and fn > reuse_ratio * f_base and not need_factor:
            need_factor = True
            _residual_blocks(x, xprev, xdotprev, old, khat, K, J, prm, rowscale, P, dP, np.bool_(True), F, Jb, tipblock)
            if pinned:
                _root_pin_jacobian(x, rootinfo, gw, Jb)
        if adaptive and rejects == 0 and it > 0:
            mu = min(relax, 2.0 * mu)
        rejects = 0
        f_base = fn
        for i in range(n_all):
            xb[i] = xf[i]
        if need_factor:
            info = _LU_FACTOR(Jb, root_free, tip_free, W, piv, T, tpiv)
            nfact += 1
            if info != 0:
                valid = 0.0
                out[5] = info - 1
                code = NEWTON_SINGULAR
                break
            need_factor = False
            stale = False
            coupled = False
            if iopt[I_EXACT] != 0:
                for a in range(2, 4):
                    for q in range(3):
                        if vals[a, q] != 0.0:
                            coupled = True
            if coupled:
                coupled = _woodbury_kernel(x, R, ds, vals, kind, colmap, K, tipblock, W, piv, T, tpiv, D, C, Y, Cz,
                                           Sinv)
        else:
            stale = True
        for i in range(nr):
            rhs[i] = -Ff[i]
        _LU_SOLVE1(W, piv, T, tpiv, rhs, delta, zwork)
        if coupled:  # (A + C D)^-1 r = A^-1 r - Y S^-1 D A^-1 r
            for a in range(6):
                acc = 0.0
                for i in range(n_all):
                    acc += D[a, i] * delta[i]
                dtmp[a] = acc
            for a in range(6):
                acc = 0.0
                for b in range(6):
                    acc += Sinv[a, b] * dtmp[b]
                etmp[a] = acc
            for i in range(n_all):
                acc = 0.0
                for a in range(6):
                    acc += Y[i, a] * etmp[a]
                delta[i] -= acc
        rel_step = _update_free(x, colmap, delta, mu)
        it += 1
    iopt[I_COUPLED] = 1 if coupled else 0
    out[0] = it
    out[1] = fn
    out[2] = mu
    out[3] = nfact
    out[4] = valid
    return code


# Python entries of the inner kernels (the static solve, tests)
apply_bc_kinds = python_entry(_apply_bc_kinds, "apply_bc_kinds")
root_pin_frame = python_entry(_root_pin_frame, "root_pin_frame")
root_pin_jacobian = python_entry(_root_pin_jacobian, "root_pin_jacobian")
init_gravity_field = python_entry(_init_gravity_field, "init_gravity_field")
newton_kernel = python_entry(_newton_kernel, "newton_kernel")
