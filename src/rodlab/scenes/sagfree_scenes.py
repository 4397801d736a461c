"""Scenes of the sag-free paper (Takahashi and Batty): ``sagfree-strand`` (Figs. 6-7) and
``flipped-frames`` (Fig. 2, 4D vs 2D curvature with flipped material frames)."""
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
    Param("precond", "asc-schur", "MPRGP preconditioner (asc: the paper's active-set Cholesky; asc-schur: the same factor "
          "with the active-set Schur-complement correction)",
          choices=("none", "diag", "wj", "ssor", "ic", "mic", "asc", "asc-schur")),
    Param("qp", "mprgp", "box-constrained QP solver", choices=("mprgp", "pgs", "ipm", "penalty-box")),
    Param("max_iters", 200, "outer (Newton / augmented Lagrangian) iteration cap", low=0, high=100000),
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
    drift, (t, xs) = forward_drift(problem, res.model, params["t_end"], record=60)
    drift_naive, (tn, xn) = forward_drift(problem, problem.model, params["t_end"], record=60)
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
]


@register("flipped-frames", "bending with 4D vs 2D (averaged-frame) curvature, material frames flipped (Takahashi and Batty Fig. 2)",
          FLIP_PARAMS, paper="sag-free-der-active-set-cholesky")
def run_flipped(params, progress):
    """A horizontal strand, clamped at the root, sags under gravity. Its rest shape is straight and its
    material frames alternate by pi when ``flipped``; with 2D curvature the averaged frames vanish, so
    the model has no bending resistance and the strand collapses. Metrics compare the tip sag and the
    bending force at t = 0 of a prescribed bend."""
    from ..der_implicit.energies import der_elastic, unpack_dofs, update_frames
    from ..der_implicit.stepper import DERImplicitStepper, build_rod, with_params

    n = params["n"]
    L = params["length"]
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0.0, L, n)
    theta = np.array([math.pi * (j % 2) for j in range(n - 1)]) if params["flipped"] else np.zeros(n - 1)
    out = {}
    trajs = {}
    for label, c2 in (("4d", False), ("2d", True)):
        model, state = build_rod(x, radius=params["radius"], E=params["E"], G=params["E"] / 3.0, rho=1000.0,
                                 theta=theta, damping=1.0, u0=np.array([0.0, 0.0, 1.0]))
        model = with_params(model, curv2d=c2)
        # bending force of a prescribed bend (quarter-circle arc), per unit bending stiffness
        s = np.linspace(0.0, L, n)
        R = 2 * L / math.pi
        xb = np.stack([R * np.sin(s / R), np.zeros(n), R * (np.cos(s / R) - 1.0)], axis=1)
        from ..der_implicit.energies import pack_dofs

        qb = pack_dofs(xb, theta)
        ne = n - 1
        tan, elen, a1, mref = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
        update_frames(qb, state.tan, state.a1, state.mref, tan, elen, a1, mref)
        gvec = np.zeros(qb.size)
        band = np.zeros((qb.size, 11))
        z = np.zeros(ne)
        der_elastic(qb, tan, elen, a1, mref, z, model.lbar, model.kbend, model.wbar, np.zeros(n), model.mbar,
                    model.lvor, c2, 1, gvec, band)
        force = np.sqrt(gvec[0::4] ** 2 + gvec[1::4] ** 2 + gvec[2::4] ** 2)
        out[f"bend_force_{label}"] = float(force.max())
        st = DERImplicitStepper(model, h=1.0 / 240.0)
        nsteps = int(round(params["t_end"] * 240))
        xs = [unpack_dofs(state.q)[0]]
        for k in range(0, nsteps, 24):
            st.advance(state, min(24, nsteps - k))
            xs.append(unpack_dofs(state.q)[0])
        trajs[label] = np.asarray(xs)
        out[f"tip_z_{label}"] = float(xs[-1][-1, 2])
        progress.update(1 if label == "4d" else 2, 2)
    metrics = dict(out)
    metrics["bend_force_ratio_2d_over_4d"] = out["bend_force_2d"] / out["bend_force_4d"]
    metrics["flipped"] = bool(params["flipped"])
    t = np.linspace(0.0, params["t_end"], trajs["4d"].shape[0])
    return SceneResult(metrics, {"t": t, "x": trajs["4d"], "x_2d": trajs["2d"]}, plot=_plot_flipped)


def _plot_flipped(result, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path

    tr = result.trajectory
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(tr["x"][-1][:, 0], tr["x"][-1][:, 2], label="4D curvature")
    ax.plot(tr["x_2d"][-1][:, 0], tr["x_2d"][-1][:, 2], label="2D curvature (averaged frames)")
    ax.plot(tr["x"][0][:, 0], tr["x"][0][:, 2], "k--", label="initial")
    ax.set_aspect("equal")
    ax.legend()
    ax.set_title(f"flipped frames: {result.metrics['flipped']}")
    path = Path(out_dir) / "sagfree_flipped_frames.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
