"""Scenes of the sag-free paper (Takahashi and Batty): ``sagfree-strand`` (Figs. 6-7) and
``flipped-frames`` (Figs. 2-3, 4D vs 2D curvature with averaged or slerped frames, material frames flipped)."""
from __future__ import annotations

import math

import numpy as np

from .registry import Param, SceneResult, register

STRAND_PARAMS = [
    Param("orientation", "vertical", "groomed shape: vertical (wavy, hanging) or horizontal (straight, along +x)",
          choices=("vertical", "horizontal")),
    Param("n", 30, "number of vertices", low=4, high=2000),
    Param("scheme", "alm", "rest: rest shape only (penalty); penalty: rest + stiffness (penalty); alm: rest + stiffness, hard constraint",
          choices=("rest", "penalty", "alm")),
    Param("delta", 0.4, "allowed change of rest curvature and rest twist", low=0.0, low_open=True),
    Param("t_end", 2.0, "forward simulation after the optimization [s]", low=0.0),
    Param("length", 0.25, "strand length [m]", low=0.0, low_open=True),
    Param("radius", 5e-4, "strand radius [m]", low=0.0, low_open=True),
    Param("E", 5e7, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 1000.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("precond", "asc-schur", "MPRGP preconditioner (asc-schur, the default: the paper's active-set Cholesky factor "
          "applied exactly on the current face by a Schur-complement correction; asc: the paper's filtered application)",
          choices=("none", "diag", "wj", "ssor", "ic", "mic", "asc", "asc-schur")),
    Param("qp", "mprgp", "box-constrained QP solver", choices=("mprgp", "pgs", "ipm", "penalty-box")),
    Param("max_iters", 200, "outer (Newton / augmented Lagrangian) iteration cap", low=0, high=100000),
    Param("integrator", "backward-euler", "der-implicit time integration: backward-euler (first order, the paper's) "
          "or bdf2 (second order)", choices=("backward-euler", "bdf2")),
]


def strand_shape(orientation: str, n: int, length: float) -> np.ndarray:
    """The groomed shapes of the scene: a hanging wavy strand (waves of 8 % of the length, 3 periods) or
    a straight horizontal one."""
    from ..hair.generator import strand_polyline

    if orientation == "vertical":
        return strand_polyline(n, length, direction=(0.0, 0.0, -1.0), style="wavy", amplitude=0.08 * length,
                               wavelength=length / 3.0, side=(1.0, 0.0, 0.0))
    return strand_polyline(n, length, direction=(1.0, 0.0, 0.0), style="straight")


@register("sagfree-strand", "sag-free parameter optimization of one strand, then a forward simulation (Takahashi and Batty Figs. 6-7)",
          STRAND_PARAMS, paper="sag-free-der-active-set-cholesky")
def run_strand(params, progress):
    from ..inverse.sagfree import SagFreeOptions, forward_drift, make_problem, optimize_strand

    x = strand_shape(params["orientation"], params["n"], params["length"])
    E = params["E"]
    problem = make_problem(x, radius=params["radius"], E=E, G=E / 3.0, rho=params["rho"])
    opts = SagFreeOptions(scheme=params["scheme"], delta=params["delta"], precond=params["precond"], qp=params["qp"],
                          max_iters=params["max_iters"])
    optimize_strand(problem, SagFreeOptions(max_iters=1))  # compile outside the timing
    res = optimize_strand(problem, opts)
    progress.update(0.3, 1.0)
    drift, (t, xs) = forward_drift(problem, res.model, params["t_end"], record=60, integrator=params["integrator"])
    drift_naive, (tn, xn) = forward_drift(problem, problem.model, params["t_end"], record=60,
                                          integrator=params["integrator"])
    progress.update(1.0, 1.0)
    metrics = dict(
        force_residual=res.residual, force_residual_initial=res.initial_residual, max_drift=drift,
        max_drift_naive=drift_naive, newton_iters=res.iterations, mprgp_iters_mean=res.qp_iterations_mean,
        mprgp_iters_max=res.qp_iterations_max, opt_wall_s=res.wall_s, stiffness_change_max=res.stiffness_change_max,
        rest_change_max=res.rest_change_max, bounds_ok=res.bounds_ok, success=res.success, message=res.message,
        n_params=int(problem.nparams),
    )
    traj = {"t": t, "x": xs, "x_naive": xn, "groomed": x, "params": res.params, "params0": res.params0,
            "residual_history": res.residual_history}
    return SceneResult(metrics, traj, plot=_plot_strand)


def _plot_strand(result, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path

    tr = result.trajectory
    g = tr["groomed"]
    # plane of the strand: x and z
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, key, title in ((axes[0], "x_naive", "naive initialization"), (axes[1], "x", "optimized")):
        ax.plot(g[:, 0], g[:, 2], "k--", lw=2, label="groomed")
        for k, xx in enumerate(tr[key][:: max(len(tr[key]) // 6, 1)]):
            ax.plot(xx[:, 0], xx[:, 2], color=plt.cm.viridis(k / 7), lw=1)
        ax.set_title(title)
        if key == "x":
            ax.set_xlim(axes[0].get_xlim())
            ax.set_ylim(axes[0].get_ylim())
        ax.set_aspect("equal")
        ax.set_xlabel("x [m]")
        ax.set_ylabel("z [m]")
    axes[0].legend()
    path = Path(out_dir) / "sagfree_strand.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


FLIP_PARAMS = [
    Param("n", 30, "number of vertices", low=4, high=2000),
    Param("length", 0.25, "strand length [m]", low=0.0, low_open=True),
    Param("radius", 5e-4, "strand radius [m]", low=0.0, low_open=True),
    Param("E", 5e8, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("t_end", 1.0, "simulated time [s]", low=0.0),
    Param("flipped", True, "flip every other material frame by pi (theta_j = j pi)"),
    Param("model", "2d-average", "bending model contrasted with the 4D one (always run as the reference): 2d-average "
          "(averaged frames, Fig. 2), 2d-slerp (slerped frames [41], Fig. 3), 4d (the reference alone)",
          choices=("2d-average", "2d-slerp", "4d")),
    Param("gradient", "approx", "2d-slerp only: approx (slerped frame held constant when differentiating, [41]) or exact",
          choices=("approx", "exact")),
    Param("rest_curvature", 0.0, "rest curvature of the strand [1/m], a circular arc curling in the horizontal plane "
          "(0: straight rest shape; the strand always starts straight)", low=0.0),
    Param("line_search", True, "2d-slerp only: Armijo line search on the incremental potential (false: full Newton step)"),
    Param("integrator", "backward-euler", "der-implicit time integration: backward-euler (first order, the paper's) "
          "or bdf2 (second order)", choices=("backward-euler", "bdf2")),
]


def _flip_rest(n, L, kappa):
    """Straight strand along +x and its rest shape: the same strand, or an arc of curvature ``kappa`` curling
    towards +y in the horizontal plane."""
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0.0, L, n)
    if kappa <= 0.0:
        return x, x.copy()
    s = np.linspace(0.0, L, n)
    R = 1.0 / kappa
    xr = np.stack([R * np.sin(s / R), R * (1.0 - np.cos(s / R)), np.zeros(n)], axis=1)
    return x, xr


def _energy_metrics(E, tipz):
    """Stability measures of a run: largest energy rise above the running minimum [J], its ratio to the
    energy range, tip-height oscillation (peak to peak over the second half) [m]; stable when the state is
    finite and the energy never rises by more than 1e-3 of its range (implicit Euler dissipates)."""
    E = np.asarray(E)
    finite = bool(np.all(np.isfinite(E)))
    if E.size < 2 or not finite:
        return dict(growth=float("nan") if not finite else 0.0, growth_rel=float("nan") if not finite else 0.0,
                    osc=float("nan") if not finite else 0.0, stable=finite and E.size >= 1)
    run_min = np.minimum.accumulate(E)[:-1]
    growth = float(max(np.max(E[1:] - run_min), 0.0))
    rng = float(np.ptp(E)) or 1.0
    half = np.asarray(tipz)[len(tipz) // 2:]
    return dict(growth=growth, growth_rel=growth / rng, osc=float(np.ptp(half)), stable=growth <= 1e-3 * rng)


class _StopOnFailure:
    """A simulator seen by :func:`rodlab.experiment.record` that ends the recording at a failed step
    (a non-finite state or a line search that found no descent) instead of raising: ``failed`` is
    set, the call reports 0 steps and the state holds the last good step. ``failed`` is no history
    a resumed run needs: the recording ends at the call that sets it, before any later checkpoint."""

    keeps_nothing_outside_state = True

    def __init__(self, sim):
        self.sim, self.failed = sim, False
        self.method, self.dt = sim.method, sim.dt

    def advance(self, state, nsteps):
        from ..model import SimulationError
        from ..solvers.base import StepReport

        try:
            return self.sim.advance(state, nsteps)
        except SimulationError:
            self.failed = True
            return StepReport(0, False, "step failed")


class _RunProgress:
    """Progress of run ``k`` of ``n`` one after the other: ``update(done, total)`` of its recording
    loop reported as ``k + done / total`` of ``n``."""

    def __init__(self, progress, k: int, n: int):
        self.progress, self.k, self.n = progress, k, n

    def update(self, done, total):
        if self.progress is not None:
            self.progress.update(self.k + (done / total if total else 1.0), self.n)


def flipped_world(params, theta):
    """The world of ``flipped-frames``: the straight strand along +x (``n`` vertices), root edge
    clamped, gravity -9.81 m/s^2 along z, damping 1/s; its rest curvature and rest twist those of the
    rest shape (:func:`_flip_rest`) with the material angles ``theta``; reference directors: the
    strand's Bishop frame seeded with +z. Returns ``(world, rest polyline)``; a run starts from the
    world's rest positions with ``edge_theta = theta``."""
    from ..der_implicit.stepper import bishop_reference, build_rod
    from ..world import WorldBuilder

    n, L, E = params["n"], params["length"], params["E"]
    x, xr = _flip_rest(n, L, params["rest_curvature"])
    u0 = np.array([0.0, 0.0, 1.0])
    rmodel, _ = build_rod(xr, radius=params["radius"], E=E, G=E / 3.0, rho=1000.0, theta=theta, u0=u0)
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    r = b.add_rod(x, E=E, G=E / 3.0, rho=1000.0, radius=params["radius"], rest_d1=bishop_reference(x, u0)[0],
                  rest_curvature=rmodel.wbar[1:-1], rest_twist=rmodel.mbar[1:-1])
    b.clamp(r, "start")
    return b.build(), xr


@register("flipped-frames", "bending with 4D vs 2D curvature (averaged or slerped frames), material frames flipped "
          "(Takahashi and Batty Figs. 2-3)", FLIP_PARAMS, paper="sag-free-der-active-set-cholesky")
def run_flipped(params, progress):
    """A horizontal strand, clamped at the root, sags under gravity; its material frames alternate by pi
    when ``flipped``. The 4D model always runs; ``model`` picks the 2D model run beside it:

    * ``2d-average``: the averaged frames vanish, the model has no bending resistance and the strand
      collapses (Fig. 2; metrics ``*_2d``);
    * ``2d-slerp``: slerped unit vertex frames (:mod:`rodlab.der_implicit.slerp_bending`), with the
      approximated gradient of [41] or the exact one (Fig. 3; metrics ``*_slerp``). With a straight rest
      shape the slerped energy equals the 4D one and the approximation is exact; ``rest_curvature`` > 0
      exposes the approximation.

    Each run is the ``der-implicit`` simulator (option ``bending``) on :func:`flipped_world`, recorded
    by :func:`rodlab.experiment.record`. Metrics per run: tip height, bending force of a prescribed
    bend (quarter-circle arc), energy growth, tip oscillation, stability, ``us_per_step``; unprefixed
    ``stable``, ``energy_growth_max``, ``tip_oscillation`` belong to the chosen model. Trajectories
    are recorded every frame (60 fps; 4 steps of 1/240 s per frame)."""
    from ..der_implicit.energies import der_elastic, pack_dofs, update_frames
    from ..der_implicit.slerp_bending import slerp_elastic, slerp_frames_all
    from ..experiment import record
    from ..solvers import make_simulator

    n = params["n"]
    L = params["length"]
    theta = np.array([math.pi * (j % 2) for j in range(n - 1)]) if params["flipped"] else np.zeros(n - 1)
    world, xr = flipped_world(params, theta)
    choice = params["model"]
    runs = [("4d", "4d")]
    if choice == "2d-average":
        runs.append(("2d", choice))
    elif choice == "2d-slerp":
        runs.append(("slerp", choice))
    out = {}
    trajs = {}
    energies = {}
    if len(runs) > 1:
        from ..checkpoint import refuse_in_run

        refuse_in_run("flipped-frames", f"with model={choice}: the 4D run and the {choice} run are two runs; "
                      "checkpoint the 4D run alone (--set model=4d)")
    ne = n - 1
    nframes = int(round(params["t_end"] * 60))
    for k, (label, kind) in enumerate(runs):
        opts = dict(bending=kind, line_search_failures="count",  # as the sag-free paper's stepper
                    integrator=params["integrator"])
        if kind == "2d-slerp":
            opts.update(gradient=params["gradient"], line_search=12 if params["line_search"] else 0)
        sim = make_simulator(world, "der-implicit", dt=1.0 / 240.0, **opts)
        model = sim.models[0]
        state = sim.initial_state()
        state.edge_theta[...] = theta
        x = np.array(state.vertex_x)
        tan0 = np.diff(x, axis=0) / np.linalg.norm(np.diff(x, axis=0), axis=1)[:, None]
        a10, mref0 = np.array(state.edge_ref_d1), np.array(state.joint_ref_twist)
        # bending force of a prescribed bend (quarter-circle arc), per unit bending stiffness
        s = np.linspace(0.0, L, n)
        R = 2 * L / math.pi
        xb = np.stack([R * np.sin(s / R), np.zeros(n), R * (np.cos(s / R) - 1.0)], axis=1)
        qb = pack_dofs(xb, theta)
        tan, elen, a1, mref = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
        update_frames(qb, tan0, a10, mref0, tan, elen, a1, mref)
        gvec = np.zeros(qb.size)
        band = np.zeros((qb.size, 11))
        z = np.zeros(ne)
        if kind == "2d-slerp":
            slerp_elastic(qb, tan, elen, a1, mref, z, model.lbar, model.kbend, sim.rod_rest_curvature2[0], np.zeros(n),
                          model.mbar, model.lvor, 0, int(params["gradient"] == "exact"), 1, gvec, band)
        else:
            der_elastic(qb, tan, elen, a1, mref, z, model.lbar, model.kbend, model.wbar, np.zeros(n), model.mbar,
                        model.lvor, kind == "2d-average", 1, gvec, band)
        force = np.sqrt(gvec[0::4] ** 2 + gvec[1::4] ** 2 + gvec[2::4] ** 2)
        out[f"bend_force_{label}"] = float(force.max())
        if k == 0:
            # frame norms at t = 0: averaged frames (m1^{i-1} + m1^i) / 2 and slerped vertex frames
            q0 = pack_dofs(x, theta)
            update_frames(q0, tan0, a10, mref0, tan, elen, a1, mref)
            m1 = np.cos(theta)[:, None] * a1 + np.sin(theta)[:, None] * np.cross(tan, a1)
            out["average_frame_norm_min"] = float(np.linalg.norm(0.5 * (m1[:-1] + m1[1:]), axis=1).min())
            wv, Mv = np.zeros((n, 2)), np.zeros((n, 2, 3))
            slerp_frames_all(q0, tan, elen, a1, mref, 0, wv, Mv)
            out["slerp_frame_norm_error_max"] = float(np.abs(np.linalg.norm(Mv[1:-1], axis=2) - 1.0).max())
        runner = _StopOnFailure(sim)
        batch = sim.batch
        rec = record(runner, state, 4 * nframes, frames=max(nframes, 1), stop=lambda st, rn=runner: rn.failed,
                     progress=_RunProgress(progress, k, len(runs)),
                     probes={"energy": lambda st: sim.energies(st)["total"]},
                     tallies={"line_search_failures":  # per call; a failed call (0 steps) counts none
                              lambda rep, b=batch: int(b.rod_line_search_failures.sum()) if rep.steps else 0})
        keep = slice(0, rec.x.shape[0] - (1 if runner.failed else 0))
        xs = rec.x[keep]
        Es = rec.probes["energy"][keep]
        trajs[label] = xs
        energies[label] = np.asarray(Es)
        em = _energy_metrics(Es, xs[:, -1, 2])
        out[f"tip_z_{label}"] = float(xs[-1][-1, 2])
        out[f"energy_growth_{label}"] = em["growth"]
        out[f"energy_growth_rel_{label}"] = em["growth_rel"]
        out[f"tip_osc_{label}"] = em["osc"]
        out[f"stable_{label}"] = bool(em["stable"] and len(xs) == nframes + 1)
        out[f"line_search_failures_{label}"] = int(rec.tallies["line_search_failures"])
        out[f"us_per_step_{label}"] = rec.summary(world.n_vertices)["us_per_step"]
        progress.update(k + 1, len(runs))
    metrics = dict(out)
    last = runs[-1][0]
    if last != "4d":
        metrics[f"bend_force_ratio_{last}_over_4d"] = out[f"bend_force_{last}"] / out["bend_force_4d"]
    metrics["stable"] = out[f"stable_{last}"]
    metrics["energy_growth_max"] = out[f"energy_growth_{last}"]
    metrics["tip_oscillation"] = out[f"tip_osc_{last}"]
    metrics["flipped"] = bool(params["flipped"])
    metrics["model"] = choice
    t = np.arange(trajs["4d"].shape[0]) / 60.0
    traj = {"t": t, "x": trajs["4d"], "energy_4d": energies["4d"], "rest": xr}
    if last != "4d":
        traj[f"x_{last}"] = trajs[last]
        traj[f"t_{last}"] = np.arange(trajs[last].shape[0]) / 60.0
        traj[f"energy_{last}"] = energies[last]
    return SceneResult(metrics, traj, plot=_plot_flipped)


def _plot_flipped(result, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path

    tr = result.trajectory
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(tr["x"][-1][:, 0], tr["x"][-1][:, 2], label="4D curvature")
    for key, lab in (("x_2d", "2D curvature (averaged frames)"), ("x_slerp", "2D curvature (slerped frames)")):
        if key in tr:
            ax.plot(tr[key][-1][:, 0], tr[key][-1][:, 2], label=lab)
    ax.plot(tr["x"][0][:, 0], tr["x"][0][:, 2], "k--", label="initial")
    ax.set_aspect("equal")
    ax.legend()
    ax.set_title(f"flipped frames: {result.metrics['flipped']}")
    path = Path(out_dir) / "sagfree_flipped_frames.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
