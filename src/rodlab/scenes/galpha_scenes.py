"""Scenes of the generalized-alpha Cosserat rod paper (GA paper: the dynamic Cosserat rod as a
two-point boundary value problem, generalized-alpha in time and space, Sec. 5): the seven test
cases, each with 100 segments by default and the paper's dt = 1/30 s and (alpha, beta, gamma) =
(0.3, 0, 0.7) unless the paper names other values. Parameters the paper does not give are chosen
here and listed in docs/galpha.md. SI units.

Every scene is a :class:`rodlab.world.World` stepped by ``make_simulator(world, "galpha", ...)``
through :func:`rodlab.experiment.record`. ``n`` is the number of vertices, which are galpha's
nodes (segments + 1). A rod's rest shape is given to the world as the polyline
:func:`rodlab.solvers.galpha.rest_polyline` makes from the scene's rest Darboux vector and root
frame: galpha reads back exactly that Darboux vector at the interior nodes and that root frame,
while the two end nodes take their neighbours' values (identical for the uniform helices and the
straight rod; the sine and the buckling imperfection differ there by O(ds)). End loads are point
forces and point torques on the last vertex (galpha's ``TipLoad``); end motions are clamps with a
prescribed ``motion(t)`` (galpha's ``RootMotion`` / ``TipMotion``).
"""
from __future__ import annotations

import math

import numpy as np

from .. import metrics
from ..experiment import record
from .registry import Param, SceneResult, register

PAPER = "generalized-alpha-cosserat.txt"

# root frames (columns d1, d2, d3 in world coordinates)
HORIZONTAL = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # d3 = +x, d2 = +z
HANGING = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])  # d3 = -z


def _common(n=101, dt=1 / 30, t_end=2.0, alpha=0.3, beta=0.0, gamma=0.7):
    return [
        Param("n", n, "number of vertices = galpha nodes (segments + 1)", low=4, high=2001),
        Param("dt", dt, "time step [s]", low=0.0, low_open=True),
        Param("t_end", t_end, "simulated time [s]", low=0.0, low_open=True),
        Param("rho_inf", -1.0, "spectral radius at infinity (Chung-Hulbert); -1: use alpha, beta, gamma", low=-1.0, high=1.0),
        Param("alpha", alpha, "generalized-alpha alpha in time (weight of the old step)", low=-1.0, high=1.0, high_open=True),
        Param("beta", beta, "generalized-alpha beta in time", low=0.0, high=1.0, high_open=True),
        Param("gamma", gamma, "generalized-alpha gamma in time", low=0.0, high=1.0, low_open=True),
        Param("frames", 60, "frames kept in the trajectory", low=2, high=10000),
    ]


def _coefficients(p) -> dict:
    """The galpha simulator's time-scheme options from the scene parameters."""
    if p["rho_inf"] >= 0:
        return {"rho_inf": p["rho_inf"]}
    return {"alpha": p["alpha"], "beta": p["beta"], "gamma": p["gamma"]}


def _helix_root(k, tau, axis_world):
    """Root frame for a helix of curvature k, torsion tau (kappa_hat = (0, k, tau)) whose axis
    (the Darboux vector) points along ``axis_world``."""
    a = np.array([0.0, k, tau]) / math.hypot(k, tau)
    L = np.column_stack([[1.0, 0.0, 0.0], a, np.cross([1.0, 0.0, 0.0], a)])
    w = np.asarray(axis_world, float) / np.linalg.norm(axis_world)
    e = np.array([1.0, 0.0, 0.0]) if abs(w[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e = e - w * (e @ w)
    e /= np.linalg.norm(e)
    W = np.column_stack([e, w, np.cross(e, w)])
    return W @ L.T


def _helix_darboux(coil_radius: float, pitch: float) -> tuple[float, float]:
    """Curvature and torsion [1/m] of a helix of ``coil_radius`` [m] rising ``pitch`` [m] per turn."""
    c = pitch / (2 * math.pi)
    return coil_radius / (coil_radius**2 + c * c), c / (coil_radius**2 + c * c)


def _add_rod(b, n, length, kappa_hat, root_R, *, E, G, rho, radius, root_r=(0.0, 0.0, 0.0)) -> tuple[int, np.ndarray]:
    """Add to builder ``b`` the rod of ``n`` vertices and ``length`` [m] whose galpha model has the
    rest Darboux vector ``kappa_hat`` ((3,) or (n, 3), [1/m]) and root frame ``root_R``; returns
    its index and rest vertices (n, 3) [m]."""
    from ..solvers.galpha import rest_polyline

    kh = np.asarray(kappa_hat, dtype=float)
    kh = np.tile(kh, (n, 1)) if kh.shape == (3,) else kh
    points, d1 = rest_polyline(kh, length / (n - 1), root_R, root_r)
    return b.add_rod(points, E=E, G=G, rho=rho, radius=radius, rest_d1=d1), points


def _smooth_step_integral(t: float, ramp: float) -> float:
    """``int_0^t s(tau) dtau`` [s] of the smooth ramp ``s = x^2 (3 - 2x)``, ``x = min(1, tau / ramp)``."""
    if t >= ramp:
        return t - 0.5 * ramp
    x = t / ramp
    return ramp * (x**3 - 0.5 * x**4)


def _step_count(p) -> int:
    return max(1, int(math.ceil(p["t_end"] / p["dt"] - 1e-9)))


class _Phases:
    """galpha simulators one after another over one run, as :func:`rodlab.experiment.record` sees
    them: ``phases`` = [(simulator, steps), ...] (the same rods, e.g. a clamp that moves and then
    lets go: two worlds). Which one steps is read from the state (``state.solver["step"]``, galpha's
    step counter, counted from ``step0``), so nothing is kept outside the state and a checkpointed
    run resumes in the right phase (docs/checkpoints.md). A call that crosses a phase end is split
    there."""

    keeps_nothing_outside_state = True

    def __init__(self, phases, step0: int):
        self.phases = [(sim, int(n)) for sim, n in phases if n > 0]
        self.sim = self.phases[0][0]
        self.method, self.dt, self.step0 = self.sim.method, self.sim.dt, int(step0)

    def phase_of(self, state):
        """(simulator, steps left in its phase) for ``state`` (past the schedule: the last one, unbounded)."""
        done = int(state.solver["step"][0]) - self.step0
        end = 0
        for sim, n in self.phases:
            end += n
            if done < end:
                return sim, end - done
        return self.phases[-1][0], None

    def advance(self, state, nsteps):
        from ..solvers.base import StepReport

        reports = []
        while nsteps > 0:
            sim, left = self.phase_of(state)
            k = nsteps if left is None else min(nsteps, left)
            reports.append(sim.advance(state, k))
            nsteps -= k
        if not reports:
            return StepReport(0)
        return StepReport(sum(r.steps for r in reports), all(r.success for r in reports), reports[-1].message,
                          sum(r.newton_iters for r in reports), sum(r.linear_iters for r in reports), reports[-1].residual,
                          sum(r.wall_s for r in reports))


def _record(schedule, state, every: int, progress) -> dict:
    """Run ``schedule`` = [(simulator, steps), ...] one after the other on ``state`` in one
    :func:`rodlab.experiment.record` loop (:class:`_Phases` where there are several), keeping a
    frame every ``every`` steps of the whole run and at its end (the first-wave driver's frames).
    Per frame: positions, galpha's energies (``Simulator.energies``), node frames, the last step's
    Newton residual and iterations (0 at the start). The loop can be checkpointed; a failure or an
    interruption keeps the frames up to the last good state (``exc.recording``)."""
    total = sum(n for _, n in schedule)
    phases = _Phases(schedule, int(state.solver["step"][0]))
    runner = phases if len(phases.phases) > 1 else phases.sim
    stepped = lambda s: bool(s.solver["step"].any())  # noqa: E731 - no step yet: no residual
    probes = {
        "energies": lambda s: [phases.phase_of(s)[0].energies(s)[k] for k in ("kinetic", "elastic", "gravity")],
        "frames": lambda s: s.solver["R"].copy(),
        "residual": lambda s: float(s.solver["last_residual"].max()) if stepped(s) else 0.0,
        "newton_iters": lambda s: int(s.solver["last_newton_iters"].max()) if stepped(s) else 0,
    }
    run = record(runner, state, total, steps_per_frame=every, probes=probes, progress=progress)
    traj = {"t": run.t, "x": run.x, "edge_m1": run.edge_m1, **run.probes}
    e = np.asarray(traj.pop("energies"))
    traj.update(kinetic=e[:, 0], elastic=e[:, 1], gravitational=e[:, 2], energy=e.sum(axis=1))
    return {"trajectory": traj, "steps": run.steps, "wall_s": run.wall_s, "newton_iters": run.newton_iters}


def _run(p, world, schedule, state, progress, *, extra_metrics=None) -> tuple[SceneResult, object]:
    """Record ``schedule`` from ``state`` and report the scenes' metrics (first-wave keys, plus the
    shared ones of :mod:`rodlab.metrics`)."""
    sim = schedule[0][0]
    n_steps = sum(n for _, n in schedule)
    every = max(1, n_steps // max(1, p["frames"] - 1))
    run = _record(schedule, state, every, progress)
    traj = run["trajectory"]
    co = sim.coefficients
    x, r_vel = state.vertex_x, state.solver["r_vel"]
    tip = metrics.tip(world, state)
    m = {"steps": n_steps, "segments": world.n_vertices - world.n_rods, "dt": sim.dt,
         "newton_iters": metrics.newton_iters_per_step(run["newton_iters"], run["steps"]),
         "residual": float(np.max(traj["residual"])),
         "ms_per_step": 1e-3 * metrics.us_per_step(run["wall_s"], run["steps"]),
         "us_per_step": metrics.us_per_step(run["wall_s"], run["steps"]),
         "us_per_vertex_step": metrics.us_per_vertex_step(run["wall_s"], run["steps"], world.n_vertices),
         "substeps": int(state.solver["substeps"].sum()),
         "energy_start": float(traj["energy"][0]), "energy_end": float(traj["energy"][-1]),
         "kinetic_end": float(traj["kinetic"][-1]),
         "tip_x": float(tip[0]), "tip_y": float(tip[1]), "tip_z": float(tip[2]),
         "position_drift": float(np.max(np.linalg.norm(r_vel - x, axis=1))),
         "inextensibility": metrics.inextensibility(world, state), "n_vertices": world.n_vertices,
         "alpha": co.alpha, "beta": co.beta, "gamma": co.gamma}
    if extra_metrics:
        m.update(extra_metrics(state, traj))
    return SceneResult(metrics=m, trajectory=traj), sim


def _single(p, world, progress, **kw):
    """One simulator over the whole run, from the world's rest state."""
    from ..solvers import make_simulator

    sim = make_simulator(world, "galpha", dt=p["dt"], **_coefficients(p))
    state = sim.initial_state()
    res, _ = _run(p, world, [(sim, _step_count(p))], state, progress, **kw)
    return res, state


# ------------------------------------------------------------------------------------------ 1
@register("galpha-sinus", "sine-shaped rod released from horizontal under gravity, no damping (GA paper, Sec. 5 case 1)",
          _common(t_end=2.0) + [
              Param("length", 0.3, "rod length [m]", low=0.0, low_open=True),
              Param("radius", 0.002, "radius [m]", low=0.0, low_open=True),
              Param("E", 1e7, "Young's modulus [Pa]", low=0.0, low_open=True),
              Param("amplitude", 0.5, "amplitude of the tangent angle [rad]", low=0.0, high=1.5),
              Param("waves", 2.0, "number of sine periods along the rod", low=0.0, high=20.0),
          ], paper=PAPER)
def sinus(p, progress):
    """Rest curvature ``k(s) = A 2 pi w / L cos(2 pi w s / L)`` about d2 (tangent angle ``A sin``)."""
    from ..world import WorldBuilder

    n, L = p["n"], p["length"]
    s = np.linspace(0, L, n)
    k = p["amplitude"] * 2 * math.pi * p["waves"] / L * np.cos(2 * math.pi * p["waves"] * s / L)
    b = WorldBuilder(gravity=(0, 0, -9.81))
    _add_rod(b, n, L, np.column_stack([np.zeros(n), k, np.zeros(n)]), HORIZONTAL, E=p["E"], G=p["E"] / 3, rho=1000.0,
             radius=p["radius"])
    b.clamp(0, "start")
    return _single(p, b.build(), progress)[0]


# ------------------------------------------------------------------------------------------ 2
@register("galpha-helix-load", "damped helix (30 cm) under a time-varying end load (GA paper, Sec. 5 case 2)",
          _common(t_end=3.0, alpha=0.4, beta=0.0, gamma=1.0) + [
              Param("coil_radius", 0.02, "helix radius [m]", low=0.0, low_open=True),
              Param("pitch", 0.03, "helix pitch per turn [m]", low=0.0, low_open=True),
              Param("force", 0.02, "amplitude of the end force [N]", low=0.0),
              Param("frequency", 1.0, "frequency of the end force [Hz]", low=0.0),
          ], paper=PAPER)
def helix_load(p, progress):
    """End force ``F0 (sin(2 pi f t), 0, -(1 - cos(2 pi f t)) / 2)`` on the last vertex."""
    from ..world import WorldBuilder

    k, tau = _helix_darboux(p["coil_radius"], p["pitch"])
    b = WorldBuilder(gravity=(0, 0, -9.81), damping=1.0)
    _add_rod(b, p["n"], 0.3, (0.0, k, tau), _helix_root(k, tau, (0, 0, -1)), E=1e8, G=1e8 / 3, rho=1100.0, radius=0.001)
    b.clamp(0, "start")
    F0, f = p["force"], p["frequency"]
    b.add_point_force(0, -1, lambda t: np.array([F0 * math.sin(2 * math.pi * f * t), 0.0,
                                                 -0.5 * F0 * (1 - math.cos(2 * math.pi * f * t))]))
    return _single(p, b.build(), progress)[0]


# ------------------------------------------------------------------------------------------ 3
@register("galpha-torque", "straight 45 cm rod under a time-varying end torque (GA paper, Sec. 5 case 3)",
          _common(t_end=3.0) + [
              Param("torque", 2e-4, "amplitude of the end torque [N m]", low=0.0),
              Param("frequency", 0.5, "frequency of the torque [Hz]", low=0.0),
          ], paper=PAPER)
def torque(p, progress):
    """End torque ``T0 (1 - cos(2 pi f t)) / 2 (0.6, 0, 0.8)`` (world) on the last vertex: bending
    about the vertical and twisting about the rod axis, ramped smoothly."""
    from ..world import WorldBuilder

    b = WorldBuilder()
    _add_rod(b, p["n"], 0.45, (0.0, 0.0, 0.0), HORIZONTAL, E=1e7, G=1e7 / 3, rho=1000.0, radius=0.002)
    b.clamp(0, "start")
    T0, f = p["torque"], p["frequency"]
    b.add_point_torque(0, -1, lambda t: T0 * 0.5 * (1 - math.cos(2 * math.pi * f * t)) * np.array([0.6, 0.0, 0.8]))
    res, state = _single(p, b.build(), progress)
    res.metrics["twist_tip"] = float(state.solver["x"][-1, 8])
    return res


# ------------------------------------------------------------------------------------------ 4
@register("galpha-spring", "lightly damped steel coil spring pulled along its axis, released after 0.1 s (GA paper, Sec. 5 case 4)",
          _common(dt=5e-4, t_end=0.4, alpha=0.0, beta=0.0, gamma=0.5) + [
              Param("force", 2.0, "axial force before release [N]", low=0.0),
              Param("release", 0.1, "release time [s]", low=0.0),
              Param("turns", 5.0, "number of turns", low=0.5, high=50.0),
          ], paper=PAPER)
def spring(p, progress):
    """A point force ``(0, 0, -F)`` on the last vertex until ``release``, zero afterwards."""
    from ..world import WorldBuilder

    R, pitch = 0.01, 0.004
    k, tau = _helix_darboux(R, pitch)
    L = p["turns"] * 2 * math.pi * math.hypot(R, pitch / (2 * math.pi))
    b = WorldBuilder(damping=2.0)
    _add_rod(b, p["n"], L, (0.0, k, tau), _helix_root(k, tau, (0, 0, -1)), E=2e11, G=8e10, rho=7850.0, radius=0.0005)
    b.clamp(0, "start")
    F, t1 = p["force"], p["release"]
    b.add_point_force(0, -1, lambda t: np.array([0.0, 0.0, -F if t <= t1 else 0.0]))

    def extra(state, traj):
        z = traj["x"][:, -1, 2]
        return {"tip_z_min": float(z.min()),
                "tip_z_max_after_release": float(z[traj["t"] > t1].max()) if np.any(traj["t"] > t1) else float(z[-1])}

    return _single(p, b.build(), progress, extra_metrics=extra)[0]


# ------------------------------------------------------------------------------------------ 5
@register("galpha-buckling", "straight rod, ends pushed together while the root twists about the axis (GA paper, Sec. 5 case 5)",
          _common(dt=1 / 30, t_end=3.0) + [
              Param("speed", 0.05, "approach speed of the tip [m/s]", low=0.0),
              Param("twist_rate", 2.0, "root rotation rate about the axis [rad/s]", low=0.0),
              Param("imperfection", 0.3, "rest-curvature imperfection [1/m] (an inextensible straight rod cannot shorten)", low=0.0),
          ], paper=PAPER)
def buckling(p, progress):
    """Both ends clamped with prescribed motions, ramped in smoothly over 0.5 s: the root turns
    about the rod axis (+x) through vertex 0 at up to ``twist_rate``, the tip translates along -x at
    up to ``speed`` without turning."""
    from ..geometry.rotations import exp_so3
    from ..world import WorldBuilder

    n, L = p["n"], 1.0
    s = np.linspace(0, L, n)
    eps = p["imperfection"]
    kh = np.column_stack([eps * np.sin(math.pi * s / L), eps * np.cos(math.pi * s / L), np.zeros(n)])
    b = WorldBuilder(damping=1.0)
    r, x0 = _add_rod(b, n, L, kh, HORIZONTAL, E=1e6, G=1e6 / 3, rho=1000.0, radius=0.005)
    ramp = 0.5  # [s] smooth start of both motions
    root_offset = x0[0] - 0.5 * (x0[0] + x0[1])  # the clamp turns about its edge's midpoint: shift to vertex 0

    def root_motion(t):
        R = np.asarray(exp_so3(np.array([p["twist_rate"] * _smooth_step_integral(t, ramp), 0.0, 0.0])))
        return R, root_offset - R @ root_offset

    b.clamp(r, "start", motion=root_motion)
    b.clamp(r, "end", motion=lambda t: (np.eye(3), np.array([-p["speed"] * _smooth_step_integral(t, ramp), 0.0, 0.0])))

    def extra(state, traj):
        lateral = np.max(np.linalg.norm(traj["x"][:, :, 1:], axis=2), axis=1)
        x = state.vertex_x
        return {"lateral_max": float(lateral.max()), "end_distance": float(np.linalg.norm(x[-1] - x[0])),
                "axial_force_tip": float(state.solver["x"][-1, 11])}

    return _single(p, b.build(), progress, extra_metrics=extra)[0]


# ------------------------------------------------------------------------------------------ 6/7: hair tress
HAIR = dict(E=3.89e9, G=0.89e9, rho=1300.0, radius=math.sqrt(1.5e-9 / math.pi))  # keratin, A = 1.5e-5 cm^2


def _hair_guide(b, n, length=0.25, coil_radius=0.01, pitch=0.03, motion=None) -> int:
    """A curly keratin guide hanging from a clamped root (helix axis along -z); ``motion``: a
    prescribed motion of a clamp of its last edge (none: free end)."""
    k, tau = _helix_darboux(coil_radius, pitch)
    r, _ = _add_rod(b, n, length, (0.0, k, tau), _helix_root(k, tau, (0, 0, -1)), **HAIR)
    b.clamp(r, "start")
    if motion is not None:
        b.clamp(r, "end", motion=motion)
    return r


def fiber_offsets(count: int, tress_radius: float, seed: int = 0) -> np.ndarray:
    """(count, 2) offsets of the interpolated fibers in the guide's (d1, d2) cross-section plane."""
    rng = np.random.default_rng(seed)
    rad = tress_radius * np.sqrt(rng.random(count))
    ang = 2 * math.pi * rng.random(count)
    return np.column_stack([rad * np.cos(ang), rad * np.sin(ang)])


def interpolate_fibers(r, R, offsets) -> np.ndarray:
    """Fibers carried by the guide: ``r(s) + a d1(s) + b d2(s)``, shape (count, N, 3)."""
    return r[None] + offsets[:, 0, None, None] * R[None, :, :, 0] + offsets[:, 1, None, None] * R[None, :, :, 1]


@register("galpha-tress", "25 cm keratin guide + 180 interpolated fibers: end pulled along the vertical, then released (GA paper, Sec. 5 case 6)",
          _common(t_end=5.0) + [
              Param("speed", 0.02, "extension speed of the end along -z [m/s] (paper: lambda = -2 cm/s)", low=0.0, low_open=True),
              Param("extension", 0.3, "release after this extension, fraction of the bounding-box length", low=0.0, high=2.0),
              Param("fibers", 180, "interpolated fibers", low=0, high=10000),
          ], paper=PAPER)
def tress(p, progress):
    """Two worlds with the same guide, one state handed from the first to the second.

    A world's boundary conditions hold for the whole run and a clamp cannot let go, so the pull
    and the release are two worlds: ``pull``, whose end is clamped with the motion ``(I, -speed t
    e_z)`` (galpha's line constraint, GA paper Sec. 5 item 6: the end moves along the vertical at
    ``speed`` without turning), and ``free``. The guide starts from the static equilibrium of
    ``free`` under gravity; ``pull``'s simulator takes the steps that end at or before
    ``t_release``, ``free``'s the rest, both in one recording loop (:class:`_Phases`: the phase is
    read from galpha's step counter in the state, so the run can be checkpointed). galpha
    prescribes the clamp's velocities, so the pulled end moves from where it hangs (not from the
    clamp's rest pose)."""
    from ..solvers import make_simulator
    from ..world import WorldBuilder

    worlds = {}
    for name, motion in (("free", None), ("pull", lambda t: (np.eye(3), np.array([0.0, 0.0, -p["speed"] * t])))):
        b = WorldBuilder(gravity=(0, 0, -9.81), damping=0.5)
        _hair_guide(b, p["n"], motion=motion)
        worlds[name] = b.build()
    sims = {name: make_simulator(w, "galpha", dt=p["dt"], **_coefficients(p)) for name, w in worlds.items()}
    state = sims["free"].initial_state()
    sims["free"].solve_static(state)  # raises SimulationError if the static start fails
    r0 = state.vertex_x.copy()
    bbox = float(np.ptp(r0[:, 2]))
    t_release = p["extension"] * bbox / p["speed"]
    n_steps = _step_count(p)
    n_pull = min(n_steps, int(math.floor((t_release + 1e-12) / p["dt"])))  # steps ending at or before t_release
    schedule = [(sims["pull"], n_pull), (sims["free"], n_steps - n_pull)]
    res, _ = _run(p, worlds["free"], [s for s in schedule if s[1] > 0], state, progress)
    tz, t = res.trajectory["x"][:, -1, 2], res.trajectory["t"]
    res.metrics.update({"bbox_length": bbox, "t_release": t_release, "fibers": p["fibers"],
                        "tip_drop_max": float(r0[-1, 2] - tz.min()),
                        "tip_rebound": float(tz[t > t_release].max() - tz.min()) if t_release < t[-1] else 0.0})
    offsets = fiber_offsets(p["fibers"], 0.005)
    # fibers at the last frame (any frame: interpolate_fibers(x[f], frames[f], fiber_offsets))
    res.trajectory["fibers_end"] = interpolate_fibers(state.vertex_x, state.solver["R"], offsets).astype(np.float32)
    res.trajectory["fiber_offsets"] = offsets

    def plot(result, out_dir):
        from pathlib import Path
        path = Path(out_dir) / "galpha_tress.png"
        draw_tress(result, path)
        return [path]

    res.plot = plot
    return res


@register("galpha-tress-gravity", "hair guide falling under gravity: kinetic energy for several alpha and gamma (GA paper, Sec. 5 case 7, Fig. 1)",
          _common(n=31, t_end=1.0) + [
              Param("settings", "0.0:0.5,0.2:0.7,0.3:0.7,0.4:1.0", "alpha:gamma pairs (beta = 0)"),
          ], paper=PAPER)
def tress_gravity(p, progress):
    """One world (the guide released from its rest shape under gravity, undamped), one galpha
    simulator per (alpha, gamma) setting, each its own recording loop from the rest shape; the
    scene's other metrics are those of the last setting. With one setting the run is one loop and
    can be checkpointed; with several ``--checkpoint-every`` is refused before the first step."""
    from .registry import SceneError
    from ..solvers import make_simulator
    from ..world import WorldBuilder

    pairs = []
    for item in p["settings"].split(","):
        try:
            a, g = (float(v) for v in item.split(":"))
        except ValueError:
            raise SceneError(f"parameter settings={p['settings']!r}: expected alpha:gamma pairs separated by commas, "
                             f"e.g. 0.0:0.5,0.4:1.0") from None
        pairs.append((a, g))
    if len(pairs) > 1:
        from ..checkpoint import refuse_in_run

        refuse_in_run("galpha-tress-gravity", f"with {len(pairs)} settings: each is its own run from the rest shape; "
                      "checkpoint one setting per command (--set settings=ALPHA:GAMMA)")
    b = WorldBuilder(gravity=(0, 0, -9.81))
    _hair_guide(b, p["n"])
    world = b.build()
    series, extra, res = {}, {}, None
    for i, (a, g) in enumerate(pairs):
        sim = make_simulator(world, "galpha", dt=p["dt"], alpha=a, beta=0.0, gamma=g)
        res, _ = _run(p, world, [(sim, _step_count(p))], sim.initial_state(), progress)
        series[f"kinetic_a{a:g}_g{g:g}"] = res.trajectory["kinetic"]
        extra[f"kinetic_end_a{a:g}_g{g:g}"] = float(res.trajectory["kinetic"][-1])
        extra[f"kinetic_max_a{a:g}_g{g:g}"] = float(res.trajectory["kinetic"].max())
        extra[f"newton_iters_a{a:g}_g{g:g}"] = res.metrics["newton_iters"]
        progress.update(i + 1, len(pairs))
    res.trajectory.update(series)
    res.metrics.update(extra)
    res.metrics["settings"] = p["settings"]

    def plot(result, out_dir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from pathlib import Path
        fig, ax = plt.subplots(figsize=(6, 4))
        t = result.trajectory["t"]
        for key, val in result.trajectory.items():
            if key.startswith("kinetic_a"):
                ax.plot(t, val, label=key.replace("kinetic_", "").replace("_", ", ").replace("a", "alpha=").replace("g", "gamma="))
        ax.set_xlabel("t [s]"); ax.set_ylabel("kinetic energy [J]"); ax.set_yscale("log"); ax.legend()
        ax.set_title("hair guide under gravity, beta = 0")
        path = Path(out_dir) / "galpha_tress_gravity_kinetic.png"
        fig.tight_layout(); fig.savefig(path, dpi=120); plt.close(fig)
        return [path]

    res.plot = plot
    return res


def draw_tress(result, path, n_panels=3):
    """Guide (black) and interpolated fibers at the start, at the release and at the end."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = result.trajectory
    t = tr["t"]
    t_rel = result.metrics.get("t_release", t[-1] / 2)
    picks = [0, int(np.searchsorted(t, t_rel + 1e-9)) - 1, len(t) - 1]
    fig = plt.figure(figsize=(4 * n_panels, 5))
    for k, f in enumerate(picks):
        ax = fig.add_subplot(1, n_panels, k + 1)
        fib = interpolate_fibers(tr["x"][f], tr["frames"][f], tr["fiber_offsets"])
        for c in fib:
            ax.plot(c[:, 0], c[:, 2], color="tab:brown", lw=0.3, alpha=0.5)
        ax.plot(tr["x"][f][:, 0], tr["x"][f][:, 2], "k", lw=1.5)
        ax.set_aspect("equal"); ax.set_title(f"t = {t[f]:.2f} s"); ax.set_xlabel("x [m]"); ax.set_ylabel("z [m]")
    fig.tight_layout(); fig.savefig(path, dpi=110); plt.close(fig)
