"""Stability sweep of the generalized-alpha rod (GA paper, Sec. 5: "we varied the number of
segments from six up to 100 and ... the time step from 1e-5 up to 100 secs"): the sine-shaped rod
of scene galpha-sinus released under gravity, no physical damping, 20 steps per run, for every
(segments, dt) pair, with the paper's (alpha, beta, gamma) = (0.3, 0, 0.7) and with rho_inf = 1.
A run "blows up" if Newton fails even with substeps, a value is not finite, or the total energy
rises above its initial value by more than 1 % of rho A g L^2. Writes the
table into docs/benchmarks-galpha.md with --write.

    python bench/bench_galpha_stability.py [--write] [--quick]
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from rodlab.galpha import Boundary, Coefficients, GAlphaOptions, GAlphaRod, GAlphaSolver

HORIZONTAL = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def sinus_model(n_nodes, L=0.3):
    s = np.linspace(0, L, n_nodes)
    k = 0.5 * 2 * math.pi * 2 / L * np.cos(2 * math.pi * 2 * s / L)
    return GAlphaRod.from_material(n_nodes, L, radius=0.002, E=1e7, G=1e7 / 3, rho=1000.0,
                                   kappa_hat=np.column_stack([np.zeros(n_nodes), k, np.zeros(n_nodes)]),
                                   gravity=(0, 0, -9.81), root_R=HORIZONTAL)


def run(n_seg, dt, coeffs, steps=20):
    model = sinus_model(n_seg + 1)
    solver = GAlphaSolver(model, Boundary(), GAlphaOptions(time=coeffs))
    st = solver.initial_state()
    e0 = sum(solver.energy(st))
    t0 = time.perf_counter()
    try:
        tr = solver.simulate(st, dt, steps, robust=True)
    except RuntimeError:
        return {"ok": False, "why": "newton", "wall": time.perf_counter() - t0}
    e = tr["energy"]
    scale = model.rhoA * model.length * 9.81 * model.length  # weight x length [J]
    finite = bool(np.all(np.isfinite(tr["x"])) and np.all(np.isfinite(e)))
    grow = float((e.max() - e0) / scale)
    ok = finite and grow < 0.01
    return {"ok": ok, "why": "" if ok else ("nan" if not finite else f"energy +{grow:.2f}"),
            "iters": solver.total_iterations / max(1, solver.total_steps), "sub": solver.substeps,
            "grow": grow, "wall": time.perf_counter() - t0, "tip_z": float(st.r[-1, 2])}


def main():
    quick = "--quick" in sys.argv
    segs = (6, 25, 100) if quick else (6, 12, 25, 50, 100)
    dts = (1e-5, 1e-3, 1 / 30, 1.0, 100.0) if quick else (1e-5, 1e-4, 1e-3, 1e-2, 1 / 30, 0.1, 1.0, 10.0, 100.0)
    lines = ["## Stability sweep (bench/bench_galpha_stability.py)", "",
             "Sine-shaped rod (galpha-sinus: L = 0.3 m, r = 2 mm, E = 1e7 Pa, gravity, no damping) released from rest, "
             "20 steps per cell. Cell: mean Newton iterations per step / largest rise of the total energy above its "
             "initial value in units of weight x length (rho A L g L) (substeps used, if any); "
             "FAIL = Newton failed even in 16 substeps, non-finite values, or an energy rise above 1 % of rho A g L^2.", ""]
    all_ok = True
    for label, coeffs in (("paper (alpha, beta, gamma) = (0.3, 0, 0.7)", Coefficients(0.3, 0.0, 0.7)),
                          ("rho_inf = 1 (no numerical dissipation)", Coefficients.from_rho_inf(1.0))):
        lines += [f"### {label}", "", "| segments \\ dt [s] | " + " | ".join(f"{d:g}" for d in dts) + " |",
                  "| --- |" + " --- |" * len(dts)]
        for n in segs:
            cells = []
            for dt in dts:
                r = run(n, dt, coeffs)
                all_ok &= r["ok"]
                if r["ok"]:
                    cells.append(f"{r['iters']:.1f} / {max(r['grow'], 0):.0e}" + (f" ({r['sub']} sub)" if r["sub"] else ""))
                else:
                    cells.append(f"FAIL ({r['why']})")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
        lines.append("")
    lines.append(f"All runs stable: {'yes' if all_ok else 'no'}.")
    print(lines[-1])
    if "--write" in sys.argv:
        out = Path(__file__).resolve().parents[1] / "docs" / "benchmarks-galpha.md"
        text = out.read_text() if out.exists() else "# Generalized-alpha benchmarks\n\nMachine: 2-core x86_64 (shared).\n\n"
        start = text.find("## Stability sweep")
        if start >= 0:
            end = text.find("\n## ", start + 5)
            text = text[:start] + (text[end + 1:] if end >= 0 else "")
        out.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
