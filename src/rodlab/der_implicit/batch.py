"""Compiled multi-rod driver of implicit DER: every rod of a world advanced in one call.

Each rod is stepped by the implicit-Euler step of :mod:`.stepper` (one banded Newton solve per
iteration, :func:`.stepper.newton_minimize`, Bergou et al. 2010, "Discrete viscous threads";
Takahashi and Batty, "A sag-free initialization of discrete elastic rods", Sec. III, VI). What
this module adds is the batching (issue #13, item 3):

- ``numba.prange`` over the rods (rods are independent: no coupling term between them);
- all per-rod model arrays and work arrays live, preallocated once, in two flat buffers with
  per-rod offsets (an arena in the manner of MuJoCo's ``mjModel`` / ``mjData``): ``ibuf`` (int64:
  sizes, the rod table, held unknowns, driven clamps) and ``fbuf`` (float64: masses, forces,
  stiffness, rest curvature, work arrays, per-rod outputs). A call passes these two buffers plus
  the six state arrays, so calling costs about a microsecond whatever the number of rods (numba's
  dispatch costs about 0.1 us per argument: 27 arguments 3.3 us, 8 arguments 1.4 us, measured);
- the state is read from and written to the flat :class:`rodlab.world.State` arrays
  (``vertex_x``, ``vertex_v``, ``edge_theta``, ``edge_theta_v``, ``edge_ref_d1``,
  ``joint_ref_twist``): each rod packs its unknowns into its interleaved ``q`` (4n - 1,) at the
  start of a call, steps there, and the state is written back only when every rod succeeded,
  so a failed call leaves the state as it was (the caller then replays the good steps);
- the Newton step's work arrays (gradient, band, pivots, trial unknowns, work frames) are one
  allocation per rod and call, not sections of the arena: a thread then keeps reusing the same
  ~30 kB for rod after rod (they stay in its cache), where per-rod sections would stream through
  memory (the arena keeps its work sections for :mod:`.contact_step` and :func:`elastic_energies`).
  The values a step writes every iteration (the step being taken, the Newton counters) live there
  too, at its head (``WK_STEP``, ``WK_STATS``), and reach the arena's per-rod outputs once per call:
  in the arena eight rods share a cache line of ``rod_failed_step``, so with two threads on
  neighbouring rods every step's write would move that line between the cores (false sharing);
- the full Newton step's line-search trial is assembled with its gradient and Hessian, which the
  next iteration or step reuses when the trial is accepted (:func:`.stepper.newton_minimize` with
  ``reuse``, the one Newton loop of the stepper, its statics and this driver): the line search
  then costs no energy evaluation of its own in the common case. The last one of a call is kept in
  the arena, and the next call takes it when it starts from that very state (the unknowns and
  frames the buffers hold, bit for bit, and frames the state says belong to its positions): a call
  of one step then assembles once, as a step inside a long call does. Results are bitwise those of
  :func:`.stepper.newton_minimize`.

:class:`RodBatch` builds the buffers from one :class:`.stepper.DERImplicitModel` per rod and
gives named views of the sections the caller may change (``dof_fext``, ``rod_damping``, ...).
"""
from __future__ import annotations

import math

import numpy as np
from numba import get_parallel_chunksize, njit, prange, set_parallel_chunksize

from .. import aot
from .energies import _WS_E, BANDWIDTH, _transport, der_elastic, edge_geometry, update_frames
from .slerp_bending import slerp_elastic
from .stepper import (BENDING_2D_AVERAGE, BENDING_2D_SLERP, BENDING_4D, FRAMES_BASE, FRAMES_TRANSPORT, FRAMES_WORK,
                      DERImplicitModel, copy_rows, copy_vec, newton_minimize)

from ..geometry._vec import JIT, njit_as  # noqa: E402  (the one numba options dict)
PARALLEL_CHUNK = 4
"""Rods per chunk of the parallel loop, chunks handed out dynamically (``numba.set_parallel_chunksize``):
a thread whose core is busy with another process then does not hold the others up (the default
static split waits for the slowest half: measured 16.8 ms per step against 7.3 ms for 1000 rods of 32
vertices on 2 shared cores). Set from Python around the call: inside a kernel it would stop caching."""

# ---- ibuf header: sizes and options, then the offsets of its sections -------------------------
I_NROD, I_NDRIVE, I_BENDING, I_LSMAX, I_NEWTON, I_ROD, I_FIXED, I_DRIVE, I_FAILED, I_BRANCH, I_EXACT, I_INTEGRATOR, \
    I_HAVE_PREV, I_RESUME, I_DEFER = range(15)
I_HEADER = 15  # I_BENDING: BENDING_*; I_BRANCH, I_EXACT: the slerped model's options (2d-slerp only)
# I_INTEGRATOR: INTEGRATOR_*; I_HAVE_PREV: 1 when the call's previous-step arrays hold step n - 1 (bdf2), set per call
# I_RESUME, I_DEFER (set per call, 0 or 1): the state arrays passed hold nothing yet, the work buffers hold the
# state (the last call deferred its write-back): write them there first, then step without packing; leave
# this call's write-back undone (its result stays in the work buffers). See _rod_steps and _advance.
INTEGRATOR_BACKWARD_EULER, INTEGRATOR_BDF2 = 0, 1
BDF2_BETA = 2.0 / 3.0
"""BDF2's ``beta``: ``x_{n+1} - 4/3 x_n + 1/3 x_{n-1} = beta h v_{n+1}`` (docs/integrators.md,
section der-implicit)."""
ROD_COLS = 6  # rod table columns: vertex, edge, joint, dof, fixed, drive starts (R + 1 rows)
DRIVE_COLS = 3  # driven clamp table: rod, edge (local), holds theta (0/1)
WK_STEP, WK_STATS, WK_HEAD = 0, 1, 8  # head of a rod's work array: the step being taken, Newton counters (3)

# ---- fbuf header: scalars; section offsets live in FSECTIONS order after it --------------------
F_H, F_GTOL, F_NEWTON_MAX, F_RESIDUAL_MAX = range(4)  # last two: outputs of a call (max over rods)
F_HEADER = 4
# (name, rows per entity, entity): entity "dof" (4n - 1 per rod), "edge", "vertex", "joint", "rod", "drive"
FSECTIONS = (
    ("dof_mass", 1, "dof"), ("dof_fext", 1, "dof"),
    ("dof_q", 1, "dof"), ("dof_v", 1, "dof"), ("dof_q0", 1, "dof"), ("dof_qhat", 1, "dof"),
    ("dof_g", 1, "dof"), ("dof_pivot", 1, "dof"), ("dof_dq", 1, "dof"), ("dof_qt", 1, "dof"),
    ("dof_band", BANDWIDTH + 1, "dof"),
    ("edge_ks", 1, "edge"), ("edge_lbar", 1, "edge"), ("edge_len", 1, "edge"),
    ("edge_tan_base", 3, "edge"), ("edge_a1_base", 3, "edge"), ("edge_tan", 3, "edge"), ("edge_a1", 3, "edge"),
    ("vertex_kbend", 1, "vertex"), ("vertex_ktwist", 1, "vertex"), ("vertex_mbar", 1, "vertex"),
    ("vertex_lvor", 1, "vertex"), ("vertex_wbar", 4, "vertex"),
    ("joint_mref_base", 1, "joint"), ("joint_mref", 1, "joint"),
    ("rod_damping", 1, "rod"), ("rod_decay", 1, "rod"), ("rod_fail_gtol", 1, "rod"),
    ("rod_newton_iters", 1, "rod"), ("rod_line_search_failures", 1, "rod"), ("rod_residual", 1, "rod"),
    ("rod_failed_step", 1, "rod"), ("rod_stats", 3, "rod"),
    ("drive_target", 9, "drive"),
    ("vertex_wbar2", 2, "vertex"),  # rest 2D curvature of the slerped bending model (2d-slerp only)
    ("dof_qprev", 1, "dof"), ("dof_vprev", 1, "dof"),  # bdf2: unknowns and velocities of the previous step
    # the elastic gradient, Hessian band and energy at the unknowns and frames a call ended with, and
    # whether they are there (rod_held: flag, energy): the next call that starts from that very state
    # takes them instead of assembling again (a cache, see _rod_steps)
    # (entity "held": the unknowns, twice over in a one-rod world, which steps in these two buffers)
    ("dof_gheld", 1, "held"), ("dof_bandheld", BANDWIDTH + 1, "held"), ("rod_held", 3, "rod"),
)
# header slot of each section's offset (a numba kernel reads module constants, not a dict)
(S_DOF_MASS, S_DOF_FEXT, S_DOF_Q, S_DOF_V, S_DOF_Q0, S_DOF_QHAT, S_DOF_G, S_DOF_PIVOT, S_DOF_DQ, S_DOF_QT,
 S_DOF_BAND, S_EDGE_KS, S_EDGE_LBAR, S_EDGE_LEN, S_EDGE_TAN_BASE, S_EDGE_A1_BASE, S_EDGE_TAN, S_EDGE_A1,
 S_VERTEX_KBEND, S_VERTEX_KTWIST, S_VERTEX_MBAR, S_VERTEX_LVOR, S_VERTEX_WBAR, S_JOINT_MREF_BASE,
 S_JOINT_MREF, S_ROD_DAMPING, S_ROD_DECAY, S_ROD_FAIL_GTOL, S_ROD_NEWTON_ITERS, S_ROD_LINE_SEARCH_FAILURES,
 S_ROD_RESIDUAL, S_ROD_FAILED_STEP, S_ROD_STATS, S_DRIVE_TARGET, S_VERTEX_WBAR2, S_DOF_QPREV,
 S_DOF_VPREV, S_DOF_GHELD, S_DOF_BANDHELD, S_ROD_HELD) = range(F_HEADER, F_HEADER + len(FSECTIONS))
FS = {name: F_HEADER + k for k, (name, _, _) in enumerate(FSECTIONS)}
F_FIRST = F_HEADER + len(FSECTIONS)


@njit(inline="always", **JIT)
def _fsec(fb, name_slot, start, count):
    """``count`` values of the section whose offset is in ``fb[name_slot]``, from its entry ``start``."""
    o = int(fb[name_slot]) + start
    return fb[o:o + count]


@njit(inline="always", **JIT)
def _fsec2(fb, name_slot, start, count, cols):
    o = int(fb[name_slot]) + start * cols
    return fb[o:o + count * cols].reshape((count, cols))


@njit(**JIT)
def _impose_drives(r, ib, fb, q, tan_base, a1_base):
    """Set rod ``r``'s driven clamps to their targets for the end of the step: the clamped edge's two
    vertices, and its material angle such that ``m1`` points along the target director (the reference
    director transported to the new tangent, as :func:`.energies.update_frames` does; unwrapped)."""
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (ib[I_NROD] + 1)].reshape((ib[I_NROD] + 1, ROD_COLS))
    nd = ib[I_NDRIVE]
    drive = ib[ib[I_DRIVE]:ib[I_DRIVE] + DRIVE_COLS * nd].reshape((nd, DRIVE_COLS))
    target = _fsec2(fb, S_DRIVE_TARGET, 0, nd, 9)
    for k in range(rod[r, 5], rod[r + 1, 5]):
        j = drive[k, 1]
        for c in range(3):
            q[4 * j + c] = target[k, c]
            q[4 * j + 4 + c] = target[k, 3 + c]
        if drive[k, 2] == 0:
            continue
        ex = target[k, 3] - target[k, 0]
        ey = target[k, 4] - target[k, 1]
        ez = target[k, 5] - target[k, 2]
        ln = math.sqrt(ex * ex + ey * ey + ez * ez)
        tx, ty, tz = ex / ln, ey / ln, ez / ln
        ux, uy, uz = _transport(tan_base[j, 0], tan_base[j, 1], tan_base[j, 2], tx, ty, tz,
                                a1_base[j, 0], a1_base[j, 1], a1_base[j, 2])
        d = ux * tx + uy * ty + uz * tz
        ux, uy, uz = ux - d * tx, uy - d * ty, uz - d * tz
        nrm = math.sqrt(ux * ux + uy * uy + uz * uz)
        ux, uy, uz = ux / nrm, uy / nrm, uz / nrm
        vx, vy, vz = ty * uz - tz * uy, tz * ux - tx * uz, tx * uy - ty * ux
        mx, my, mz = target[k, 6], target[k, 7], target[k, 8]
        th = math.atan2(mx * vx + my * vy + mz * vz, mx * ux + my * uy + mz * uz)
        prev = q[4 * j + 3]
        q[4 * j + 3] = th + 2.0 * math.pi * math.floor((prev - th) / (2.0 * math.pi) + 0.5)


@njit(**JIT)
def _rod_steps(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist, vertex_x_frames,
               dof_prev, nsteps, wk, slerp_rest):
    """``nsteps`` implicit steps of rod ``r`` on its own slices of the work buffers (the step
    of :func:`.stepper.implicit_euler_steps`, with preallocated work arrays). Reads the rod's state
    from the flat state arrays; leaves the result in its work buffers (``dof_q``, ``dof_v``,
    ``edge_a1_base``, ``joint_mref_base``). With ``ib[I_INTEGRATOR] == INTEGRATOR_BDF2`` the steps are
    BDF2 (same minimisation, inertia about the BDF2 predictor with ``beta h`` for ``h``; the first
    step is backward Euler unless ``ib[I_HAVE_PREV]``, then ``dof_prev`` (D, 2) holds the previous
    step's unknowns and velocities, interleaved; the work buffers ``dof_qprev``, ``dof_vprev`` get
    those of the call's last step). ``vertex_x_frames`` (N, 3): the positions the state's reference
    frames were last transported to by a step (the state's own stamp, ``state.solver``; NaN: none):
    where they are the rod's positions, the first step starts from those frames as they are
    (``fresh``), else it transports them once. Returns 0, or the 1-based step that failed (non-finite
    unknowns, or a line search that found no descent while the free force exceeded
    ``rod_fail_gtol``; a degenerate geometry the kernels refuse also counts). ``wk``: the rod's work
    array (:func:`_rod_work_size`; its head holds the step being taken and the Newton counters, which
    :func:`_rod_steps_guarded` copies to the arena). ``slerp_rest``: the batch's ``vertex_wbar2`` (N, 2)
    for the slerped bending, else None (then that model's kernels are not compiled into the driver:
    numba prunes the branches on a None argument, about a tenth of a cold start's compile time)."""
    nrod = ib[I_NROD]
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (nrod + 1)].reshape((nrod + 1, ROD_COLS))
    vs, es, js, ds, fs = rod[r, 0], rod[r, 1], rod[r, 2], rod[r, 3], rod[r, 4]
    nv = rod[r + 1, 0] - vs
    ne = rod[r + 1, 1] - es
    nj = rod[r + 1, 2] - js
    n = rod[r + 1, 3] - ds
    fixed_idx = ib[ib[I_FIXED] + fs:ib[I_FIXED] + rod[r + 1, 4]]
    has_drive = rod[r + 1, 5] > rod[r, 5]
    mass = _fsec(fb, S_DOF_MASS, ds, n)
    fext = _fsec(fb, S_DOF_FEXT, ds, n)
    q = _fsec(fb, S_DOF_Q, ds, n)
    v = _fsec(fb, S_DOF_V, ds, n)
    qprev = _fsec(fb, S_DOF_QPREV, ds, n)
    vprev = _fsec(fb, S_DOF_VPREV, ds, n)
    # the step's work arrays: one allocation per rod and call (by the caller), reused by every step
    # (and, freed, by the thread's next rod: they stay in its cache, where per-rod sections of the
    # arena would not)
    nb = BANDWIDTH + 1
    o = WK_HEAD
    # the Newton loop's two gradient / Hessian buffers: a one-rod world's are its blocks of the arena,
    # which keep the last assembly between calls in place (no copies); with several rods they are the
    # call's work arrays and that assembly is copied there and back
    own = nrod == 1
    if own:  # (ds = 0)
        gs = _fsec(fb, S_DOF_GHELD, 0, 2 * n).reshape((2, n))
        bands = _fsec(fb, S_DOF_BANDHELD, 0, 2 * n * nb).reshape((2, n, nb))
    else:
        gs = wk[o:o + 2 * n].reshape((2, n))
        bands = wk[o + 2 * n:o + 2 * n + 2 * n * nb].reshape((2, n, nb))
    o += 2 * n + 2 * n * nb
    q0 = wk[o:o + n]
    qhat = wk[o + n:o + 2 * n]
    D = wk[o + 2 * n:o + 3 * n]
    dq = wk[o + 3 * n:o + 4 * n]
    qt = wk[o + 4 * n:o + 5 * n]
    o += 5 * n
    tan = wk[o:o + 3 * ne].reshape((ne, 3))
    a1w = wk[o + 3 * ne:o + 6 * ne].reshape((ne, 3))
    m1 = wk[o + 6 * ne:o + 9 * ne].reshape((ne, 3))
    m2 = wk[o + 9 * ne:o + 12 * ne].reshape((ne, 3))
    elen = wk[o + 12 * ne:o + 13 * ne]
    o += 13 * ne
    mrefw = wk[o:o + nj]
    o += nj
    R = wk[o:o + _WS_E + 1]
    held = -1  # the work buffer holding the elastic part at q (see stepper.newton_minimize)
    ks = _fsec(fb, S_EDGE_KS, es, ne)
    lbar = _fsec(fb, S_EDGE_LBAR, es, ne)
    tanr = _fsec2(fb, S_EDGE_TAN_BASE, es, ne, 3)
    a1 = _fsec2(fb, S_EDGE_A1_BASE, es, ne, 3)
    kbend = _fsec(fb, S_VERTEX_KBEND, vs, nv)
    ktwist = _fsec(fb, S_VERTEX_KTWIST, vs, nv)
    mbar = _fsec(fb, S_VERTEX_MBAR, vs, nv)
    lvor = _fsec(fb, S_VERTEX_LVOR, vs, nv)
    wbar = _fsec2(fb, S_VERTEX_WBAR, vs, nv, 4)
    wbar2 = None if slerp_rest is None else slerp_rest[vs:vs + nv]
    mref = _fsec(fb, S_JOINT_MREF_BASE, js, nj)
    h = fb[F_H]
    damping = _fsec(fb, S_ROD_DAMPING, r, 1)[0]
    decay = _fsec(fb, S_ROD_DECAY, r, 1)[0]
    fail_gtol = _fsec(fb, S_ROD_FAIL_GTOL, r, 1)[0]
    out_iters = _fsec(fb, S_ROD_NEWTON_ITERS, r, 1)
    out_lsf = _fsec(fb, S_ROD_LINE_SEARCH_FAILURES, r, 1)
    out_res = _fsec(fb, S_ROD_RESIDUAL, r, 1)
    # pack the state into the interleaved unknowns q = [x_0, theta_0, x_1, ...]. The base tangents of
    # the work buffer belong to its positions, so they are recomputed only when the positions differ
    # from the buffer's (a cache: the work buffers start as NaN, so the first call computes them).
    # Whether the state's frames belong to its positions is the state's own record (vertex_x_frames).
    # ``same``: the state is bitwise the one the buffers hold (unknowns and frames), so the elastic
    # assembly the last call ended with (if kept) is the one this call would make first.
    moved = False
    stale = False
    same = True
    if ib[I_RESUME] == 1:
        # the state is the one these buffers hold (the last call's result, its write-back deferred):
        # that write-back now, so that a failed call leaves the state where the call started; no pack
        _rod_write_back(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist,
                        vertex_x_frames, dof_prev)
    else:  # pack the state into the buffers, comparing (above)
        for i in range(nv):
            for c in range(3):
                xi = vertex_x[vs + i, c]
                if q[4 * i + c] != xi:
                    moved = True
                if vertex_x_frames[vs + i, c] != xi:
                    stale = True
                q[4 * i + c] = xi
                v[4 * i + c] = vertex_v[vs + i, c]
        same = not moved
        for j in range(ne):
            th = edge_theta[es + j]
            if q[4 * j + 3] != th:
                same = False
            q[4 * j + 3] = th
            v[4 * j + 3] = edge_theta_v[es + j]
            for c in range(3):
                d = edge_ref_d1[es + j, c]
                if a1[j, c] != d:
                    same = False
                a1[j, c] = d
        for k in range(nj):
            mk = joint_ref_twist[js + k]
            if mref[k] != mk:
                same = False
            mref[k] = mk
    kept = _fsec(fb, S_ROD_HELD, 3 * r, 3)  # (kept?, elastic energy [J], buffer)
    slerp = ib[I_BENDING] == BENDING_2D_SLERP
    if same and not stale and not has_drive and not slerp and kept[0] == 1.0:
        # the first Newton iteration's elastic part: the last call's final (accepted) trial, taken at
        # these unknowns with these frames (fresh), bit for bit what der_elastic_ws would give again
        if own:
            held = int(kept[2])
        else:
            copy_vec(gs[0], _fsec(fb, S_DOF_GHELD, ds, n))
            copy_rows(bands[0], _fsec2(fb, S_DOF_BANDHELD, ds, n, nb))
            held = 0
        R[_WS_E] = kept[1]
    kept[0] = 0.0
    stats = wk[WK_STATS:WK_STATS + 3]  # newton_minimize's counters (iterations, failures, residual)
    stats[0] = 0.0
    stats[1] = 0.0
    stats[2] = 0.0
    bdf2 = ib[I_INTEGRATOR] == INTEGRATOR_BDF2
    have_prev = bdf2 and ib[I_HAVE_PREV] == 1
    if have_prev:
        for i in range(n):
            qprev[i] = dof_prev[ds + i, 0]
            vprev[i] = dof_prev[ds + i, 1]
    newton_iters = ib[I_NEWTON]
    ls_max = ib[I_LSMAX]
    bending = ib[I_BENDING]
    failed_step = wk[WK_STEP:WK_STEP + 1]
    failed_step[0] = 1
    if moved:
        edge_geometry(q, tanr, elen)  # the tangents the reference directors belong to
    for s in range(nsteps):
        step = s + 1
        failed_step[0] = step
        if have_prev:
            # BDF2: x_{n+1} = xh + beta h v_{n+1}, M (v_{n+1} - vh) = beta h f, with the extrapolations
            # xh = 4/3 x_n - 1/3 x_{n-1}, vh = 4/3 v_n - 1/3 v_{n-1} (written so that x_{n-1} = x_n
            # gives xh = x_n exactly: a held unknown keeps a zero velocity)
            hs = BDF2_BETA * h
            for i in range(n):
                xh = q[i] + (q[i] - qprev[i]) / 3.0
                vh = v[i] + (v[i] - vprev[i]) / 3.0
                qprev[i] = q[i]
                vprev[i] = v[i]
                q0[i] = xh
                qhat[i] = xh + hs * vh
        else:
            hs = h
            if bdf2:  # the first BDF2 step (no previous step) is backward Euler
                for i in range(n):
                    qprev[i] = q[i]
                    vprev[i] = v[i]
            for i in range(n):
                q0[i] = q[i]
                qhat[i] = q[i] + h * v[i]
        have_prev = bdf2
        a_in = 1.0 / (hs * hs)
        a_dmp = damping / hs
        for t in range(fixed_idx.shape[0]):
            qhat[fixed_idx[t]] = q[fixed_idx[t]]
        if has_drive:
            _impose_drives(r, ib, fb, q, tanr, a1)
        lsf = stats[1]
        # the base frames belong to q (see newton_minimize) unless a clamp moved or the state's frames
        # were not written by a step at these positions (then one full transport re-orthonormalises
        # them): so the result depends on the state alone, not on how the steps are split into calls
        # (from the second step on, the work frames are q's too: the step before ended computing them)
        frames = FRAMES_TRANSPORT
        if not has_drive:
            frames = FRAMES_WORK if s > 0 else (FRAMES_TRANSPORT if stale else FRAMES_BASE)
        if frames == FRAMES_TRANSPORT:
            held = -1
        # the 4D and averaged 2D bending reuse the accepted line-search trial's assembly; the last
        # step's, too, is kept for the next call (below), which then need not assemble its first iteration
        its, held = newton_minimize(q, qhat, q0, mass, a_in, a_dmp, fext, fixed_idx, tanr, a1, mref, ks, lbar, kbend,
                                    wbar, ktwist, mbar, lvor, bending, wbar2, ib[I_BRANCH], ib[I_EXACT], newton_iters,
                                    fb[F_GTOL], ls_max, False, tan, elen, a1w, mrefw, gs, bands, D, dq, qt, m1, m2, R,
                                    stats, frames, not slerp, held)
        if stats[1] > lsf and its == 1 and stats[2] > fail_gtol:
            return step
        if ls_max == 0 or stats[1] > lsf:
            # otherwise the work frames already belong to q: the accepted line-search trial (or the
            # converged iterate's own update) computed them from the same base frames
            update_frames(q, tanr, a1, mref, tan, elen, a1w, mrefw)
        for j in range(ne):
            for c in range(3):
                tanr[j, c] = tan[j, c]
                a1[j, c] = a1w[j, c]
        for k in range(nj):
            mref[k] = mrefw[k]
        for i in range(n):  # (a loop of its own: vectorised, divisions included)
            v[i] = decay * (q[i] - q0[i]) / hs
        for i in range(n):
            if not (math.isfinite(q[i]) and math.isfinite(v[i])):
                return step
    if held >= 0:  # keep the elastic part at the final unknowns and frames (a cache; nsteps = 0: the same)
        if own:
            kept[2] = held
        else:
            copy_vec(_fsec(fb, S_DOF_GHELD, ds, n), gs[held])
            copy_rows(_fsec2(fb, S_DOF_BANDHELD, ds, n, nb), bands[held])
            kept[2] = 0
        kept[1] = R[_WS_E]
        kept[0] = 1.0
    out_iters[0] = stats[0]
    out_lsf[0] = stats[1]
    out_res[0] = stats[2]
    failed_step[0] = 0
    return 0


@njit(**JIT)
def _rod_work_size(r, ib):
    """Length of rod ``r``'s work array (:func:`_rod_steps`): the head (``WK_HEAD`` values), the Newton
    loop's two gradient / band buffers and vectors, the work frames and the assembly's workspace."""
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (ib[I_NROD] + 1)].reshape((ib[I_NROD] + 1, ROD_COLS))
    n = rod[r + 1, 3] - rod[r, 3]
    ne = rod[r + 1, 1] - rod[r, 1]
    nj = rod[r + 1, 2] - rod[r, 2]
    return WK_HEAD + n * (7 + 2 * (BANDWIDTH + 1)) + ne * 13 + nj + _WS_E + 1


@njit(**JIT)
def _rod_steps_guarded(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist,
                       vertex_x_frames, dof_prev, nsteps, slerp_rest):
    """:func:`_rod_steps` on a fresh work array, with an exception of the kernels (a degenerate
    geometry: zero-length or reversed edges, or NaN coordinates) turned into a failure of the step it
    happened in (an exception must not leave a parallel region). Writes the rod's ``rod_failed_step``
    (the returned value) and ``rod_stats`` from the work array's head, once per call."""
    wk = np.empty(_rod_work_size(r, ib))
    wk[WK_STEP] = 1.0
    wk[WK_STATS] = 0.0
    wk[WK_STATS + 1] = 0.0
    wk[WK_STATS + 2] = 0.0
    try:
        failed = _rod_steps(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist,
                            vertex_x_frames, dof_prev, nsteps, wk, slerp_rest)
    except Exception:
        failed = max(1, int(wk[WK_STEP]))
    _fsec(fb, S_ROD_FAILED_STEP, r, 1)[0] = failed
    stats = _fsec(fb, S_ROD_STATS, 3 * r, 3)
    for k in range(3):
        stats[k] = wk[WK_STATS + k]
    return failed


@njit(**JIT)
def _rod_write_back(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist,
                    vertex_x_frames, dof_prev):
    """Copy rod ``r``'s stepped unknowns from its work buffers into the flat state arrays, its
    positions also into ``vertex_x_frames`` (the frames now belong to them), and, for BDF2, the
    previous step's unknowns and velocities into ``dof_prev``."""
    nrod = ib[I_NROD]
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (nrod + 1)].reshape((nrod + 1, ROD_COLS))
    vs, es, js, ds = rod[r, 0], rod[r, 1], rod[r, 2], rod[r, 3]
    nv = rod[r + 1, 0] - vs
    ne = rod[r + 1, 1] - es
    nj = rod[r + 1, 2] - js
    n = rod[r + 1, 3] - ds
    q = _fsec(fb, S_DOF_Q, ds, n)
    v = _fsec(fb, S_DOF_V, ds, n)
    a1 = _fsec2(fb, S_EDGE_A1_BASE, es, ne, 3)
    mref = _fsec(fb, S_JOINT_MREF_BASE, js, nj)
    for i in range(nv):
        for c in range(3):
            vertex_x[vs + i, c] = q[4 * i + c]
            vertex_x_frames[vs + i, c] = q[4 * i + c]
            vertex_v[vs + i, c] = v[4 * i + c]
    for j in range(ne):
        edge_theta[es + j] = q[4 * j + 3]
        edge_theta_v[es + j] = v[4 * j + 3]
        for c in range(3):
            edge_ref_d1[es + j, c] = a1[j, c]
    for k in range(nj):
        joint_ref_twist[js + k] = mref[k]
    if ib[I_INTEGRATOR] == INTEGRATOR_BDF2:
        qprev = _fsec(fb, S_DOF_QPREV, ds, n)
        vprev = _fsec(fb, S_DOF_VPREV, ds, n)
        for i in range(n):
            dof_prev[ds + i, 0] = qprev[i]
            dof_prev[ds + i, 1] = vprev[i]


@njit(**JIT)
def _collect(ib, fb, failed):
    """First failed step over the rods (0: none); on success the call's outputs (max over rods)."""
    nrod = ib[I_NROD]
    first = 0
    for r in range(nrod):
        if failed[r] > 0 and (first == 0 or failed[r] < first):
            first = failed[r]
    if first > 0:
        return first
    iters = 0.0
    residual = 0.0
    for r in range(nrod):
        iters = max(iters, _fsec(fb, S_ROD_NEWTON_ITERS, r, 1)[0])
        residual = max(residual, _fsec(fb, S_ROD_RESIDUAL, r, 1)[0])
    fb[F_NEWTON_MAX] = iters
    fb[F_RESIDUAL_MAX] = residual
    return 0


def _advance(ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist, vertex_x_frames,
             dof_prev, nsteps, slerp_rest):
    """``nsteps`` steps of every rod, ``prange`` over rods (numba's threads, ``numba.set_num_threads``),
    then, if all succeeded, the write-back. ``vertex_x_frames`` (N, 3): the state's record of the
    positions its frames belong to (:func:`_rod_steps`; written on success). ``dof_prev`` (D, 2): BDF2's previous step (read when
    ``ib[I_HAVE_PREV]``, written on success; any (0, 2) array for backward Euler). ``slerp_rest``:
    :attr:`RodBatch.slerp_rest` (the slerped bending's rest curvature, or None: :func:`_rod_steps`).
    Returns 0, or the first step (1-based) at which some rod failed; the state arrays then hold the state
    the call started from. ``ib[I_RESUME]``: the state arrays are to be written from the work buffers
    first (the last call's deferred write-back); ``ib[I_DEFER]``: no write-back at the end (the result
    stays in the work buffers: the next call with ``I_RESUME`` writes it, one with ``nsteps = 0`` only that)."""
    nrod = ib[I_NROD]
    failed = ib[ib[I_FAILED]:ib[I_FAILED] + nrod]
    for r in prange(nrod):
        failed[r] = _rod_steps_guarded(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1,
                                       joint_ref_twist, vertex_x_frames, dof_prev, nsteps, slerp_rest)
    first = _collect(ib, fb, failed)
    if first > 0:
        return first
    if ib[I_DEFER] == 1:  # the result stays in the buffers: a call that goes on from it resumes
        ib[I_RESUME] = 1  # (the caller's next call, or its fill, writes the state; any other call resets it)
        return 0
    for r in prange(nrod):
        _rod_write_back(r, ib, fb, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist,
                        vertex_x_frames, dof_prev)
    return 0


# one body, two compilations: in parallel over rods, and on one thread (a single rod: no parallel
# launch to pay; without ``parallel`` numba runs ``prange`` as ``range``); each under its own name,
# so each has its own cache entry (njit_as: with one entry for both, a process ran whichever was
# cached last, and the parallel driver ran on one thread)
advance_parallel = njit_as("advance_parallel", _advance, parallel=True, **JIT)
advance_serial = njit_as("advance_serial", _advance, **JIT)


@njit(**JIT)
def elastic_energies(ib, fb, vertex_x, edge_theta, edge_ref_d1, joint_ref_twist, out):
    """Elastic energy [J] of every rod (``out`` (R,)) at the state's positions, angles and reference
    frames (the directors transported to the current tangents, as at the start of a step)."""
    nrod = ib[I_NROD]
    rod = ib[ib[I_ROD]:ib[I_ROD] + ROD_COLS * (nrod + 1)].reshape((nrod + 1, ROD_COLS))
    for r in range(nrod):
        vs, es, js, ds = rod[r, 0], rod[r, 1], rod[r, 2], rod[r, 3]
        nv = rod[r + 1, 0] - vs
        ne = nv - 1
        nj = rod[r + 1, 2] - js
        n = rod[r + 1, 3] - ds
        q = _fsec(fb, S_DOF_QT, ds, n)
        g = _fsec(fb, S_DOF_G, ds, n)
        band = _fsec2(fb, S_DOF_BAND, ds, n, BANDWIDTH + 1)
        elen = _fsec(fb, S_EDGE_LEN, es, ne)
        tanr = _fsec2(fb, S_EDGE_TAN_BASE, es, ne, 3)
        a1 = _fsec2(fb, S_EDGE_A1_BASE, es, ne, 3)
        tan = _fsec2(fb, S_EDGE_TAN, es, ne, 3)
        a1w = _fsec2(fb, S_EDGE_A1, es, ne, 3)
        mref = _fsec(fb, S_JOINT_MREF_BASE, js, nj)
        mrefw = _fsec(fb, S_JOINT_MREF, js, nj)
        for i in range(nv):
            for c in range(3):
                q[4 * i + c] = vertex_x[vs + i, c]
        for j in range(ne):
            q[4 * j + 3] = edge_theta[es + j]
            for c in range(3):
                a1[j, c] = edge_ref_d1[es + j, c]
        for k in range(nj):
            mref[k] = joint_ref_twist[js + k]
        edge_geometry(q, tanr, elen)
        _fsec(fb, S_DOF_Q, ds, 1)[0] = np.nan  # the base tangents now belong to this state: re-derive next step
        update_frames(q, tanr, a1, mref, tan, elen, a1w, mrefw)
        ks, lbar = _fsec(fb, S_EDGE_KS, es, ne), _fsec(fb, S_EDGE_LBAR, es, ne)
        kbend, ktwist = _fsec(fb, S_VERTEX_KBEND, vs, nv), _fsec(fb, S_VERTEX_KTWIST, vs, nv)
        mbar, lvor = _fsec(fb, S_VERTEX_MBAR, vs, nv), _fsec(fb, S_VERTEX_LVOR, vs, nv)
        if ib[I_BENDING] == BENDING_2D_SLERP:
            out[r] = slerp_elastic(q, tan, elen, a1w, mrefw, ks, lbar, kbend, _fsec2(fb, S_VERTEX_WBAR2, vs, nv, 2),
                                   ktwist, mbar, lvor, ib[I_BRANCH], ib[I_EXACT], np.int64(0), g, band)
        else:
            out[r] = der_elastic(q, tan, elen, a1w, mrefw, ks, lbar, kbend, _fsec2(fb, S_VERTEX_WBAR, vs, nv, 4), ktwist,
                                 mbar, lvor, ib[I_BENDING] == BENDING_2D_AVERAGE, np.int64(0), g, band)


class RodBatch:
    """The arena of a batch of implicit-DER rods (module docstring).

    ``models``: one :class:`.stepper.DERImplicitModel` per rod (open rods, ``n >= 3`` vertices each);
    ``drives``: driven clamps as ``(rod, edge, holds_theta)``; ``h`` [s] step; ``newton_iters``,
    ``gtol`` [N], ``line_search`` (max halvings), ``curv2d`` (averaged 2D bending instead of 4D);
    ``slerp``: the slerped-frame 2D bending (:mod:`.slerp_bending`) instead, given as ``(wbar2,
    branch, exact)``: one rest 2D curvature (n_r, 2) per rod, ``branch`` 0 (twist) / 1 (shortest),
    ``exact`` 1 (exact gradient) / 0 (frame held constant).
    Named views (writes reach the kernels): ``dof_fext`` (D,) [N] external forces, ``rod_damping``
    (R,) [1/s] the damping rate inside each rod's solve, ``rod_decay`` (R,) the velocity factor after
    each step, ``rod_fail_gtol`` (R,) [N], ``drive_target`` (K, 9) the driven clamps' vertex targets
    and director ``m1`` for the next step; per-rod outputs ``rod_newton_iters``,
    ``rod_line_search_failures``, ``rod_residual`` [N] (last free-force max-norm), ``rod_failed_step``.
    ``integrator``: ``INTEGRATOR_BACKWARD_EULER`` or ``INTEGRATOR_BDF2`` (:func:`_rod_steps`).
    ``slerp_rest``: the view ``vertex_wbar2`` for a slerped batch, else None: the drivers' last
    argument (:func:`_rod_steps`).
    """

    def __init__(self, models: list[DERImplicitModel], *, h: float, newton_iters: int, gtol: float, line_search: int,
                 curv2d: bool = False, drives: tuple = (), slerp: tuple | None = None,
                 integrator: int = INTEGRATOR_BACKWARD_EULER):
        nrod = len(models)
        nv = np.array([m.nv for m in models], dtype=np.int64)
        counts = {"vertex": nv, "edge": nv - 1, "joint": nv - 2, "dof": 4 * nv - 1,
                  "fixed": np.array([int(np.count_nonzero(m.fixed)) for m in models], dtype=np.int64),
                  "drive": np.array([sum(1 for d in drives if d[0] == r) for r in range(nrod)], dtype=np.int64)}
        starts = {k: np.concatenate([[0], np.cumsum(c)]).astype(np.int64) for k, c in counts.items()}
        totals = {k: int(s[-1]) for k, s in starts.items()}
        totals["rod"] = nrod
        totals["held"] = totals["dof"] * (2 if nrod == 1 else 1)  # see FSECTIONS
        self.starts = starts
        self.n_drive = totals["drive"]
        # int arena
        rod_table = np.stack([starts[k] for k in ("vertex", "edge", "joint", "dof", "fixed", "drive")], axis=1)
        fixed_idx = np.concatenate([np.flatnonzero(m.fixed) for m in models]).astype(np.int64)
        drive_table = np.array(sorted((int(r), int(e), int(bool(th))) for r, e, th in drives),
                               dtype=np.int64).reshape(-1, DRIVE_COLS)
        self.drives = [tuple(int(c) for c in row) for row in drive_table]
        failed = np.zeros(nrod, dtype=np.int64)  # per-rod output: failed step (0: none)
        ib = np.zeros(I_HEADER + rod_table.size + fixed_idx.size + drive_table.size + nrod, dtype=np.int64)
        ib[I_NROD], ib[I_NDRIVE] = nrod, totals["drive"]
        ib[I_BENDING] = BENDING_2D_AVERAGE if curv2d else BENDING_4D
        if slerp is not None:
            wbar2s, branch, exact = slerp
            if curv2d or len(wbar2s) != nrod or branch not in (0, 1) or exact not in (0, 1):
                raise ValueError("slerp needs one wbar2 per rod, branch and exact in {0, 1}, and curv2d False")
            for r, w2 in enumerate(wbar2s):
                if np.shape(w2) != (int(nv[r]), 2) or not np.all(np.isfinite(w2)):
                    raise ValueError(f"wbar2 of rod {r} must be a finite ({int(nv[r])}, 2) array (got {np.shape(w2)})")
            ib[I_BENDING], ib[I_BRANCH], ib[I_EXACT] = BENDING_2D_SLERP, int(branch), int(exact)
        ib[I_LSMAX], ib[I_NEWTON] = int(line_search), int(newton_iters)
        if integrator not in (INTEGRATOR_BACKWARD_EULER, INTEGRATOR_BDF2):
            raise ValueError(f"integrator must be INTEGRATOR_BACKWARD_EULER or INTEGRATOR_BDF2 (got {integrator!r})")
        ib[I_INTEGRATOR] = int(integrator)
        self.n_dof = totals["dof"]
        self.no_prev = np.zeros((0, 2))  # the dof_prev argument of a backward-Euler call
        o = I_HEADER
        for slot, arr in ((I_ROD, rod_table), (I_FIXED, fixed_idx), (I_DRIVE, drive_table), (I_FAILED, failed)):
            ib[slot] = o
            ib[o:o + arr.size] = arr.reshape(-1)
            o += arr.size
        # float arena
        size = F_FIRST
        offsets = {}
        for name, rows, entity in FSECTIONS:
            offsets[name] = size
            size += rows * totals[entity]
        fb = np.zeros(size)
        fb[F_H], fb[F_GTOL] = float(h), float(gtol)
        for name, _, _ in FSECTIONS:
            fb[FS[name]] = offsets[name]
        self.ibuf, self.fbuf = ib, fb
        for name, rows, entity in FSECTIONS:
            view = fb[offsets[name]:offsets[name] + rows * totals[entity]]
            setattr(self, name, view.reshape(totals[entity], rows) if rows > 1 else view)
        for r, m in enumerate(models):
            d = slice(starts["dof"][r], starts["dof"][r + 1])
            e = slice(starts["edge"][r], starts["edge"][r + 1])
            v = slice(starts["vertex"][r], starts["vertex"][r + 1])
            self.dof_mass[d], self.dof_fext[d] = m.mass, m.fext
            self.edge_ks[e], self.edge_lbar[e] = m.ks, m.lbar
            self.vertex_kbend[v], self.vertex_ktwist[v] = m.kbend, m.ktwist
            self.vertex_mbar[v], self.vertex_lvor[v] = m.mbar, m.lvor
            self.vertex_wbar[v] = m.wbar
            self.rod_damping[r] = m.damping
            if slerp is not None:
                self.vertex_wbar2[v] = slerp[0][r]
        self.rod_decay[:] = 1.0
        self.dof_q[:] = np.nan  # no positions stepped yet (see _rod_steps)
        self.vertex_x_frames = np.full((totals["vertex"], 3), np.nan)  # advance(vertex_x_frames=None)'s record
        # the driver's last argument: the slerped bending's rest curvature, or None (_rod_steps)
        self.slerp_rest = self.vertex_wbar2 if slerp is not None else None
        # the serial driver's ahead-of-time compiled entry (rodlab.aot), where built, inserted into
        # its dispatcher: every caller's advance_serial(...) of a one-rod backward-Euler or BDF2 world
        # with 4D / averaged bending runs it (numba's own type dispatch; other arguments: the JIT)
        aot.seed(advance_serial)

    def advance(self, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1, joint_ref_twist, nsteps: int,
                parallel: bool, dof_prev: np.ndarray | None = None, have_prev: bool = False,
                vertex_x_frames: np.ndarray | None = None, resume: bool = False, defer: bool = False) -> int:
        """``nsteps`` steps of every rod on the flat state arrays (in place when all succeed).
        BDF2: ``dof_prev`` (D, 2) the previous step's interleaved unknowns and velocities, read when
        ``have_prev`` and written on success (``None``: backward Euler only). ``vertex_x_frames``
        (N, 3): the positions the state's frames belong to (:func:`_rod_steps`; a simulator passes
        the state's own record, ``None`` uses one kept by this batch for arrays stepped only here).
        ``resume``, ``defer``: ``ibuf[I_RESUME]``, ``ibuf[I_DEFER]`` (:func:`_advance`: the arrays are
        first written from the buffers, which hold their state; the result is left in the buffers).
        Returns 0 or the first failed step (1-based; the arrays then hold the state the call started from)."""
        if vertex_x_frames is None:
            if self.vertex_x_frames.shape != vertex_x.shape:
                self.vertex_x_frames = np.full(vertex_x.shape, np.nan)
            vertex_x_frames = self.vertex_x_frames
        if dof_prev is None:
            if self.ibuf[I_INTEGRATOR] != INTEGRATOR_BACKWARD_EULER:
                raise ValueError("a BDF2 batch needs dof_prev, the (D, 2) previous-step array")
            dof_prev = self.no_prev
        self.ibuf[I_HAVE_PREV] = 1 if have_prev else 0
        self.ibuf[I_RESUME] = 1 if resume else 0
        self.ibuf[I_DEFER] = 1 if defer else 0
        if not parallel:
            return advance_serial(self.ibuf, self.fbuf, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1,
                                  joint_ref_twist, vertex_x_frames, dof_prev, nsteps, self.slerp_rest)
        chunk = get_parallel_chunksize()
        set_parallel_chunksize(PARALLEL_CHUNK)
        try:
            return advance_parallel(self.ibuf, self.fbuf, vertex_x, vertex_v, edge_theta, edge_theta_v, edge_ref_d1,
                                    joint_ref_twist, vertex_x_frames, dof_prev, nsteps, self.slerp_rest)
        finally:
            set_parallel_chunksize(chunk)

    def elastic_energies(self, vertex_x, edge_theta, edge_ref_d1, joint_ref_twist) -> np.ndarray:
        out = np.empty(int(self.ibuf[I_NROD]))
        elastic_energies(self.ibuf, self.fbuf, vertex_x, edge_theta, edge_ref_d1, joint_ref_twist, out)
        return out


__all__ = [
    "BDF2_BETA",
    "INTEGRATOR_BACKWARD_EULER",
    "INTEGRATOR_BDF2",
    "I_DEFER",
    "I_RESUME",
    "RodBatch",
    "advance_parallel",
    "advance_serial",
    "elastic_energies",
]
