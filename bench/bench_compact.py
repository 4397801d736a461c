"""Benchmarks and figures of the compact inextensible Cosserat rod (Zhao et al.).

    python bench/bench_compact.py [part ...]      parts: precond young penalty kkt stability scenes (default: all)

Writes docs/figures/compact_fig*.png and docs/benchmarks-compact.md. Each part caches its numbers
in $TMPDIR/rodlab-bench-compact/<part>.json so the Markdown page is rebuilt from every part run so
far. Timings are wall-clock on this machine (one thread), best of a few repeats where noted.
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # one thread: the paper's timings are single-threaded

import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from rodlab.compact.baselines import CartesianSolver, run_cartesian  # noqa: E402
from rodlab.compact.chain import chain_forward, jac_t_mul  # noqa: E402
from rodlab.compact.energies import eval_energy, reduced_hessian  # noqa: E402
from rodlab.compact.pcg import PRECONDITIONERS, pcg_solve  # noqa: E402
from rodlab.compact.simulate import simulate  # noqa: E402
from rodlab.compact.sqp import Workspace, prepare_preconditioner  # noqa: E402
from rodlab.scenes.compact_scenes import HELIX_PARAMS, build_helix  # noqa: E402

FIG = ROOT / "docs" / "figures"
CACHE = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / "rodlab-bench-compact"
PRECS = ["diagonal", "block-diagonal", "hybrid", "direct"]
COLORS = {"diagonal": "tab:gray", "block-diagonal": "tab:blue", "hybrid": "tab:red", "direct": "tab:green", "none": "k"}


def helix_params(**kw):
    """The helix scene's parameters; this benchmark counts ``n`` in segments (the paper's unit),
    the scene in vertices (``n`` segments = ``n + 1`` vertices)."""
    p = {q.name: q.default for q in HELIX_PARAMS}
    if "n" in kw:
        kw = dict(kw, n=kw["n"] + 1)
    p.update(kw)
    return p


def best_time(f, reps=5, inner=3):
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def capture_systems(n, steps=20, every=4, E=1e9):
    """Helix with n segments stepped with the hybrid PCG; every ``every`` steps the first Newton
    system of the next step is captured: (Dj, Hp, Bd, Bo, free, rhs)."""
    md, solver, st = build_helix(helix_params(n=n, E=E, G=E / 3))
    dt = 0.01
    systems = []
    for k in range(steps):
        if k % every == 0:
            ws = Workspace(md.n)
            p_pred = st.p + dt * st.v
            th = dt * st.omega
            chain_forward(st.s, md.lengths, st.qref, ws.p, ws.q, ws.Dj, ws.Qj, True)
            eval_energy(ws.p, ws.q, p_pred, st.p, st.q, th, md.masses, md.Jr, md.lbar, md.Kh, md.ubar, solver.gravity,
                        1 / dt**2, 0.0, ws.gp, ws.gq, ws.Hp, ws.Hqd, ws.Hqo, 1, ws.comps)
            b = np.empty((md.n, 3))
            jac_t_mul(ws.Dj, ws.Qj, ws.gp, ws.gq, b)
            reduced_hessian(ws.q, st.q, ws.Qj, md.masses, md.Jr, md.lbar, md.Kh, 1 / dt**2, 0.0, ws.Hp, ws.Bd, ws.Bo)
            systems.append((ws.Dj.copy(), ws.Hp.copy(), ws.Bd.copy(), ws.Bo.copy(), solver.free.copy(), -b * solver.free))
        solver.step(st, dt)
    return systems


def solve_stats(system, prec, atol=1e-7):
    Dj, Hp, Bd, Bo, free, rhs = system
    n = Hp.shape[0]
    kind = PRECONDITIONERS[prec]
    ws = Workspace(n, direct=kind == 4, exact=kind == 5)

    def build():
        prepare_preconditioner(kind, Dj, Hp, Bd, Bo, free, ws.diag, ws.off, ws.sinv, ws.W, ws.suffix, ws.A, ws.L)

    out = {}

    def solve():
        out["r"] = pcg_solve(Dj, Hp, Bd, Bo, free, kind, ws.sinv, ws.W, ws.L, rhs, ws.ds, 0.0, atol, 20000,
                             ws.r, ws.zz, ws.d, ws.Ad, ws.tv, ws.tp, ws.y)

    build()
    solve()
    reps = 3 if n <= 200 else 2
    t_build = best_time(build, reps, 1 if kind == 4 else 3)
    t_solve = best_time(solve, reps, 1)
    return t_build, out["r"][0], t_solve, bool(out["r"][2])


# ---------------------------------------------------------------------------------------------
def part_precond():
    ns = [25, 50, 100, 200, 400]
    res = {"n": ns}
    for prec in PRECS:
        res[prec] = {"build_ms": [], "iters": [], "solve_ms": []}
    for n in ns:
        systems = capture_systems(n)
        for prec in PRECS:
            if prec == "direct" and n > 400:
                continue
            sts = [solve_stats(s, prec) for s in systems]
            res[prec]["build_ms"].append(1e3 * float(np.mean([s[0] for s in sts])))
            res[prec]["iters"].append(float(np.mean([s[1] for s in sts])))
            res[prec]["solve_ms"].append(1e3 * float(np.mean([s[2] for s in sts])))
        print(f"precond n={n}: " + ", ".join(f"{p} {res[p]['iters'][-1]:.1f} it" for p in PRECS), flush=True)
    # Fig. 4: time per step of the whole stepper vs n
    res["step_ms"] = {}
    for prec in ("block-diagonal", "hybrid"):
        res["step_ms"][prec] = []
        for n in ns:
            best = math.inf
            for rep in range(3):
                md, solver, st = build_helix(helix_params(n=n, precond=prec))
                m, _ = simulate(solver, st, 0.01, 30, frames=1, warmup=rep == 0)
                best = min(best, m["cpu_ms_per_step"])
            res["step_ms"][prec].append(best)
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    for prec in PRECS:
        ax[0].loglog(ns, res[prec]["build_ms"], "o-", color=COLORS[prec], label=prec)
        ax[1].semilogy(ns, res[prec]["iters"], "o-", color=COLORS[prec], label=prec)
        ax[2].loglog(ns, res[prec]["solve_ms"], "o-", color=COLORS[prec], label=prec)
    for a in ax:
        a.set_xscale("log")
        a.set_xticks(ns)
        a.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax[0].set(xlabel="segments", ylabel="construction [ms]", title="(a) preconditioner construction")
    ax[1].set(xlabel="segments", ylabel="PCG iterations", title="(b) PCG iterations per solve")
    ax[2].set(xlabel="segments", ylabel="solve [ms]", title="(c) time per linear solve")
    ax[0].legend()
    fig.suptitle("Zhao et al. Fig. 3: helix under gravity, first Newton system of every 4th step (|r| < 1e-7)")
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig3_preconditioners.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.8))
    for prec, v in res["step_ms"].items():
        ax.loglog(ns, v, "o-", color=COLORS[prec], label=prec)
    ax.loglog(ns, np.array(ns) * res["step_ms"]["hybrid"][-1] / ns[-1], "k:", label="O(n)")
    ax.set_xticks(ns)
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set(xlabel="segments", ylabel="CPU ms per time step", title="Fig. 4: time per step (helix, dt = 10 ms)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig4_time_per_step.png", dpi=110)
    plt.close(fig)
    return res


def part_young():
    Es = [1e6, 1e7, 1e8, 1e9, 1e10, 1e11]
    res = {"E": Es}
    for prec in ("diagonal", "block-diagonal", "hybrid"):
        res[prec] = []
        for E in Es:
            md, solver, st = build_helix(helix_params(n=200, E=E, G=E / 3, precond=prec))
            m, _ = simulate(solver, st, 0.01, 20, frames=1)
            res[prec].append(m["pcg_iters"])
        print(f"young {prec}: {res[prec]}", flush=True)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for prec in ("diagonal", "block-diagonal", "hybrid"):
        ax.loglog(Es, res[prec], "o-", color=COLORS[prec], label=prec)
    ax.set(xlabel="Young's modulus E [Pa]", ylabel="PCG iterations per solve", title="Fig. 5: PCG iterations vs E (200 segments)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig5_young.png", dpi=110)
    plt.close(fig)
    return res


PEN_N = 50
PEN_STEPS = 100


def _ours(n, steps, max_newton=5, dt=0.01, g=9.81):
    md, solver, st = build_helix(helix_params(n=n, max_newton=max_newton, g=g))
    m, tr = simulate(solver, st, dt, steps, frames=steps)
    return md, m, tr


def part_penalty():
    md, m_ours, tr_ours = _ours(PEN_N, PEN_STEPS)
    res = {"ours": {"ke": tr_ours["kinetic_energy"][1:].tolist(), "inext": m_ours["inextensibility"], "align": m_ours["alignment"]}}
    weights = [1e3, 1e5, 1e7, 1e9]
    res["weights"] = weights
    res["violations"] = {}
    for w in weights:
        cs = CartesianSolver(md, method="penalty", weight=w, max_newton=5, gravity=(0, 0, -9.81), fixed_vertices=(0, 1), fixed_segments=(0,))
        r = run_cartesian(md, cs, 0.01, PEN_STEPS)
        res["violations"][str(w)] = {"inext": r["inextensibility"].tolist(), "align": r["alignment"].tolist()}
        print(f"penalty w={w:g}: max inext {r['inextensibility'].max():.2e}", flush=True)
    res["damping"] = {}
    for iters in (5, 10, 20, 40):
        cs = CartesianSolver(md, method="penalty", weight=1e9, max_newton=iters, gravity=(0, 0, -9.81), fixed_vertices=(0, 1), fixed_segments=(0,))
        r = run_cartesian(md, cs, 0.01, PEN_STEPS)
        res["damping"][str(iters)] = r["kinetic_energy"].tolist()
    # Fig. 9: time and iterations to converge the first frame
    res["converge"] = {"weights": [1e3, 1e5, 1e7, 1e9], "time_ms": [], "iters": []}
    for w in res["converge"]["weights"]:
        cs = CartesianSolver(md, method="penalty", weight=w, max_newton=500, tol=1e-5, gravity=(0, 0, -9.81), fixed_vertices=(0, 1), fixed_segments=(0,))
        t0 = time.perf_counter()
        r = run_cartesian(md, cs, 0.01, 1)
        res["converge"]["time_ms"].append(1e3 * (time.perf_counter() - t0))
        res["converge"]["iters"].append(int(r["newton_iters"][0]))
    md2, solver, st = build_helix(helix_params(n=PEN_N, max_newton=500))
    solver.step(st.copy(), 0.01)  # compile
    t0 = time.perf_counter()
    stats = solver.step(st, 0.01)
    res["converge"]["ours_ms"] = 1e3 * (time.perf_counter() - t0)
    res["converge"]["ours_iters"] = stats.newton_iters
    frames = np.arange(1, PEN_STEPS + 1)
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    for w in weights:
        v = res["violations"][str(w)]
        ax[0].semilogy(frames, np.maximum(v["inext"], 1e-17), label=f"penalty w={w:g}")
        ax[1].semilogy(frames, np.maximum(v["align"], 1e-17), label=f"penalty w={w:g}")
    ax[0].axhline(max(res["ours"]["inext"], 1e-17), color="k", ls="--", label="ours (max over frames)")
    ax[1].axhline(max(res["ours"]["align"], 1e-17), color="k", ls="--", label="ours (max over frames)")
    ax[0].set(xlabel="frame", ylabel="inextensibility violation", title="(a) inextensibility")
    ax[1].set(xlabel="frame", ylabel="alignment violation", title="(b) alignment")
    ax[0].legend(fontsize=7)
    fig.suptitle(f"Fig. 7: penalty method, 5 Newton iterations, helix {PEN_N} segments")
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig7_penalty_violation.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.plot(frames, res["ours"]["ke"], "k-", lw=2, label="ours (5 iterations)")
    for iters, ke in res["damping"].items():
        ax.plot(frames[:len(ke)], ke, label=f"penalty w=1e9, {iters} iterations")
    ax.set(xlabel="frame", ylabel="kinetic energy [J]", title="Fig. 8: numerical damping of the penalty method")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig8_penalty_damping.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    ax[0].loglog(res["converge"]["weights"], res["converge"]["time_ms"], "o-", label="penalty")
    ax[0].axhline(res["converge"]["ours_ms"], color="k", ls="--", label="ours")
    ax[1].semilogx(res["converge"]["weights"], res["converge"]["iters"], "o-", label="penalty")
    ax[1].axhline(res["converge"]["ours_iters"], color="k", ls="--", label="ours")
    ax[0].set(xlabel="penalty weight", ylabel="time to converge frame 1 [ms]")
    ax[1].set(xlabel="penalty weight", ylabel="Newton iterations")
    ax[0].legend()
    fig.suptitle("Fig. 9: converging the first frame (|grad| < 1e-5)")
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig9_penalty_converge.png", dpi=110)
    plt.close(fig)
    return res


def part_kkt():
    md, m_ours, tr_ours = _ours(PEN_N, PEN_STEPS)
    best = math.inf
    for _ in range(3):
        md_, solver, st = build_helix(helix_params(n=PEN_N))
        m, _ = simulate(solver, st, 0.01, PEN_STEPS, frames=1, warmup=False)
        best = min(best, m["ms_per_step"])
    res = {"ours_ms": best, "ours_inext": m_ours["inextensibility"], "ours_align": m_ours["alignment"], "kkt": {}}
    for iters in (1, 2, 5):
        cs = CartesianSolver(md, method="kkt", max_newton=iters, gravity=(0, 0, -9.81), fixed_vertices=(0, 1), fixed_segments=(0,))
        r = run_cartesian(md, cs, 0.01, PEN_STEPS)
        res["kkt"][str(iters)] = {"ms": float(np.mean(r["ms"])), "inext": r["inextensibility"].tolist(), "align": r["alignment"].tolist()}
        print(f"kkt {iters}: {np.mean(r['ms']):.2f} ms/step, inext {r['inextensibility'].max():.2e}", flush=True)
    frames = np.arange(1, PEN_STEPS + 1)
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    labels = ["ours"] + [f"KKT {k} it" for k in res["kkt"]]
    ax[0].bar(labels, [res["ours_ms"]] + [v["ms"] for v in res["kkt"].values()], color=["k", "tab:blue", "tab:orange", "tab:green"])
    ax[0].set(ylabel="ms per step", title="(a) time per step")
    for k, v in res["kkt"].items():
        ax[1].semilogy(frames[:len(v["inext"])], np.maximum(v["inext"], 1e-17), label=f"KKT {k} iterations")
        ax[2].semilogy(frames[:len(v["align"])], np.maximum(v["align"], 1e-17), label=f"KKT {k} iterations")
    ax[1].axhline(max(res["ours_inext"], 1e-17), color="k", ls="--", label="ours")
    ax[2].axhline(max(res["ours_align"], 1e-17), color="k", ls="--", label="ours")
    ax[1].set(xlabel="frame", title="(b) inextensibility violation")
    ax[2].set(xlabel="frame", title="(c) alignment violation")
    ax[1].legend(fontsize=7)
    fig.suptitle(f"Fig. 10: direct KKT in Cartesian coordinates vs ours, helix {PEN_N} segments")
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig10_kkt.png", dpi=110)
    plt.close(fig)
    return res


def _stable(method, g, dt, n=20, t_end=0.5, max_newton=5):
    """Helix run to t_end (at least 10 steps): stable if finite, constraint violation < 1 %,
    and the kinetic energy stays below 10x the potential energy the whole rod could release."""
    md, solver, st = build_helix(helix_params(n=n, g=g, max_newton=max_newton))
    steps = max(10, int(round(t_end / dt)))
    height = float(md.rest_p[:, 2].max() - md.rest_p[:, 2].min()) + float(md.lengths.sum())
    ke_max = 10 * float(md.masses.sum()) * max(g, 1e-3) * height + 1e-9
    if method == "ours":
        for _ in range(steps):
            s = solver.step(st, dt)
            from rodlab.compact.sqp import kinetic_energy
            if not s.success or not np.all(np.isfinite(st.p)) or kinetic_energy(md, st) > ke_max:
                return False
        return True
    cs = CartesianSolver(md, method=method, weight=1e6, max_newton=max_newton, gravity=(0, 0, -g), fixed_vertices=(0, 1), fixed_segments=(0,))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            r = run_cartesian(md, cs, dt, steps)
    if len(r["t"]) < steps or not np.all(np.isfinite(r["x"])):
        return False
    return bool(r["inextensibility"].max() < 0.01 and r["kinetic_energy"].max() < ke_max)


def part_stability():
    gs = [1.0, 9.81, 40.0, 100.0]
    res = {"g": gs, "variants": []}
    for method in ("ours", "penalty", "kkt"):
        for its in (5, 1):
            name = f"{method}-{its}"
            res["variants"].append(name)
            lo_hi = []
            for g in gs:
                lo, hi = 1e-3, 10.0
                if _stable(method, g, hi, max_newton=its):
                    lo_hi.append((hi, hi))
                    continue
                if not _stable(method, g, lo, max_newton=its):
                    lo_hi.append((0.0, lo))
                    continue
                for _ in range(6):
                    mid = math.sqrt(lo * hi)
                    if _stable(method, g, mid, max_newton=its):
                        lo = mid
                    else:
                        hi = mid
                lo_hi.append((lo, hi))
            res[name] = lo_hi
            print(f"stability {name}: {lo_hi}", flush=True)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    colors = {"ours": "k", "penalty": "tab:blue", "kkt": "tab:orange"}
    for name in res["variants"]:
        method, its = name.split("-")
        lo = [max(a, 1e-4) for a, b in res[name]]
        ax.semilogy(gs, lo, "o-" if its == "5" else "s--", color=colors[method], label=f"{method}, {its} Newton it.")
    ax.set(xlabel="gravity g [m/s^2]", ylabel="largest stable dt [s]", title="Fig. 12: largest stable dt (bisection in [1 ms, 10 s])")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig12_stability.png", dpi=110)
    plt.close(fig)
    return res


def part_scenes():
    from rodlab.scenes import run_scene

    res = {}
    best = None
    for rep in range(5):
        r = run_scene("helix-gravity")
        if best is None or r.metrics["cpu_ms_per_step"] < best["cpu_ms_per_step"]:
            best = r.metrics
    res["helix-gravity"] = best
    # Fig. 6 / Fig. 11 snapshots
    h = run_scene("helix-gravity", t_end=2.0)
    d = run_scene("drag-root")
    fig, ax = plt.subplots(1, 2, figsize=(10, 4.5))
    x, t = h.trajectory["x"], h.trajectory["t"]
    for k in np.linspace(0, len(t) - 1, 6).astype(int):
        ax[0].plot(x[k, :, 0], x[k, :, 2], lw=1, label=f"t = {t[k]:.2f} s")
    ax[0].set(xlabel="x [m]", ylabel="z [m]", title="Fig. 6: helix under gravity (200 segments, dt 10 ms)", aspect="equal")
    ax[0].legend(fontsize=7)
    ax[0].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
    x, t = d.trajectory["x"], d.trajectory["t"]
    for k in range(0, min(len(t), 9)):
        ax[1].plot(x[k, :, 0], x[k, :, 2], lw=1, label=f"t = {t[k]:.2f} s")
    ax[1].set(xlabel="x [m]", ylabel="z [m]", title="Fig. 11: dragging the root (dt = 0.25 s)", aspect="equal")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG / "compact_fig6_11_scenes.png", dpi=110)
    plt.close(fig)
    res["drag-root"] = d.metrics
    res["drop-cylinders"] = run_scene("drop-cylinders").metrics
    cant = []
    for n in (50, 200):
        for E in (1e10, 1e8, 1e7, 1e6):
            m = run_scene("cantilever", method="compact", n=n, E=E, G=E / 3, static=True).metrics
            cant.append({"n": n, "E": E, "tip_x": m["tip_x"], "tip_z": m["tip_z"], "err": m["tip_error_over_length"], "newton": m["newton_iters"]})
    res["cantilever"] = cant
    return res


# ---------------------------------------------------------------------------------------------
def write_markdown():
    R = {}
    for f in CACHE.glob("*.json"):
        R[f.stem] = json.loads(f.read_text())
    L = ["# Compact Cosserat rod: measured numbers", "",
         f"Produced by `python bench/bench_compact.py` on {platform.machine()}, {os.cpu_count()} cores shared with other jobs, "
         f"Python {platform.python_version()}, numba, one thread. Timings are wall-clock (the machine was shared with "
         "other CPU-bound jobs, so they are inflated and noisy); 'CPU' is the process CPU time, which excludes the time this "
         "process waited for a core. Where marked, best of several repeats.", ""]
    if "scenes" in R:
        h = R["scenes"]["helix-gravity"]
        d = R["scenes"]["drag-root"]
        L += ["## Scenes", "", "| scene | ms/step | Newton it./step | PCG it./solve | inextensibility | alignment |", "|---|---|---|---|---|---|",
              f"| helix-gravity (201 vertices, dt 10 ms, E 1 GPa, best of 5) | {h['ms_per_step']:.3f} (CPU {h['cpu_ms_per_step']:.3f}) | {h['newton_iters']:.2f} | {h['pcg_iters']:.1f} | {h['inextensibility']:.1e} | {h['alignment']:.1e} |",
              f"| drag-root (201 vertices, dt 250 ms, 10 s) | {d['ms_per_step']:.3f} (CPU {d['cpu_ms_per_step']:.3f}) | {d['newton_iters']:.2f} | {d['pcg_iters']:.1f} | {d['inextensibility']:.1e} | {d['alignment']:.1e} |",
              ]
        if "drop-cylinders" in R["scenes"]:
            c = R["scenes"]["drop-cylinders"]
            L.append(f"| drop-cylinders (201 vertices, dt 1 ms, 1 s, mean {c['mean_contacts']:.1f} / max {c['max_contacts']} contacts) | "
                     f"{c['ms_per_step']:.3f} (CPU {c['cpu_ms_per_step']:.3f}) | {c['newton_iters']:.2f} | {c['pcg_iters']:.1f} | {c['inextensibility']:.1e} | {c['alignment']:.1e} |")
        L += ["", "Paper (Ryzen 3800X, C++): helix 201 vertices 5.9 ms/step; rod on three cylinders 36.9 ms/step (~46 contacts).", "",
              "### Cantilever vs the planar elastica (static, `method=compact`)", "", "| n | E [Pa] | tip x | tip z | error / L | Newton it. |", "|---|---|---|---|---|---|"]
        for c in R["scenes"]["cantilever"]:
            L.append(f"| {c['n']} | {c['E']:.0e} | {c['tip_x']:.6f} | {c['tip_z']:.6f} | {c['err']:.2e} | {c['newton']:.0f} |")
        L.append("")
    if "precond" in R:
        P = R["precond"]
        L += ["## Preconditioners (Fig. 3, 4)", "", "First Newton system of every 4th of 20 helix steps (E 1 GPa, dt 10 ms), PCG to |r| < 1e-7.", "",
              "| segments | " + " | ".join(f"{p} it. / build ms / solve ms" for p in PRECS) + " | step CPU ms (hybrid) | step CPU ms (block-diag.) |",
              "|---" * (len(PRECS) + 3) + "|"]
        for i, n in enumerate(P["n"]):
            cells = []
            for p in PRECS:
                if i < len(P[p]["iters"]):
                    cells.append(f"{P[p]['iters'][i]:.1f} / {P[p]['build_ms'][i]:.3f} / {P[p]['solve_ms'][i]:.3f}")
                else:
                    cells.append("-")
            L.append(f"| {n} | " + " | ".join(cells) + f" | {P['step_ms']['hybrid'][i]:.3f} | {P['step_ms']['block-diagonal'][i]:.3f} |")
        i200 = P["n"].index(200)
        L += ["", f"At 200 segments the hybrid preconditioner needs {P['block-diagonal']['iters'][i200] / P['hybrid']['iters'][i200]:.1f}x fewer PCG iterations than the block-diagonal one.", ""]
    if "young" in R:
        Y = R["young"]
        L += ["## PCG iterations vs Young's modulus (Fig. 5, 200 segments, 20 steps)", "", "| E [Pa] | diagonal | block-diagonal | hybrid | ratio block-diag./hybrid |", "|---|---|---|---|---|"]
        for i, E in enumerate(Y["E"]):
            L.append(f"| {E:.0e} | {Y['diagonal'][i]:.1f} | {Y['block-diagonal'][i]:.1f} | {Y['hybrid'][i]:.1f} | {Y['block-diagonal'][i] / Y['hybrid'][i]:.1f} |")
        L.append("")
    if "penalty" in R:
        Pn = R["penalty"]
        L += [f"## Penalty method (Fig. 7-9, helix {PEN_N} segments, dt 10 ms, {PEN_STEPS} frames)", "",
              "| weight | max inextensibility | max alignment |", "|---|---|---|"]
        for w in Pn["weights"]:
            v = Pn["violations"][str(w)]
            L.append(f"| {w:.0e} | {max(v['inext']):.2e} | {max(v['align']):.2e} |")
        L.append(f"| ours | {Pn['ours']['inext']:.1e} | {Pn['ours']['align']:.1e} |")
        L += ["", "Mean kinetic energy over the 100 frames (numerical damping, Fig. 8): ours "
              f"{np.mean(Pn['ours']['ke']):.3e} J; penalty w=1e9 with " + ", ".join(f"{k} it.: {np.mean(v):.3e} J" for k, v in Pn["damping"].items()), "",
              "Converging frame 1 (Fig. 9): " + ", ".join(f"w={w:.0e}: {t:.0f} ms / {it} it." for w, t, it in zip(Pn["converge"]["weights"], Pn["converge"]["time_ms"], Pn["converge"]["iters"]))
              + f"; ours {Pn['converge']['ours_ms']:.2f} ms / {Pn['converge']['ours_iters']} it.", ""]
    if "kkt" in R:
        K = R["kkt"]
        L += [f"## Direct KKT in Cartesian coordinates (Fig. 10, helix {PEN_N} segments)", "", "| method | ms/step | max inextensibility | max alignment |", "|---|---|---|---|",
              f"| ours (5 it. max) | {K['ours_ms']:.3f} | {K['ours_inext']:.1e} | {K['ours_align']:.1e} |"]
        for k, v in K["kkt"].items():
            L.append(f"| KKT, {k} Newton it. | {v['ms']:.3f} | {max(v['inext']):.2e} | {max(v['align']):.2e} |")
        L.append("")
    if "stability" in R and "variants" in R["stability"]:
        S = R["stability"]
        L += ["## Largest stable time step (Fig. 12, helix 20 segments, 0.5 s, bisection in [1 ms, 10 s])", "",
              "Stable = finite, inextensibility violation < 1 %, kinetic energy below 10x the potential energy the rod can release. "
              "Penalty weight 1e6.", "",
              "| g [m/s^2] | " + " | ".join(S["variants"]) + " |", "|---" * (len(S["variants"]) + 1) + "|"]
        for i, g in enumerate(S["g"]):
            L.append(f"| {g:g} | " + " | ".join(f"{S[v][i][0]:.3g} .. {S[v][i][1]:.3g}" for v in S["variants"]) + " |")
        L += ["", "(`a .. b`: stable at a, unstable at b; `10 .. 10`: stable at the 10 s cap; `0 .. 0.001`: unstable already at 1 ms.)", ""]
    (ROOT / "docs" / "benchmarks-compact.md").write_text("\n".join(L) + "\n")


PARTS = {"precond": part_precond, "young": part_young, "penalty": part_penalty, "kkt": part_kkt,
         "stability": part_stability, "scenes": part_scenes}


def main(argv):
    parts = argv or list(PARTS)
    FIG.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    for p in parts:
        if p not in PARTS:
            raise SystemExit(f"unknown part {p!r}; parts: {', '.join(PARTS)}")
        t0 = time.perf_counter()
        res = PARTS[p]()
        (CACHE / f"{p}.json").write_text(json.dumps(res))
        print(f"[{p}] {time.perf_counter() - t0:.1f} s", flush=True)
    write_markdown()


if __name__ == "__main__":
    main(sys.argv[1:])
