"""Scenes of the compact inextensible Cosserat rod (Zhao et al.): ``helix-gravity`` (Fig. 6) and
``drag-root`` (Fig. 11). The cantilever with ``method=compact`` lives in rodlab.compact.cantilever."""
from __future__ import annotations

import math

import numpy as np

from .registry import Param, SceneResult, register

PRECONDS = ("none", "diagonal", "block-diagonal", "hybrid", "direct")


def helix_points(n_segments: int, turns: float, helix_radius: float, pitch: float) -> np.ndarray:
    """A helix about the z axis, hanging down from its top vertex at the origin: n_segments + 1
    points equally spaced in angle (so every segment has the same length)."""
    phi = np.linspace(0.0, 2 * math.pi * turns, n_segments + 1)
    pts = np.stack([helix_radius * (np.cos(phi) - 1.0), helix_radius * np.sin(phi), -pitch * phi / (2 * math.pi)], axis=1)
    return pts


def build_helix(params):
    from ..compact.sqp import CompactModel, CompactSolver, CompactState, SolverOptions

    pts = helix_points(params["n"], params["turns"], params["helix_radius"], params["pitch"])
    md = CompactModel.from_polyline(pts, E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"])
    fixed = np.zeros((md.n, 3), dtype=bool)
    fixed[0] = fixed[1] = True  # top clamped: root position and the first segment's frame
    opts = SolverOptions(precond=params["precond"], max_newton=params["max_newton"])
    solver = CompactSolver(md, opts, fixed=fixed, gravity=(0.0, 0.0, -params["g"]), damping=params["damping"])
    return md, solver, CompactState.at_rest(md)


HELIX_PARAMS = [
    Param("n", 200, "number of segments", low=3, high=20000),
    Param("turns", 3.0, "number of helix turns", low=0.0, low_open=True),
    Param("helix_radius", 0.1, "helix (coil) radius [m]", low=0.0, low_open=True),
    Param("pitch", 0.05, "rise per turn [m]", low=0.0),
    Param("radius", 0.005, "rod cross-section radius [m]", low=0.0, low_open=True),
    Param("E", 1e9, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e9 / 3, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 1000.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("g", 9.81, "gravity along -z [m/s^2]", low=0.0),
    Param("damping", 0.0, "viscous damping rate [1/s]", low=0.0),
    Param("dt", 0.01, "time step [s]", low=0.0, low_open=True),
    Param("t_end", 1.0, "simulated time [s]", low=0.0),
    Param("max_newton", 5, "Newton iterations per step at most (Sec. 4: 5)", low=1, high=1000),
    Param("precond", "hybrid", "PCG preconditioner", choices=PRECONDS),
]


@register("helix-gravity", "compact Cosserat: a helix clamped at its top falls under gravity (Zhao et al. Fig. 6)",
          HELIX_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_helix(params, progress):
    from ..compact.simulate import simulate

    md, solver, state = build_helix(params)
    n_steps = max(1, int(round(params["t_end"] / params["dt"])))
    metrics, traj = simulate(solver, state, params["dt"], n_steps, progress=progress)
    metrics.update(n_vertices=md.n, tip_z=float(state.p[-1, 2]), length=float(md.lengths.sum()))
    return SceneResult(metrics, traj)


DRAG_PARAMS = [
    Param("n", 200, "number of segments", low=2, high=20000),
    Param("length", 1.0, "rod length [m]", low=0.0, low_open=True),
    Param("radius", 0.03, "cross-section radius [m]", low=0.0, low_open=True),
    Param("E", 1e6, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e6, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 1.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("g", 9.81, "gravity along -z [m/s^2]", low=0.0),
    Param("dt", 0.25, "time step [s]", low=0.0, low_open=True),
    Param("t_end", 10.0, "simulated time [s]", low=0.0),
    Param("amplitude", 0.5, "phi: amplitude of the root motion [m]", low=0.0),
    Param("frequency", 1.0, "f: frequency of the root motion [Hz]", low=0.0),
    Param("max_newton", 5, "Newton iterations per step at most", low=1, high=1000),
    Param("precond", "hybrid", "PCG preconditioner", choices=PRECONDS),
]


@register("drag-root", "compact Cosserat: a hanging rod whose top two vertices move as phi sin(2 pi f t) (Zhao et al. Fig. 11)",
          DRAG_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_drag_root(params, progress):
    from ..compact.simulate import simulate
    from ..compact.sqp import CompactModel, CompactSolver, CompactState, SolverOptions

    n = params["n"] + 1
    z = -np.linspace(0.0, params["length"], n)
    pts = np.stack([np.zeros(n), np.zeros(n), z], axis=1)
    md = CompactModel.from_polyline(pts, E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"])
    fixed = np.zeros((n, 3), dtype=bool)
    fixed[0] = fixed[1] = True  # the top two vertices: root position prescribed, first segment's frame held
    amp, f = params["amplitude"], params["frequency"]
    root0 = md.rest_p[0].copy()

    def root_motion(t):
        return root0 + np.array([amp * math.sin(2 * math.pi * f * t), 0.0, 0.0])

    opts = SolverOptions(precond=params["precond"], max_newton=params["max_newton"])
    solver = CompactSolver(md, opts, fixed=fixed, gravity=(0.0, 0.0, -params["g"]), root_motion=root_motion)
    state = CompactState.at_rest(md)
    n_steps = max(1, int(round(params["t_end"] / params["dt"])))
    metrics, traj = simulate(solver, state, params["dt"], n_steps, progress=progress)
    metrics.update(n_vertices=n, simulated_s=float(state.t), tip_x=float(state.p[-1, 0]), tip_z=float(state.p[-1, 2]),
                   max_speed=float(np.max(np.linalg.norm(state.v, axis=1))))
    return SceneResult(metrics, traj)


DROP_PARAMS = [
    Param("n", 200, "number of segments", low=2, high=5000),
    Param("length", 2.0, "rod length [m]", low=0.0, low_open=True),
    Param("radius", 0.03, "cross-section radius [m]", low=0.0, low_open=True),
    Param("E", 1e6, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e5, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 0.5, "density [kg/m^3]", low=0.0, low_open=True),
    Param("g", 9.81, "gravity along -z [m/s^2]", low=0.0),
    Param("height", 0.3, "initial height of the rod above the cylinders' axes [m]", low=0.0, low_open=True),
    Param("cylinder_radius", 0.1, "radius of the three cylinders [m]", low=0.0, low_open=True),
    Param("spacing", 0.6, "distance between neighbouring cylinder axes [m]", low=0.0, low_open=True),
    Param("dt", 0.01, "time step [s]", low=0.0, low_open=True),
    Param("t_end", 1.0, "simulated time [s]", low=0.0),
    Param("max_newton", 5, "Newton iterations per step at most", low=1, high=1000),
    Param("precond", "hybrid", "PCG preconditioner", choices=PRECONDS),
]


@register("drop-cylinders", "compact Cosserat: a rod dropped on three cylinders, active-set contacts (Zhao et al. Fig. 17)",
          DROP_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_drop_cylinders(params, progress):
    from ..compact.active_set import ConstrainedSolver, Cylinder
    from ..compact.simulate import simulate
    from ..compact.sqp import CompactModel, CompactState, SolverOptions

    n = params["n"] + 1
    L = params["length"]
    x = np.linspace(-L / 2, L / 2, n)
    pts = np.stack([x, np.zeros(n), np.full(n, params["height"])], axis=1)
    md = CompactModel.from_polyline(pts, E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"])
    R, sp = params["cylinder_radius"], params["spacing"]
    cylinders = [Cylinder((cx, 0.0, 0.0), (0.0, 1.0, 0.0), R) for cx in (-sp, 0.0, sp)]
    opts = SolverOptions(precond=params["precond"], max_newton=params["max_newton"])
    solver = ConstrainedSolver(md, opts, obstacles=cylinders, gravity=(0.0, 0.0, -params["g"]))
    state = CompactState.at_rest(md)
    n_steps = max(1, int(round(params["t_end"] / params["dt"])))
    contacts = []
    orig_step = solver.step

    def step(st, dt):
        out = orig_step(st, dt)
        contacts.append(out.active_constraints)
        return out

    solver.step = step
    metrics, traj = simulate(solver, state, params["dt"], n_steps, progress=progress, warmup=False)
    pen = min(float(np.min(c.values(state.p, md.radius)[0])) for c in cylinders)
    metrics.update(n_vertices=n, mean_contacts=float(np.mean(contacts)), max_contacts=int(np.max(contacts)),
                   min_clearance=pen)
    return SceneResult(metrics, traj)
