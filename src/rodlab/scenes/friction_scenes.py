"""Friction scenes of issue "Contact and friction" on der-implicit's barrier contact (IPC); the
incline also on compact's active-set contact with stick rows and lagged kinetic friction (``method``).

incline: a short rod lying on a plane tilted by ``angle`` with Coulomb ``mu``; its acceleration
down the slope against ``g (sin(angle) - mu cos(angle))`` (0 when ``tan(angle) <= mu``).

capstan: a string-like rod wrapped by ``wrap`` over a fixed cylinder with ``mu``, a load ``W`` on one
end and a force on the other that grows slowly from ``W``; the ratio of the two forces when the rod
slips against the capstan equation ``exp(mu wrap)`` (Euler-Eytelwein).
"""
from __future__ import annotations

import math

import numpy as np

from ..experiment import record
from ..model import require
from ..solvers import make_simulator
from ..world import WorldBuilder, shapes
from ..world.obstacles import Cylinder, Plane
from .registry import Param, SceneResult, register

GRAVITY = 9.81


# ---- incline -------------------------------------------------------------------------------------
def incline_world(angle_deg: float, mu: float, *, n: int = 6, length: float = 0.1, radius: float = 0.005,
                  gap: float = 0.00125):
    """A straight rod of ``n`` vertices and ``length`` [m] (E = 10 MPa, G = 4 MPa, rho = 1000 kg/m^3,
    ``radius`` [m]) lying along the slope of the plane through the origin tilted by ``angle_deg``
    about y, ``gap`` [m] above it, gravity -z. Returns ``(world, downhill unit vector, normal)``."""
    a = math.radians(angle_deg)
    normal = np.array([-math.sin(a), 0.0, math.cos(a)])
    down = np.array([-math.cos(a), 0.0, -math.sin(a)])
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
    start = (radius + gap) * normal + 0.5 * length * down
    b.add_rod(shapes.straight(n, length, start=tuple(start), direction=tuple(-down)), E=1e7, G=4e6, rho=1000.0,
              radius=radius)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), tuple(normal)), friction=mu)
    return b.build(), down, normal


def incline_theory(angle_deg: float, mu: float) -> float:
    """Coulomb acceleration [m/s^2] of a body on a slope: 0 when ``tan(angle) <= mu``."""
    a = math.radians(angle_deg)
    return 0.0 if math.tan(a) <= mu else GRAVITY * (math.sin(a) - mu * math.cos(a))


def fit_acceleration(t, s) -> float:
    """Twice the quadratic coefficient of the least-squares fit of ``s(t)`` [m/s^2]."""
    return float(2.0 * np.polyfit(np.asarray(t), np.asarray(s), 2)[0])


METHODS = ("der-implicit", "compact")


def _friction_simulator(world, method, dt, eps_v, integrator):
    """der-implicit (IPC barrier, ``friction_eps_v = eps_v``) or compact (active set; its
    ``friction_eps_v`` only mollifies the kinetic force, sticking is exact)."""
    if method == "compact":
        require(integrator == "backward-euler", f"method compact steps friction by backward-euler only "
                f"(got integrator={integrator!r})")
        return make_simulator(world, "compact", dt=dt, friction_eps_v=eps_v)
    return make_simulator(world, "der-implicit", dt=dt, friction_eps_v=eps_v, integrator=integrator)


@register("incline", "a rod sliding or sticking on a tilted plane with Coulomb friction (der-implicit: IPC barrier; "
          "compact: active set)", [
    Param("angle", 30.0, "tilt of the plane [deg]", low=0.0, high=89.0),
    Param("mu", 0.3, "Coulomb friction coefficient", low=0.0),
    Param("n", 6, "rod vertices", low=3, high=200),
    Param("length", 0.1, "rod length [m]", low=0.0, low_open=True),
    Param("t_end", 0.5, "simulated time [s]", low=0.0, low_open=True),
    Param("t_settle", 0.05, "time left out of the acceleration fit [s]", low=0.0),
    Param("dt", 0.005, "time step [s]", low=0.0, low_open=True),
    Param("eps_v", 1e-6, "friction_eps_v: sliding-speed threshold of the friction mollifier [m/s]", low=0.0,
          low_open=True),
    Param("integrator", "backward-euler", "der-implicit time integration: backward-euler (first order, the paper's) "
          "or bdf2 (second order)", choices=("backward-euler", "bdf2")),
    Param("method", "der-implicit", "simulation method", choices=METHODS),
])
def run_incline(params, progress) -> SceneResult:
    require(params["t_end"] >= params["t_settle"] + 3 * params["dt"],
            f"t_end must be >= t_settle + 3 dt = {params['t_settle'] + 3 * params['dt']:g} s (the acceleration is fitted "
            f"to the frames after t_settle; got t_end = {params['t_end']:g} s)")
    world, down, normal = incline_world(params["angle"], params["mu"], n=params["n"], length=params["length"])
    sim = _friction_simulator(world, params["method"], params["dt"], params["eps_v"], params["integrator"])
    state = sim.initial_state()
    nsteps = int(math.ceil(params["t_end"] / sim.dt - 1e-9))
    run = record(sim, state, nsteps, frames=nsteps, progress=progress,
                 probes={"s": lambda st: float(st.vertex_x.mean(axis=0) @ down)})
    keep = run.t >= params["t_settle"]
    acc = fit_acceleration(run.t[keep], run.probes["s"][keep])
    m = {"method": params["method"], "n_vertices": world.n_vertices, "dt": sim.dt,
         "acceleration": acc, "acceleration_theory": incline_theory(params["angle"], params["mu"]),
         "slide_distance": float(run.probes["s"][-1] - run.probes["s"][0]),
         **run.contact_summary(), "ms_per_step": 1e3 * run.wall_s / max(run.steps, 1),
         "newton_iters": run.newton_iters / max(run.steps, 1)}
    traj = {"t": run.t, "x": run.x, "s": run.probes["s"]}
    return SceneResult(m, traj, plot=_plot_incline, extra={"normal": normal, "down": down}, world=world, state=state)


def _plot_incline(result, out_dir):
    """Side view (x-z) of the rod on the plane at a few times, and the distance slid against time."""
    from pathlib import Path

    from ..viz.plots import figure_module

    plt = figure_module()
    x, t = np.asarray(result.trajectory["x"]), np.asarray(result.trajectory["t"])
    down = result.extra["down"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    pts = x.reshape(-1, 3)
    lo, hi = float((pts @ down).min()), float((pts @ down).max())
    pad = 0.2 * (hi - lo) + 0.05
    line = np.outer(np.linspace(lo - pad, hi + pad, 2), down)
    ax.fill([line[0, 0], line[1, 0], line[0, 0]], [line[0, 2], line[1, 2], line[1, 2]], color="0.75",
            label="plane (obstacle)")
    ax.plot(line[:, 0], line[:, 2], color="0.3")
    idx = np.unique(np.linspace(0, len(x) - 1, min(6, len(x))).round().astype(int))
    for rank, k in enumerate(idx):
        ax.plot(x[k, :, 0], x[k, :, 2], "o-", ms=3, alpha=0.3 + 0.7 * (rank + 1) / len(idx), label=f"t = {t[k]:.3g} s")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.legend(fontsize=7)
    m = result.metrics
    s = np.asarray(result.trajectory["s"])
    ax2.plot(t, s - s[0], label="simulated")
    ax2.plot(t, 0.5 * m["acceleration_theory"] * t**2, "--", label="Coulomb theory")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("distance down the slope [m]")
    ax2.legend()
    ax2.grid(alpha=0.3)
    fig.suptitle(f"incline: acceleration {m['acceleration']:.4g} m/s^2 (theory {m['acceleration_theory']:.4g})")
    fig.tight_layout()
    path = Path(out_dir) / "incline.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


# ---- capstan -------------------------------------------------------------------------------------
def capstan_world(wrap: float, mu: float, *, load: float = 1.0, ratio_end: float, t_ramp: float,
                  cylinder_radius: float = 0.05, radius: float = 0.001, segments: int = 24, tail: float = 0.05,
                  damping: float = 1.0, dhat: float = 0.0005):
    """A rod of radius ``radius`` [m] (bending and twisting 1e-6 N m^2, stretching 1e4 N, 0.01 kg/m)
    wrapped by ``wrap`` [rad] over the cylinder of ``cylinder_radius`` [m] about the y axis (``segments``
    segments on the arc, centred on the top), with straight tails of ``tail`` [m] leaving it
    tangentially. No gravity: the end of the first tail carries ``load`` [N] along its tangent, the
    end of the second ``load (1 + (ratio_end - 1) t / t_ramp)``. Returns ``(world, pull force(t))``."""
    R = cylinder_radius + radius + 0.5 * dhat
    dphi = wrap / segments
    R /= math.cos(0.5 * dphi)  # chords' midpoints (the closest points) half dhat from the surface
    phi = np.linspace(-0.5 * wrap, 0.5 * wrap, segments + 1)  # angle from +z, toward +x
    arc = np.stack([R * np.sin(phi), np.zeros_like(phi), R * np.cos(phi)], axis=1)
    t0 = np.array([-math.cos(phi[0]), 0.0, math.sin(phi[0])])   # leaving the arc at its start (outward)
    t1 = np.array([math.cos(phi[-1]), 0.0, -math.sin(phi[-1])])  # leaving at its end
    ntail = max(2, int(round(tail / (R * dphi))))
    s = np.linspace(tail, 0.0, ntail + 1)[:-1]
    pts = np.vstack([arc[0] + s[:, None] * t0, arc, arc[-1] + s[::-1, None] * t1])
    b = WorldBuilder(damping=damping)
    b.add_rod(pts, bending=1e-6, twisting=1e-6, stretching=1e4, linear_density=0.01, radius=radius)
    b.add_obstacle(Cylinder((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), cylinder_radius), friction=mu)
    b.add_point_force(0, 0, load * t0)

    def pull(t, load=load, ratio_end=ratio_end, t_ramp=t_ramp):
        return load * (1.0 + (ratio_end - 1.0) * min(t / t_ramp, 1.0))

    b.add_point_force(0, -1, lambda t, d=t1: pull(t) * d)
    return b.build(), pull, t0


def capstan_slip(wrap: float, mu: float, *, load: float = 1.0, t_ramp: float = 0.5, overshoot: float = 1.3,
                 dt: float = 0.002, eps_v: float = 1e-6, slip: float = 2e-5, segments: int = 24, progress=None,
                 integrator: str = "backward-euler"):
    """Run the capstan until the load's end has moved ``slip`` [m] back toward the cylinder from
    its lowest position (or the
    ramp to ``overshoot exp(mu wrap)`` ends). Returns ``(tension_ratio at slip or nan, recording,
    world, state, sim)``; the ratio is the pulling force over ``load`` at the last step before the
    slip exceeded ``slip`` (linear between the two steps around it). ``integrator``: der-implicit's option."""
    ratio_end = overshoot * math.exp(mu * wrap)
    world, pull, t0 = capstan_world(wrap, mu, load=load, ratio_end=ratio_end, t_ramp=t_ramp, segments=segments)
    sim = make_simulator(world, "der-implicit", dt=dt, friction_eps_v=eps_v, contact_dhat=0.0005, integrator=integrator)
    state = sim.initial_state()
    x_start = state.vertex_x[0].copy()
    nsteps = int(math.ceil(t_ramp / dt))
    # the load's end first sinks a little (the rod settles and stretches): slip counts from its lowest
    # position, a memory kept in the state (so a checkpointed run resumes with it, docs/checkpoints.md)
    state.solver["capstan_lowest"] = np.zeros(1)

    def moved(st):
        d = float((x_start - st.vertex_x[0]) @ t0)  # toward the cylinder
        lowest = st.solver["capstan_lowest"]
        lowest[0] = min(lowest[0], d)
        return d - float(lowest[0])

    run = record(sim, state, nsteps, frames=nsteps, progress=progress,
                 probes={"moved": moved, "pull": lambda st: pull(st.t)}, stop=lambda st: moved(st) > slip)
    d = run.probes["moved"]
    ratio = math.nan
    if d[-1] > slip:
        k = len(d) - 1
        f = (slip - d[k - 1]) / (d[k] - d[k - 1])
        ratio = float(pull(run.t[k - 1] + f * (run.t[k] - run.t[k - 1]))) / load
    return ratio, run, world, state, sim


@register("capstan", "der-implicit: a rod over a fixed cylinder with friction, pulled until it slips (capstan "
         "equation)", [
    Param("wrap", math.pi, "wrap angle [rad]", low=0.0, high=2.0 * math.pi, low_open=True),
    Param("mu", 0.3, "Coulomb friction coefficient rod-cylinder", low=0.0),
    Param("load", 1.0, "hanging load [N]", low=0.0, low_open=True),
    Param("t_ramp", 0.5, "time for the pull to grow to 1.3 exp(mu wrap) load [s]", low=0.0, low_open=True),
    Param("segments", 24, "segments on the wrapped arc", low=4, high=400),
    Param("dt", 0.002, "time step [s]", low=0.0, low_open=True),
    Param("eps_v", 1e-6, "friction_eps_v [m/s]", low=0.0, low_open=True),
    Param("slip", 2e-5, "displacement of the load's end that marks the slip [m]", low=0.0, low_open=True),
    Param("integrator", "backward-euler", "der-implicit time integration: backward-euler (first order, the paper's) "
          "or bdf2 (second order)", choices=("backward-euler", "bdf2")),
])
def run_capstan(params, progress) -> SceneResult:
    ratio, run, world, state, sim = capstan_slip(params["wrap"], params["mu"], load=params["load"],
                                                 t_ramp=params["t_ramp"], dt=params["dt"], eps_v=params["eps_v"],
                                                 slip=params["slip"], segments=params["segments"], progress=progress,
                                                 integrator=params["integrator"])
    theory = math.exp(params["mu"] * params["wrap"])
    m = {"method": "der-implicit", "n_vertices": world.n_vertices, "dt": sim.dt,
         "tension_ratio": ratio, "tension_ratio_theory": theory,
         "relative_error": abs(ratio / theory - 1.0) if math.isfinite(ratio) else None,
         "slip_time": float(run.t[-1]), **run.contact_summary(),
         "ms_per_step": 1e3 * run.wall_s / max(run.steps, 1), "newton_iters": run.newton_iters / max(run.steps, 1)}
    traj = {"t": run.t, "x": run.x, "moved": run.probes["moved"], "pull": run.probes["pull"]}
    return SceneResult(m, traj, plot=_plot_capstan, extra={"cylinder_radius": 0.05}, world=world, state=state)


def _plot_capstan(result, out_dir):
    """Side view (x-z) of the rod over the cylinder, and the load end's displacement against the
    force ratio."""
    from pathlib import Path

    from ..viz.plots import figure_module

    plt = figure_module()
    x, t = np.asarray(result.trajectory["x"]), np.asarray(result.trajectory["t"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax.add_patch(plt.Circle((0.0, 0.0), result.extra["cylinder_radius"], color="0.7", label="cylinder (obstacle)"))
    for k, lab in ((0, "start"), (len(x) - 1, "at slip")):
        ax.plot(x[k, :, 0], x[k, :, 2], "o-", ms=2, label=f"{lab}, t = {t[k]:.3g} s")
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.legend(fontsize=7)
    m = result.metrics
    ax2.plot(np.asarray(result.trajectory["pull"]), 1e3 * np.asarray(result.trajectory["moved"]))
    ax2.axvline(m["tension_ratio_theory"], color="k", ls="--", label="exp(mu wrap)")
    ax2.set_xlabel("pull / load")
    ax2.set_ylabel("load end moved toward the cylinder [mm]")
    ax2.legend()
    ax2.grid(alpha=0.3)
    fig.suptitle(f"capstan: ratio at slip {m['tension_ratio']:.4g} (theory {m['tension_ratio_theory']:.4g})")
    fig.tight_layout()
    path = Path(out_dir) / "capstan.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
