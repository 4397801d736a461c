"""The steps of one ``advance`` call of a DER world in contact, as one compiled loop
(docs/contact-der.md, "The step" and "One compiled loop per call, kept geometry").

Per step, bit for bit what the contact branch of :meth:`rodlab.solvers.der.DERSimulator.advance`
did from Python before (one call of :func:`rodlab.der.batch.advance_rods_serial` for one step,
then one of the contact response): the DER step of every rod, then the whole contact response
(:func:`rodlab.der.contact_loop.respond`). Both are called without Python wrappers
(``JIT_INNER``), so this function links each call tree once; the per-step dispatch of two compiled
calls, the named-tuple typing of the contact geometry and the Python between them are gone.

A rod without the energy check, twist-free frames or time-dependent forces is stepped by
:func:`_step_rod`, which keeps the rod's geometry in its scratch from one step to the next (the
response's frame update leaves a moved rod's new geometry there too) instead of recomputing it,
and skips the snapshot copies; any other rod by the serial driver's own
:func:`rodlab.der.batch._advance_rod`, its call cache included.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_INNER

from . import batch as B
from . import kernels as K
from .contact_loop import respond


@njit(inline="always", **JIT)
def _finite(a):
    probe = 0.0
    for i in range(a.shape[0]):
        for c in range(3):
            probe += a[i, c] - a[i, c]
    return probe == 0.0


@njit(**JIT_INNER)
def _step_rod(m, w, r, h, X, V, TH, D1, TW, call_presc, call_m1, k_move, refresh, symplectic):
    """One DER step of rod ``r`` as :func:`rodlab.der.batch._advance_rod` takes it in a
    one-step serial call, for a rod that is not under the energy check, not twist-free and
    without time-dependent forces, less two things this loop does not need: the geometry refresh
    when ``refresh`` is false (the rod's scratch then already holds the geometry of its state,
    which is what the refresh would compute, bit for bit: the same kernels on the same arrays at
    the end of its last step), and the snapshot copies (a failed call is restored by the caller
    from its own copy of the call's start). Sets ``w.rod_status[r]`` and ``w.rod_diag[r]``."""
    vs, ve = m.rod_vertex_start[r], m.rod_vertex_start[r + 1]
    es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
    js, je = m.rod_joint_start[r], m.rod_joint_start[r + 1]
    ps, pe = m.rod_presc_start[r], m.rod_presc_start[r + 1]
    cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
    nv, ne = ve - vs, ee - es
    closed = m.rod_flag[r, B.FLAG_CLOSED] != 0
    x, v, theta, ref_d1, ref_twist = X[vs:ve], V[vs:ve], TH[es:ee], D1[es:ee], TW[js:je]
    v3 = w.vertex_v3[6 * vs:6 * ve].reshape((2, nv, 3))
    e3 = w.serial_e3[18 * es:18 * ee].reshape((6, ne, 3))
    s = w.serial_s[7 * es:7 * ee].reshape((7, ne))
    kb, omega = w.serial_kb[js:je], w.serial_omega[js:je]
    t_start = w.edge_t_start[es:ee]
    ext_force = w.vertex_ext_force[vs:ve]
    presc = w.presc_x[ps:pe].reshape((1, pe - ps, 3))
    w.rod_cache[r, 0] = B.CACHE_NONE  # the scratch is about to change
    diag = np.zeros(6)
    w.rod_status[r] = B.ROD_OK
    if refresh:
        K.refresh_geometry(x, closed, ref_d1, ref_twist, np.bool_(False), e3[0], s[0], e3[1], kb, e3[3])
    B._fill_step_inputs(m, w, vs, ve, ps, pe, x, ext_force, presc)
    m1 = m.clamp_m1[cs:ce].reshape((1, ce - cs, 3))
    if call_presc is not None:
        if m.rod_flag[r, B.FLAG_MOVING] != 0:
            presc = np.ascontiguousarray(call_presc[k_move:k_move + 1, ps:pe])
            m1 = np.ascontiguousarray(call_m1[k_move:k_move + 1, cs:ce])
    try:
        done = B._chunk(m, r, np.int64(1), h, presc, m1, x, v, theta, ref_d1, ref_twist, ext_force, v3, e3, s, kb,
                        omega, t_start, diag, symplectic)
    except Exception:  # the geometry degenerated inside the compiled step (singular twist Hessian)
        w.rod_status[r] = B.ROD_DEGENERATE
        B._copy1(w.rod_diag[r], diag)
        return
    diag[4] = done
    B._copy1(w.rod_diag[r], diag)
    if done < 1:
        w.rod_status[r] = B.ROD_PROJECTION if diag[5] != 0.0 else B.ROD_NONFINITE


@njit(**JIT_INNER)
def _step_code(m, w):
    """The status bits of the step just taken (:func:`rodlab.der.batch._finish`'s, without its
    restore: the caller restores a failed call from its own copy of the call's start)."""
    code = 0
    warn = max(m.option_float[0], 1e-9)
    for r in range(w.rod_status.shape[0]):
        if w.rod_status[r] != B.ROD_OK:
            code |= B.STATUS_FAILED
        if m.option_int[2] != 0 and w.rod_diag[r, 1] > warn:
            code |= B.STATUS_PROJECTION_WARN
    return code


@njit(**JIT)
def advance_contact_steps(f, i, b, L, nsteps, h, t, X, V, TH, D1, TW, call_presc, call_m1, call_timed, symplectic,
                          moving, timed_on, g, rod_mu, obstacle_mu, cfg, icfg, vertex_rod, rod_closed, rod_uniform,
                          rod_twist_free, clear, stats, rows, warm, near_x, near):
    """``nsteps`` steps of ``h`` [s] of the packed DER world (:func:`rodlab.der.batch.unpack`)
    with its contact response, in place on the state arrays ``X, V, TH, D1, TW``.

    ``call_presc``, ``call_m1``, ``call_timed``: the call's per-step inputs of moving clamps and
    time-dependent forces as :meth:`rodlab.solvers.der.DERSimulator._call_inputs` makes them, or
    ``None`` all three (undriven world: their code is not compiled); ``moving``, ``timed_on``:
    whether the first two, the third, hold one row per step (else one placeholder row, used as
    it is at every step); ``symplectic``: ``None`` (fast projection) or ``True`` (RATTLE).
    The contact arguments are those of :func:`rodlab.der.contact_loop.respond` (``g``: the
    ``ContactGeometry``; ``stats`` (9,) accumulates detections, impulse/projection alternations,
    rows, Gauss-Seidel sweeps, round-1 checks done on round 0's pairs, Newton cluster solves and
    Newton iterations; the tables and the pair list come back for the next call).

    Stops at the first step whose DER step fails (``batch.STATUS_FAILED``) or whose response
    leaves a non-finite state. Returns ``(code, steps done, finite, time, contacts summed,
    contacts at most, smallest row gap, warnings, rows table, warm-start table, candidate pair
    list)``: ``code`` the failing step's status (0 when none failed), ``time`` ``t`` advanced by
    ``h`` once per step done (the same additions as the Python loop it replaces), ``warnings``
    the status bits of every step or'ed."""
    m, w = B.unpack(f, i, b, L)
    X, V, TH, D1, TW = B.borrow(X), B.borrow(V), B.borrow(TH), B.borrow(D1), B.borrow(TW)
    x0 = np.empty_like(X)
    x_step = np.empty_like(X)
    R = w.rod_status.shape[0]
    # rods stepped by _step_rod (any other: the serial driver's _advance_rod, energy check, twist-free
    # frames and time-dependent forces included), and those whose scratch holds their state's geometry
    # (after their step; the response's frame update leaves it there for the rods it moves)
    fast = np.zeros(R, dtype=np.bool_)
    kept = np.zeros(R, dtype=np.bool_)
    for r in range(R):
        fast[r] = (m.rod_flag[r, B.FLAG_PASSIVE] == 0 and m.rod_flag[r, B.FLAG_TWIST_FREE] == 0
                   and (call_timed is None or m.rod_flag[r, B.FLAG_TIMED] == 0))
    warn = 0
    n_sum = 0
    n_max = 0
    gap_min = np.inf
    for s in range(nsteps):
        for q in range(X.shape[0]):
            for c in range(3):
                x0[q, c] = X[q, c]
        k_move = s if moving else 0
        k_timed = s if timed_on else 0
        # None stays None (its code pruned in _advance_rod); an array gives its step's row
        ps = None if call_presc is None else call_presc[k_move:k_move + 1]
        ms = None if call_m1 is None else call_m1[k_move:k_move + 1]
        ts = None if call_timed is None else call_timed[k_timed:k_timed + 1]
        for r in range(R):
            if fast[r]:
                _step_rod(m, w, np.int64(r), h, X, V, TH, D1, TW, call_presc, call_m1, k_move, not kept[r],
                          symplectic)
                kept[r] = w.rod_status[r] == B.ROD_OK
            else:
                B._advance_rod(m, w, np.int64(r), np.int64(1), h, X, V, TH, D1, TW, ps, ms, ts, None, symplectic)
        code = _step_code(m, w)
        B._commit_cache(m.rod_vertex_start, m.rod_edge_start, m.rod_joint_start, w.rod_cache, w.vertex_snap_x,
                        w.vertex_snap_v, w.edge_snap_theta, w.edge_snap_ref_d1, w.joint_snap_ref_twist, code, X, V,
                        TH, D1, TW)
        if code & B.STATUS_FAILED:
            return code, s, True, t, n_sum, n_max, gap_min, warn, rows, warm, near
        warn |= code
        t += h
        for q in range(X.shape[0]):
            for c in range(3):
                x_step[q, c] = X[q, c]
        m1_step = m.clamp_m1
        if call_m1 is not None:
            if moving:
                m1_step = call_m1[s]
        n, gap, rows, warm, near = respond(m, x0, x_step, X, V, TH, D1, TW, m1_step, g, rod_mu, obstacle_mu, cfg, icfg,
                                           vertex_rod, rod_closed, rod_uniform, rod_twist_free, clear, stats, rows,
                                           warm, near_x, near, w.serial_e3, w.serial_s, w.serial_kb,
                                           w.serial_omega)
        if not (_finite(X) and _finite(V)):
            return 0, s + 1, False, t, n_sum, n_max, gap_min, warn, rows, warm, near
        n_sum += n
        n_max = max(n_max, n)
        gap_min = min(gap_min, gap)
    return 0, nsteps, True, t, n_sum, n_max, gap_min, warn, rows, warm, near


__all__ = ["advance_contact_steps"]
