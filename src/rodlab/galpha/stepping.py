"""Whole generalized-alpha time steps of one rod in one compiled call (GA paper, Algorithm 1).

:func:`advance_steps` runs up to ``nsteps`` steps: per step the previous-step terms of Eq. 18,
the root frame turned by the root's angular velocity (midpoint rule; a pinned root's frame is
integrated inside Newton), the Newton iterations of :func:`rodlab.galpha.newton.newton_kernel`
(with the chord Newton's reuse test of its LU factors), and after convergence the rates of Eq. 19,
the frames (Eq. 23), the positions along s and the positions integrated in time (Sec. 4.4). It
stops at the first step whose Newton solve fails and leaves the state at the last good step; the
caller (:meth:`rodlab.galpha.GAlphaSolver.advance`) retries that step in substeps.

The boundary values come from Python (they may be functions of time): per step ``k`` the tip
kind ``kinds[k]``, the values ``vals[k]`` (5, 3) at the step's end time
(:meth:`rodlab.galpha.boundary.Boundary.values`), the root velocity ``v_old[k]`` at its start and
the root angular velocity ``w_mid[k]`` at its middle; arrays of one row hold for every step (a
constant boundary). This is the arithmetic of the former per-step Python driver, operation for
operation, so trajectories are unchanged bitwise.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..linalg.banded_lu import JIT
from .newton import (I_COUPLED, I_KIND, I_NEEDF, M_COUPLED, M_KIND, M_PRM, M_VALID, NEWTON_CONVERGED,
                     NEWTON_CONVERGED_STEP, newton_kernel)
from .residual import old_terms
from .state import _expm, advance_velocity_positions, integrate_frames, integrate_positions

# slots of advance_steps' ``res`` (float64): steps taken, the last Newton code, the time reached [s],
# and summed over the call: Newton iterations, factorizations, steps tried (failed one included)
R_DONE, R_CODE, R_TIME, R_ITERS, R_FACTS, R_TRIED = range(6)
RES_SIZE = 6


@njit(**JIT)
def _reuse_factors(meta, kind, prm):
    """The chord Newton may start from the kept LU factors: they are valid and were made for this
    tip kind and these step parameters (exact comparison)."""
    if meta[M_VALID] != 1.0 or meta[M_KIND] != kind:
        return False
    for i in range(prm.shape[0]):
        if meta[M_PRM + i] != prm[i]:
            return False
    return True


@njit(**JIT)
def advance_steps(nsteps, t, dt, step_count, first_euler, reuse_jacobian, x, xdot, R, r, r_vel,
                  kinds, vals, v_old, w_mid, prm_first, prm_rest, khat, K, J, rowscale, gw, pinned, cay,
                  colfull, end_free, Pw, old, P, dP, F, Jb, tipblock, Rw, rhs, delta, zwork, C, Cz, xbase, xtrial,
                  Rold, W, piv, T, tpiv, D, Y, Sinv, meta, iopt, fopt, out, rootinfo, res):
    """Up to ``nsteps`` steps of ``dt`` [s] from time ``t`` [s] of a rod that has taken
    ``step_count`` steps (module docstring). ``first_euler``: the rod's first step is backward
    Euler (``prm_first``, else every step uses ``prm_rest``: the step parameters of
    :meth:`rodlab.galpha.GAlphaSolver._prm`). ``x``, ``xdot``, ``R``, ``r``, ``r_vel``: the state,
    changed in place by every step that converges. ``colfull`` (4, 15 N) and ``end_free`` (4, 2,
    15): the column map and the free unknowns of the root and tip node per tip kind. ``W`` ..
    ``meta``: the chord Newton's factors and what they were made for. Writes ``res`` (``R_*``
    slots) and returns the number of steps taken."""
    ds = prm_rest[0]
    done = 0
    res[R_ITERS] = 0.0
    res[R_FACTS] = 0.0
    res[R_TRIED] = 0.0
    res[R_CODE] = NEWTON_CONVERGED
    E = np.empty((3, 3))
    r0 = np.empty(3)
    for k in range(nsteps):
        b = k if kinds.shape[0] > 1 else 0
        kind = kinds[b]
        bv = vals[b]
        first = step_count == 0 and first_euler
        prm = prm_first if first else prm_rest
        g = prm[6]
        old_terms(x, xdot, khat, K, J, prm, Pw, old)
        t_new = t + dt
        wm = w_mid[b]
        _expm(wm[0] * dt, wm[1] * dt, wm[2] * dt, E)
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
        xtrial[:, :] = x
        # Newton (Algorithm 1, lines 10-23), the chord Newton's factors reused where they fit
        iopt[I_NEEDF] = 0 if (reuse_jacobian and _reuse_factors(meta, kind, prm)) else 1
        iopt[I_COUPLED] = 1 if meta[M_COUPLED] != 0.0 else 0
        iopt[I_KIND] = kind
        out[5] = -1.0
        code = newton_kernel(xtrial, x, xdot, old, khat, K, J, prm, rowscale, R0, bv, gw, colfull[kind],
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
            meta[M_PRM:] = prm
        res[R_CODE] = code
        if code != NEWTON_CONVERGED and code != NEWTON_CONVERGED_STEP:
            break
        # rates (Eq. 19), frames, positions along s and in time (line 24)
        c1 = g * dt
        c2 = (1.0 - g) / g
        Rold[:, :, :] = R
        integrate_frames(xtrial, R0, ds, cay, R)
        h = 0.5 * dt
        for q in range(3):
            r0[q] = r[0, q] + h * (v_old[b, q] + bv[0, q])
        integrate_positions(xtrial, R, r0, ds, r)
        advance_velocity_positions(r_vel, Rold, x, R, xtrial, dt)
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
