"""Scenes of the compact inextensible Cosserat rod (Zhao, Lin, Wang, Bao and Huang, "Efficient and
Stable Simulation of Inextensible Cosserat Rods by a Compact Representation", Computer Graphics
Forum, 2024): ``helix-gravity`` (Fig. 6), ``drag-root`` (Fig. 11) and ``drop-cylinders`` (Fig. 17).

Each scene builds a :class:`rodlab.world.World` (:class:`~rodlab.world.WorldBuilder`), steps it with
``make_simulator(world, "compact")`` through :func:`rodlab.experiment.record` and reports the
shared :mod:`rodlab.metrics` plus the paper's own (Sec. 4.1). ``n`` is the number of vertices
(201 = the paper's 200 segments). Metrics every scene reports:

- ``inextensibility``: :func:`rodlab.metrics.inextensibility` (``max |l / lbar - 1|`` over every
  edge), the worst over the recorded frames (every step unless there are more steps than
  ``frames``). Before the World port it was ``|sum l / sum lbar - 1|``; both are round-off here;
- ``alignment``: ``sum_i |t_i - d3(q_i)|`` (Zhao et al., Sec. 4.1), worst over the frames;
- ``newton_iters`` per step, ``pcg_iters`` per linear solve; ``us_per_step`` / ``ms_per_step``
  (wall time inside ``advance``), ``cpu_ms_per_step`` (process CPU time of the whole recording
  loop, frames and probes included, per step);
- ``steps``, ``failed_steps`` (steps kept after a PCG or line-search failure), ``success``,
  ``message``, ``final_kinetic_energy`` [J]: translational (:func:`rodlab.metrics.kinetic_energy`)
  plus the segments' rotational ``1/2 sum omega^T Jr omega`` (Eq. 30/31), also per frame in the
  trajectory (``kinetic_energy``), with the segment quaternions ``q`` (F, E, 4).

A step that is not finite ends the run with :class:`rodlab.SimulationError` (the simulator's
protocol; before the port it was rejected, counted in ``failed_steps`` and the run went on).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .. import metrics
from ..compact.sqp import alignment_violation
from ..experiment import record, warm_up
from ..solvers import make_simulator
from ..world import WorldBuilder
from ..world.obstacles import Cylinder
from .registry import Param, SceneResult, register

PRECONDS = ("none", "diagonal", "block-diagonal", "hybrid", "direct")
FRAMES = 100
INTEGRATOR_PARAM = Param("integrator", "backward-euler", "time integration (docs/integrators.md): backward-euler "
                         "(Zhao et al.'s, first order) or bdf2 (second order; not with obstacles or rod contact)",
                         choices=("backward-euler", "bdf2"))


def helix_points(n: int, turns: float, helix_radius: float, pitch: float) -> np.ndarray:
    """``n`` vertices of a helix about the z axis, hanging down from its top vertex at the origin,
    equally spaced in angle (so every segment has the same length) [m]."""
    phi = np.linspace(0.0, 2 * math.pi * turns, n)
    return np.stack([helix_radius * (np.cos(phi) - 1.0), helix_radius * np.sin(phi), -pitch * phi / (2 * math.pi)],
                    axis=1)


def _bishop_d1(points: np.ndarray) -> np.ndarray:
    """The rest director m1 per edge that :meth:`CompactModel.from_polyline` picks by default
    (parallel transport from a perpendicular of the first segment), so a world rod's rest frames
    are the first-wave scenes' frames."""
    from ..compact.chain import frames_from_polyline

    q = frames_from_polyline(points)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)], axis=1)


def _add_rod(b: WorldBuilder, points: np.ndarray, params) -> int:
    return b.add_rod(points, E=params["E"], G=params["G"], rho=params["rho"], radius=params["radius"],
                     rest_d1=_bishop_d1(points))


def _options(params) -> dict:
    return {"dt": params["dt"], "precond": params["precond"], "newton_iters": params["max_newton"],
            "integrator": params.get("integrator", "backward-euler")}


def helix_world(params):
    """The helix-gravity world: a helix of ``n`` vertices clamped at its top (root position and
    first segment's frame), gravity ``g`` along -z, viscous ``damping``."""
    b = WorldBuilder(gravity=(0.0, 0.0, -params["g"]), damping=params["damping"])
    r = _add_rod(b, helix_points(params["n"], params["turns"], params["helix_radius"], params["pitch"]), params)
    b.clamp(r, "start")
    return b.build()


def build_helix(params):
    """The helix-gravity rod as a first-wave :class:`rodlab.compact.sqp.CompactSolver` (model,
    solver, state at rest), for the Cartesian baselines and the tests that step one rod's solver
    directly. The scene itself steps :func:`helix_world` through the World simulator."""
    from ..compact.sqp import CompactSolver, CompactState, SolverOptions
    from ..solvers.compact import compact_model_of, dirichlet_mask

    world = helix_world(params)
    md = compact_model_of(world, 0)
    opts = SolverOptions(precond=params["precond"], max_newton=params["max_newton"])
    solver = CompactSolver(md, opts, fixed=dirichlet_mask(world, 0), gravity=world.loads.gravity,
                           damping=world.loads.damping)
    return md, solver, CompactState.at_rest(md)


def _run(world, params, progress, *, frames: int = FRAMES, contacts: bool = False):
    """Step ``world`` to ``t_end`` with the compact simulator; returns (simulator, state, common
    metrics, trajectory)."""
    sim = make_simulator(world, "compact", **_options(params))
    state = sim.initial_state()
    nsteps = max(1, int(round(params["t_end"] / params["dt"])))
    models = sim.models

    def kinetic(st):
        om = st.solver["omega"]
        rot = sum(float(np.sum(md.Jr * om[world.rod_edges(r)] ** 2)) for r, md in enumerate(models))
        return metrics.kinetic_energy(world, st) + 0.5 * rot

    def alignment(st):
        return max(alignment_violation(st.rod_x(r), st.solver["q"][world.rod_edges(r)]) for r in range(world.n_rods))

    call = lambda field: (lambda st: getattr(sim.last_call, field))
    probes = {"inextensibility": lambda st: metrics.inextensibility(world, st), "alignment": alignment,
              "kinetic_energy": kinetic, "q": lambda st: np.array(st.solver["q"]),
              "linear_solves": call("linear_solves"), "stalled": call("stalled_steps")}
    if contacts:
        probes.update(contacts=call("contacts"))
    warm_up(sim, state)
    c0 = time.process_time()
    run = record(sim, state, nsteps, frames=frames, progress=progress, probes=probes, warmup=False)
    cpu = time.process_time() - c0
    pr = run.probes
    summary = run.summary(world.n_vertices)
    solves = int(pr["linear_solves"][1:].sum())  # frame 0's values are the warm-up call's
    failed = int(pr["stalled"][1:].sum())
    m = {
        "inextensibility": float(pr["inextensibility"].max()),
        "alignment": float(pr["alignment"].max()),
        "newton_iters": summary["newton_iters"],
        "pcg_iters": run.linear_iters / max(solves, 1),
        "ms_per_step": 1e-3 * summary["us_per_step"],
        "us_per_step": summary["us_per_step"],
        "cpu_ms_per_step": 1e3 * cpu / max(run.steps, 1),
        "steps": run.steps,
        "failed_steps": failed,
        "success": failed == 0 and state.is_finite(),
        "message": "ok" if failed == 0 else f"{failed} step(s) stopped on a PCG or line-search failure (kept)",
        "final_kinetic_energy": float(pr["kinetic_energy"][-1]),
        "n_vertices": world.n_vertices,
    }
    if contacts:
        m.update(run.contact_summary())
        # separations after the first contact: a frame whose last step ends with no active contact
        # after a frame that had some (exact with one frame per step, as drop-cylinders records)
        touching = pr["contacts"][1:] > 0
        m["bounces"] = int(np.sum(touching[:-1] & ~touching[1:]))
    traj = {"t": run.t, "x": run.x, "q": pr["q"], "kinetic_energy": pr["kinetic_energy"],
            "rod_offsets": np.array(world.rod_vertex_start)}
    return sim, state, m, traj


HELIX_PARAMS = [
    Param("n", 201, "number of vertices", low=4, high=20001),
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
    INTEGRATOR_PARAM,
]


@register("helix-gravity", "compact Cosserat: a helix clamped at its top falls under gravity (Zhao et al. Fig. 6)",
          HELIX_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_helix(params, progress):
    """Metrics: the common ones (module docstring), ``n_vertices``, ``tip_z`` [m], ``length`` [m]."""
    world = helix_world(params)
    sim, state, m, traj = _run(world, params, progress)
    m.update(tip_z=float(metrics.tip(world, state)[2]), length=float(world.edge_rest_length.sum()))
    return SceneResult(m, traj, world=world, state=state)


DRAG_PARAMS = [
    Param("n", 201, "number of vertices", low=3, high=20001),
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
    INTEGRATOR_PARAM,
]


def drag_root_world(params):
    """The drag-root world: a straight rod of ``n`` vertices hanging along -z from the origin, its
    first edge clamped and moved along x by ``amplitude sin(2 pi frequency t)`` (the top two
    vertices move rigidly, the first segment's frame is held)."""
    n, amp, f = params["n"], params["amplitude"], params["frequency"]
    pts = np.stack([np.zeros(n), np.zeros(n), -np.linspace(0.0, params["length"], n)], axis=1)
    eye = np.eye(3)

    def motion(t):
        return eye, np.array([amp * math.sin(2 * math.pi * f * t), 0.0, 0.0])

    b = WorldBuilder(gravity=(0.0, 0.0, -params["g"]))
    r = _add_rod(b, pts, params)
    b.clamp(r, "start", motion=motion)
    return b.build()


@register("drag-root", "compact Cosserat: a hanging rod whose top two vertices move as phi sin(2 pi f t) (Zhao et al. Fig. 11)",
          DRAG_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_drag_root(params, progress):
    """Metrics: the common ones (module docstring), ``n_vertices``, ``simulated_s`` [s], ``tip_x``,
    ``tip_z`` [m], ``max_speed`` (fastest vertex at the end) [m/s]."""
    world = drag_root_world(params)
    sim, state, m, traj = _run(world, params, progress)
    tip = metrics.tip(world, state)
    m.update(simulated_s=float(state.t), tip_x=float(tip[0]), tip_z=float(tip[2]),
             max_speed=float(np.max(np.linalg.norm(state.vertex_v, axis=1))))
    return SceneResult(m, traj, world=world, state=state)


DROP_PARAMS = [
    Param("n", 201, "number of vertices", low=3, high=5001),
    Param("length", 2.0, "rod length [m]", low=0.0, low_open=True),
    Param("radius", 0.03, "cross-section radius [m]", low=0.0, low_open=True),
    Param("E", 1e6, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e5, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 0.5, "density [kg/m^3]", low=0.0, low_open=True),
    Param("g", 9.81, "gravity along -z [m/s^2]", low=0.0),
    Param("height", 0.3, "initial height of the rod above the cylinders' axes [m]", low=0.0, low_open=True),
    Param("cylinder_radius", 0.1, "radius of the three cylinders [m]", low=0.0, low_open=True),
    Param("spacing", 0.6, "distance between neighbouring cylinder axes [m]", low=0.0, low_open=True),
    Param("dt", 0.001, "time step [s] (the rod bounces 3-4 times at 0.001, once at 0.003, and lands dead at 0.01: "
          "backward Euler's damping, docs/contact-compact.md)", low=0.0, low_open=True),
    Param("t_end", 1.0, "simulated time [s]", low=0.0),
    Param("max_newton", 5, "Newton iterations per step at most", low=1, high=1000),
    Param("precond", "hybrid", "PCG preconditioner", choices=PRECONDS),
    INTEGRATOR_PARAM,
]


def drop_cylinders_world(params):
    """The drop-cylinders world: a straight rod of ``n`` vertices along x at ``height`` above three
    parallel cylinders (axes along y through x = -spacing, 0, spacing at z = 0), gravity along -z."""
    n, L = params["n"], params["length"]
    pts = np.stack([np.linspace(-L / 2, L / 2, n), np.zeros(n), np.full(n, params["height"])], axis=1)
    b = WorldBuilder(gravity=(0.0, 0.0, -params["g"]))
    _add_rod(b, pts, params)
    for cx in (-params["spacing"], 0.0, params["spacing"]):
        b.add_obstacle(Cylinder((cx, 0.0, 0.0), (0.0, 1.0, 0.0), params["cylinder_radius"]))
    return b.build()


@register("drop-cylinders", "compact Cosserat: a rod dropped on three cylinders, active-set contacts (Zhao et al. Fig. 17)",
          DROP_PARAMS, paper="compact-inextensible-cosserat-zhao")
def run_drop_cylinders(params, progress):
    """Metrics: the common ones (module docstring), ``n_vertices``, the contact metrics
    (``min_gap`` [m] over every step, ``mean_contacts``, ``max_contacts``:
    :func:`rodlab.metrics.contact_summary`), ``bounces`` (separations after the first contact,
    one frame per step, up to 20000 steps), ``min_clearance`` [m] (smallest distance of a
    vertex to a cylinder surface minus the rod radius at the end: negative = penetration)."""
    world = drop_cylinders_world(params)
    steps = max(1, int(round(params["t_end"] / params["dt"])))
    sim, state, m, traj = _run(world, params, progress, frames=min(steps, 20_000), contacts=True)
    x = state.vertex_x
    m["min_clearance"] = min(float(np.min(ob.distance(x))) for ob in world.obstacles) - params["radius"]
    cyl = [(np.array(ob.point), np.array(ob.axis), float(ob.radius)) for ob in world.obstacles]
    return SceneResult(m, traj, plot=_plot_drop, extra={"cylinders": cyl}, world=world, state=state)


def _plot_drop(result, out_dir):
    """The rod at six times over the three cylinders: 3D view (cylinders as surfaces) and the x-z
    (cylinders as circles) and x-y (as bands) projections."""
    from pathlib import Path

    from ..viz.plots import _set_equal_3d, figure_module

    plt = figure_module()
    x, t = np.asarray(result.trajectory["x"]), np.asarray(result.trajectory["t"])
    idx = np.unique(np.linspace(0, len(x) - 1, min(6, len(x))).round().astype(int))
    fig = plt.figure(figsize=(13, 4.5))
    ax3 = fig.add_subplot(1, 3, 1, projection="3d")
    views = [(fig.add_subplot(1, 3, 2), 0, 2), (fig.add_subplot(1, 3, 3), 0, 1)]
    pts = [x[idx].reshape(-1, 3)]
    lo, hi = x.reshape(-1, 3).min(axis=0), x.reshape(-1, 3).max(axis=0)
    span = max(float(np.max(hi - lo)), 1e-9)
    u = np.linspace(0.0, 2 * math.pi, 48)
    for c, a, R in result.extra["cylinders"]:
        e1 = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(a, e1)
        mid = c + a * float(a @ (0.5 * (lo + hi) - c))  # the axis point nearest the rod's middle
        s = np.linspace(-0.3 * span, 0.3 * span, 2)
        ring = R * (np.cos(u)[:, None] * e1 + np.sin(u)[:, None] * e2)
        surf = mid + s[:, None, None] * a + ring[None, :, :]
        ax3.plot_surface(surf[..., 0], surf[..., 1], surf[..., 2], color="0.6", alpha=0.35, linewidth=0)
        pts.append(surf.reshape(-1, 3))
        for ax, i, j in views:
            if abs(a[3 - i - j]) > 1 - 1e-9:  # axis out of the view plane: a circle
                ax.add_patch(plt.Circle((mid[i], mid[j]), R, color="0.6", alpha=0.5))
            else:  # a band of half-width R about the projected axis
                ends = mid + np.outer(s, a)
                d = np.array([-a[j], a[i]])
                d = d / max(np.linalg.norm(d), 1e-300) * R
                band = np.array([ends[0, [i, j]] + d, ends[1, [i, j]] + d, ends[1, [i, j]] - d, ends[0, [i, j]] - d])
                ax.fill(band[:, 0], band[:, 1], color="0.6", alpha=0.5)
    for rank, k in enumerate(idx):
        alpha = 0.25 + 0.75 * (rank + 1) / len(idx)
        ax3.plot(x[k, :, 0], x[k, :, 1], x[k, :, 2], alpha=alpha, label=f"t = {t[k]:.3g} s")
        for ax, i, j in views:
            ax.plot(x[k, :, i], x[k, :, j], alpha=alpha)
    _set_equal_3d(ax3, np.vstack(pts))
    ax3.set_xlabel("x [m]")
    ax3.set_ylabel("y [m]")
    ax3.set_zlabel("z [m]")
    ax3.legend(fontsize=7, loc="upper left")
    for ax, i, j in views:
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        ax.set_xlabel(f"{'xyz'[i]} [m]")
        ax.set_ylabel(f"{'xyz'[j]} [m]")
        ax.grid(alpha=0.3)
    fig.suptitle("drop-cylinders: rod over three cylinders (Zhao et al. Fig. 17)")
    fig.tight_layout()
    path = Path(out_dir) / "frames.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
