"""Scenes of the generalized-alpha Cosserat rod paper (GA paper, Sec. 5): the seven test cases,
each with 100 segments by default and the paper's dt = 1/30 s and (alpha, beta, gamma) =
(0.3, 0, 0.7) unless the paper names other values. Parameters the paper does not give are chosen
here and listed in docs/galpha.md. SI units."""
from __future__ import annotations

import math
import time

import numpy as np

from .registry import Param, SceneResult, register

PAPER = "generalized-alpha-cosserat.txt"

# root frames (columns d1, d2, d3 in world coordinates)
HORIZONTAL = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # d3 = +x, d2 = +z
HANGING = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])  # d3 = -z


def _common(n=101, dt=1 / 30, t_end=2.0, alpha=0.3, beta=0.0, gamma=0.7):
    return [
        Param("n", n, "number of nodes (segments + 1)", low=4, high=2001),
        Param("dt", dt, "time step [s]", low=0.0, low_open=True),
        Param("t_end", t_end, "simulated time [s]", low=0.0, low_open=True),
        Param("rho_inf", -1.0, "spectral radius at infinity (Chung-Hulbert); -1: use alpha, beta, gamma", low=-1.0, high=1.0),
        Param("alpha", alpha, "generalized-alpha alpha in time (weight of the old step)", low=-1.0, high=1.0, high_open=True),
        Param("beta", beta, "generalized-alpha beta in time", low=0.0, high=1.0, high_open=True),
        Param("gamma", gamma, "generalized-alpha gamma in time", low=0.0, high=1.0, low_open=True),
        Param("frames", 60, "frames kept in the trajectory", low=2, high=10000),
    ]


def _coeffs(p):
    from ..galpha import Coefficients
    if p["rho_inf"] >= 0:
        return Coefficients.from_rho_inf(p["rho_inf"])
    return Coefficients(p["alpha"], p["beta"], p["gamma"])


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


def _run(p, model, boundary, progress, *, options=None, extra_metrics=None, initial=None):
    from ..galpha import GAlphaOptions, GAlphaSolver
    opts = options or GAlphaOptions(time=_coeffs(p))
    _warm_up()
    solver = GAlphaSolver(model, boundary, opts)
    state = solver.initial_state() if initial is None else initial
    dt = p["dt"]
    n_steps = max(1, int(math.ceil(p["t_end"] / dt - 1e-9)))
    every = max(1, n_steps // max(1, p["frames"] - 1))
    solver.solve_time = 0.0
    traj = solver.simulate(state, dt, n_steps, record_every=every, progress=progress, robust=True)
    metrics = {"steps": n_steps, "segments": model.n_nodes - 1, "dt": dt,
               "newton_iters": solver.total_iterations / max(1, solver.total_steps),
               "residual": float(np.max(traj["residual"])),
               "ms_per_step": solver.solve_time / n_steps * 1e3,
               "substeps": solver.substeps, "energy_start": float(traj["energy"][0]),
               "energy_end": float(traj["energy"][-1]), "kinetic_end": float(traj["kinetic"][-1]),
               "tip_x": float(state.r[-1, 0]), "tip_y": float(state.r[-1, 1]), "tip_z": float(state.r[-1, 2]),
               "position_drift": float(np.max(np.linalg.norm(state.r_vel - state.r, axis=1))),
               "alpha": opts.time.alpha, "beta": opts.time.beta, "gamma": opts.time.gamma}
    if extra_metrics:
        metrics.update(extra_metrics(state, traj))
    return SceneResult(metrics=metrics, trajectory=traj), solver, state


def _warm_up():
    """Compile (or load from the numba cache) every kernel outside the timed stepping."""
    from ..galpha import Boundary, GAlphaRod, GAlphaSolver, TipMotion
    for tip in (None, TipMotion()):
        m = GAlphaRod.from_material(4, 1.0, radius=0.01, E=1e7, G=1e7, rho=1e3, kappa_hat=(0.1, 0.2, 0.0))
        s = GAlphaSolver(m, Boundary(tip=tip) if tip else None)
        s.simulate(s.initial_state(), 1e-3, 2)


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
    from ..galpha import Boundary, GAlphaRod
    n, L = p["n"], p["length"]
    s = np.linspace(0, L, n)
    k = p["amplitude"] * 2 * math.pi * p["waves"] / L * np.cos(2 * math.pi * p["waves"] * s / L)
    kh = np.column_stack([np.zeros(n), k, np.zeros(n)])
    model = GAlphaRod.from_material(n, L, radius=p["radius"], E=p["E"], G=p["E"] / 3, rho=1000.0, kappa_hat=kh,
                                    gravity=(0, 0, -9.81), root_R=HORIZONTAL)
    return _run(p, model, Boundary(), progress)[0]


# ------------------------------------------------------------------------------------------ 2
@register("galpha-helix-load", "damped helix (30 cm) under a time-varying end load (GA paper, Sec. 5 case 2)",
          _common(t_end=3.0, alpha=0.4, beta=0.0, gamma=1.0) + [
              Param("coil_radius", 0.02, "helix radius [m]", low=0.0, low_open=True),
              Param("pitch", 0.03, "helix pitch per turn [m]", low=0.0, low_open=True),
              Param("force", 0.02, "amplitude of the end force [N]", low=0.0),
              Param("frequency", 1.0, "frequency of the end force [Hz]", low=0.0),
          ], paper=PAPER)
def helix_load(p, progress):
    from ..galpha import Boundary, GAlphaRod, TipLoad
    c = p["pitch"] / (2 * math.pi)
    R = p["coil_radius"]
    k, tau = R / (R * R + c * c), c / (R * R + c * c)
    model = GAlphaRod.from_material(p["n"], 0.3, radius=0.001, E=1e8, G=1e8 / 3, rho=1100.0,
                                    kappa_hat=(0.0, k, tau), gravity=(0, 0, -9.81), damping=1.0,
                                    root_R=_helix_root(k, tau, (0, 0, -1)))
    F0, f = p["force"], p["frequency"]
    tip = TipLoad(force=lambda t: np.array([F0 * math.sin(2 * math.pi * f * t), 0.0, -0.5 * F0 * (1 - math.cos(2 * math.pi * f * t))]))
    return _run(p, model, Boundary(tip=tip), progress)[0]


# ------------------------------------------------------------------------------------------ 3
@register("galpha-torque", "straight 45 cm rod under a time-varying end torque (GA paper, Sec. 5 case 3)",
          _common(t_end=3.0) + [
              Param("torque", 2e-4, "amplitude of the end torque [N m]", low=0.0),
              Param("frequency", 0.5, "frequency of the torque [Hz]", low=0.0),
          ], paper=PAPER)
def torque(p, progress):
    from ..galpha import Boundary, GAlphaRod, TipLoad
    model = GAlphaRod.from_material(p["n"], 0.45, radius=0.002, E=1e7, G=1e7 / 3, rho=1000.0, root_R=HORIZONTAL)
    T0, f = p["torque"], p["frequency"]
    # bending about the vertical and twisting about the rod axis, ramped smoothly
    tip = TipLoad(torque=lambda t: T0 * 0.5 * (1 - math.cos(2 * math.pi * f * t)) * np.array([0.6, 0.0, 0.8]))
    res, solver, state = _run(p, model, Boundary(tip=tip), progress)
    res.metrics["twist_tip"] = float(state.x[-1, 8])
    return res


# ------------------------------------------------------------------------------------------ 4
@register("galpha-spring", "lightly damped steel coil spring pulled along its axis, released after 0.1 s (GA paper, Sec. 5 case 4)",
          _common(dt=5e-4, t_end=0.4, alpha=0.0, beta=0.0, gamma=0.5) + [
              Param("force", 2.0, "axial force before release [N]", low=0.0),
              Param("release", 0.1, "release time [s]", low=0.0),
              Param("turns", 5.0, "number of turns", low=0.5, high=50.0),
          ], paper=PAPER)
def spring(p, progress):
    from ..galpha import Boundary, GAlphaRod, TipLoad
    R, pitch = 0.01, 0.004
    c = pitch / (2 * math.pi)
    k, tau = R / (R * R + c * c), c / (R * R + c * c)
    L = p["turns"] * 2 * math.pi * math.hypot(R, c)
    model = GAlphaRod.from_material(p["n"], L, radius=0.0005, E=2e11, G=8e10, rho=7850.0, kappa_hat=(0.0, k, tau),
                                    damping=2.0, root_R=_helix_root(k, tau, (0, 0, -1)))
    F, t1 = p["force"], p["release"]
    tip = TipLoad(force=lambda t: np.array([0.0, 0.0, -F if t <= t1 else 0.0]))

    def extra(state, traj):
        z = traj["x"][:, -1, 2]
        return {"tip_z_min": float(z.min()), "tip_z_max_after_release": float(z[traj["t"] > t1].max()) if np.any(traj["t"] > t1) else float(z[-1])}

    return _run(p, model, Boundary(tip=tip), progress, extra_metrics=extra)[0]


# ------------------------------------------------------------------------------------------ 5
@register("galpha-buckling", "straight rod, ends pushed together while the root twists about the axis (GA paper, Sec. 5 case 5)",
          _common(dt=1 / 30, t_end=3.0) + [
              Param("speed", 0.05, "approach speed of the tip [m/s]", low=0.0),
              Param("twist_rate", 2.0, "root rotation rate about the axis [rad/s]", low=0.0),
              Param("imperfection", 0.3, "rest-curvature imperfection [1/m] (an inextensible straight rod cannot shorten)", low=0.0),
          ], paper=PAPER)
def buckling(p, progress):
    from ..galpha import Boundary, GAlphaRod, RootMotion, TipMotion
    n, L = p["n"], 1.0
    s = np.linspace(0, L, n)
    eps = p["imperfection"]
    kh = np.column_stack([eps * np.sin(math.pi * s / L), eps * np.cos(math.pi * s / L), np.zeros(n)])
    model = GAlphaRod.from_material(n, L, radius=0.005, E=1e6, G=1e6 / 3, rho=1000.0, kappa_hat=kh, damping=1.0,
                                    root_R=HORIZONTAL)
    ramp = 0.5  # [s] smooth start of both motions
    sm = lambda t: min(1.0, t / ramp) ** 2 * (3 - 2 * min(1.0, t / ramp))
    b = Boundary(root=RootMotion(angular_velocity=lambda t: np.array([p["twist_rate"] * sm(t), 0.0, 0.0])),
                 tip=TipMotion(velocity=lambda t: np.array([-p["speed"] * sm(t), 0.0, 0.0])))

    def extra(state, traj):
        lateral = np.max(np.linalg.norm(traj["x"][:, :, 1:], axis=2), axis=1)
        return {"lateral_max": float(lateral.max()), "end_distance": float(np.linalg.norm(state.r[-1] - state.r[0])),
                "axial_force_tip": float(state.x[-1, 11])}

    res, solver, state = _run(p, model, b, progress, extra_metrics=extra)
    return res


# ------------------------------------------------------------------------------------------ 6/7: hair tress
HAIR = dict(E=3.89e9, G=0.89e9, rho=1300.0, radius=math.sqrt(1.5e-9 / math.pi))  # keratin, A = 1.5e-5 cm^2


def _hair_guide(n, length=0.25, coil_radius=0.01, pitch=0.03, damping=0.0):
    from ..galpha import GAlphaRod
    c = pitch / (2 * math.pi)
    k, tau = coil_radius / (coil_radius**2 + c * c), c / (coil_radius**2 + c * c)
    return GAlphaRod.from_material(n, length, radius=HAIR["radius"], E=HAIR["E"], G=HAIR["G"], rho=HAIR["rho"],
                                   kappa_hat=(0.0, k, tau), gravity=(0, 0, -9.81), damping=damping,
                                   root_R=_helix_root(k, tau, (0, 0, -1)))


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
    from ..galpha import Boundary, GAlphaSolver, TipLoad, line_constraint
    model = _hair_guide(p["n"], damping=0.5)
    # start from the static equilibrium under gravity (free end)
    hanging, res0 = GAlphaSolver(model, Boundary()).solve_static()
    if not res0.success:
        raise RuntimeError(f"galpha-tress: static start failed: {res0.message}")
    r0 = hanging.r
    bbox = float(np.ptp(r0[:, 2]))
    t_release = p["extension"] * bbox / p["speed"]
    pull = line_constraint((0, 0, -1), p["speed"])
    free = TipLoad()
    b = Boundary(tip=lambda t: pull if t <= t_release + 1e-12 else free)
    offsets = fiber_offsets(p["fibers"], 0.005)
    res, solver, state = _run(p, model, b, progress, initial=hanging)
    res.metrics.update({"bbox_length": bbox, "t_release": t_release, "fibers": p["fibers"],
                        "tip_drop_max": float(r0[-1, 2] - res.trajectory["x"][:, -1, 2].min()),
                        "tip_rebound": float(res.trajectory["x"][:, -1, 2][res.trajectory["t"] > t_release].max()
                                             - res.trajectory["x"][:, -1, 2].min()) if t_release < res.trajectory["t"][-1] else 0.0})
    # fibers at the last frame (any frame: interpolate_fibers(x[f], frames[f], fiber_offsets))
    res.trajectory["fibers_end"] = interpolate_fibers(state.r, state.R, offsets).astype(np.float32)
    res.trajectory["fiber_offsets"] = offsets

    def plot(result, out_dir):
        from pathlib import Path
        path = Path(out_dir) / "galpha_tress.png"
        draw_tress(result, path)
        return [path]

    res.plot = plot
    res.metrics.update({"bbox_length": bbox, "t_release": t_release, "fibers": p["fibers"],
                        "tip_drop_max": float(r0[-1, 2] - res.trajectory["x"][:, -1, 2].min())})
    return res


@register("galpha-tress-gravity", "hair guide falling under gravity: kinetic energy for several alpha and gamma (GA paper, Sec. 5 case 7, Fig. 1)",
          _common(n=31, t_end=1.0) + [
              Param("settings", "0.0:0.5,0.2:0.7,0.3:0.7,0.4:1.0", "alpha:gamma pairs (beta = 0)"),
          ], paper=PAPER)
def tress_gravity(p, progress):
    from ..galpha import Coefficients, GAlphaOptions
    pairs = []
    for item in p["settings"].split(","):
        a, g = (float(v) for v in item.split(":"))
        pairs.append((a, g))
    series = {}
    metrics = {}
    res = None
    for i, (a, g) in enumerate(pairs):
        model = _hair_guide(p["n"])
        opts = GAlphaOptions(time=Coefficients(a, 0.0, g))
        res, solver, state = _run(p, model, _tress_free(), progress, options=opts)
        series[f"kinetic_a{a:g}_g{g:g}"] = res.trajectory["kinetic"]
        metrics[f"kinetic_end_a{a:g}_g{g:g}"] = float(res.trajectory["kinetic"][-1])
        metrics[f"kinetic_max_a{a:g}_g{g:g}"] = float(res.trajectory["kinetic"].max())
        metrics[f"newton_iters_a{a:g}_g{g:g}"] = res.metrics["newton_iters"]
        progress.update(i + 1, len(pairs))
    out = res
    out.trajectory.update(series)
    out.metrics.update(metrics)
    out.metrics["settings"] = p["settings"]

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

    out.plot = plot
    return out


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


def _tress_free():
    from ..galpha import Boundary
    return Boundary()
