"""Scenes built on the one World + simulator protocol (issue #13): many rods at once.

hairstyle: ``strands`` strands of ``vertices`` vertices rooted on a head-like sphere, under gravity
and a gusty wind, stepped by any method in one call per frame.
"""
from __future__ import annotations

import math

import numpy as np

from .. import metrics
from ..experiment import record
from ..solvers import METHODS, make_simulator
from ..world import WorldBuilder
from ..world.hairstyle import add_hairstyle
from .registry import Param, SceneResult, register

MAX_VERTEX_FRAMES = 4_000_000
"""Frames kept for the trajectory are capped so that frames x vertices stays below this
(10000 strands x 32 vertices keep 12 frames, about 100 MB)."""


def gusty_wind(speed: float, period: float):
    """Wind along +x of mean ``speed`` [m/s] gusting by +-50 % with ``period`` [s], uniform in space."""

    def velocity(x, t):
        u = np.zeros_like(x)
        u[:, 0] = speed * (1.0 + 0.5 * math.sin(2.0 * math.pi * t / period))
        return u

    return velocity


@register("hairstyle", "N strands of V vertices on a head under gravity and gusty wind (any method, batched)", [
    Param("strands", 100, "number of strands", low=1, high=100000),
    Param("vertices", 32, "vertices per strand", low=4, high=1000),
    Param("method", "der-implicit", "simulator", choices=tuple(METHODS)),
    Param("t_end", 0.5, "simulated time [s]", low=0.0),
    Param("dt", 0.0, "time step [s]; 0 picks the method's default", low=0.0),
    Param("newton_iters", 0, "Newton iterations per step (der-implicit, compact); 0 = the method's default", low=0, high=100),
    Param("length", 0.25, "strand length [m] (+-10 % per strand)", low=0.0, low_open=True),
    Param("style", "wavy", "strand shape", choices=("straight", "wavy", "curly")),
    Param("wind", 1.0, "mean wind speed along +x [m/s], gusting +-50 %", low=0.0),
    Param("gust_period", 0.5, "gust period [s]", low=0.0, low_open=True),
    Param("drag", 2e-5, "linear air drag per unit length [N s/m^2]", low=0.0),
    Param("damping", 0.5, "viscous damping rate [1/s]", low=0.0),
    Param("frames", 50, "frames kept (capped so frames x vertices <= 4e6)", low=2, high=10000),
    Param("projection", "fast", "method der: fast (Goldenthal fast projection) or symplectic (RATTLE)", choices=("fast", "symplectic")),
    Param("integrator", "backward-euler", "methods der-implicit, compact: backward-euler (first order) or bdf2 "
          "(second order)", choices=("backward-euler", "bdf2")),
    Param("seed", 0, "random seed of the strands' lengths and phases", low=0),
])
def run_hairstyle(params, progress) -> SceneResult:
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=params["damping"])
    add_hairstyle(b, strands=params["strands"], vertices=params["vertices"], length=params["length"],
                  style=params["style"], seed=params["seed"])
    if params["wind"] > 0 and params["drag"] > 0:
        b.set_wind(gusty_wind(params["wind"], params["gust_period"]), params["drag"])
    world = b.build()
    options = {}
    if params["dt"] > 0:
        options["dt"] = params["dt"]
    if params["newton_iters"] > 0:
        options["newton_iters"] = params["newton_iters"]
    if params["method"] == "der":
        options["projection"] = params["projection"]
    if params["method"] in ("der-implicit", "compact"):
        options["integrator"] = params["integrator"]
    sim = make_simulator(world, params["method"], **options)
    state = sim.initial_state()
    nsteps = int(math.ceil(params["t_end"] / sim.dt - 1e-9))
    frames = max(1, min(params["frames"], MAX_VERTEX_FRAMES // world.n_vertices - 1))
    run = record(sim, state, nsteps, frames=frames, progress=progress)
    tips = np.array([state.rod_x(r)[-1] for r in range(world.n_rods)])
    rest_tips = np.array([world.rods[r].rest_positions[-1] for r in range(world.n_rods)])
    m = {"method": params["method"], "n_rods": world.n_rods, "n_vertices": world.n_vertices, "dt": sim.dt,
         **run.summary(world.n_vertices),
         "inextensibility": metrics.inextensibility(world, state),
         "kinetic_energy": metrics.kinetic_energy(world, state),
         "gravity_potential": metrics.gravity_potential(world, state),
         "mean_tip_drop": float(np.mean(rest_tips[:, 2] - tips[:, 2])),
         "mean_tip_shift_x": float(np.mean(tips[:, 0] - rest_tips[:, 0]))}
    traj = {"t": run.t, "x": run.x, "rod_offsets": np.array(world.rod_vertex_start)}
    return SceneResult(m, traj, world=world, state=state)
