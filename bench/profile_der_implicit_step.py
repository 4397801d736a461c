"""Where one der-implicit strand step's CPU time goes (issue #13: 1000 strands x 32 vertices).

    PYTHONPATH=src python3 bench/profile_der_implicit_step.py [--nv 32] [--reps 5]

One strand of the many-strands benchmark (bench/bench_world.py section (b): 20 cm human hair,
E = 3.9 GPa, radius 50 um, root clamped, gravity, damping 1 /s, h = 1/240 s) is brought to a bent
state by 60 steps, then each piece of a step is repeated in a compiled loop and timed with the
thread's CPU time (``time.thread_time``: on a shared machine, the work itself). Pieces:

* ``update_frames``: tangents, lengths, transported reference directors and reference twists;
* ``assemble (want=2)``: elastic energy, gradient and banded Hessian (zeroing included);
* ``energy (want=0)``: elastic energy alone (a line-search halving);
* ``factor`` / ``solve``: the banded LDL^T of the 127 x 127 Hessian (half bandwidth 10; the factor
  cut to the stencil's profile, :mod:`rodlab.der_implicit.hessian_ldlt`, as the step runs it);
* ``inertia + hold + gmax``: the O(n) loops of a Newton iteration around them;
* the transcendental calls alone (31 ``sin`` / ``cos`` pairs, 30 ``atan2``), a floor the bit-for-bit
  results keep;
* ``batch step``: a whole step, per strand, of a one-rod batch and of a 1000-rod batch on one
  thread (``advance_serial``, ``nsteps`` steps per call: the benchmark's call).

A step (one Newton iteration whose full step the line search accepts, the common case) is one
``update_frames`` + one ``assemble (want=2)`` (the line-search trial, kept for the next step) + the
O(n) loops + ``factor`` + ``solve``; ``gradient`` and ``energy`` are listed for reference (the
difference want=2 - want=1 is the Hessian's share). Prints one line per piece: CPU microseconds per
call (least of ``--reps`` runs: the run least disturbed by other work) and the share of the 1000-rod
step.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
from numba import njit

from rodlab.der_implicit.batch import RodBatch, advance_serial
from rodlab.der_implicit.energies import BANDWIDTH, WANT_DERIVATIVES, _WS_E, der_elastic_ws, update_frames
from rodlab.der_implicit.stepper import _hold_fixed, add_inertia, build_rod, implicit_euler_steps
from rodlab.der_implicit.hessian_ldlt import der_hessian_ldlt_factor
from rodlab.linalg.banded_ldlt import ldlt_solve_band10

HAIR = dict(E=3.9e9, G=1.3e9, rho=1300.0, radius=5e-5)
H = 1.0 / 240.0


@njit(cache=True)
def _loop_frames(k, q, tanr, a1, mref, tan, elen, a1w, mrefw):
    for _ in range(k):
        update_frames(q, tanr, a1, mref, tan, elen, a1w, mrefw)


@njit(cache=True)
def _loop_assemble(k, want, q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, g, band, m1, m2, R):
    E = 0.0
    for _ in range(k):
        if want != 0:
            g[:] = 0.0
            band[:, :] = 0.0
        E += der_elastic_ws(q, tan, elen, a1, mref, ks, lbar, kbend, wbar, ktwist, mbar, lvor, False, want, g, band,
                            m1, m2, R)
    return E


@njit(cache=True)
def _loop_trig(k, q, mref):
    """The step's transcendental calls alone: a sine and cosine per edge angle (material frames) and an
    ``atan2`` per joint (reference twist), as :func:`update_frames` and ``der_elastic_ws`` make them."""
    s = 0.0
    for _ in range(k):
        for j in range(mref.shape[0] + 1):
            th = q[4 * j + 3] + s * 1e-300  # (depends on s: the calls are not hoisted out of the loop)
            s += math.cos(th) * math.sin(th)
        for j in range(mref.shape[0]):
            s += math.atan2(mref[j] + s * 1e-300, 1.0)
    return s


@njit(cache=True)
def _loop_factor(k, band0, band, D):
    for _ in range(k):
        band[:, :] = band0
        der_hessian_ldlt_factor(band, D, 1e-13)


@njit(cache=True)
def _loop_copy(k, band0, band):
    for _ in range(k):
        band[:, :] = band0


@njit(cache=True)
def _loop_solve(k, band, D, g, dq):
    for _ in range(k):
        for r in range(g.shape[0]):
            dq[r] = -g[r]
        ldlt_solve_band10(band, D, dq)


@njit(cache=True)
def _loop_linear(k, q, qhat, q0, mass, fext, fixed_idx, g, band):
    a_in = 1.0 / (H * H)
    a_dmp = 1.0 / H
    n = q.shape[0]
    s = 0.0
    for _ in range(k):
        E = add_inertia(q, qhat, q0, mass, fext, a_in, a_dmp, 0.0, g, band)
        _hold_fixed(fixed_idx, g, band)
        gmax = 0.0
        for r in range(n):
            if abs(g[r]) > gmax:
                gmax = abs(g[r])
        s += gmax + E
    return s


def _cpu_us(fn, k, reps):
    """Least CPU microseconds per iteration of ``fn(k)`` over ``reps`` runs (one warm-up run first)."""
    fn(k)
    out = []
    for _ in range(reps):
        c0 = time.thread_time()
        fn(k)
        out.append((time.thread_time() - c0) / k)
    return 1e6 * min(out)


def _strand(nv):
    x = np.zeros((nv, 3))
    x[:, 0] = np.linspace(0.0, 0.2, nv)
    x[:, 2] = -0.2 * x[:, 0]
    return build_rod(x, gravity=(0.0, 0.0, -9.81), damping=1.0, **HAIR)


def _batch_step_us(model, state, count, nsteps, reps, line_search):
    """CPU us per strand-step of ``count`` copies of the strand in one batch, ``nsteps`` steps a call,
    ``line_search`` halvings at most (0: the full Newton step, the benchmark's setting)."""
    batch = RodBatch([model] * count, h=H, newton_iters=1, gtol=0.0, line_search=line_search)
    nv = model.nv
    x0 = np.tile(state.q.reshape(-1)[np.arange(4 * nv - 1) % 4 != 3].reshape(nv, 3), (count, 1))
    th0 = np.tile(state.q[3::4], count)
    v0 = np.tile(state.v.reshape(-1)[np.arange(4 * nv - 1) % 4 != 3].reshape(nv, 3), (count, 1))
    tv0 = np.tile(state.v[3::4], count)
    a10 = np.tile(state.a1, (count, 1))
    mr0 = np.tile(state.mref, count)

    arrs = [x0.copy(), v0.copy(), th0.copy(), tv0.copy(), a10.copy(), mr0.copy()]
    fx = np.full_like(x0, np.nan)  # the state's frame stamp: written by every call, so the next is "fresh"

    def run(k):
        c0 = time.thread_time()
        failed = advance_serial(batch.ibuf, batch.fbuf, *arrs, fx, batch.no_prev, k, batch.slerp_rest)
        assert failed == 0
        return time.thread_time() - c0

    run(1)
    out = [run(nsteps) / (nsteps * count) for _ in range(reps)]
    return 1e6 * min(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nv", type=int, default=32, help="vertices per strand")
    ap.add_argument("--reps", type=int, default=5, help="repeats (least time is kept)")
    ap.add_argument("--k", type=int, default=20000, help="calls per timed loop")
    ap.add_argument("--line-search", type=int, default=0,
                    help="the batch steps' line-search halvings (0, the benchmark's: full Newton steps; 12: the default)")
    a = ap.parse_args(argv)
    model, state = _strand(a.nv)
    stats = np.zeros(3)
    fixed = np.flatnonzero(model.fixed).astype(np.int64)
    implicit_euler_steps(state.q, state.v, state.a1, state.tan, state.mref, model.mass, model.fext, fixed, model.ks,
                         model.lbar, model.kbend, model.wbar, model.ktwist, model.mbar, model.lvor, 0, np.zeros((0, 2)),
                         0, 0, H, 1.0, 1.0, 60, 1, 0.0, 12, stats)
    q = state.q.copy()
    n, ne = q.size, a.nv - 1
    tan, elen, a1w, mrefw = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    g, band = np.zeros(n), np.zeros((n, BANDWIDTH + 1))
    m1, m2, R = np.empty((ne, 3)), np.empty((ne, 3)), np.empty(_WS_E + 1)
    qt = q + 1e-4 * np.sin(np.arange(n))  # a trial point away from the base frames' tangents
    m = model
    rows = []
    rows.append(("update_frames", _cpu_us(lambda k: _loop_frames(k, qt, state.tan, state.a1, state.mref, tan, elen,
                                                                   a1w, mrefw), a.k, a.reps)))
    asm = lambda want: (lambda k: _loop_assemble(k, want, qt, tan, elen, a1w, mrefw, m.ks, m.lbar, m.kbend, m.wbar,  # noqa: E731
                                                 m.ktwist, m.mbar, m.lvor, g, band, m1, m2, R))
    rows.append(("assemble (want=2)", _cpu_us(asm(2), a.k, a.reps)))
    rows.append(("assemble, no energy (want=3)", _cpu_us(asm(WANT_DERIVATIVES), a.k, a.reps)))
    rows.append(("gradient (want=1)", _cpu_us(asm(1), a.k, a.reps)))
    rows.append(("energy (want=0)", _cpu_us(asm(0), a.k, a.reps)))
    qhat = q + H * state.v
    rows.append(("inertia + hold + gmax", _cpu_us(lambda k: _loop_linear(k, qt, qhat, q, m.mass, m.fext, fixed, g,
                                                                           band), a.k, a.reps)))
    g[:] = 0.0
    band[:] = 0.0
    der_elastic_ws(qt, tan, elen, a1w, mrefw, m.ks, m.lbar, m.kbend, m.wbar, m.ktwist, m.mbar, m.lvor, False, 2, g, band,
                   m1, m2, R)
    _loop_linear(1, qt, qhat, q, m.mass, m.fext, fixed, g, band)
    band0 = band.copy()
    bw, D, dq = np.empty_like(band), np.empty(n), np.empty(n)
    copy_us = _cpu_us(lambda k: _loop_copy(k, band0, bw), a.k, a.reps)
    rows.append(("factor", _cpu_us(lambda k: _loop_factor(k, band0, bw, D), a.k, a.reps) - copy_us))
    rows.append(("solve", _cpu_us(lambda k: _loop_solve(k, bw, D, g, dq), a.k, a.reps)))
    rows.append(("(of these: sin, cos, atan2 calls)", _cpu_us(lambda k: _loop_trig(k, qt, state.mref), a.k, a.reps)))
    step = ("update_frames", "assemble (want=2)" if a.line_search else "assemble, no energy (want=3)",
            "inertia + hold + gmax", "factor", "solve")
    rows.append(("sum of a step's pieces", sum(t for name, t in rows if name in step)))
    rows.append(("batch step, 1 rod", _batch_step_us(model, state, 1, 2000, a.reps, a.line_search)))
    rows.append(("batch step, 1000 rods (per rod)", _batch_step_us(model, state, 1000, 16, a.reps, a.line_search)))
    total = rows[-1][1]
    print(f"{'piece':34s} {'CPU us':>8s} {'share':>6s}   (nv = {a.nv}, n = {n} unknowns)")
    for name, t in rows:
        print(f"{name:34s} {t:8.2f} {100 * t / total:5.0f}%")


if __name__ == "__main__":
    main()
