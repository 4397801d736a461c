"""Speed of the generalized-alpha rod: CPU ms per time step at 10-200 segments (the paper: 135 ms
at 100 segments on a Pentium M), and the block LU the solver uses against the general banded LU
(rodlab.linalg.banded_lu) and scipy.linalg.solve_banded on the real Newton matrix. Writes docs/benchmarks-galpha.md (speed section) when run with --write.

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
from rodlab.galpha.model import ROOT_R
from rodlab.linalg.banded_lu import gbtrf, gbtrs


def cantilever(n_nodes, E=1e8, damping=0.0):
    m = GAlphaRod.from_material(n_nodes, 1.0, radius=0.01, E=E, G=E / 3, rho=1000.0, gravity=(0, 0, -9.81),
                                damping=damping, root_R=ROOT_R)
    return GAlphaSolver(m, Boundary(), GAlphaOptions())


def time_steps(n_nodes, dt=1 / 30, steps=60, repeats=3):
    """Best of ``repeats`` runs by CPU time (the machine is shared: the minimum is the least
    disturbed); returns (cpu ms/step, wall ms/step of that run, iterations/step, factorizations/step, solver)."""
    best = None
    for _ in range(repeats):
        s = cantilever(n_nodes)
        st = s.initial_state()
        s.simulate(st, dt, 3)  # compile + start
        s.solve_time = s.cpu_time = 0.0
        s.cpu_clock = True
        s.total_iterations = s.total_steps = s.factorizations = 0
        s.simulate(st, dt, steps)
        cpu = s.cpu_time / steps * 1e3
        if best is None or cpu < best[0]:
            best = (cpu, s.solve_time / steps * 1e3, s.total_iterations / s.total_steps, s.factorizations / steps, s)
    return best


def _best(f, reps):
    t_cpu = t_wall = math.inf
    for _ in range(reps):
        c = time.process_time()
        w = time.perf_counter()
        for _ in range(10):
            f()
        t_cpu = min(t_cpu, (time.process_time() - c) / 10 * 1e3)
        t_wall = min(t_wall, (time.perf_counter() - w) / 10 * 1e3)
    return t_cpu, t_wall


def time_lu(s, reps=40):
    """Factor+solve the Newton matrix (a fresh Jacobian after one step): the block LU the solver
    uses, the general banded LU of rodlab.linalg.banded_lu, and scipy's LAPACK gbsv."""
    from rodlab.galpha.residual import residual, residual_blocks
    from rodlab.galpha.residual import NV
    from rodlab.linalg.banded_lu import block_lu
    lu_factor, _, lu_solve1 = block_lu(NV, 9, 6)  # the solver's kernels, Python-callable (its own are inner)
    colmap, n, kl, ku = s._maps[1]
    st = s.initial_state()
    s.step(st, 1 / 30)
    prm = s._prm(1 / 30, s.options.time, False)
    args = (st.x, st.x, st.xdot, s._old, s._khat, s._K, s._J, prm, s._rowscale, s._P, s._dP, True, s._F)
    ab0 = np.zeros((n, 2 * kl + ku + 1))
    residual(*args, ab0, colmap, kl, ku, s._tipblock)
    residual_blocks(*args, s._Jb, s._tipblock)
    b0 = -s._F.reshape(-1).copy()
    m = s._masks[1]
    y = np.zeros(s._delta.size)

    def own_block():
        lu_factor(s._Jb, m[0], m[-1], s._W, s._piv, s._T, s._tpiv)
        lu_solve1(s._W, s._piv, s._T, s._tpiv, b0, y, s._zwork)

    ab = ab0.copy(); b = b0.copy(); ipiv = np.zeros(n, np.int64)

    def own_band():
        ab[:] = ab0; b[:] = b0
        gbtrf(ab, kl, ku, ipiv); gbtrs(ab, kl, ku, ipiv, b)

    sab = np.ascontiguousarray(ab0[:, kl:].T)

    def sp():
        return solve_banded((kl, ku), sab, b0)

    own_block(); own_band()
    x_sp = sp()
    scale = max(1e-300, np.max(np.abs(x_sp)))
    d_block = float(np.max(np.abs(y[colmap >= 0] - x_sp)) / scale)  # y is node-major, free entries in colmap order
    d_band = float(np.max(np.abs(b - x_sp)) / scale)
    return n, kl, ku, _best(own_block, reps), _best(own_band, reps), _best(sp, reps), d_block, d_band


def main():
    lines = ["## Speed (bench/bench_galpha_speed.py)", "",
             "Cantilever under gravity (E = 1e8 Pa, r = 1 cm, L = 1 m, no damping), dt = 1/30 s, "
             "rho_inf = 0.5 in time, released from straight; 60 steps after 3 warm-up steps; one core; "
             "CPU time of the process inside the stepper (time.process_time), best of 3 runs, and the wall time "
             "of that run (shared 2-core machine: wall time includes waiting for a core). "
             "LU timings: best of 40 x 10 calls.", "",
             "| segments | unknowns | CPU ms / step | wall ms / step | Newton iterations / step | factorizations / step |",
             "| --- | --- | --- | --- | --- | --- |"]
    solver100 = None
    for n_nodes in (11, 51, 101, 201):
        cpu, wall, its, fac, s = time_steps(n_nodes)
        if n_nodes == 101:
            solver100 = s
        lines.append(f"| {n_nodes - 1} | {15 * (n_nodes - 1)} | {cpu:.3f} | {wall:.3f} | {its:.2f} | {fac:.2f} |")
        print(lines[-1], flush=True)
    n, kl, ku, t_block, t_band, t_sp, d_block, d_band = time_lu(solver100)
    lines += ["", f"Factor + solve of the Newton matrix at 100 segments (n = {n} free unknowns; as a band: kl = {kl}, ku = {ku}):", "",
              "| solver | CPU ms | wall ms |", "| --- | --- | --- |",
              f"| rodlab.linalg.banded_lu.make_block_lu(15, 9) (staircase LU, 15 x 15 blocks fixed at compile time; used by the solver) | {t_block[0]:.3f} | {t_block[1]:.3f} |",
              f"| rodlab.linalg.banded_lu gbtrf + gbtrs (general band, partial pivoting in the band) | {t_band[0]:.3f} | {t_band[1]:.3f} |",
              f"| scipy.linalg.solve_banded (LAPACK gbsv, includes its input checks and copy) | {t_sp[0]:.3f} | {t_sp[1]:.3f} |", "",
              f"Max relative difference to scipy: block LU {d_block:.1e}, banded LU {d_band:.1e}. Paper: 135 ms per step "
              "at 100 segments (Pentium M 1.86 GHz, ~14 Newton iterations)."]
    print("\n".join(lines[-9:]))
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
