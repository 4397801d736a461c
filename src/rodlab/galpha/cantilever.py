"""``cantilever`` scene, method=galpha: a straight rod along +x clamped at x = 0, sagging under
gravity along -z.

Discretization: ``n`` nodes at s_j = j L/(n-1); node 0 is the clamp, exactly at x = 0 with d3 =
+x (the discrete clamp coincides with the continuous one). ``static=true`` solves the static
BVP (inertia dropped) by load continuation; otherwise the rod is released from the straight
shape and stepped with viscous damping (force -damping rhoA v) until ``t_end`` (default dt 0.01 s;
rho_inf = 0.5). A floppy rod needs a long ``t_end`` to come to rest: E = 1e6, n = 50 is within
0.8 % of the elastica at t_end = 5 s and 0.1 % at t_end = 60 s (dt = 0.1 s, 600 steps).
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..scenes.registry import SceneError, SceneResult
from .boundary import Boundary
from .model import GAlphaRod
from .solver import GAlphaOptions, GAlphaSolver

# root frame: d3 = +x, d1 = +z, d2 = d3 x d1 = -y... choose d1 = +y, d2 = +z, d3 = +x (right-handed)
ROOT_R = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def build(params) -> tuple[GAlphaRod, GAlphaSolver]:
    n = int(params["n"])
    if n < 3:
        raise SceneError(f"parameter n={n} out of range for method=galpha: expected >= 3 vertices")
    if params.get("damping_scheme", "implicit") != "implicit":
        # the generalized-alpha state carries the last accelerations; scaling the velocities
        # alone would break the consistency of (velocity, acceleration) the scheme relies on
        raise SceneError("damping_scheme=exponential is not available for method=galpha (allowed: implicit)")
    model = GAlphaRod.from_material(n, params["length"], radius=params["radius"], E=params["E"], G=params["G"],
                                    rho=params["rho"], gravity=(0.0, 0.0, -params["g"]), damping=params["damping"],
                                    root_R=ROOT_R)
    return model, GAlphaSolver(model, Boundary(), GAlphaOptions())


def run_cantilever(params, progress) -> SceneResult:
    model, solver = build(params)
    inext = lambda r: float(np.sum(np.linalg.norm(np.diff(r, axis=0), axis=1)) / model.length - 1.0)
    if params["static"]:
        t0 = time.perf_counter()
        state, res = solver.solve_static()
        wall = time.perf_counter() - t0
        if not res.success:
            raise RuntimeError(f"galpha static cantilever failed: {res.message}")
        traj = {"t": np.array([0.0]), "x": state.r[None].copy()}
        metrics = {"steps": 0, "us_per_step": wall * 1e6, "newton_iters": float(res.iterations), "residual": res.residual}
        r = state.r
    else:
        dt = params["dt"] if params["dt"] > 0 else 1e-2
        n_steps = max(1, int(math.ceil(params["t_end"] / dt - 1e-9)))
        state = solver.initial_state()
        # warm up the compiled kernels outside the timing
        GAlphaSolver(GAlphaRod.from_material(4, 1.0, radius=0.01, E=1e7, G=1e7, rho=1e3), None).simulate(
            GAlphaSolver(GAlphaRod.from_material(4, 1.0, radius=0.01, E=1e7, G=1e7, rho=1e3)).initial_state(), 1e-3, 2)
        solver.solve_time = 0.0
        cpu0 = time.process_time()
        traj = solver.simulate(state, dt, n_steps, record_every=max(1, n_steps // 100), progress=progress, robust=True)
        cpu_stepping = time.process_time() - cpu0
        r = state.r
        metrics = {"steps": n_steps, "us_per_step": solver.solve_time / n_steps * 1e6,
                   "ms_per_step": solver.solve_time / n_steps * 1e3,
                   "newton_iters": solver.total_iterations / max(1, solver.total_steps),
                   "residual": float(np.max(traj["residual"])), "dt": dt, "substeps": solver.substeps,
                   "kinetic_energy_end": float(traj["kinetic"][-1]), "cpu_s_stepping": cpu_stepping,
                   "position_drift": float(np.max(np.linalg.norm(state.r_vel - state.r, axis=1)))}
    metrics.update({"tip_x": float(r[-1, 0]), "tip_y": float(r[-1, 1]), "tip_z": float(r[-1, 2]),
                    "inextensibility": inext(r)})
    return SceneResult(metrics=metrics, trajectory=traj)
