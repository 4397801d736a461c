"""Scenes of Bergou et al. 2008 (Discrete Elastic Rods), run on a :class:`rodlab.World` by the
``der`` simulator (:mod:`rodlab.solvers.der`).

helical-buckling (Fig. 7), michell (Fig. 8), uniform-twist (Eq. 5), twist-asymmetry (Fig. 5),
perversion (Fig. 2). Each returns metrics checked against theory where theory exists. Turned or
displaced clamps are clamps with a ``motion``; a start away from the rest shape (a guessed
equilibrium, a perturbed ring) is written into the state with :mod:`rodlab.world.moves`. Every
scene's ``n`` is its number of vertices.
"""
from __future__ import annotations

import math

import numpy as np

from .. import metrics
from ..der.stepper import suggested_time_step
from ..experiment import record
from ..geometry.rotations import exp_so3
from ..model import twist_about_axis
from ..solvers import make_simulator
from ..world import WorldBuilder
from ..world.moves import fixed_pose, joint_twist, joint_voronoi_length, move_vertices, seat_clamps, settle_twist
from .registry import Param, SceneResult, register


def _straight(n: int, length: float, grading: float = 1.0) -> np.ndarray:
    """Vertices along +x over [0, length]; ``grading`` > 1 makes the second half that many times finer."""
    if grading == 1.0:
        s = np.linspace(0.0, length, n)
    else:
        # edge lengths h (first half) and h / grading (second half), same number of edges in each
        ne = n - 1
        n1 = ne // 2
        n2 = ne - n1
        h = length / (n1 + n2 / grading)
        s = np.concatenate([[0.0], np.cumsum([h] * n1 + [h / grading] * n2)])
    x = np.zeros((n, 3))
    x[:, 0] = s
    return x


# ------------------------------------------------------------------------------------------------
# helical-buckling (Fig. 7)
# ------------------------------------------------------------------------------------------------
@register(
    "helical-buckling",
    "localized helical buckling of a clamped twisted rod vs van der Heijden-Thompson (Bergou 2008, Fig. 7)",
    [
        Param("n", 320, "number of vertices (the discrete equilibrium converges to the theory at second order: phi0 0.70, 0.84, 0.88, 0.90 at n = 80, 160, 240, 320)", low=20, high=1000),
        Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic (RATTLE, no projection damping)", choices=("fast", "symplectic")),
        Param("L", 9.29, "rod length between the clamps", low=0.0, low_open=True),
        Param("alpha", 1.345, "bending stiffness", low=0.0, low_open=True),
        Param("beta", 0.789, "twisting stiffness", low=0.0, low_open=True),
        Param("turns", 27.0, "turns of one clamp about the axis", low=0.0, low_open=True),
        Param("shortening", 0.3, "end shortening (ends pushed together)", low=0.0, low_open=True),
        Param("grading", 1.0, "1: uniform; 2: one half twice as refined as the other (Fig. 7 right)", low=1.0, high=4.0),
    ],
    paper="Bergou et al. 2008, Sec. 9.1, Fig. 7",
)
def helical_buckling(p, progress):
    from ..analytic.helical_buckling import envelope_from_centerline, helical_buckling_theory, theoretical_centerline

    from .registry import SceneError

    try:
        theory = helical_buckling_theory(p["L"], p["alpha"], p["beta"], p["turns"], p["shortening"])
    except ValueError as exc:
        raise SceneError(f"helical-buckling: {exc}") from None
    if not theory.success:
        raise SceneError(f"helical-buckling: no localized solution for these parameters ({theory.message})")
    n, L = p["n"], p["L"]
    x_straight = _straight(n, L, p["grading"])
    axis = np.array([1.0, 0.0, 0.0])
    b = WorldBuilder()
    r = b.add_rod(x_straight, bending=p["alpha"], twisting=p["beta"], linear_density=1.0)
    b.clamp(r, "start")
    # the far clamp turned `turns` times about the axis and pushed `shortening` towards the other
    b.clamp(r, "end", motion=fixed_pose(exp_so3(2 * math.pi * p["turns"] * axis), -p["shortening"] * axis))
    world = b.build()
    sim = make_simulator(world, "der", dt=1e-3, projection=p["projection"])
    state = sim.initial_state()
    # a rotation cannot count whole turns: the angles carry them. A straight rod's twist is
    # uniform, theta_j = 2 pi N s_j / L
    s_edge = 0.5 * (x_straight[1:, 0] + x_straight[:-1, 0])
    state.edge_theta[:] = 2 * math.pi * p["turns"] * (s_edge - s_edge[0]) / (s_edge[-1] - s_edge[0])
    # first guess: the theory's localized helix with the clamped edges where the clamps hold them,
    # morphed in continuously so the twist is carried
    guess = seat_clamps(world, _localized_guess(theory, x_straight, p["shortening"], theoretical_centerline), t=state.t)
    move_vertices(world, state, guess, steps=40)
    settle_twist(world, state)
    progress.update(0.1, 1)
    res = sim.solve_static(state)
    progress.update(1, 1)
    xs = state.vertex_x.copy()
    axis = xs[-1] - xs[0]
    env = envelope_from_centerline(xs, axis, phi0=theory.phi0)
    window = np.abs(env["s"]) <= 3.0 * theory.s_star
    f_theory = np.tanh(env["s"] / theory.s_star) ** 2
    rms = float(np.sqrt(np.mean((env["f"][window] - f_theory[window]) ** 2)))
    result = {
        "phi0": env["phi_max"],
        "phi0_theory": float(theory.phi0),
        "phi0_error": abs(env["phi_max"] - theory.phi0) / theory.phi0,
        "envelope_error": rms,
        "s_star_theory": float(theory.s_star),
        "end_distance": float(np.linalg.norm(axis)),
        "static_success": res.success,
        "static_iterations": res.iterations,
        "static_residual": res.residual,
        "solve_wall_s": res.wall_s,
    }
    traj = {"t": np.array([0.0, 1.0]), "x": np.array([guess, xs]), "theta": state.edge_theta.copy(),
            "twist": joint_twist(world, state),
            "envelope_s": env["s"], "envelope_f": env["f"]}

    def plot(result, out):
        from ..viz.plots import figure_module

        plt = figure_module()
        fig = plt.figure(figsize=(11, 4))
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        ax.plot(*xs.T, lw=1.5)
        ax.set_title(f"equilibrium, n = {n}")
        ax2 = fig.add_subplot(1, 2, 2)
        u = env["s"] / theory.s_star
        ss = np.linspace(-3, 3, 400)
        ax2.plot(ss, np.tanh(ss) ** 2, "k-", label="analytical")
        ax2.plot(u, env["f"], "o", ms=3, label=f"DER n = {n}")
        ax2.set_xlim(-3, 3)
        ax2.set_ylim(-0.05, 1.05)
        ax2.set_xlabel("s / s*")
        ax2.set_ylabel("f(phi)")
        ax2.legend()
        ax2.set_title(f"phi0 = {env['phi_max']:.4f} (theory {theory.phi0:.4f})")
        fig.tight_layout()
        path = out / "helical_buckling.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]

    return SceneResult(result, traj, plot)


def _localized_guess(theory, x_straight, shortening, theoretical_centerline):
    """Vertices placed along the theory's localized helix at the rod's own arc lengths, the
    clamped end edges kept along +x, ends ``shortening`` closer."""
    s = x_straight[:, 0]
    L = s[-1]
    fine = theoretical_centerline(theory, n=20001, half_width=0.5 * L)
    seg = np.linalg.norm(np.diff(fine, axis=0), axis=1)
    s_fine = np.concatenate([[0.0], np.cumsum(seg)])
    tang = np.diff(fine, axis=0) / seg[:, None]
    mid = 0.5 * (s_fine[1:] + s_fine[:-1])
    edge_mid = 0.5 * (s[1:] + s[:-1]) * (s_fine[-1] / L)
    t = np.stack([np.interp(edge_mid, mid, tang[:, c]) for c in range(3)], axis=1)
    t[0] = t[-1] = (1.0, 0.0, 0.0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    x = np.concatenate([[np.zeros(3)], np.cumsum(t * np.diff(s)[:, None], axis=0)])
    # keep the ends on the x axis at the prescribed distance
    x[:, 1:] -= np.linspace(0, 1, len(s))[:, None] * (x[-1, 1:] - x[0, 1:])[None, :]
    x[:, 0] *= (L - shortening) / (x[-1, 0] - x[0, 0])
    return x


# ------------------------------------------------------------------------------------------------
# michell (Fig. 8)
# ------------------------------------------------------------------------------------------------
@register(
    "michell",
    "twisted ring: circular shape stable below 2 pi sqrt(3) alpha/beta, buckles above (Bergou 2008, Fig. 8)",
    [
        Param("n", 50, "number of vertices", low=12, high=2000),
        Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic (RATTLE, no projection damping)", choices=("fast", "symplectic")),
        Param("alpha", 1.0, "bending stiffness", low=0.0, low_open=True),
        Param("beta", 1.0, "twisting stiffness", low=0.0, low_open=True),
        Param("twist", 14.0, "total twist imposed before closing the ring [rad]"),
        Param("perturbation", 1e-3, "out-of-plane amplitude of the initial perturbation, over the radius", low=0.0, low_open=True),
        Param("t_end", 40.0, "simulated time", low=0.0, low_open=True),
        Param("damping", 0.05, "viscous damping rate [1/s]", low=0.0),
    ],
    paper="Bergou et al. 2008, Sec. 9.1, Fig. 8",
)
def michell(p, progress):
    from ..analytic.classic import michell_critical_twist

    n, R = p["n"], 1.0
    phi = 2 * math.pi * np.arange(n) / n
    circle = np.stack([R * np.cos(phi), R * np.sin(phi), np.zeros(n)], axis=1)
    rest_twist = np.zeros(n)
    rest_twist[-1] = -p["twist"]  # the glue angle: an isotropic ring twisted by T before closing
    b = WorldBuilder(damping=p["damping"])
    b.add_rod(circle, bending=p["alpha"], twisting=p["beta"], linear_density=1.0, closed=True,
              rest_curvature=np.zeros((n, 4)), rest_twist=rest_twist)
    world = b.build()
    dt = suggested_time_step(world.rods[0], safety=0.3)
    sim = make_simulator(world, "der", dt=dt, projection=p["projection"])
    state = sim.initial_state()
    # perturb with the modes that go unstable first (out-of-plane, wavenumbers 2 and 3)
    x0 = circle.copy()
    x0[:, 2] = p["perturbation"] * R * (np.sin(2 * phi) + np.cos(3 * phi))
    move_vertices(world, state, x0)
    settle_twist(world, state)
    amp0 = _out_of_plane(state.vertex_x)
    nsteps = int(math.ceil(p["t_end"] / dt))
    # stop once fully buckled (out of plane by half the radius)
    run = record(sim, state, nsteps, progress=progress, probes={"amplitude": lambda st: _out_of_plane(st.vertex_x)},
                 stop=lambda st: _out_of_plane(st.vertex_x) > 0.5 * R)
    amps = run.probes["amplitude"]
    growth = amps[-1] / amp0
    crit = michell_critical_twist(p["alpha"], p["beta"])
    result = {
        "stable": bool(growth < 1.0),
        "growth": float(growth),
        "critical_twist_theory": float(crit),
        "twist_over_critical": float(p["twist"] / crit),
        "amplitude_initial": float(amp0),
        "amplitude_final": float(amps[-1]),
        "steps": run.steps,
        "dt": dt,
    }
    return SceneResult(result, {"t": run.t, "x": run.x, "amplitude": amps}, extra={"closed": True})


def _out_of_plane(x: np.ndarray) -> float:
    """Largest distance from the best-fit plane through the ring."""
    c = x - x.mean(axis=0)
    normal = np.linalg.svd(c, full_matrices=False)[2][-1]
    return float(np.abs(c @ normal).max())


# ------------------------------------------------------------------------------------------------
# uniform-twist (Eq. 5)
# ------------------------------------------------------------------------------------------------
@register(
    "uniform-twist",
    "straight rod, both ends clamped, one end turned: twist per length uniform (Bergou 2008, Eq. 5)",
    [
        Param("n", 50, "number of vertices", low=4, high=5000),
        Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic (RATTLE, no projection damping)", choices=("fast", "symplectic")),
        Param("length", 1.0, "rod length [m]", low=0.0, low_open=True),
        Param("turns", 3.0, "turns of the far clamp"),
        Param("anisotropy", 2.0, "ratio of the two bending stiffnesses (1 = isotropic)", low=1.0),
        Param("grading", 2.0, "1: uniform edges; >1: second half that many times finer", low=1.0, high=4.0),
        Param("t_end", 0.05, "duration of the clamp rotation [s]", low=0.0, low_open=True),
    ],
    paper="Bergou et al. 2008, Sec. 5.1",
)
def uniform_twist(p, progress):
    n = p["n"]
    x = _straight(n, p["length"], p["grading"])
    angle = 2 * math.pi * p["turns"]
    motion = twist_about_axis((1.0, 0.0, 0.0), rate=angle / p["t_end"], total=angle)
    b = WorldBuilder()
    r = b.add_rod(x, bending=(1.0, p["anisotropy"]), twisting=0.8, linear_density=1.0)
    b.clamp(r, "start")
    b.clamp(r, "end", motion=motion)
    world = b.build()
    dt = min(suggested_time_step(world.rods[0]), p["t_end"] / 200)
    sim = make_simulator(world, "der", dt=dt, twist_solver="newton", projection=p["projection"])
    state = sim.initial_state()
    nsteps = int(math.ceil(p["t_end"] / dt))
    run = record(sim, state, nsteps, frames=50, progress=progress, probes={"twist": lambda st: joint_twist(world, st)})
    voronoi = joint_voronoi_length(world)
    density = joint_twist(world, state) / voronoi  # twist per unit length
    applied = state.edge_theta[-1] - state.edge_theta[0]
    expected = applied / voronoi.sum()
    result = {
        "max_twist_deviation": float(np.abs(density - expected).max() / abs(expected)),
        "twist_applied": float(applied),
        "twist_density_expected": float(expected),
        "max_lateral_deviation": float(np.abs(state.vertex_x[:, 1:]).max()),
        "steps": run.steps,
    }
    return SceneResult(result, {"t": run.t, "x": run.x, "twist": run.probes["twist"]})


# ------------------------------------------------------------------------------------------------
# twist-asymmetry (Fig. 5)
# ------------------------------------------------------------------------------------------------
@register(
    "twist-asymmetry",
    "anisotropic, naturally curved rod twisted at one end: twist piles up near that end (Bergou 2008, Fig. 5)",
    [
        Param("shape", "v", "rest centerline: v (V-shaped) or arc (semicircle)", choices=("v", "arc")),
        Param("n", 41, "number of vertices", low=9, high=400),
        Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic (RATTLE, no projection damping)", choices=("fast", "symplectic")),
        Param("turns", 1.0, "largest number of turns of the far clamp", low=0.0, low_open=True),
        Param("stages", 6, "twist levels solved (static continuation)", low=2, high=200),
        Param("anisotropy", 4.0, "ratio of the two bending stiffnesses", low=1.0),
    ],
    paper="Bergou et al. 2008, Sec. 9.3, Fig. 5",
)
def twist_asymmetry(p, progress):
    n = p["n"]
    if p["shape"] == "v":
        s = np.linspace(-1, 1, n)
        x = np.stack([s, np.abs(s) * math.tan(math.radians(35)), np.zeros(n)], axis=1)
    else:
        phi = np.linspace(math.pi, 0, n)
        x = np.stack([np.cos(phi), np.sin(phi), np.zeros(n)], axis=1)
    t_last = x[-1] - x[-2]
    t_last /= np.linalg.norm(t_last)
    motion = twist_about_axis(t_last, rate=1.0)  # clamp angle [rad] = "time"
    b = WorldBuilder()
    r = b.add_rod(x, bending=(1.0, p["anisotropy"]), twisting=0.6, linear_density=1.0)
    b.clamp(r, "start")
    b.clamp(r, "end", motion=motion)
    world = b.build()
    sim = make_simulator(world, "der", dt=1e-3, projection=p["projection"])
    state = sim.initial_state()
    voronoi = joint_voronoi_length(world)
    total = 2 * math.pi * p["turns"]
    levels = np.linspace(0.0, total, p["stages"])
    xs, densities, ok = [state.vertex_x.copy()], [joint_twist(world, state) / voronoi], True
    for i, angle in enumerate(levels[1:], 1):
        # ramp the clamp in sub-increments under pi so the angle unwraps, solving statics at each
        sub = max(1, int(math.ceil((angle - state.t) / 0.5)))
        for a in np.linspace(state.t, angle, sub + 1)[1:]:
            state.t = float(a)
            ok &= sim.solve_static(state).success
        xs.append(state.vertex_x.copy())
        densities.append(joint_twist(world, state) / voronoi)
        progress.update(i, len(levels) - 1)
    d = densities[-1]
    half = len(d) // 2
    result = {
        "twist_near_fixed_end": float(np.mean(d[:half])),
        "twist_near_turned_end": float(np.mean(d[half:])),
        "twist_ratio": float(np.mean(d[half:]) / np.mean(d[:half])) if abs(np.mean(d[:half])) > 1e-12 else float("inf"),
        "static_success": bool(ok),
        "turns": p["turns"],
    }
    if not math.isfinite(result["twist_ratio"]):
        result["twist_ratio"] = 1e300
    traj = {"t": levels, "x": np.array(xs), "twist_density": np.array(densities)}

    def plot(result, out):
        from ..viz.plots import figure_module

        plt = figure_module()
        fig = plt.figure(figsize=(12, 4))
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        for i, xx in enumerate(xs):
            ax.plot(*xx.T, alpha=0.3 + 0.7 * i / max(len(xs) - 1, 1), label=f"{levels[i] / (2 * math.pi):.2f} turns")
        ax.legend(fontsize=7)
        ax.set_title(f"{p['shape']}-shaped anisotropic rod")
        ax2 = fig.add_subplot(1, 2, 2)
        sj = np.linspace(0, 1, len(densities[0]))
        for i, dd in enumerate(densities):
            ax2.plot(sj, dd, label=f"{levels[i] / (2 * math.pi):.2f} turns")
        ax2.set_xlabel("arc length (fixed end 0, turned end 1)")
        ax2.set_ylabel("twist per length [rad/m]")
        ax2.legend(fontsize=7)
        fig.tight_layout()
        path = out / "twist_asymmetry.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]

    return SceneResult(result, traj, plot)


# ------------------------------------------------------------------------------------------------
# perversion (Fig. 2)
# ------------------------------------------------------------------------------------------------
@register(
    "perversion",
    "naturally curved rod held straight, ends let in: two helices of opposite hand (Bergou 2008, Fig. 2)",
    [
        Param("n", 120, "number of vertices", low=20, high=1000),
        Param("projection", "fast", "explicit DER inextensibility: fast (Goldenthal fast projection) or symplectic (RATTLE, no projection damping)", choices=("fast", "symplectic")),
        Param("length", 1.0, "rod length [m]", low=0.0, low_open=True),
        Param("curvature", 20.0, "natural curvature [1/m] (no natural twist: a flattened coil)", low=0.0, low_open=True),
        Param("release", 0.7, "end distance after the ends are let in, over the length", low=0.05, high=0.98),
        Param("t_end", 6.0, "simulated time [s]", low=0.0, low_open=True),
        Param("damping", 8.0, "viscous damping rate [1/s]", low=0.0),
    ],
    paper="Bergou et al. 2008, Sec. 9.3, Fig. 2",
)
def perversion(p, progress):
    n, L = p["n"], p["length"]
    x = _straight(n, L)
    h = L / (n - 1)
    t_in = 0.6 * p["t_end"]

    def let_in(t):
        u = min(t / t_in, 1.0)
        return np.eye(3), np.array([-(1.0 - p["release"]) * L * u * u * (3 - 2 * u), 0.0, 0.0])

    # the straightened coil: naturally curved (integrated curvature 2 tan(kappa h / 2) per joint),
    # no natural twist, held straight and untwisted between two clamps
    rest_curvature = np.zeros((n - 2, 4))
    rest_curvature[:, [0, 2]] = 2 * math.tan(0.5 * p["curvature"] * h)
    b = WorldBuilder(damping=p["damping"])
    r = b.add_rod(x, E=2e7, G=8e6, rho=1100.0, radius=0.003, rest_curvature=rest_curvature)
    b.clamp(r, "start")
    b.clamp(r, "end", motion=let_in)
    world = b.build()
    dt = suggested_time_step(world.rods[0], safety=0.3)
    sim = make_simulator(world, "der", dt=dt, projection=p["projection"])
    state = sim.initial_state()
    x0 = x.copy()
    rng = np.random.default_rng(0)
    x0[2:-2, 1:] += 1e-5 * L * rng.standard_normal((n - 4, 2))  # break the symmetry
    move_vertices(world, state, x0)
    settle_twist(world, state)
    run = record(sim, state, int(math.ceil(p["t_end"] / dt)), frames=120, progress=progress)
    final = _coil_turns(state.vertex_x)
    result = {
        "turns_left_half": final[0],
        "turns_right_half": final[1],
        "perversion": bool(final[0] * final[1] < 0 and min(abs(final[0]), abs(final[1])) > 0.25),
        "total_twist": float(np.sum(joint_twist(world, state))),
        "steps": run.steps,
        "us_per_step": metrics.us_per_step(run.wall_s, run.steps),
        "dt": dt,
    }
    return SceneResult(result, {"t": run.t, "x": run.x, "twist": joint_twist(world, state)})


def _coil_turns(x: np.ndarray) -> tuple[float, float]:
    """Signed turns of the tangent about the end-to-end axis in each half of the rod (ends'
    tenth excluded): the sign is the coil's handedness."""
    axis = x[-1] - x[0]
    axis /= np.linalg.norm(axis)
    u = np.cross(axis, [0.0, 0.0, 1.0] if abs(axis[2]) < 0.9 else [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    t = np.diff(x, axis=0)
    psi = np.unwrap(np.arctan2(t @ v, t @ u))
    m = len(psi)
    a, b, c = m // 10, m // 2, m - m // 10
    return float((psi[b] - psi[a]) / (2 * math.pi)), float((psi[c] - psi[b]) / (2 * math.pi))

