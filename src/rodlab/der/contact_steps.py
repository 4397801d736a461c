"""The steps of one ``advance`` call of a DER world in contact, as one compiled loop
(docs/contact-der.md, "The step" and "One compiled loop per call").

Per step, exactly what the contact branch of :meth:`rodlab.solvers.der.DERSimulator.advance`
did from Python before: the DER step of every rod (the serial driver's body of
:func:`rodlab.der.batch.advance_rods_serial` for one step: :func:`rodlab.der.batch._advance_rod`
rod after rod, then its finish and call cache), then the whole contact response
(:func:`rodlab.der.contact_loop.respond`). Both are called without Python wrappers
(``JIT_INNER``), so this function links each call tree once; the per-step dispatch of two compiled
calls, the named-tuple typing of the contact geometry and the Python between them are gone.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT

from . import batch as B
from .contact_loop import respond


@njit(inline="always", **JIT)
def _finite(a):
    probe = 0.0
    for i in range(a.shape[0]):
        for c in range(3):
            probe += a[i, c] - a[i, c]
    return probe == 0.0


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
    The contact arguments are those of :func:`rodlab.der.contact_loop.respond_packed`.

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
            B._advance_rod(m, w, np.int64(r), np.int64(1), h, X, V, TH, D1, TW, ps, ms, ts, None, symplectic)
        code = B._finish(m, w, X, V, TH, D1, TW)
        B._commit_cache(m, w, code, X, V, TH, D1, TW)
        if code & B.STATUS_FAILED:
            return code, s, True, t, n_sum, n_max, gap_min, warn, rows, warm, near
        warn |= code
        t += h
        for q in range(X.shape[0]):
            for c in range(3):
                x_step[q, c] = X[q, c]
        m1_step = m.clamp_m1 if call_m1 is None or not moving else call_m1[s]
        n, gap, rows, warm, near = respond(m, x0, x_step, X, V, TH, D1, TW, m1_step, g, rod_mu, obstacle_mu, cfg, icfg,
                                           vertex_rod, rod_closed, rod_uniform, rod_twist_free, clear, stats, rows,
                                           warm, near_x, near)
        if not (_finite(X) and _finite(V)):
            return 0, s + 1, False, t, n_sum, n_max, gap_min, warn, rows, warm, near
        n_sum += n
        n_max = max(n_max, n)
        gap_min = min(gap_min, gap)
    return 0, nsteps, True, t, n_sum, n_max, gap_min, warn, rows, warm, near


__all__ = ["advance_contact_steps"]
