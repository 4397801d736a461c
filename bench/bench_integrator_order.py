"""Order of the ``compact`` simulator's time integrators on the released cantilever.

The ``cantilever`` scene's rod (n = 50 vertices, L = 1 m, r = 1 cm, E = 1e8 Pa, rho = 1000 kg/m^3,
gravity 9.81 m/s^2, damping 0.5 /s), released from straight, stepped for ``T`` = 1 s by
``integrator`` = backward-euler and bdf2 at a range of steps; the error of a run is the largest tip
distance [m] from the reference trajectory (the same integrator at ``dt_min / 8``) over samples
every 10 ms. The SQP is solved tightly (``tol`` 1e-10, 30 iterations, PCG to 1e-12 relative) so the
table measures the time discretisation, not the solver tolerance (at the reference's tiny steps the
line search stops some steps at round-off level, below 1e-10; they are kept).

Writes the table and the log-log figure into ``docs/integrators.md`` (between the markers) and
``docs/figures/integrator_order.png``. Run::

    NUMBA_CACHE_DIR=/tmp/numba_bench python bench/bench_integrator_order.py [--quick]

Experiments on the released cantilever's order (docs/integrators.md, "Why the released cantilever
shows slopes below 1.9"; these print and write nothing): ``--n`` (fewer vertices: fewer, slower
modes), ``--t-end``, ``--ref-factor``, ``--exact-start`` (bdf2 with its first step taken exactly
instead of by backward Euler).
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

from rodlab.scenes.cantilever_world import cantilever_world
from rodlab.solvers import make_simulator

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "integrators.md"
FIG = ROOT / "docs" / "figures" / "integrator_order.png"
PARAMS = dict(n=50, length=1.0, radius=0.01, E=1e8, G=1e8 / 3, rho=1000.0, g=9.81, damping=0.5)
SOLVE = dict(tol=1e-10, newton_iters=30, pcg_rtol=1e-12, pcg_atol=0.0)
SAMPLE = 0.01  # [s] between tip samples


EXACT_SUBSTEPS = 64  # --exact-start: the first step taken as this many bdf2 substeps


def tip_trajectory(world, integrator: str, dt: float, t_end: float, exact_start: bool = False) -> tuple[np.ndarray, float]:
    """Tip positions (samples, 3) [m] every ``SAMPLE`` s up to ``t_end``, and the wall time [s].

    ``exact_start`` (bdf2 only): instead of BDF2's backward-Euler start-up step, the first step is
    taken by the same integrator in EXACT_SUBSTEPS substeps and the BDF2 history set to the initial
    state, so the run is BDF2 from its first step with a start error far below the others
    (an experiment on the start-up step's share of the error; docs/integrators.md)."""
    sim = make_simulator(world, "compact", dt=dt, integrator=integrator, **SOLVE)
    state = sim.initial_state()
    per = int(round(SAMPLE / dt))
    if abs(per * dt - SAMPLE) > 1e-12:
        raise ValueError(f"dt = {dt} s does not divide the sample interval {SAMPLE} s")
    first = 0
    t0 = time.perf_counter()
    if exact_start:
        if integrator != "bdf2":
            raise ValueError("exact_start applies to integrator bdf2 only")
        s0 = state.copy()
        make_simulator(world, "compact", dt=dt / EXACT_SUBSTEPS, integrator=integrator, **SOLVE).advance(state, EXACT_SUBSTEPS)
        sv = state.solver
        sv["bdf2_x"][...] = s0.vertex_x
        sv["bdf2_v"][...] = s0.vertex_v
        sv["bdf2_q"][...] = s0.solver["q"]
        sv["bdf2_omega"][...] = s0.solver["omega"]
        sv["bdf2_dt"][...] = dt
        state.t = dt
        first = 1
    tips = []
    for k in range(int(round(t_end / SAMPLE))):
        sim.advance(state, per - (first if k == 0 else 0))  # a step stopped at round-off level is kept (and fine)
        tips.append(state.vertex_x[-1].copy())
    return np.array(tips), time.perf_counter() - t0


def measure(dts, t_end: float, n: int = PARAMS["n"], ref_factor: int = 8, exact_start: bool = False,
            integrators=("backward-euler", "bdf2")) -> dict:
    world = cantilever_world(dict(PARAMS, n=n), "compact")
    out = {}
    for integ in integrators:
        ref, _ = tip_trajectory(world, integ, min(dts) / ref_factor, t_end, exact_start)
        rows = []
        for dt in dts:
            tips, wall = tip_trajectory(world, integ, dt, t_end, exact_start)
            err = float(np.linalg.norm(tips - ref, axis=1).max())
            rows.append((dt, err, wall))
            print(f"{integ:15s} dt={dt:.3e} s  tip error {err:.3e} m  ({wall:.2f} s)", flush=True)
        out[integ] = rows
    return out


def slopes(rows):
    """Local slopes d log(error) / d log(dt) between consecutive rows."""
    return [float(np.log(rows[k - 1][1] / rows[k][1]) / np.log(rows[k - 1][0] / rows[k][0]))
            for k in range(1, len(rows))]


def table(results: dict) -> str:
    lines = ["| dt [s] | backward-euler tip error [m] | local slope | bdf2 tip error [m] | local slope |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    be, b2 = results["backward-euler"], results["bdf2"]
    sb, s2 = [None, *slopes(be)], [None, *slopes(b2)]
    for k in range(len(be)):
        f = (lambda s: "" if s is None else f"{s:.2f}")
        lines.append(f"| {be[k][0]:.3e} | {be[k][1]:.2e} | {f(sb[k])} | {b2[k][1]:.2e} | {f(s2[k])} |")
    fit = {k: float(np.polyfit(np.log([r[0] for r in v]), np.log([r[1] for r in v]), 1)[0]) for k, v in results.items()}
    lines.append("")
    lines.append(f"Least-squares slope over the table: backward-euler {fit['backward-euler']:.2f}, "
                 f"bdf2 {fit['bdf2']:.2f}.")
    return "\n".join(lines)


def figure(results: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for integ, marker in (("backward-euler", "o"), ("bdf2", "s")):
        dt = np.array([r[0] for r in results[integ]])
        err = np.array([r[1] for r in results[integ]])
        ax.loglog(dt, err, marker + "-", label=integ)
    dt = np.array([r[0] for r in results["bdf2"]])
    e0 = results["bdf2"][-1][1]
    ax.loglog(dt, e0 * (dt / dt[-1]) ** 2, "k:", label="slope 2")
    e1 = results["backward-euler"][-1][1]
    ax.loglog(dt, e1 * (dt / dt[-1]), "k--", label="slope 1")
    ax.set_xlabel("dt [s]")
    ax.set_ylabel("max tip error over 1 s [m]")
    ax.set_title("compact: released cantilever, n = 50")
    ax.legend()
    fig.tight_layout()
    FIG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG, dpi=120)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    start, end = "<!-- bench_integrator_order: begin -->", "<!-- bench_integrator_order: end -->"
    if start not in doc or end not in doc:
        raise SystemExit(f"{DOC} lacks the markers {start} / {end}")
    doc = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: f"{start}\n{text}\n{end}", doc, flags=re.S)
    DOC.write_text(doc)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="0.3 s and three steps (a smoke run; writes nothing)")
    ap.add_argument("--dts", default="", help="comma-separated steps [s] (each dividing 0.01 s)")
    ap.add_argument("--n", type=int, default=PARAMS["n"], help="vertices")
    ap.add_argument("--t-end", type=float, default=None, help="simulated time [s] (default 1, --quick 0.3)")
    ap.add_argument("--ref-factor", type=int, default=8, help="reference dt = smallest dt / ref-factor")
    ap.add_argument("--exact-start", action="store_true", help="bdf2 only, its first step exact (see tip_trajectory); "
                    "prints the table, writes nothing")
    args = ap.parse_args(argv)
    t_end = args.t_end if args.t_end is not None else (0.3 if args.quick else 1.0)
    dts = [float(x) for x in args.dts.split(",")] if args.dts else (
        [1e-3, 5e-4, 2.5e-4] if args.quick else [1e-2, 5e-3, 2.5e-3, 1.25e-3, 6.25e-4, 3.125e-4])
    t0 = time.perf_counter()
    if args.exact_start:
        rows = measure(dts, t_end, args.n, args.ref_factor, True, ("bdf2",))["bdf2"]
        print(f"bdf2, exact start, n = {args.n}, {t_end:g} s, reference dt {min(dts) / args.ref_factor:.3g} s")
        for k, (dt, err, _) in enumerate(rows):
            print(f"| {dt:.4g} | {err:.3e} | {'' if k == 0 else f'{slopes(rows)[k - 1]:.2f}'} |")
        return
    results = measure(dts, t_end, args.n, args.ref_factor)
    text = table(results)
    print(text)
    if args.quick or args.n != PARAMS["n"] or args.t_end is not None or args.ref_factor != 8:
        return
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    figure(results)
    write_doc(f"Measured by `NUMBA_CACHE_DIR=/tmp/numba_bench python bench/bench_integrator_order.py` on {machine} "
              f"({time.perf_counter() - t0:.0f} s). Reference: the same integrator at dt = {min(dts) / 8:.3e} s.\n\n"
              f"{text}\n\n![tip error against dt](figures/integrator_order.png)")


if __name__ == "__main__":
    main()
