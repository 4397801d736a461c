"""Whole generalized-alpha time steps of one rod in one compiled call (GA paper, Algorithm 1).

:func:`advance_steps` (its Python entry; :func:`rodlab.galpha.batch.advance_rods` runs it for every
rod of a world in one call) runs up to ``nsteps`` steps: per step the previous-step terms of Eq. 18,
the root frame turned by the root's angular velocity (midpoint rule; a pinned root's frame is
integrated inside Newton), the Newton iterations of :func:`rodlab.galpha.newton.newton_kernel`
(with the chord Newton's reuse test of its LU factors), and after convergence the rates of Eq. 19,
the frames (Eq. 23), the positions along s and the positions integrated in time (Sec. 4.4). It
stops at the first step whose Newton solve fails and leaves the state at the last good step; the
caller (:meth:`rodlab.galpha.GAlphaSolver.advance`) retries that step in substeps.

The boundary values come from Python (they may be functions of time), one row per step ``k``
(``B_*`` slots): the tip kind, the values (5, 3) at the step's end time
(:meth:`rodlab.galpha.boundary.Boundary.values`), the root velocity at its start and the root
angular velocity at its middle; one row holds for every step (a constant boundary). The model
constants and all scratch travel in one float64 buffer (:func:`float_views`) and one int64
buffer: 22 arguments instead of 55 (numba's dispatch checks each one). This is the arithmetic of
the former per-step Python driver, operation for operation, so trajectories are unchanged bitwise.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT_INNER, python_entry
from .newton import (I_COUPLED, I_KIND, I_NEEDF, M_COUPLED, M_KIND, M_PRM, M_VALID, NEWTON_CONVERGED,
                     NEWTON_CONVERGED_STEP, _newton_kernel)
from .residual import NV, _old_terms
from .state import _advance_velocity_positions, _expm, _integrate_frames, _integrate_positions
from .views import view1, view2, view3

# slots of the ``res`` view (float64): steps taken, the last Newton code, the time reached [s], and
# summed over the call: Newton iterations, factorizations, steps tried (failed one included)
R_DONE, R_CODE, R_TIME, R_ITERS, R_FACTS, R_TRIED = range(6)
RES_SIZE = 6
# a solver's running totals (GAlphaSolver.total_iterations, factorizations, total_steps): the sums of
# R_ITERS, R_FACTS and R_TRIED over its runs
K_ITERS, K_FACTS, K_STEPS = range(3)
COUNTS_SIZE = 3
# slots of the ``bc`` rows: the tip kind, the (5, 3) boundary values, root velocity, root angular velocity
B_KIND, B_VALS, B_VOLD, B_WMID = 0, 1, 16, 19
BC_SIZE = 22
# slots of the int64 buffer: newton_kernel's iopt (7), four flags, then the column maps (4, 15 N)
I_FIRST_EULER, I_REUSE, I_PINNED, I_CAYLEY, I_COLMAPS = 7, 8, 9, 10, 11


@njit(**JIT_INNER)
def _float_views(fb, N):
    """A rod's float64 model constants and scratch, every one a view of the one buffer ``fb``
    (:func:`float_buffer_size` long) for a rod of ``N`` nodes, so a compiled call takes one
    argument for all of them (numba checks each array argument on every call, ~0.15 us each):
    ``khat`` (N, 3), ``K`` (3,), ``J`` (3,), ``rowscale`` (15,), ``gw`` (3,), ``fopt`` (4,),
    ``out`` (6,), ``rootinfo`` (14,), ``res`` (6,), then the Newton scratch ``Pw`` (N, 12),
    ``old`` (N-1, 15), ``P`` (N, 12), ``dP`` (N, 12, 15), ``F`` (N-1, 15), ``Jb`` (N-1, 15, 30),
    ``tipblock`` (15, 15), ``Rw`` (N, 3, 3), ``rhs`` (15 (N-1),), ``delta`` (15 N,), ``zwork``
    (15 (N-1),), ``C`` and ``Cz`` (15 (N-1), 6), ``xbase``, ``xtrial`` (N, 15), ``Rold`` (N, 3, 3).
    Called from Python too, which then gets views of ``fb``: one layout for both."""
    nf, nr = N * NV, (N - 1) * NV
    o = 0
    khat = view2(fb, o, N, 3)
    o += 3 * N
    K = view1(fb, o, 3)
    J = view1(fb, o + 3, 3)
    rowscale = view1(fb, o + 6, NV)
    o += 6 + NV
    gw = view1(fb, o, 3)
    fopt = view1(fb, o + 3, 4)
    out = view1(fb, o + 7, 6)
    rootinfo = view1(fb, o + 13, 14)
    res = view1(fb, o + 27, RES_SIZE)
    o += 27 + RES_SIZE
    Pw = view2(fb, o, N, 12)
    o += 12 * N
    old = view2(fb, o, N - 1, NV)
    o += nr
    P = view2(fb, o, N, 12)
    o += 12 * N
    dP = view3(fb, o, N, 12, NV)
    o += 12 * nf
    F = view2(fb, o, N - 1, NV)
    o += nr
    Jb = view3(fb, o, N - 1, NV, 2 * NV)
    o += 2 * NV * nr
    tipblock = view2(fb, o, NV, NV)
    o += NV * NV
    Rw = view3(fb, o, N, 3, 3)
    o += 9 * N
    rhs = view1(fb, o, nr)
    o += nr
    delta = view1(fb, o, nf)
    o += nf
    zwork = view1(fb, o, nr)
    o += nr
    C = view2(fb, o, nr, 6)
    o += 6 * nr
    Cz = view2(fb, o, nr, 6)
    o += 6 * nr
    xbase = view2(fb, o, N, NV)
    o += nf
    xtrial = view2(fb, o, N, NV)
    o += nf
    Rold = view3(fb, o, N, 3, 3)
    return (khat, K, J, rowscale, gw, fopt, out, rootinfo, res, Pw, old, P, dP, F, Jb, tipblock, Rw, rhs, delta, zwork,
            C, Cz, xbase, xtrial, Rold)


float_views = _float_views.py_func  # the same views for Python callers (numpy slicing and reshape)


def float_buffer_size(N: int) -> int:
    """Length of :func:`float_views`' buffer for a rod of ``N`` nodes."""
    nf, nr = N * NV, (N - 1) * NV
    return 3 * N + 6 + NV + 27 + RES_SIZE + 12 * N + nr + 12 * N + 12 * nf + nr + 2 * NV * nr + NV * NV + 9 * N \
        + nr + nf + nr + 12 * nr + 2 * nf + 9 * N


@njit(**JIT_INNER)
def _reuse_factors(meta, kind, prm):
    """The chord Newton may start from the kept LU factors: they are valid and were made for this
    tip kind and these step parameters (exact comparison)."""
    if meta[M_VALID] != 1.0 or meta[M_KIND] != kind:
        return False
    for i in range(prm.shape[0]):
        if meta[M_PRM + i] != prm[i]:
            return False
    return True


@njit(**JIT_INNER)
def _advance_steps(nsteps, t, dt, step_count, x, xdot, R, r, r_vel, W, piv, T, tpiv, D, Y, Sinv, meta, bc, prm, fb, ib,
                  end_free):
    """Up to ``nsteps`` steps of ``dt`` [s] from time ``t`` [s] of a rod that has taken
    ``step_count`` steps (module docstring). ``x``, ``xdot``, ``R``, ``r``, ``r_vel``: the state,
    changed in place by every step that converges; ``W`` .. ``meta``: the chord Newton's factors
    and what they were made for. ``bc`` (1 or nsteps, ``BC_SIZE``): the boundary rows (``B_*``
    slots); ``prm`` (2, 11): the step parameters of a first backward-Euler step and of every other
    step (:meth:`rodlab.galpha.GAlphaSolver._prm`); ``fb``: :func:`float_views`' buffer; ``ib``:
    ``iopt``, the flags (``I_FIRST_EULER``: the rod's first step is backward Euler, ``I_REUSE``,
    ``I_PINNED`` root, ``I_CAYLEY``) and the column maps (4, 15 N) per tip kind; ``end_free`` (4, 2,
    15): the root and tip node's free unknowns per tip kind. Writes the ``res`` view (``R_*``
    slots) and returns the number of steps taken."""
    N = x.shape[0]
    (khat, K, J, rowscale, gw, fopt, out, rootinfo, res, Pw, old, P, dP, F, Jb, tipblock, Rw, rhs, delta, zwork, C, Cz,
     xbase, xtrial, Rold) = _float_views(fb, N)
    iopt = ib[:7]
    colfull = ib[I_COLMAPS:I_COLMAPS + 4 * N * NV].reshape((4, N * NV))
    first_euler = ib[I_FIRST_EULER] != 0
    reuse_jacobian = ib[I_REUSE] != 0
    pinned = ib[I_PINNED] != 0
    cay = ib[I_CAYLEY] != 0
    prm_first = prm[0]
    prm_rest = prm[1]
    vals = np.empty((5, 3))
    ds = prm_rest[0]
    done = 0
    res[R_ITERS] = 0.0
    res[R_FACTS] = 0.0
    res[R_TRIED] = 0.0
    res[R_CODE] = NEWTON_CONVERGED
    E = np.empty((3, 3))
    r0 = np.empty(3)
    for k in range(nsteps):
        row = bc[k if bc.shape[0] > 1 else 0]
        kind = np.int64(row[B_KIND])
        for a in range(5):
            for q in range(3):
                vals[a, q] = row[B_VALS + 3 * a + q]
        bv = vals
        first = step_count == 0 and first_euler
        prm = prm_first if first else prm_rest
        g = prm[6]
        _old_terms(x, xdot, khat, K, J, prm, Pw, old)
        t_new = t + dt
        _expm(row[B_WMID] * dt, row[B_WMID + 1] * dt, row[B_WMID + 2] * dt, E)
        R0 = E @ R[0]
        rootinfo[:] = 0.0
        if pinned:  # pinned root: its frame follows omega(0), midpoint rule (backward Euler in the first step)
            th = g if first else 0.5
            rootinfo[0] = 1.0
            rootinfo[1] = th * dt
            for q in range(3):
                rootinfo[2 + q] = (1.0 - th) * dt * x[0, 3 + q]
            for a in range(3):
                for c in range(3):
                    rootinfo[5 + 3 * a + c] = R[0, a, c]
        for j in range(N):  # element loops, not slice assignments (numba's shape-error path compiles for each)
            for q in range(NV):
                xtrial[j, q] = x[j, q]
        # Newton (Algorithm 1, lines 10-23), the chord Newton's factors reused where they fit
        iopt[I_NEEDF] = 0 if (reuse_jacobian and _reuse_factors(meta, kind, prm)) else 1
        iopt[I_COUPLED] = 1 if meta[M_COUPLED] != 0.0 else 0
        iopt[I_KIND] = kind
        out[5] = -1.0
        code = _newton_kernel(xtrial, x, xdot, old, khat, K, J, prm, rowscale, R0, bv, gw, colfull[kind],
                             end_free[kind, 0], end_free[kind, 1], iopt, fopt, P, dP, F, Jb, tipblock, Rw, W, piv, T,
                             tpiv, rhs, delta, zwork, D, C, Y, Cz, Sinv, xbase, out, rootinfo)
        nfact = out[3]
        res[R_ITERS] += out[0]
        res[R_FACTS] += nfact
        res[R_TRIED] += 1.0
        meta[M_COUPLED] = iopt[I_COUPLED]
        if out[4] == 0.0:
            meta[M_VALID] = 0.0
        elif nfact > 0:
            meta[M_VALID] = 1.0
            meta[M_KIND] = kind
            for i in range(prm.shape[0]):
                meta[M_PRM + i] = prm[i]
        res[R_CODE] = code
        if code != NEWTON_CONVERGED and code != NEWTON_CONVERGED_STEP:
            break
        # rates (Eq. 19), frames, positions along s and in time (line 24)
        c1 = g * dt
        c2 = (1.0 - g) / g
        for j in range(N):
            for a in range(3):
                for q in range(3):
                    Rold[j, a, q] = R[j, a, q]
        _integrate_frames(xtrial, R0, ds, cay, R)
        h = 0.5 * dt
        for q in range(3):
            r0[q] = r[0, q] + h * (row[B_VOLD + q] + bv[0, q])
        _integrate_positions(xtrial, R, r0, ds, r)
        _advance_velocity_positions(r_vel, Rold, x, R, xtrial, dt)
        for j in range(x.shape[0]):
            for q in range(x.shape[1]):
                xdot[j, q] = (xtrial[j, q] - x[j, q]) / c1 - c2 * xdot[j, q]
                x[j, q] = xtrial[j, q]
        t = t_new
        step_count += 1
        done += 1
    res[R_DONE] = done
    res[R_TIME] = t
    return done


# Python's entry (GAlphaSolver._run); rodlab.galpha.batch.advance_rods calls the inner kernel for every rod
advance_steps = python_entry(_advance_steps, "advance_steps")
