"""``cantilever`` scene, ``method=compact`` (Zhao et al. stepper).

Discrete clamp: segment 0 is the clamp. It is held fixed (root position and frame: Dirichlet
conditions on ``p_c`` and ``w_0``) and straddles the clamp point, from ``x = -l/2`` to ``x = +l/2``,
with ``l = length / (n - 1.5)``. The first hinge (vertex 1, ``x = l/2``) has Voronoi length ``l``,
so the bending energy integrates curvature over ``[0, length]`` exactly like the continuum rod
clamped at ``x = 0``; the tip vertex ``n-1`` lies at ``x = length`` and the free mass is
``rho A length``. Gravity acts along -z.
"""
from __future__ import annotations

import time

import numpy as np

from ..scenes.registry import SceneResult
from .sqp import (CompactModel, CompactSolver, CompactState, SolverOptions, alignment_violation,
                  inextensibility_violation, kinetic_energy)


def build_cantilever(params):
    n = int(params["n"])
    L = float(params["length"])
    l = L / (n - 1.5)
    x = -0.5 * l + l * np.arange(n)
    pts = np.stack([x, np.zeros(n), np.zeros(n)], axis=1)
    md = CompactModel.from_polyline(pts, E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"],
                                    d1=np.tile([0.0, 1.0, 0.0], (n - 1, 1)))
    fixed = np.zeros((n, 3), dtype=bool)
    fixed[0] = True
    fixed[1] = True
    return md, fixed


def run_cantilever(params, progress) -> SceneResult:
    md, fixed = build_cantilever(params)
    static = bool(params.get("static", False))
    g = float(params["g"])
    damping = float(params["damping"])
    dt = float(params["dt"]) or 0.01
    t_end = float(params["t_end"])
    precond = params.get("precond", "hybrid")
    if static:
        opts = SolverOptions(precond=precond, max_newton=300, tension_stiffness=True, recenter_every_iteration=True, pcg_rtol=1e-10, pcg_atol=0.0,
                             tol=1e-9 * max(1e-6, float(md.masses.sum()) * g * md.lengths.sum()))
    else:
        # the tension stiffness (our addition, docs/compact.md) halves the Newton iterations of this
        # hanging rod at large steps; the paper's own scenes (scenes/compact_scenes.py) keep it off
        opts = SolverOptions(precond=precond, max_newton=int(params.get("newton_iters", 0)) or 5, tension_stiffness=True)
    def make_solver():
        return CompactSolver(md, opts, fixed=fixed, gravity=(0.0, 0.0, -g), damping=damping,
                             damping_scheme=params.get("damping_scheme", "implicit"))

    solver = make_solver()
    state = CompactState.at_rest(md)
    ts, xs, kes = [0.0], [state.p.copy()], [0.0]
    newton, pcg, solves, steps = 0, 0, 0, 0
    inext, align = 0.0, 0.0
    t_step = 0.0
    # compile outside the timing
    warm = state.copy()
    make_solver().step(warm, dt, static=static)
    if static:
        t0 = time.perf_counter()
        st = solver.step(state, dt, static=True)
        t_step = time.perf_counter() - t0
        steps, newton, pcg, solves = 1, st.newton_iters, st.pcg_iters, st.solves
        ts.append(0.0)
        xs.append(state.p.copy())
        kes.append(0.0)
        success, message = st.success and st.message == "converged", st.message
        inext = abs(inextensibility_violation(state.p, md.lengths))
        align = alignment_violation(state.p, state.q)
    else:
        nsteps = max(1, int(round(t_end / dt)))
        every = max(1, nsteps // 100)
        success, message = True, "ok"
        cpu0 = time.process_time()
        for k in range(nsteps):
            t0 = time.perf_counter()
            st = solver.step(state, dt)
            t_step += time.perf_counter() - t0
            steps += 1
            newton += st.newton_iters
            pcg += st.pcg_iters
            solves += st.solves
            if not st.success:
                success, message = False, st.message
            inext = max(inext, abs(inextensibility_violation(state.p, md.lengths)))
            align = max(align, alignment_violation(state.p, state.q))
            if (k + 1) % every == 0 or k == nsteps - 1:
                ts.append(state.t)
                xs.append(state.p.copy())
                kes.append(kinetic_energy(md, state))
                progress.update(k + 1, nsteps)
        cpu_stepping = time.process_time() - cpu0
    tip = state.p[-1]
    metrics = {
        "tip_x": float(tip[0]), "tip_y": float(tip[1]), "tip_z": float(tip[2]),
        "inextensibility": float(inext), "alignment": float(align), "steps": steps,
        "us_per_step": 1e6 * t_step / max(steps, 1), "ms_per_step": 1e3 * t_step / max(steps, 1),
        "newton_iters": newton / max(steps, 1), "pcg_iters": pcg / max(solves, 1),
        "success": bool(success), "message": message, "dt": dt,
    }
    if not static:
        metrics["cpu_s_stepping"] = cpu_stepping  # CPU time of the stepping loop (with its bookkeeping)
    traj = {"t": np.array(ts), "x": np.array(xs), "kinetic_energy": np.array(kes)}
    return SceneResult(metrics, traj)
