"""Compiled driver of the ``compact`` simulator (:mod:`rodlab.solvers.compact`): every rod of a
world stepped by the SQP of Zhao et al., "Compact inextensible Cosserat rods" (Alg. 1), in one
call that loops the steps and, in parallel, the rods, over two flat arenas (and, after a static
solve, the common frame fields of the state).
"""
from __future__ import annotations

import math
import types

import numpy as np
from numba import carray, njit, prange

from ..geometry._vec import JIT, JIT_INNER, njit_as  # the one numba options dict
from ..numba_views import element_pointer, float64_at
from ..geometry.curves import reference_twist3
from ..geometry.rotations import matrix_to_quat, quat_mul
from .bdf2 import BETA, bdf2_start
from .chain import recenter
from .sqp import PcgWork, SqpOptions, SqpRod, SqpStep, SqpWork, finish_step, predict_start, sqp_solve


# ---------------------------------------------------------------------------------------------
# compiled driver: steps x rods, over two flat arenas
# ---------------------------------------------------------------------------------------------
# The driver takes its constants and workspaces in two arenas (after der-implicit's ibuf / fbuf,
# MuJoCo's mjModel / mjData): a call passes 7 arguments instead of ~75 (numba checks the type of
# every argument and unboxes every array at each call, ~0.1 us apiece). ``ibuf``: sizes, the
# per-rod offsets, the options of a step and of a static solve, the addresses of the state's
# arrays (:data:`STATE_ARRAYS`, set by the simulator when it checks a state), then the offset of
# every float section; ``fbuf``: scalars (inputs, then the call's outputs), then the sections
# below, each ``count(entity) x cols``.
I_NROD, I_NV, I_NE, I_NJ, I_ND, I_NDENSE, I_VSTART, I_ESTART, I_JSTART, I_DRIVE, I_FAILED = range(11)
I_IOPT, I_SIOPT = 11, 18  # 7 options each (see _advance_rods)
I_STATE = 25  # the addresses of the state's arrays, in the order of STATE_ARRAYS
STATE_ARRAYS = (  # (name, entity, cols): the compact unknowns in state.solver, then the common fields
    ("s", "v", 3), ("qref", "e", 4), ("q", "e", 4), ("omega", "e", 3), ("vertex_x", "v", 3), ("vertex_v", "v", 3),
    ("edge_ref_d1", "e", 3), ("edge_theta", "e", 0), ("joint_ref_twist", "j", 0))
I_SECTIONS = I_STATE + len(STATE_ARRAYS)
F_DT, F_A_IN, F_A_D, F_DECAY, F_RTOL, F_ATOL, F_SRTOL, F_SATOL = range(8)
F_NEWTON, F_PCG, F_SOLVES, F_STALLED, F_RESIDUAL = range(8, 13)  # outputs: sums over rods, worst residual
F_HEADER = 13
_V3, _E3, _E4 = ("v", (3,)), ("e", (3,)), ("e", (4,))
FSECTIONS = (  # (name, entity, cols): entity v(ertex), e(dge), j(oint), r(od), d(rive), o(ne)
    ("tol", "r", ()), ("static_tol", "r", ()), ("lengths", "e", ()), ("masses", "v", ()), ("Jr", *_E3),
    ("lbar", "j", ()), ("Kh", "j", (3,)), ("ubar", "j", (3,)), ("free", *_V3), ("gravity", "o", (3,)),
    ("drive_x0", "d", (3,)), ("drive_c0", "d", (3,)), ("drive_q0", "d", (4,)),
    ("p_t", *_V3), ("q_t", *_E4), ("p_pred", *_V3), ("th_pred", *_E3), ("s_bk", *_V3), ("qref_bk", *_E4),
    ("q_bk", *_E4), ("p_bk", *_V3), ("v_bk", *_V3), ("om_bk", *_E3), ("wp", *_V3), ("wq", *_E4),
    ("Dj", "e", (3, 3)), ("Qj", "e", (4, 3)), ("gp", *_V3), ("gq", *_E4), ("Hp", "v", ()), ("Hqd", "e", (4, 4)),
    ("Hqo", "j", (4, 4)), ("b", *_V3), ("ds", *_V3), ("s_try", *_V3), ("diag", "v", (3, 3)), ("off", "e", (3, 3)),
    ("sinv", "v", (3, 3)), ("W", "e", (3, 3)), ("suffix", "v", ()), ("Bd", "v", (3, 3)), ("Bo", "e", (3, 3)),
    ("A", "r", ("n", "n")), ("L", "r", ("n", "n")), ("r", *_V3), ("zz", *_V3), ("d", *_V3), ("Ad", *_V3),
    ("tv", *_V3), ("tp", *_V3), ("y", *_V3), ("G", "v", (3, 3)), ("comps", "r", (4,)), ("stats", "r", (8,)),
    ("totals", "r", (4,)))
(S_TOL, S_STATIC_TOL, S_LENGTHS, S_MASSES, S_JR, S_LBAR, S_KH, S_UBAR, S_FREE, S_GRAVITY, S_DRIVE_X0, S_DRIVE_C0,
 S_DRIVE_Q0, S_P_T, S_Q_T, S_P_PRED, S_TH_PRED, S_S_BK, S_QREF_BK, S_Q_BK, S_P_BK, S_V_BK, S_OM_BK, S_WP, S_WQ,
 S_DJ, S_QJ, S_GP, S_GQ, S_HP, S_HQD, S_HQO, S_B, S_DS, S_S_TRY, S_DIAG, S_OFF, S_SINV, S_W, S_SUFFIX, S_BD, S_BO,
 S_A, S_L, S_R, S_ZZ, S_D, S_AD, S_TV, S_TP, S_Y, S_G, S_COMPS, S_STATS, S_TOTALS) = range(
    I_SECTIONS, I_SECTIONS + len(FSECTIONS))


# Views without reference counts. Every view numba makes of an argument increments and later
# decrements its meminfo's count with an atomic instruction, and ``reshape`` calls a C function
# to check the layout; a driver call made ~55 such views of the arena before its first step
# (~2 us of a 10-vertex ``advance(state, 1)``). ``numba.carray`` over a pointer into the arena
# builds the same C-contiguous view with no meminfo (der's ``borrow``, rodlab.der.batch, made the
# same finding). Compiled code only; the views must not outlive the call that passed the arena.
# The view functions take the section's offset, read from ``ib`` by the caller, not its slot: a
# call with a module constant (a literal) compiles a specialization per value (~57 more
# compilations on a cold start).
@njit(**JIT_INNER)
def _i1(ib, o, n):
    return carray(element_pointer(ib, o), (n,))


@njit(**JIT_INNER)
def _f1(fb, o, n):
    return carray(element_pointer(fb, o), (n,))


@njit(**JIT_INNER)
def _f2(fb, o, n, c):
    return carray(element_pointer(fb, o), (n, c))


@njit(**JIT_INNER)
def _f3(fb, o, n, a, c):
    return carray(element_pointer(fb, o), (n, a, c))


@njit(**JIT_INNER)
def _state_views(ib):
    """The state's arrays (:data:`STATE_ARRAYS`) at the addresses in ``ib[I_STATE:]``: ``s`` (N,
    3), ``qref`` (E, 4), ``q`` (E, 4), ``omega`` (E, 3), ``vertex_x`` (N, 3), ``vertex_v`` (N, 3),
    ``edge_ref_d1`` (E, 3), ``edge_theta`` (E,), ``joint_ref_twist`` (J,). The simulator checks
    each array (C-contiguous, float64, writeable, this shape) and keeps a reference to it for as
    long as its address is in ``ib``."""
    N, E, J = ib[I_NV], ib[I_NE], ib[I_NJ]
    a = I_STATE
    return (carray(float64_at(ib[a]), (N, 3)), carray(float64_at(ib[a + 1]), (E, 4)),
            carray(float64_at(ib[a + 2]), (E, 4)), carray(float64_at(ib[a + 3]), (E, 3)),
            carray(float64_at(ib[a + 4]), (N, 3)), carray(float64_at(ib[a + 5]), (N, 3)),
            carray(float64_at(ib[a + 6]), (E, 3)), carray(float64_at(ib[a + 7]), (E,)),
            carray(float64_at(ib[a + 8]), (J,)))


def arenas(counts: dict, header: dict) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(ibuf, fbuf, views)`` for entity ``counts`` (v, e, j, r, d, o and n, the dense block size)
    and the ``ibuf`` header values ``header`` (slot -> value); ``views``: every float section as a
    numpy view of ``fbuf`` (rows per entity, cols), to fill and read from Python."""
    ib = np.zeros(I_SECTIONS + len(FSECTIONS), dtype=np.int64)
    for slot, value in header.items():
        ib[slot] = value
    shapes, size = [], F_HEADER
    for k, (name, entity, cols) in enumerate(FSECTIONS):
        shape = (counts[entity], *(counts[c] if isinstance(c, str) else c for c in cols))
        ib[I_SECTIONS + k] = size
        shapes.append(shape)
        size += int(np.prod(shape))
    fb = np.zeros(size)
    views = {name: fb[ib[I_SECTIONS + k]:ib[I_SECTIONS + k] + int(np.prod(shape))].reshape(shape)
             for k, ((name, _, _), shape) in enumerate(zip(FSECTIONS, shapes))}
    return ib, fb, views


@njit(**JIT_INNER)
def _copy_rows(src, dst):
    """``dst[...] = src`` for 2-D arrays of one shape, as loops (a slice assignment compiles numba's
    broadcasting error path; ``reshape(-1)`` calls numba's C layout check on every call)."""
    for i in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


@njit(**JIT)
def _drive_root(sr, qrefr, R, shift, x0, c0, q0):
    """Dirichlet values of a moving root clamp turned by ``R`` about its rest edge midpoint ``c0``
    and shifted by ``shift``: root position ``R (x0 - c0) + c0 + shift``, segment 0's frame
    ``quat(R) q0`` (sign-aligned with the current one, so the Darboux vectors stay continuous)."""
    for a in range(3):
        acc = c0[a] + shift[a]
        for b in range(3):
            acc += R[a, b] * (x0[b] - c0[b])
        sr[0, a] = acc
        sr[1, a] = 0.0
    target = quat_mul(matrix_to_quat(R), q0)
    dot = 0.0
    for c in range(4):
        dot += target[c] * qrefr[0, c]
    sign = -1.0 if dot < 0.0 else 1.0
    for c in range(4):
        qrefr[0, c] = sign * target[c]


@njit(inline="always", **JIT)
def _arena_views(ib, fb):
    """The float sections of the arenas (:func:`arenas`) as views, in three groups: the
    constants (Newton tolerances, model rows, Dirichlet mask, gravity, rest poses of the moving
    clamps), the step's starts and backups, and the workspaces. Inlined into the driver
    (``inline="always"``: LLVM then drops the views a call does not use and no 53-array tuple is
    returned, -0.5 us a call); its view functions are calls, not inlines (inlined, their ~50 small
    inlines made the driver's compile ~quadratic: numba's inliner rescans the caller after every
    inline; cold start, issue #16)."""
    nr, N, E, J, D = ib[I_NROD], ib[I_NV], ib[I_NE], ib[I_NJ], ib[I_ND]
    tol, static_tol = _f1(fb, ib[S_TOL], nr), _f1(fb, ib[S_STATIC_TOL], nr)
    lengths, masses, Jr = _f1(fb, ib[S_LENGTHS], E), _f1(fb, ib[S_MASSES], N), _f2(fb, ib[S_JR], E, 3)
    lbar, Kh, ubar = _f1(fb, ib[S_LBAR], J), _f2(fb, ib[S_KH], J, 3), _f2(fb, ib[S_UBAR], J, 3)
    free, gravity = _f2(fb, ib[S_FREE], N, 3), _f1(fb, ib[S_GRAVITY], 3)
    drive_x0, drive_c0, drive_q0 = _f2(fb, ib[S_DRIVE_X0], D, 3), _f2(fb, ib[S_DRIVE_C0], D, 3), \
        _f2(fb, ib[S_DRIVE_Q0], D, 4)
    p_t, q_t, p_pred, th_pred = _f2(fb, ib[S_P_T], N, 3), _f2(fb, ib[S_Q_T], E, 4), _f2(fb, ib[S_P_PRED], N, 3), \
        _f2(fb, ib[S_TH_PRED], E, 3)
    s_bk, qref_bk, q_bk = _f2(fb, ib[S_S_BK], N, 3), _f2(fb, ib[S_QREF_BK], E, 4), _f2(fb, ib[S_Q_BK], E, 4)
    p_bk, v_bk, om_bk = _f2(fb, ib[S_P_BK], N, 3), _f2(fb, ib[S_V_BK], N, 3), _f2(fb, ib[S_OM_BK], E, 3)
    wp, wq, Dj, Qj = _f2(fb, ib[S_WP], N, 3), _f2(fb, ib[S_WQ], E, 4), _f3(fb, ib[S_DJ], E, 3, 3), \
        _f3(fb, ib[S_QJ], E, 4, 3)
    gp, gq, Hp = _f2(fb, ib[S_GP], N, 3), _f2(fb, ib[S_GQ], E, 4), _f1(fb, ib[S_HP], N)
    Hqd, Hqo = _f3(fb, ib[S_HQD], E, 4, 4), _f3(fb, ib[S_HQO], J, 4, 4)
    b, ds, s_try = _f2(fb, ib[S_B], N, 3), _f2(fb, ib[S_DS], N, 3), _f2(fb, ib[S_S_TRY], N, 3)
    diag, off, sinv = _f3(fb, ib[S_DIAG], N, 3, 3), _f3(fb, ib[S_OFF], E, 3, 3), _f3(fb, ib[S_SINV], N, 3, 3)
    W, suffix = _f3(fb, ib[S_W], E, 3, 3), _f1(fb, ib[S_SUFFIX], N)
    Bd, Bo = _f3(fb, ib[S_BD], N, 3, 3), _f3(fb, ib[S_BO], E, 3, 3)
    r, zz, d, Ad = _f2(fb, ib[S_R], N, 3), _f2(fb, ib[S_ZZ], N, 3), _f2(fb, ib[S_D], N, 3), _f2(fb, ib[S_AD], N, 3)
    tv, tp, y, G = _f2(fb, ib[S_TV], N, 3), _f2(fb, ib[S_TP], N, 3), _f2(fb, ib[S_Y], N, 3), \
        _f3(fb, ib[S_G], N, 3, 3)
    comps, stats, totals = _f2(fb, ib[S_COMPS], nr, 4), _f2(fb, ib[S_STATS], nr, 8), _f2(fb, ib[S_TOTALS], nr, 4)
    consts = (tol, static_tol, lengths, masses, Jr, lbar, Kh, ubar, free, gravity, drive_x0, drive_c0, drive_q0)
    starts = (p_t, q_t, p_pred, th_pred, s_bk, qref_bk, q_bk, p_bk, v_bk, om_bk)
    work = (wp, wq, Dj, Qj, gp, gq, Hp, Hqd, Hqo, b, ds, s_try, diag, off, sinv, W, suffix, Bd, Bo, r, zz, d, Ad, tv, tp,
            y, G, comps, stats, totals)
    return consts, starts, work


def _advance_rods(nsteps, static, ib, fb, drive, history, dense):
    """``nsteps`` implicit-Euler steps (``static``: one static solve, inertia dropped) of every rod
    (``advance_rods``: in parallel over rods; ``advance_rods_serial``, for one-rod worlds: without
    the parallel region's cost); after a static solve also the common frame fields of the state
    (:func:`write_frames`; after time steps the simulator defers them to their first read).

    Per step and rod, in parallel over rods: back up the rod, start from the constant-velocity
    prediction (:func:`rodlab.compact.sqp.predict_start`), solve the step by SQP
    (:func:`rodlab.compact.sqp.sqp_solve`, Zhao et al., Alg. 1), then velocities and re-centering
    (:func:`rodlab.compact.sqp.finish_step`) and the exponential damping factor ``decay``. The
    state's arrays (:data:`STATE_ARRAYS`, at the addresses in ``ib[I_STATE:]``: :func:`_state_views`)
    are flat over rods, rod ``k``'s rows at ``vstart`` (vertices), ``estart`` (edges), ``jstart``
    (hinges); constants and workspaces are in the arenas ``ib``, ``fb`` (:func:`arenas`). Options (``ib[I_IOPT:]``, ``ib[I_SIOPT:]`` for a static solve) =
    (preconditioner kind, max Newton iterations, PCG max iterations, line-search steps, tension
    stiffness, re-center every iteration, warm start); ``fb``: PCG rtol and atol, Newton
    tolerance per rod (``tol``, ``static_tol``). If any rod's step is not finite, every rod is put
    back to the previous step; ``failed`` (R,) marks the rods that failed. ``totals`` (R, 4) accumulates Newton iterations, PCG
    iterations, linear solves and steps that stopped on a PCG or line-search failure, summed over
    rods into ``fb[F_NEWTON:F_RESIDUAL]``; ``stats`` (R, 8) holds the last step's, its worst
    residual in ``fb[F_RESIDUAL]``. Moving root clamps (``drive`` None: none): ``drive`` =
    ``(drive_R, drive_shift)``; ``ib[I_DRIVE]`` (R,) is -1 or the rod's row
    ``d`` of ``drive_R`` (nsteps, D, 3, 3) and ``drive_shift`` (nsteps, D, 3), the clamp motion at
    the end of step ``k``, applied to the rest root ``drive_x0`` (D, 3), edge midpoint
    ``drive_c0`` (D, 3) and segment-0 quaternion ``drive_q0`` (D, 4) (:func:`_drive_root`). ``A``,

    ``history``: None, backward Euler; else BDF2 with ``history`` = ``(p_prev, v_prev, q_prev,
    omega_prev, prev_dt)``: a step whose
    history is valid (``prev_dt[0] == dt``) is the backward-Euler step of size ``2/3 dt`` from the
    start built by :func:`rodlab.compact.bdf2.bdf2_start` out of the state and the previous step's
    ``p_prev`` (N, 3), ``v_prev`` (N, 3), ``q_prev`` (E, 4), ``omega_prev`` (E, 3); otherwise a
    backward-Euler step. After every step (all rods finite) the step's start is copied into the
    history and ``prev_dt[0] = dt``; a static solve sets ``prev_dt[0] = 0``.

    ``dense``: None, or for the ``direct`` preconditioner its storage ``(A, L)`` (R, n, n), the
    per-rod dense blocks (n = 3 x the most vertices of a rod).

    ``drive``, ``history`` and ``dense`` are None or not in the compiled signature, and numba
    prunes the branches ``if drive is not None`` (...) of a None: a plain rod's driver never
    compiles the moving clamps, BDF2 or the dense preconditioners (cold start, issue #16).

    Returns ``(steps done, Newton iterations, PCG iterations, stalled steps, worst residual)``:
    ``nsteps`` steps unless one was not finite, the call's sums over rods (as in ``fb``), and
    ``fb[F_RESIDUAL]`` (the report of a call, without reading ``fb`` back from Python).
    """
    s, qref, q, omega, p, v, ref_d1, theta, ref_twist = _state_views(ib)
    nr = ib[I_NROD]
    vstart, estart, jstart = _i1(ib, ib[I_VSTART], nr + 1), _i1(ib, ib[I_ESTART], nr + 1), _i1(ib, ib[I_JSTART], nr + 1)
    rod_drive, failed = _i1(ib, ib[I_DRIVE], nr), _i1(ib, ib[I_FAILED], nr)
    io = I_SIOPT if static else I_IOPT
    kind = ib[io]
    max_newton = ib[io + 1]
    pcg_maxiter = ib[io + 2]
    ls_steps = ib[io + 3]
    use_g = ib[io + 4] != 0
    recenter_each = ib[io + 5] != 0
    warm = ib[io + 6] != 0
    dt = fb[F_DT]
    a_in = 0.0 if static else fb[F_A_IN]
    a_d = 0.0 if static else fb[F_A_D]
    decay = 1.0 if static else fb[F_DECAY]
    pcg_rtol = fb[F_SRTOL] if static else fb[F_RTOL]
    pcg_atol = fb[F_SATOL] if static else fb[F_ATOL]
    consts, starts, work = _arena_views(ib, fb)
    tol, static_tol, lengths, masses, Jr, lbar, Kh, ubar, free, gravity, drive_x0, drive_c0, drive_q0 = consts
    if static:
        tol = static_tol
    p_t, q_t, p_pred, th_pred, s_bk, qref_bk, q_bk, p_bk, v_bk, om_bk = starts
    (wp, wq, Dj, Qj, gp, gq, Hp, Hqd, Hqo, b, ds, s_try, diag, off, sinv, W, suffix, Bd, Bo, r, zz, d, Ad, tv, tp, y,
     G, comps, stats, totals) = work
    totals[:, :] = 0.0
    done = nsteps
    if history is not None:
        if static:
            history[4][0] = 0.0
    h = BETA * dt
    for k in range(nsteps):
        two = False  # this step is a BDF2 step
        if history is not None:
            two = not static and history[4][0] == dt
        a_in_k = 1.0 / (h * h) if two else a_in
        a_d_k = a_d * dt / h if two else a_d
        for ri in prange(nr):
            v0, v1 = vstart[ri], vstart[ri + 1]
            e0, e1 = estart[ri], estart[ri + 1]
            h0, h1 = jstart[ri], jstart[ri + 1]
            sr, qrefr, qr = s[v0:v1], qref[e0:e1], q[e0:e1]
            pr, vr, omr = p[v0:v1], v[v0:v1], omega[e0:e1]
            _copy_rows(sr, s_bk[v0:v1])
            _copy_rows(qrefr, qref_bk[e0:e1])
            if history is not None:  # BDF2's history is the step's start; backward Euler restores from p_t, q_t
                _copy_rows(qr, q_bk[e0:e1])
                _copy_rows(pr, p_bk[v0:v1])
            _copy_rows(vr, v_bk[v0:v1])
            _copy_rows(omr, om_bk[e0:e1])
            ptr, qtr, ppr, thr = p_t[v0:v1], q_t[e0:e1], p_pred[v0:v1], th_pred[e0:e1]
            bdf_start = False
            if history is not None:
                if two:
                    p_prev, v_prev, q_prev, omega_prev, _ = history
                    bdf2_start(pr, vr, qr, omr, p_prev[v0:v1], v_prev[v0:v1], q_prev[e0:e1], omega_prev[e0:e1],
                               Jr[e0:e1], dt, h, ptr, qtr, ppr, thr)
                    bdf_start = True
            if not bdf_start:
                _copy_rows(pr, ptr)
                _copy_rows(qr, qtr)
                for j in range(v1 - v0):
                    for c in range(3):
                        ppr[j, c] = vr[j, c] * dt + ptr[j, c]
                for i in range(e1 - e0):
                    for c in range(3):
                        thr[i, c] = omr[i, c] * dt
            fr = free[v0:v1]
            if warm and not static:
                predict_start(sr, qr, vr, omr, dt, fr)
            if drive is not None:
                dr = rod_drive[ri]
                if dr >= 0:
                    drive_R, drive_shift = drive
                    _drive_root(sr, qrefr, drive_R[k, dr], drive_shift[k, dr], drive_x0[dr], drive_c0[dr],
                                drive_q0[dr])
            wpr, wqr = wp[v0:v1], wq[e0:e1]
            rod = SqpRod(lengths[e0:e1], masses[v0:v1], Jr[e0:e1], lbar[h0:h1], Kh[h0:h1], ubar[h0:h1])
            step = SqpStep(ppr, ptr, qtr, thr, gravity, a_in_k, a_d_k)
            opts = SqpOptions(kind, max_newton, tol[ri], pcg_rtol, pcg_atol, pcg_maxiter, ls_steps, use_g,
                              recenter_each)
            ws = SqpWork(G[v0:v1], wpr, wqr, Dj[e0:e1], Qj[e0:e1], gp[v0:v1], gq[e0:e1], Hp[v0:v1], Hqd[e0:e1],
                         Hqo[h0:h1], b[v0:v1], ds[v0:v1], s_try[v0:v1], comps[ri], stats[ri])
            pw = PcgWork(diag[v0:v1], off[e0:e1], sinv[v0:v1], W[e0:e1], suffix[v0:v1], Bd[v0:v1], Bo[e0:e1],
                         r[v0:v1], zz[v0:v1], d[v0:v1], Ad[v0:v1], tv[v0:v1], tp[v0:v1], y[v0:v1])
            if dense is None:  # the constant None: sqp_solve's dense branches are pruned
                sqp_solve(sr, qrefr, fr, rod, step, opts, ws, pw, None)
            else:
                nd = 3 * (v1 - v0)
                A, L = dense
                sqp_solve(sr, qrefr, fr, rod, step, opts, ws, pw, (A[ri, :nd, :nd], L[ri, :nd, :nd]))
            finite = True
            for j in range(v1 - v0):
                for c in range(3):
                    if not math.isfinite(wpr[j, c]):
                        finite = False
            failed[ri] = 0 if finite else 1
            if not finite:
                continue
            _copy_rows(wpr, pr)
            _copy_rows(wqr, qr)
            if static:
                vr[:, :] = 0.0
                omr[:, :] = 0.0
                recenter(qr, qrefr, sr)
            else:
                finish_step(sr, qrefr, pr, qr, ptr, qtr, vr, omr, h if two else dt)
                if decay != 1.0:
                    for j in range(v1 - v0):
                        for c in range(3):
                            vr[j, c] *= decay
                    for i in range(e1 - e0):
                        for c in range(3):
                            omr[i, c] *= decay
        bad = False
        for ri in range(nr):
            if failed[ri] != 0:
                bad = True
        if bad:
            _copy_rows(s_bk, s)
            _copy_rows(qref_bk, qref)
            if history is None:  # p_t, q_t: every rod's copy of its step's start (read-only in the step)
                _copy_rows(q_t, q)
                _copy_rows(p_t, p)
            else:
                _copy_rows(q_bk, q)
                _copy_rows(p_bk, p)
            _copy_rows(v_bk, v)
            _copy_rows(om_bk, omega)
            done = k
            break
        if history is not None:
            if not static:
                p_prev, v_prev, q_prev, omega_prev, prev_dt = history
                _copy_rows(p_bk, p_prev)
                _copy_rows(v_bk, v_prev)
                _copy_rows(q_bk, q_prev)
                _copy_rows(om_bk, omega_prev)
                prev_dt[0] = dt
        for ri in range(nr):
            totals[ri, 0] += stats[ri, 0]
            totals[ri, 1] += stats[ri, 1]
            totals[ri, 2] += stats[ri, 2]
            if stats[ri, 6] != 0.0 or stats[ri, 7] != 0.0:
                totals[ri, 3] += 1.0
    for c in range(4):
        acc = 0.0
        for ri in range(nr):
            acc += totals[ri, c]
        fb[F_NEWTON + c] = acc
    worst = -np.inf
    for ri in range(nr):
        worst = max(worst, stats[ri, 3])
    fb[F_RESIDUAL] = worst
    if static:  # a time step leaves the frames to its simulator, which defers them (State.defer)
        _write_frames(vstart, estart, jstart, p, q, ref_d1, theta, ref_twist)
    return done, int(fb[F_NEWTON]), int(fb[F_PCG]), int(fb[F_STALLED]), worst




@njit(**JIT_INNER)
def _write_frames(vstart, estart, jstart, p, q, ref_d1, theta, ref_twist):
    """:func:`write_frames` on scalars (no array views: ~25 ns per edge, about half of it the reference
    twist's transport and ``atan2``); each joint's reference twist by
    :func:`rodlab.geometry.curves.reference_twist3`, the one scalar copy of the transport. Compiled
    code only (``JIT_INNER``); Python calls :func:`write_frames`."""
    for ri in range(vstart.shape[0] - 1):
        j = vstart[ri]
        h = jstart[ri]
        ux = uy = uz = tx = ty = tz = 0.0  # previous edge's d1 and tangent
        for i in range(estart[ri], estart[ri + 1]):
            w, x, yq, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
            nq = w * w + x * x + yq * yq + z * z
            vx = (nq - 2.0 * (yq * yq + z * z)) / nq
            vy = 2.0 * (x * yq + w * z) / nq
            vz = 2.0 * (x * z - w * yq) / nq
            ref_d1[i, 0], ref_d1[i, 1], ref_d1[i, 2] = vx, vy, vz
            theta[i] = 0.0
            e0 = p[j + 1, 0] - p[j, 0]
            e1 = p[j + 1, 1] - p[j, 1]
            e2 = p[j + 1, 2] - p[j, 2]
            le = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
            sx, sy, sz = e0 / le, e1 / le, e2 / le
            if i > estart[ri]:  # joint h between edges i - 1 and i: transport u along t -> s, angle to v about s
                ref_twist[h] = reference_twist3(tx, ty, tz, sx, sy, sz, ux, uy, uz, vx, vy, vz, ref_twist[h])
                h += 1
            ux, uy, uz, tx, ty, tz = vx, vy, vz, sx, sy, sz
            j += 1


@njit(**JIT)
def write_frames(vstart, estart, jstart, p, q, ref_d1, theta, ref_twist):
    """Common frame fields of every open rod from its segment quaternions: ``ref_d1`` = first
    director of ``q`` (m1), ``theta = 0``, ``ref_twist`` the reference twist of those frames
    (Bergou et al. 2008, Sec. 6), unwrapped against its previous value."""
    _write_frames(vstart, estart, jstart, p, q, ref_d1, theta, ref_twist)


# The parallel driver calls the SQP as a function of its own (``sqp_solve_call``): inlined into a
# prange body, the named tuples of array views made numba's parfor array analysis fail
# (IndexError in ``_gen_shape_call``, numba 0.68.1); the serial driver inlines it (one code
# generation of the SQP's call tree, cold start, issue #16).
sqp_solve_call = njit_as("sqp_solve_call", sqp_solve.py_func, **JIT)


def _calling_sqp_solve_call(fn):
    """``fn`` (a copy) whose global ``sqp_solve`` is :data:`sqp_solve_call`."""
    scope = dict(fn.__globals__, sqp_solve=sqp_solve_call)
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


# each compilation under its own name, so each has its own cache entry (see geometry._vec.njit_as)
advance_rods = njit_as("advance_rods", _calling_sqp_solve_call(_advance_rods), parallel=True, **JIT)
advance_rods_serial = njit_as("advance_rods_serial", _advance_rods, **JIT)
advance_rods.__doc__ = advance_rods_serial.__doc__ = _advance_rods.__doc__


__all__ = ["I_NROD", "I_NV", "I_NE", "I_NJ", "I_ND", "I_NDENSE", "I_VSTART", "I_ESTART", "I_JSTART", "I_DRIVE", "I_FAILED", "I_IOPT", "I_SIOPT", "I_STATE", "STATE_ARRAYS", "I_SECTIONS", "F_DT", "F_A_IN", "F_A_D", "F_DECAY", "F_RTOL", "F_ATOL", "F_SRTOL", "F_SATOL", "F_NEWTON", "F_PCG", "F_SOLVES", "F_STALLED", "F_RESIDUAL", "F_HEADER", "FSECTIONS", "arenas", "advance_rods", "advance_rods_serial", "write_frames"]
