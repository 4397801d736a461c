"""Speed of the generalized-alpha rod: ms per time step at 100 segments (the paper: 135 ms on a
Pentium M), and the banded LU (rodlab.linalg.banded_lu) against scipy.linalg.solve_banded on the
real Newton matrix. Writes docs/benchmarks-galpha.md (speed section) when run with --write.

    python bench/bench_galpha_speed.py [--write]
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.linalg import solve_banded

from rodlab.galpha import Boundary, GAlphaOptions, GAlphaRod, GAlphaSolver
from rodlab.galpha.cantilever import ROOT_R
from rodlab.linalg.banded_lu import gbtrf, gbtrs


def cantilever(n_nodes, E=1e8, damping=0.0):
    m = GAlphaRod.from_material(n_nodes, 1.0, radius=0.01, E=E, G=E / 3, rho=1000.0, gravity=(0, 0, -9.81),
                                damping=damping, root_R=ROOT_R)
    return GAlphaSolver(m, Boundary(), GAlphaOptions())


def time_steps(n_nodes, dt=1 / 30, steps=60, repeats=3):
    """Best of ``repeats`` runs (the machine is shared: the minimum is the least disturbed)."""
    best = None
    for _ in range(repeats):
        s = cantilever(n_nodes)
        st = s.initial_state()
        s.simulate(st, dt, 3)  # compile + start
        s.solve_time = 0.0
        s.total_iterations = s.total_steps = 0
        s.simulate(st, dt, steps)
        ms = s.solve_time / steps * 1e3
        if best is None or ms < best[0]:
            best = (ms, s.total_iterations / s.total_steps, s)
    return best


def time_lu(s, reps=200):
    """Factor+solve the Newton matrix of the solver's last iteration: own LU vs scipy."""
    _, n, kl, ku = s._maps[1]
    ab0 = s._ab.copy()
    # rebuild a fresh matrix: run one residual evaluation at the current state
    st = s.initial_state()
    s.step(st, 1 / 30)
    from rodlab.galpha.residual import residual
    colmap = s._maps[1][0]
    prm = s._prm(1 / 30, s.options.time, False)
    residual(st.x, st.x, st.xdot, s._old, s._khat, s._K, s._J, prm, s._rowscale, s._P, s._dP, True, s._F, s._ab,
             colmap, kl, ku, s._tipblock)
    ab0 = s._ab.copy()
    b0 = -s._F.reshape(-1).copy()
    ab = ab0.copy(); b = b0.copy(); ipiv = np.zeros(n, np.int64)
    gbtrf(ab, kl, ku, ipiv); gbtrs(ab, kl, ku, ipiv, b)
    t_own = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        ab[:] = ab0; b[:] = b0
        gbtrf(ab, kl, ku, ipiv); gbtrs(ab, kl, ku, ipiv, b)
        t_own = min(t_own, (time.perf_counter() - t) * 1e3)
    sab = np.ascontiguousarray(ab0[:, kl:].T)
    x_sp = solve_banded((kl, ku), sab, b0)
    t_sp = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        solve_banded((kl, ku), sab, b0)
        t_sp = min(t_sp, (time.perf_counter() - t) * 1e3)
    return n, kl, ku, t_own, t_sp, float(np.max(np.abs(x_sp - b)) / max(1e-300, np.max(np.abs(x_sp))))


def main():
    lines = ["## Speed (bench/bench_galpha_speed.py)", "",
             "Cantilever under gravity (E = 1e8 Pa, r = 1 cm, L = 1 m, no damping), dt = 1/30 s, "
             "rho_inf = 0.5 in time, released from straight; 60 steps after 3 warm-up steps; one core; "
             "best of 3 runs (shared 2-core machine: the spread between runs is up to 2-3x). LU timings: best of 200.", "",
             "| segments | unknowns | ms / step | Newton iterations / step |", "| --- | --- | --- | --- |"]
    solver100 = None
    for n_nodes in (11, 51, 101, 201):
        ms, its, s = time_steps(n_nodes)
        if n_nodes == 101:
            solver100 = s
        lines.append(f"| {n_nodes - 1} | {15 * (n_nodes - 1)} | {ms:.3f} | {its:.2f} |")
        print(lines[-1], flush=True)
    n, kl, ku, t_own, t_sp, diff = time_lu(solver100)
    lines += ["", f"Banded solve of the Newton matrix at 100 segments (n = {n}, kl = {kl}, ku = {ku}), factor + solve:", "",
              "| solver | ms |", "| --- | --- |",
              f"| rodlab.linalg.banded_lu (numba, partial pivoting in the band) | {t_own:.3f} |",
              f"| scipy.linalg.solve_banded (LAPACK gbsv, includes its input checks and copy) | {t_sp:.3f} |", "",
              f"Max relative difference of the solutions: {diff:.1e}. Paper: 135 ms per step at 100 segments "
              "(Pentium M 1.86 GHz, ~14 Newton iterations)."]
    print("\n".join(lines[-8:]))
    if "--write" in sys.argv:
        out = Path(__file__).resolve().parents[1] / "docs" / "benchmarks-galpha.md"
        text = out.read_text() if out.exists() else "# Generalized-alpha benchmarks\n\nMachine: 2-core x86_64 (shared).\n\n"
        start = text.find("## Speed")
        if start >= 0:
            end = text.find("\n## ", start + 5)
            text = text[:start] + (text[end + 1:] if end >= 0 else "")
        out.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
