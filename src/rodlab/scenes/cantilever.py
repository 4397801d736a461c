"""``cantilever``: a straight rod along +x, clamped at the origin, sagging under gravity along -z.

One scene for every method, on the one World + simulator protocol: ``method`` picks the layout
(:func:`rodlab.scenes.cantilever_world.cantilever_world`: DER-style methods centre the clamped edge
on x = 0, galpha puts its root node there) and the simulator (:func:`rodlab.solvers.make_simulator`);
the run goes through :func:`rodlab.experiment.record` (or the simulator's static solve) and the
metrics through :mod:`rodlab.metrics`. The reference is the planar elastica with its clamp at x = 0
(``rodlab.analytic.elastica``).

Method options set here (as the first-wave drivers did): ``der-implicit`` with more than one Newton
iteration stops a step once the free force is ``1e-9`` of the rod's weight (``gtol``); ``compact``
adds the tension stiffness (docs/compact.md: it halves the Newton iterations of this hanging rod
at large steps). ``der`` statics: coarse-to-fine continuation
(:func:`rodlab.scenes.cantilever_world.der_static_multilevel`).

Metrics, one definition for every method (they changed from the first-wave drivers where those
differed, issue #13):

- ``inextensibility``: ``max |l / lbar - 1|`` over every edge at the end (:mod:`rodlab.metrics`);
  before, compact took the largest total-length violation over time, der-implicit and galpha a
  signed total-length violation at the end (der-implicit over the free edges);
- ``newton_iters``: nonlinear iterations per step, averaged (der-implicit reported the total;
  der 0); static runs: the static solve's iterations;
- ``steps = ceil(t_end / dt - 1e-9)`` for every method (der rounded, compact rounded with at least
  one step, galpha at least one step); static runs: ``steps = 0``, ``us_per_step = 0``, the solve's
  time in ``static_wall_s``;
- ``us_per_step``, ``ms_per_step``, ``us_per_vertex_step``: stepping wall time per step, compilation
  excluded; ``cpu_s_stepping``: CPU time of the recording loop;
- ``kinetic_energy``: ``1/2 sum m |v|^2`` of the lumped vertex masses at the end;
- ``success``/``message``: every step converged (compact keeps a step whose SQP stopped on a PCG or
  line-search failure and says so); a non-finite step raises :class:`rodlab.model.SimulationError`.

Per method, as before: der-implicit ``line_search_failures`` and ``us_per_newton_iter``; compact
``alignment`` (largest over the recorded frames) and ``pcg_iters`` (PCG iterations per Newton
iteration: one linear solve each); galpha ``residual`` (largest last-step residual of the recording
calls), ``substeps``, ``kinetic_energy_end`` (galpha's own kinetic energy, rotational part
included) and ``position_drift``; static: ``static_success``, ``static_message``,
``static_iterations``, ``static_residual`` (method's norm), ``static_wall_s``, der's
``static_load_stages``, der-implicit's ``static_grad_norm`` and galpha's ``residual``.

The run is one :func:`rodlab.experiment.record` loop on the simulator itself, with nothing kept
outside the state (der-implicit's line-search failures are a tally of the loop, galpha's substeps
are in ``state.solver``), so ``--checkpoint-every`` and ``rodlab resume`` work (docs/checkpoints.md;
a static solve has no loop and refuses them). Frames: :data:`MAX_FRAMES`, :data:`MIN_STEPS_PER_FRAME`.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .. import metrics
from ..experiment import record, warm_up
from ..solvers import METHODS, make_simulator
from .cantilever_world import cantilever_world, der_static_multilevel
from .registry import Param, SceneResult, UnavailableCombination, register

CANTILEVER_METHODS = tuple(METHODS)
MAX_FRAMES = 100
MIN_STEPS_PER_FRAME = 10
"""Frames kept: up to 100, each at least 10 steps after the last (one ``advance`` call per frame:
a call's fixed cost, tens of microseconds for compact and galpha, is spread over its steps)."""

PARAMS = [
    Param("n", 50, "number of vertices", low=4, high=20000),
    Param("length", 1.0, "free length from the clamp to the tip [m]", low=0.0, low_open=True),
    Param("radius", 0.01, "cross-section radius [m]", low=0.0, low_open=True),
    Param("E", 1e8, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e8 / 3, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 1000.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("g", 9.81, "gravity along -z [m/s^2]", low=0.0),
    Param("dt", 0.0, "time step [s]; 0 picks the method's default", low=0.0),
    Param("t_end", 5.0, "simulated time [s]", low=0.0),
    Param("damping", 2.0, "viscous damping rate [1/s] (force -damping * m * v)", low=0.0),
    Param("damping_scheme", "implicit", "discretisation of the damping (docs/damping.md): implicit (in the step's "
          "solve) or exponential (velocities scaled by exp(-damping dt) after the step); galpha: implicit only",
          choices=("implicit", "exponential")),
    Param("newton_iters", 0, "Newton iterations per step, at most (der-implicit, compact); 0 = the method's default "
          "(der-implicit 1, the sag-free paper's; compact 5, Zhao et al.'s)", low=0, high=1000),
    Param("method", "der", "stepper", choices=CANTILEVER_METHODS),
    Param("projection", "fast", "method der: inextensibility by fast projection (the paper's) or symplectic (RATTLE, "
          "no projection damping); other methods ignore it", choices=("fast", "symplectic")),
    Param("integrator", "backward-euler", "methods der-implicit, compact: time integration, backward-euler (first "
          "order) or bdf2 (second order); other methods ignore it",
          choices=("backward-euler", "bdf2")),
    Param("static", False, "solve for the static equilibrium instead of stepping in time"),
]


def simulator_options(params: dict, world) -> dict:
    """The simulator's keyword options for ``params`` (module docstring)."""
    method = params["method"]
    opts = {"damping_scheme": params["damping_scheme"]}
    if params["dt"] > 0:
        opts["dt"] = float(params["dt"])
    if method == "der-implicit":
        iters = int(params["newton_iters"]) or 1
        opts["newton_iters"] = iters
        opts["integrator"] = params.get("integrator", "backward-euler")
        if iters > 1:
            from ..solvers.der_implicit import rod_model

            model, _ = rod_model(world.rods[0])  # its mass: vertices and edge angles, as before
            opts["gtol"] = 1e-9 * float(model.mass.sum()) * float(params["g"])
    elif method == "der":
        opts["projection"] = params.get("projection", "fast")
    elif method == "compact":
        opts["newton_iters"] = int(params["newton_iters"]) or 5
        opts["tension_stiffness"] = True
        opts["integrator"] = params.get("integrator", "backward-euler")
    return opts


def _tallies(sim) -> dict:
    """Per-call counts the recording loop sums (:func:`rodlab.experiment.record`'s ``tallies``):
    der-implicit's line-search failures of each call (``rodlab.der_implicit.batch.RodBatch``)."""
    if sim.method != "der-implicit":
        return {}
    batch = sim.batch
    return {"line_search_failures": lambda rep: int(batch.rod_line_search_failures.sum())}


def _run_dynamic(params, world, sim, state, progress) -> tuple[dict, dict]:
    method = params["method"]
    nsteps = int(math.ceil(params["t_end"] / sim.dt - 1e-9))
    probes = {"kinetic_energy": lambda s: metrics.kinetic_energy(world, s)}
    if method == "compact":
        from ..compact.sqp import alignment_violation

        probes["alignment"] = lambda s: alignment_violation(s.vertex_x, s.solver["q"])
    warm_up(sim, state)  # compile outside the timing (a step on a copy changes nothing)
    substeps0 = int(state.solver["substeps"].sum()) if method == "galpha" else 0
    cpu0 = time.process_time()
    frames = min(MAX_FRAMES, max(1, nsteps // MIN_STEPS_PER_FRAME))
    run = record(sim, state, nsteps, frames=frames, progress=progress, probes=probes, warmup=False,
                 tallies=_tallies(sim))
    cpu = time.process_time() - cpu0
    m = {"dt": sim.dt, **run.summary(world.n_vertices), "ms_per_step": 1e-3 * metrics.us_per_step(run.wall_s, run.steps),
         "kinetic_energy": metrics.kinetic_energy(world, state), "success": run.failed_calls == 0,
         "message": run.failure_message, "cpu_s_stepping": cpu}
    if method == "der-implicit":
        m["line_search_failures"] = int(run.tallies["line_search_failures"])
        m["us_per_newton_iter"] = 1e6 * run.wall_s / max(run.newton_iters, 1)
    elif method == "compact":
        m["alignment"] = float(run.probes["alignment"].max())
        m["pcg_iters"] = run.linear_iters / max(run.newton_iters, 1)
    elif method == "galpha":
        m["residual"] = run.residual_max
        m["substeps"] = int(state.solver["substeps"].sum()) - substeps0
        m["kinetic_energy_end"] = _galpha_kinetic(sim, state)
        m["position_drift"] = float(np.max(np.linalg.norm(state.solver["r_vel"] - state.vertex_x, axis=1)))
    traj = {"t": run.t, "x": run.x, "kinetic_energy": run.probes["kinetic_energy"]}
    return m, traj


def _galpha_kinetic(sim, state) -> float:
    """galpha's kinetic energy (translational and rotational, :meth:`GAlphaSolver.energy`) [J]."""
    from ..galpha.state import GAlphaState

    w, sv = sim.world, state.solver
    total = 0.0
    for r, sol in enumerate(sim.solvers):
        vs = w.rod_vertices(r)
        gs = GAlphaState(state.t, np.ascontiguousarray(sv["x"][vs]), np.ascontiguousarray(sv["xdot"][vs]),
                         np.ascontiguousarray(sv["R"][vs]), np.ascontiguousarray(state.vertex_x[vs]),
                         np.ascontiguousarray(sv["r_vel"][vs]), int(sv["step"][r]))
        total += float(sol.energy(gs)[0])
    return total


def _run_static(params, world, sim, state, progress) -> tuple[dict, dict]:
    method = params["method"]
    x0 = state.vertex_x.copy()
    t0 = time.perf_counter()
    if method == "der":
        ok, message, iters, residual, stages = der_static_multilevel(params, sim, state)
    else:
        rep = sim.solve_static(state)
        ok, message, iters, residual = rep.success, rep.message, rep.iterations, rep.residual
    wall = time.perf_counter() - t0
    progress.update(1, 1)
    m = {"dt": sim.dt, "steps": 0, "us_per_step": 0.0, "ms_per_step": 0.0, "newton_iters": float(iters), "success": bool(ok), "message": message,
         "static_success": bool(ok), "static_message": message, "static_iterations": int(iters),
         "static_residual": float(residual), "static_wall_s": wall, "kinetic_energy": 0.0}
    if method == "der":
        m["static_load_stages"] = int(stages)
    elif method == "der-implicit":
        m["static_grad_norm"] = float(residual)
    elif method == "compact":
        from ..compact.sqp import alignment_violation

        m["alignment"] = float(alignment_violation(state.vertex_x, state.solver["q"]))
    elif method == "galpha":
        m["residual"] = float(residual)
    return m, {"t": np.array([0.0, 0.0]), "x": np.array([x0, state.vertex_x.copy()])}


def run_cantilever(params: dict, progress) -> SceneResult:
    """Run the scene for resolved ``params`` (every :data:`PARAMS` name)."""
    if params["method"] == "galpha" and params["damping_scheme"] != "implicit":
        # the generalized-alpha state carries the last accelerations; scaling the velocities alone
        # would break the consistency of (velocity, acceleration) the scheme relies on
        raise UnavailableCombination(f"damping_scheme={params['damping_scheme']} is not available for method=galpha (allowed: implicit)")
    if params["static"]:
        from ..checkpoint import refuse_in_run

        refuse_in_run("cantilever", "with static=true: a static solve has no time steps to checkpoint")
    world = cantilever_world(params, params["method"])
    sim = make_simulator(world, params["method"], **simulator_options(params, world))
    state = sim.initial_state()
    run = _run_static if params["static"] else _run_dynamic
    m, traj = run(params, world, sim, state, progress)
    from ..analytic.elastica import cantilever_elastica_tip

    tip = metrics.tip(world, state)
    area = math.pi * params["radius"] ** 2
    section_i = math.pi * params["radius"] ** 4 / 4.0
    ref = cantilever_elastica_tip(params["length"], params["E"] * section_i, params["rho"] * area * params["g"])
    err = math.hypot(tip[0] - ref[0], tip[2] - ref[1])
    m.update(tip_x=float(tip[0]), tip_y=float(tip[1]), tip_z=float(tip[2]),
             inextensibility=metrics.inextensibility(world, state), tip_x_reference=float(ref[0]),
             tip_z_reference=float(ref[1]), tip_error_over_length=float(err / params["length"]),
             method=params["method"], n_vertices=world.n_vertices)
    return SceneResult(m, traj, world=world, state=state)


@register("cantilever", "clamped rod sagging under gravity; tip vs the planar elastica (all methods)", PARAMS)
def run(params, progress):
    return run_cantilever(params, progress)
