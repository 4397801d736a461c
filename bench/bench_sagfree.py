"""Sag-free optimization: the paper's comparisons on 30-vertex strands (Figs. 5-9, Table I), timings, and
the banded-vs-reordered systems of Fig. 4. Writes its section of docs/benchmarks-sagfree.md and
docs/figures/sagfree_fig*.png. About a minute on the 2-core machine:

    python bench/bench_sagfree.py
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _sagfree_md import FIG, machine, table, write_section  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rodlab.inverse.qp import PC_NAMES, MprgpWorkspace, ipm, mprgp, mprgp_fast_solve, pgs, prepare_pc  # noqa: E402
from rodlab.inverse.sagfree import SagFreeOptions, forward_drift, make_problem, optimize_strand  # noqa: E402
from rodlab.scenes.sagfree_scenes import strand_shape  # noqa: E402

R, E, RHO, LEN, N = 5e-4, 5e7, 1000.0, 0.25, 30
FIG5_RHO = 1e6  # a penalty weight large enough that the rest-only optimum presses on the curvature bounds
CAPTURE_AT = 2  # the BCQP of Figs. 8-9 / Table I: the third Newton step of the ALM on the horizontal strand
FAST = ("asc", "ic", "mic", "asc-schur")  # the preconditioners of the compiled fast path (mprgp_fast_solve)


def problem(orientation, n=N):
    return make_problem(strand_shape(orientation, n, LEN), radius=R, E=E, G=E / 3, rho=RHO)


def best_run(pb, opts, rounds=5):
    """Best CPU time of this process over ``rounds`` runs [s] (the machine is shared)."""
    res = optimize_strand(pb, opts)
    wall = res.cpu_s
    for _ in range(rounds - 1):
        wall = min(wall, optimize_strand(pb, opts).cpu_s)
    return res, wall


def schemes_figure(rows):
    fig, axes = plt.subplots(2, 5, figsize=(18, 7))
    for r, orientation in enumerate(("vertical", "horizontal")):
        pb = problem(orientation)
        g = strand_shape(orientation, N, LEN)
        runs = [("naive", None)] + [(s if s != "alm" else "alm, asc", SagFreeOptions(scheme=s, precond="asc"))
                                    for s in ("rest", "penalty", "alm")]
        runs.append(("alm, asc-schur", SagFreeOptions(precond="asc-schur")))
        for c, (name, opts) in enumerate(runs):
            ax = axes[r, c]
            if opts is None:
                model = pb.model
                res = None
            else:
                res, wall = best_run(pb, opts)
                model = res.model
            drift, (t, xs) = forward_drift(pb, model, 2.0, record=8)
            ax.plot(g[:, 0], g[:, 2], "k--", lw=2, label="groomed")
            for k, xx in enumerate(xs):
                ax.plot(xx[:, 0], xx[:, 2], color=plt.cm.viridis(k / max(len(xs) - 1, 1)), lw=1)
            if c == 0:
                lims = (ax.get_xlim(), ax.get_ylim())
            else:
                ax.set_xlim(*lims[0])
                ax.set_ylim(*lims[1])
            ax.set_aspect("equal")
            ax.set_title(f"{orientation}: {name}\ndrift {drift:.2e} L")
            if res is not None:
                rows.append([orientation, name, res.residual, drift, res.iterations, res.qp_iterations_mean, wall * 1e3,
                             res.stiffness_change_max, res.rest_change_max, res.bounds_ok])
            else:
                rows.append([orientation, "naive", 1.0, drift, 0, 0.0, 0.0, 0.0, 0.0, True])
    fig.suptitle("Takahashi and Batty Figs. 6-7: three schemes, 2 s of forward simulation (frames coloured by time)")
    fig.tight_layout()
    fig.savefig(FIG / "sagfree_fig6_7_schemes.png", dpi=90)
    plt.close(fig)


def penalty_vs_active_set(rows):
    """Fig. 5: rest shape only on the horizontal strand, box constraints by penalty vs MPRGP."""
    pb = problem("horizontal")
    fig, ax = plt.subplots(figsize=(6, 4))
    out = {}
    for name, qp in (("penalty box", "penalty-box"), ("active set (ASC-MPRGP)", "mprgp")):
        res, wall = best_run(pb, SagFreeOptions(scheme="rest", qp=qp, rho=FIG5_RHO, precond="asc"))
        dk = res.params[0::7] - res.params0[0::7]
        ax.plot(np.arange(1, N - 1), dk, "o-", ms=3, label=name)
        drift, _ = forward_drift(pb, res.model, 2.0)
        viol = float(np.max(np.abs(np.r_[res.params[0::7] - res.params0[0::7], res.params[1::7] - res.params0[1::7]])) - 0.4)
        rows.append([name, res.residual, drift, res.iterations, res.qp_iterations_mean, wall * 1e3, max(viol, 0.0), res.bounds_ok])
        out[name] = res
    ax.axhline(0.4, color="k", lw=0.5)
    ax.axhline(-0.4, color="k", lw=0.5)
    ax.set_xlabel("vertex")
    ax.set_ylabel("rest curvature change (first component)")
    ax.set_title("Fig. 5: box constraints, penalty vs active set")
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIG / "sagfree_fig5_penalty_vs_active_set.png", dpi=100)
    plt.close(fig)
    return out


def capture_qp(delta=0.4, at=CAPTURE_AT):
    pb = problem("horizontal")
    cap = {}
    optimize_strand(pb, SagFreeOptions(scheme="alm", delta=delta, max_iters=at + 1, tol=0.0, precond="asc"), capture_at=at,
                    capture=cap)
    return cap


def run_qp(cap, solver, pc="asc", rtol=1e-8, maxit=10000, rounds=5):
    H, b, lo, hi = cap["H"], cap["b"], cap["lo"], cap["hi"]
    P = b.shape[0]
    hist = np.full(maxit + 1, np.nan)
    best = math.inf
    for _ in range(rounds):
        x = np.zeros(P)
        t = time.process_time()
        if solver == "mprgp" and pc in FAST:
            # as the optimizer runs them: factor + solve in one compiled call, the paper's expansion step
            ws = MprgpWorkspace(P, H.shape[1] - 1)
            t = time.process_time()
            it, res, _ = mprgp_fast_solve(PC_NAMES[pc], H, b, lo, hi, x, rtol, 1e-14, maxit, hist, ws.counts, 1.0, ws.Ar, ws.Lb,
                                          ws.Lf, ws.D, ws.ws, ws.free, False, *ws.schur)
        elif solver == "mprgp":
            L, D = np.empty_like(H), np.empty(P)
            prepare_pc(PC_NAMES[pc], H, L, D)
            it, res = mprgp(H, b, lo, hi, x, PC_NAMES[pc], L, D, rtol, 1e-14, maxit, hist)
        elif solver == "pgs":
            it, res = pgs(H, b, lo, hi, x, rtol, 1e-14, maxit, hist)
        else:
            it, res = ipm(H, b, lo, hi, x, rtol, 1e-14, 200, hist)
        best = min(best, time.process_time() - t)
    return it, res, best, hist[: it + 1].copy(), x


def all_qps(orientation, precond="asc", n=N):
    """Every BCQP of the full ALM optimization of a strand (captured one Newton step at a time), with the
    relative tolerance the optimizer gave it (``min(qp_rtol, residual/10)``, at least 1e-12)."""
    pb = problem(orientation, n)
    opts = SagFreeOptions(precond=precond)
    ref = optimize_strand(pb, opts)
    qps = []
    for k in range(ref.iterations):
        cap = {}
        optimize_strand(pb, opts, capture_at=k, capture=cap)
        cap["rtol"] = max(min(opts.qp_rtol, 0.1 * float(ref.residual_history[k])), 1e-12)
        qps.append(cap)
    return ref, qps


def time_solve(cap, pc="asc", reps=20, rounds=9):
    """CPU time [s] of one factor + solve (:func:`mprgp_fast_solve`, one compiled call, workspace reused),
    best over ``rounds`` of the mean over ``reps`` calls; and the iteration count."""
    H, b, lo, hi = cap["H"], cap["b"], cap["lo"], cap["hi"]
    P = b.shape[0]
    ws = MprgpWorkspace(P, H.shape[1] - 1)
    x = np.zeros(P)
    h = np.zeros(0)
    code = PC_NAMES[pc]
    args = (H, b, lo, hi, x, cap["rtol"], 1e-14, 500, h, ws.counts, 1.0, ws.Ar, ws.Lb, ws.Lf, ws.D, ws.ws, ws.free, False, *ws.schur)
    best = math.inf
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(reps):
            x[:] = 0.0
            it, _, _ = mprgp_fast_solve(code, *args)
        best = min(best, (time.process_time() - t) / reps)
    return best, it


def solve_distribution(rows, opt_rows):
    """Per-solve time and iterations of ASC-MPRGP and ASC-Schur-MPRGP over every QP of the full vertical and
    horizontal ALM runs (each with its own QPs), and the full optimization time with each (best of 9)."""
    for orientation in ("vertical", "horizontal"):
        for pc in ("asc", "asc-schur"):
            ref, qps = all_qps(orientation, pc)
            t_it = np.array([time_solve(c, pc) for c in qps])
            ts, its = t_it[:, 0] * 1e3, t_it[:, 1]
            rows.append([orientation, pc, len(qps), f"{ts.mean():.3f} / {np.median(ts):.3f} / {ts.max():.3f}",
                         f"{its.mean():.1f} / {np.median(its):.0f} / {its.max():.0f}", f"{1e3 * ts.sum() / its.sum():.1f}",
                         int(np.sum(ts <= 0.1))])
            res, wall = best_run(problem(orientation), SagFreeOptions(precond=pc), rounds=9)
            opt_rows.append([orientation, pc, res.success, res.residual, res.iterations, res.qp_iterations_mean, wall * 1e3])


def profile(rows, cap, reps=300, rounds=11):
    """Pieces of one ASC-MPRGP and one ASC-Schur-MPRGP solve on the hard QP, each timed in a compiled loop
    (no Python dispatch): CPU time per call [us], best and median of ``rounds``. Rows: piece, ASC, ASC-Schur."""
    from numba import njit

    from rodlab.inverse.qp import PC_ASC, PC_ASCS, prepare_fast
    from rodlab.inverse.qp.fast_preconditioners import _apply, _schur_fast
    from rodlab.linalg.banded_rows import band_to_rows, rband_matvec

    @njit
    def loop_prepare(k, H, Ar, Lb, Lf, D):
        for _ in range(k):
            prepare_fast(6, H, Ar, Lb, Lf, D)

    @njit
    def loop_rows(k, H, Ar):
        for _ in range(k):
            band_to_rows(H, Ar)

    @njit
    def loop_matvec(k, Ar, xp, op):
        for _ in range(k):
            rband_matvec(Ar, xp, op)

    @njit
    def loop_apply(k, Lf, free, r, yp, zp):
        for _ in range(k):
            _apply(Lf, free, r, yp, zp, zp)

    @njit
    def loop_schur(k, Lf, free, lo, hi, r, yp, zp, fm, e, Y, C, w, iw):
        for _ in range(k):
            _schur_fast(Lf, free, lo, hi, r, yp, zp, zp, fm, e, Y, C, w, iw)

    @njit
    def loop_solve(k, pc, maxit, H, b, lo, hi, x, h, c, Ar, Lb, Lf, D, ws, fr, fm, Y, C, w, iw):
        it = 0
        for _ in range(k):
            x[:] = 0.0
            it, _, _ = mprgp_fast_solve(pc, H, b, lo, hi, x, 1e-8, 1e-14, maxit, h, c, 1.0, Ar, Lb, Lf, D, ws, fr, maxit < 0,
                                        fm, Y, C, w, iw)
        return it

    H, b, lo, hi = cap["H"], cap["b"], cap["lo"], cap["hi"]
    P, p = b.shape[0], H.shape[1] - 1
    w = MprgpWorkspace(P, p)
    x, h = np.zeros(P), np.zeros(0)
    rng = np.random.default_rng(0)
    xp, op, yp = np.zeros(P + 2 * p), np.zeros(P + 2 * p), np.zeros(P + 2 * p)
    xp[p:p + P] = rng.normal(size=P)
    r = rng.normal(size=P)

    def timed(f, k=reps):
        f(1)
        ts = []
        for _ in range(rounds):
            t = time.process_time()
            f(k)
            ts.append((time.process_time() - t) / k * 1e6)
        return f"{min(ts):.1f} / {np.median(ts):.1f}"

    def solve(pc, k, maxit):
        return loop_solve(k, pc, maxit, H, b, lo, hi, x, h, w.counts, w.Ar, w.Lb, w.Lf, w.D, w.ws, w.free, *w.schur)

    whole, steps = {}, {}
    for pc in (PC_ASC, PC_ASCS):
        its = solve(pc, 1, 10000)
        w.counts[:] = 0.0
        solve(pc, 1, 10000)
        steps[pc] = f"{its} = {w.counts[0]:.0f} CG + {w.counts[1]:.0f} exp. + {w.counts[2]:.0f} prop."
        whole[pc] = timed(lambda k: solve(pc, k, 10000), reps // 3)
    # the hard QP's active set at its solution (7 bounds), for the Schur application with cached columns
    free = ~(((x <= lo) | (x >= hi)) & (lo < hi))
    r = r * free
    fm, Y, C, wv, iw = w.schur
    iw[:] = -1
    iw[2 * P + Y.shape[0]:] = 0
    e = np.zeros(P)
    rows.append(["band -> full rows (`band_to_rows`)", timed(lambda k: loop_rows(k, H, w.Ar)), "same"])
    rows.append(["factor, full rows and both factor layouts (`prepare_fast`)",
                 timed(lambda k: loop_prepare(k, H, w.Ar, w.Lb, w.Lf, w.D)), "same"])
    rows.append(["product with H (`rband_matvec`)", timed(lambda k: loop_matvec(k, w.Ar, xp, op), 20 * reps), "same"])
    rows.append([f"application, {int(np.sum(~free))} bounds active (`_apply`, band 18 / `_schur_fast`, columns cached)",
                 timed(lambda k: loop_apply(k, w.Lf, free, r, yp, op), 20 * reps),
                 timed(lambda k: loop_schur(k, w.Lf, free, lo, hi, r, yp, op, fm, e, Y, C, wv, iw), 20 * reps)])
    rows.append(["solve with 0 iterations (set-up, first gradient and application)", timed(lambda k: solve(PC_ASC, k, 0)),
                 timed(lambda k: solve(PC_ASCS, k, 0))])
    rows.append(["whole solve: iterations", steps[PC_ASC], steps[PC_ASCS]])
    rows.append(["whole solve", whole[PC_ASC], whole[PC_ASCS]])


def preconditioners_figure(rows, cap):
    fig, ax = plt.subplots(figsize=(6, 4))
    for pc in ("none", "diag", "wj", "ssor", "ic", "mic", "asc", "asc-schur"):
        it, res, wall, hist, _ = run_qp(cap, "mprgp", pc, rounds=3 if pc in ("none", "diag") else 5)
        ax.semilogy(np.linspace(0, wall * 1e3, len(hist)), hist / hist[0], label=f"{pc.upper()}-MPRGP ({it} it)")
        rows.append([f"{pc.upper()}-MPRGP", it, res / hist[0], wall * 1e3])
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("relative projected-gradient norm")
    ax.set_title("Fig. 8: MPRGP preconditioners (one BCQP)")
    ax.set_xscale("symlog", linthresh=0.01)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG / "sagfree_fig8_preconditioners.png", dpi=100)
    plt.close(fig)


def solvers_figure(rows, cap):
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, solver, pc in (("PGS", "pgs", "asc"), ("IPM", "ipm", "asc"), ("ASC-MPRGP", "mprgp", "asc"),
                             ("ASC-Schur-MPRGP", "mprgp", "asc-schur")):
        it, res, wall, hist, _ = run_qp(cap, solver, pc, rounds=3)
        ax.semilogy(np.linspace(0, wall * 1e3, len(hist)), hist / hist[0], label=f"{name} ({it} it)")
        rows.append([name, it, res / hist[0], wall * 1e3])
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("relative residual (IPM: KKT residual)")
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set_title("Fig. 9: BCQP solvers (one BCQP)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIG / "sagfree_fig9_bcqp_solvers.png", dpi=100)
    plt.close(fig)


def table1(rows):
    for delta in (0.2, 0.3, 0.4, 0.5, 0.6):
        cap = capture_qp(delta)
        it_i, _, w_i, _, xi = run_qp(cap, "ipm", rtol=1e-8)
        it_a, _, w_a, _, xa = run_qp(cap, "mprgp", "asc", rtol=1e-8)
        it_s, _, w_s, _, xs = run_qp(cap, "mprgp", "asc-schur", rtol=1e-8)
        nact = int(np.sum(((xa <= cap["lo"]) | (xa >= cap["hi"])) & (cap["lo"] < cap["hi"])))
        rows.append([delta, f"{w_i * 1e3:.3f} ({it_i})", f"{w_a * 1e3:.3f} ({it_a})", f"{w_s * 1e3:.3f} ({it_s})", nact])


def flipped_frames_figure(rows):
    """Fig. 2: 4D vs 2D (averaged-frame) curvature, with and without flipped material frames."""
    from rodlab.scenes.registry import run_scene

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, flipped in zip(axes, (False, True)):
        r = run_scene("flipped-frames", flipped=flipped, t_end=1.0)
        tr = r.trajectory
        ax.plot(tr["x"][0][:, 0], tr["x"][0][:, 2], "k--", label="initial")
        ax.plot(tr["x"][-1][:, 0], tr["x"][-1][:, 2], label="4D curvature")
        ax.plot(tr["x_2d"][-1][:, 0], tr["x_2d"][-1][:, 2], label="2D curvature (averaged frames)")
        ax.set_title(f"frames {'flipped' if flipped else 'aligned'}, t = 1 s")
        ax.set_aspect("equal")
        ax.set_xlabel("x [m]")
        m = r.metrics
        rows.append([flipped, m["bend_force_4d"], m["bend_force_2d"], m["tip_z_4d"], m["tip_z_2d"]])
    axes[0].set_ylabel("z [m]")
    axes[1].legend(fontsize=8)
    fig.suptitle("Fig. 2: horizontal strand (30 vertices) with 4D vs 2D curvature")
    fig.tight_layout()
    fig.savefig(FIG / "sagfree_fig2_flipped_frames.png", dpi=100)
    plt.close(fig)


def main():
    FIG.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # compile everything once
    pb = problem("horizontal", 8)
    for qp in ("mprgp", "pgs", "ipm", "penalty-box"):
        optimize_strand(pb, SagFreeOptions(qp=qp, max_iters=2))
    flip_rows = []
    flipped_frames_figure(flip_rows)
    scheme_rows = []
    schemes_figure(scheme_rows)
    pen_rows = []
    penalty_vs_active_set(pen_rows)
    cap = capture_qp()
    pc_rows = []
    preconditioners_figure(pc_rows, cap)
    solver_rows = []
    solvers_figure(solver_rows, cap)
    t1_rows = []
    table1(t1_rows)
    prof_rows = []
    profile(prof_rows, cap)
    dist_rows, opt_rows = [], []
    solve_distribution(dist_rows, opt_rows)
    # a QP of the Fig. 5 problem (rest shape only, curvature bounds active): the paper's "one ASC-MPRGP solve"
    pb5 = problem("horizontal")
    cap5 = {}
    optimize_strand(pb5, SagFreeOptions(scheme="rest", rho=FIG5_RHO, max_iters=6, tol=0.0, precond="asc"), capture_at=5,
                    capture=cap5)
    it5, _, w5, _, x5 = run_qp(cap5, "mprgp", "asc", rtol=1e-8, rounds=9)
    act5 = int(np.sum(((x5 <= cap5["lo"]) | (x5 >= cap5["hi"])) & (cap5["lo"] < cap5["hi"])))
    asc = [r for r in pc_rows if r[0] == "ASC-MPRGP"][0]
    ascs = [r for r in pc_rows if r[0] == "ASC-SCHUR-MPRGP"][0]
    body = [
        "## Sag-free optimization (`bench/bench_sagfree.py`)", "", f"Machine: {machine()}.", "",
        f"Strands: {N} vertices, length {LEN} m, radius {R} m, E = {E:g} Pa, G = E/3, rho = {RHO:g} kg/m^3, gravity 9.81 m/s^2, "
        "default options except where a row says otherwise: the paper comparisons use the paper's ASC preconditioner "
        "(delta 0.4, rho 1e4 (the ALM grows it x10 to at most 1e7 when an iteration does not halve the "
        "residual; the penalty schemes keep it), W = 1 on stiffness scales and 1e-2 on rest shape, MPRGP, relative QP "
        "tolerance min(1e-4, residual/10), force tolerance 1e-9 of the vertex weight).", "",
        "### Fig. 2: 4D vs 2D curvature with flipped material frames (scene `flipped-frames`)", "",
        table(["frames flipped", "bending force 4D [N]", "bending force 2D [N]", "tip z 4D [m]", "tip z 2D [m]"], flip_rows),
        "", "Bending force: largest vertex force of a prescribed quarter-circle bend of the straight-at-rest strand.", "",
        "![flipped frames](figures/sagfree_fig2_flipped_frames.png)", "",
        "### Figs. 6-7: three schemes (optimization time: best CPU time of 5 runs, one core)", "",
        table(["strand", "scheme", "force residual", "max drift / L (2 s)", "outer its", "MPRGP its (mean)", "CPU time [ms]",
               "max stiffness change", "max rest change", "bounds ok"], scheme_rows),
        "", "![schemes](figures/sagfree_fig6_7_schemes.png)", "",
        f"### Fig. 5: box constraints by penalty (weight 1e4) vs active set (horizontal strand, rest shape only, rho = {FIG5_RHO:g})", "",
        table(["box handling", "force residual", "max drift / L", "outer its", "QP its (mean)", "CPU time [ms]",
               "max bound violation", "bounds ok"], pen_rows),
        "", "![penalty vs active set](figures/sagfree_fig5_penalty_vs_active_set.png)", "",
        f"### Figs. 8-9: one BCQP (Newton step {CAPTURE_AT + 1} of the ALM on the horizontal strand, Jacobi-scaled, "
        f"{cap['b'].shape[0]} unknowns), relative tolerance 1e-8", "",
        table(["solver", "iterations", "final relative residual", "CPU time [ms] (incl. factorization)"], pc_rows + solver_rows),
        "", f"One ASC-MPRGP solve (including its factorization): {asc[3]:.3f} ms, {asc[1]} iterations; with the Schur "
        f"correction {ascs[3]:.3f} ms, {ascs[1]} iterations (paper: 0.3 ms, 19 iterations). A QP of the Fig. 5 problem "
        f"(rest shape only, Newton step 6, {act5} curvature bounds active): ASC-MPRGP {w5 * 1e3:.3f} ms, {it5} iterations.", "",
        "![preconditioners](figures/sagfree_fig8_preconditioners.png) ![solvers](figures/sagfree_fig9_bcqp_solvers.png)", "",
        "### Table I: interior point vs ASC-MPRGP, time [ms] (iterations), per rest-curvature bound delta", "",
        table(["delta", "IPM", "ASC-MPRGP", "ASC-Schur-MPRGP", "active bounds at the solution"], t1_rows), "",
        "ASC, IC, MIC and ASC-Schur run as the optimizer runs them (`mprgp_fast_solve`: factor + solve in one compiled "
        "call, workspace, the paper's fixed-length expansion); the other preconditioners run `mprgp_core`.", "",
        "### MPRGP per solve over every QP of the full ALM optimizations (default options, 30 vertices), ASC and ASC-Schur", "",
        "CPU time of one factor + solve (`mprgp_fast_solve`, workspace reused, the paper's expansion step), best of 9 "
        "rounds of the mean of 20 calls, with the relative tolerance the optimizer used; each preconditioner on the QPs "
        "of its own ALM run:", "",
        table(["strand", "preconditioner", "QPs", "time per solve [ms] mean / median / max", "iterations mean / median / max",
               "us per iteration (all QPs)", "QPs <= 0.1 ms"], dist_rows), "",
        "Full optimization with each (best CPU time of 9 runs):", "",
        table(["strand", "preconditioner", "success", "force residual", "outer its", "MPRGP its (mean)", "CPU time [ms]"],
              opt_rows), "",
        "### Profile of one MPRGP solve on the hard QP (Figs. 8-9), compiled loops", "",
        table(["piece", "ASC: CPU time per call [us], best / median of 11", "ASC-Schur"], prof_rows),
        "", f"(script wall time {time.perf_counter() - t0:.0f} s)",
    ]
    write_section("sagfree", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
