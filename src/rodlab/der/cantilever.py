"""DER run of the ``cantilever`` scene (see rodlab.scenes.cantilever).

The clamp: DER clamps an *edge* (two vertices and the material frame). A clamped edge acts
like a continuum clamp at its midpoint (the bending energy of the first joint sees the edge's
direction, held along +x), so edge 0 is centred on x = 0: vertices at ``x_i = (i - 1/2) h``
with ``h = length / (n - 3/2)``, and the free length from x = 0 to the tip is ``length``.
"""
from __future__ import annotations

import time

import numpy as np

from ..model import BoundaryConditions, Clamp, CrossSection, Loads, Material, Rod
from ..scenes.registry import SceneResult
from .static import solve_static
from .stepper import DERStepper, DEROptions, record, suggested_time_step


def cantilever_rod(params) -> Rod:
    n, length = params["n"], params["length"]
    h = length / (n - 1.5)
    x = np.zeros((n, 3))
    x[:, 0] = (np.arange(n) - 0.5) * h
    return Rod.from_material(x, Material(params["E"], params["G"], params["rho"]), CrossSection.circle(params["radius"]),
                             boundary=BoundaryConditions(clamps=(Clamp(0),)))


def run_cantilever(params, progress) -> SceneResult:
    rod = cantilever_rod(params)
    loads = Loads(gravity=(0.0, 0.0, -params["g"]), damping=params["damping"])
    dt = params["dt"] or suggested_time_step(rod)
    stepper = DERStepper(rod, loads, DEROptions(dt=dt, damping_scheme=params.get("damping_scheme", "implicit")))
    state = stepper.initial_state()
    frames_t, frames_x = [0.0], [state.x.copy()]
    metrics = {}
    if params["static"]:
        start = time.perf_counter()
        res = _static_multilevel(params, stepper, state)
        wall = time.perf_counter() - start
        state = res.state
        frames_t.append(0.0)
        frames_x.append(state.x.copy())
        metrics.update(steps=0, us_per_step=0.0, static_iterations=res.iterations, static_load_stages=res.load_stages, static_residual=res.residual,
                       static_success=res.success, static_wall_s=wall)
        progress.update(1, 1)
    else:
        nsteps = int(round(params["t_end"] / dt))
        stepper.advance(state, 1)  # compile outside the timing
        state = stepper.initial_state()
        run = record(stepper, state, nsteps, progress=progress)
        frames_t, frames_x = list(run.t), list(run.x)
        metrics.update(steps=nsteps, us_per_step=1e6 * run.stepper_seconds / max(nsteps, 1), dt=dt,
                       kinetic_energy=stepper.kinetic_energy(state))
    tip = state.x[-1]
    e = np.linalg.norm(np.diff(state.x, axis=0), axis=1)
    metrics.update(tip_x=float(tip[0]), tip_y=float(tip[1]), tip_z=float(tip[2]),
                   inextensibility=float(np.abs(e / rod.rest_lengths - 1).max()))
    return SceneResult(metrics, {"t": np.array(frames_t), "x": np.array(frames_x)})


def _static_multilevel(params, stepper, state):
    """Equilibrium by coarse-to-fine continuation: solve at n/2^k vertices first (load ramped
    in), then interpolate each equilibrium along the arc length as the next level's guess.
    Newton in vertex positions needs many steps to turn a long rod through large angles from
    straight; from an interpolated coarse equilibrium it needs a handful."""
    levels = [params["n"]]
    while levels[-1] > 50:
        levels.append(max(25, levels[-1] // 2))
    guess = None
    res = None
    for n in reversed(levels):
        p = dict(params, n=n)
        rod = cantilever_rod(p)
        st = stepper if n == params["n"] else DERStepper(rod, stepper.loads, stepper.options)
        if guess is None:
            s0 = state if n == params["n"] else st.initial_state()
        else:
            s0 = st.initial_state(x=_resample(guess, params["length"], n))
        res = solve_static(st, s0, load_stages=1 if guess is not None else 4)
        guess = res.state.x
    return res


def _resample(x_coarse: np.ndarray, length: float, n: int) -> np.ndarray:
    """Positions at the fine layout's arc lengths ``(i - 1/2) h`` by cubic interpolation."""
    from scipy.interpolate import CubicSpline

    hc = length / (x_coarse.shape[0] - 1.5)
    sc = (np.arange(x_coarse.shape[0]) - 0.5) * hc
    hf = length / (n - 1.5)
    sf = (np.arange(n) - 0.5) * hf
    x = CubicSpline(sc, x_coarse, axis=0)(sf)
    x[0] = (-0.5 * hf, 0.0, 0.0)
    x[1] = (0.5 * hf, 0.0, 0.0)
    return x
