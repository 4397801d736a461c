"""Drive a compact-rod solver over time and collect the metrics every compact scene reports
(Zhao et al., Sec. 4.1): inextensibility and alignment violations (worst over all steps), mean
Newton iterations per step, mean PCG iterations per linear solve, time per step, and the kinetic
energy per saved frame. ``ms_per_step`` is wall-clock, ``cpu_ms_per_step`` process CPU time
(the same on an idle machine; lower when other jobs compete for the cores)."""
from __future__ import annotations

import time

import numpy as np

from .sqp import CompactState, alignment_violation, inextensibility_violation, kinetic_energy


def simulate(solver, state: CompactState, dt: float, n_steps: int, *, frames: int = 100, progress=None,
             warmup: bool = True, stop_on_failure: bool = False):
    """Step ``n_steps`` times; returns ``(metrics, trajectory)``.

    ``warmup`` runs one step on a copy first so numba compilation is not timed.
    """
    md = solver.model
    if warmup:
        import copy

        w = copy.copy(solver)
        w.ws = type(solver.ws)(md.n, direct=solver.kind == 4)
        w.step(state.copy(), dt)
    every = max(1, n_steps // max(frames, 1))
    ts, xs, qs, kes = [state.t], [state.p.copy()], [state.q.copy()], [kinetic_energy(md, state)]
    inext = align = 0.0
    newton = pcg = solves = 0
    fails = 0
    message = "ok"
    t_total = 0.0
    cpu_total = 0.0
    steps_done = 0
    for k in range(n_steps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        st = solver.step(state, dt)
        t_total += time.perf_counter() - t0
        cpu_total += time.process_time() - c0
        steps_done += 1
        newton += st.newton_iters
        pcg += st.pcg_iters
        solves += st.solves
        if not st.success:
            fails += 1
            message = st.message
            if stop_on_failure:
                break
        inext = max(inext, abs(inextensibility_violation(state.p, md.lengths)))
        align = max(align, alignment_violation(state.p, state.q))
        if (k + 1) % every == 0 or k == n_steps - 1:
            ts.append(state.t)
            xs.append(state.p.copy())
            qs.append(state.q.copy())
            kes.append(kinetic_energy(md, state))
        if progress is not None:
            progress.update(k + 1, n_steps)
    metrics = {
        "inextensibility": float(inext),
        "alignment": float(align),
        "newton_iters": newton / max(steps_done, 1),
        "pcg_iters": pcg / max(solves, 1),
        "ms_per_step": 1e3 * t_total / max(steps_done, 1),
        "us_per_step": 1e6 * t_total / max(steps_done, 1),
        "cpu_ms_per_step": 1e3 * cpu_total / max(steps_done, 1),
        "steps": steps_done,
        "failed_steps": fails,
        "success": fails == 0 and bool(np.all(np.isfinite(state.p))),
        "message": message,
        "final_kinetic_energy": float(kes[-1]),
    }
    traj = {"t": np.array(ts), "x": np.array(xs), "q": np.array(qs), "kinetic_energy": np.array(kes)}
    return metrics, traj
