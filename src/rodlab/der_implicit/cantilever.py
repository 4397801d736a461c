"""``cantilever`` with ``method=der-implicit``: implicit DER on interleaved DOFs.

Discrete clamp: the rod has ``n`` vertices and ``n - 1`` edges of equal length ``h = L/(n - 1.5)``.
The clamped (root) edge is centred on the clamp, ``x_0 = (-h/2, 0, 0)``, ``x_1 = (h/2, 0, 0)``,
and held with its material frame (``x_0, x_1, theta_0`` fixed); the free vertices run to
``x_{n-1} = (L, 0, 0)``. In DER the tangent of an edge lives at its midpoint and the bending of
vertex ``i`` spans the Voronoi cell between the adjacent edge midpoints, so holding edge 0 holds
the tangent at its midpoint ``x = 0``: the deformable rod is ``[0, L]``, a clamp at ``x = 0``
(a clamp at ``x_1`` with free length ``L`` would clamp at ``-h/2`` and leave an O(h) error in the
tip). Gravity acts on the Voronoi masses of the free vertices; the clamp supports ``x_0, x_1``.
Checked against the elastica at n = 50 and n = 200 in tests/test_der_implicit_cantilever.py.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..scenes.registry import SceneResult
from .energies import unpack_dofs
from .stepper import DERImplicitStepper, build_rod, solve_static

DEFAULT_DT = 1.0 / 240.0


def cantilever_model(n: int, length: float, radius: float, E: float, G: float, rho: float, g: float, damping: float):
    if n < 4:
        raise ValueError(f"n must be >= 4 vertices (got {n})")
    dx = length / (n - 1.5)
    x = np.zeros((n, 3))
    x[:, 0] = -0.5 * dx + dx * np.arange(n)
    x[-1, 0] = length
    return build_rod(x, radius=radius, E=E, G=G, rho=rho, gravity=(0.0, 0.0, -g), damping=damping, u0=np.array([0.0, 0.0, 1.0]))


def run_cantilever(params: dict, progress) -> SceneResult:
    n = int(params["n"])
    L = float(params["length"])
    model, state = cantilever_model(n, L, params["radius"], params["E"], params["G"], params["rho"], params["g"], params["damping"])
    lbar_total = float(model.lbar[1:].sum())
    metrics: dict = {}
    if params.get("static", False):
        t0 = time.perf_counter()
        res = solve_static(model, state)
        wall = time.perf_counter() - t0
        # second (compiled) solve for the timing
        model2, state2 = cantilever_model(n, L, params["radius"], params["E"], params["G"], params["rho"], params["g"], params["damping"])
        t0 = time.perf_counter()
        solve_static(model2, state2)
        wall = time.perf_counter() - t0
        steps = res.newton_iters
        us = 1e6 * wall / max(steps, 1)
        metrics.update(static_success=res.success, newton_iters=res.newton_iters, static_grad_norm=res.grad_norm)
        xs = [unpack_dofs(state.q)[0]]
        ts = [0.0]
    else:
        h = float(params["dt"]) if params["dt"] > 0 else DEFAULT_DT
        t_end = float(params["t_end"])
        nsteps = int(math.ceil(t_end / h - 1e-9))
        newton_iters = int(params.get("newton_iters", 0)) or 1
        # more than one iteration: stop once the free force is at round-off of the rod's weight
        gtol = 1e-9 * float(model.mass.sum()) * float(params["g"]) if newton_iters > 1 else 0.0
        stepper = DERImplicitStepper(model, h=h, newton_iters=newton_iters, gtol=gtol,
                                     damping_scheme=params.get("damping_scheme", "implicit"))
        warm = state.copy()
        stepper.advance(warm, 1)  # compile outside the timing
        nframes = min(100, max(nsteps, 1))
        per = max(nsteps // nframes, 1)
        xs = [unpack_dofs(state.q)[0]]
        ts = [0.0]
        done = 0
        wall = 0.0
        iters = 0
        lsf = 0
        cpu0 = time.process_time()
        while done < nsteps:
            k = min(per, nsteps - done)
            st = stepper.advance(state, k)
            wall += st.wall_s
            iters += st.newton_iters
            lsf += st.line_search_failures
            done += k
            xs.append(unpack_dofs(state.q)[0])
            ts.append(state.t)
            progress.update(done, nsteps)
            if not st.success:
                raise FloatingPointError(f"der-implicit cantilever: {st.message} at t = {state.t:.4g} s")
        steps = nsteps
        us = 1e6 * wall / max(steps, 1)
        metrics.update(newton_iters=iters, line_search_failures=lsf, dt=h, cpu_s_stepping=time.process_time() - cpu0,
                       us_per_newton_iter=1e6 * wall / max(iters, 1))
    x = unpack_dofs(state.q)[0]
    tip = x[-1]
    e = np.linalg.norm(np.diff(x[1:], axis=0), axis=1)
    metrics.update(tip_x=float(tip[0]), tip_y=float(tip[1]), tip_z=float(tip[2]),
                   inextensibility=float(e.sum() / lbar_total - 1.0), steps=int(steps), us_per_step=float(us))
    traj = {"t": np.asarray(ts), "x": np.asarray(xs)}
    return SceneResult(metrics, traj)
