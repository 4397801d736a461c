"""DER (Bergou et al. 2008) time per step vs the number of vertices.

    python bench/bench_der.py [--quick]

The ``cantilever`` scene's rod (1 m, radius 1 cm, E = 1e8 Pa, G = E/3, rho = 1000 kg/m^3,
gravity 9.81 m/s^2, damping 1/s, clamped edge at the root), stepped by the explicit DER stepper
(symplectic Euler, fast projection onto fixed edge lengths, quasistatic twist) at its suggested
stable time step. Each size is warmed up (compilation excluded), then timed inside single
``advance(state, nsteps)`` calls: best of 3 repeats of wall time (time.perf_counter) and CPU
time (time.process_time; the machine is shared, CPU time excludes time spent waiting for a core).
Writes the table into docs/benchmarks-der.md (section ``bench_der``).
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rodlab.bench_adapters.report import command_line, machine, md_table, write_section  # noqa: E402
from rodlab.scenes.cantilever_world import cantilever_rod  # noqa: E402
from rodlab.der.stepper import DEROptions, DERStepper, suggested_time_step  # noqa: E402
from rodlab.model import Loads  # noqa: E402

PAPER_MS_AT_200 = 1.0  # Bergou et al. 2008, Sec. 8: about 1 ms per step at 200 vertices
TARGET_US_AT_200 = 10.0
SIZES = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


def rod_params(n: int) -> dict:
    return dict(n=n, length=1.0, radius=0.01, E=1e8, G=1e8 / 3, rho=1000.0)


def time_size(n: int, budget_s: float, repeats: int = 3) -> dict:
    rod = cantilever_rod(rod_params(n))
    dt = suggested_time_step(rod)
    stepper = DERStepper(rod, Loads(gravity=(0.0, 0.0, -9.81), damping=1.0), DEROptions(dt=dt))
    state = stepper.initial_state()
    stepper.advance(state, 20)  # compile (or load from cache) and warm up
    t0 = time.perf_counter()
    stepper.advance(state, 200)
    est = (time.perf_counter() - t0) / 200
    nsteps = int(max(200, min(2_000_000, budget_s / max(est, 1e-9))))
    walls, cpus = [], []
    info = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        info = stepper.advance(state, nsteps)
        c1, w1 = time.process_time(), time.perf_counter()
        walls.append((w1 - w0) / nsteps)
        cpus.append((c1 - c0) / nsteps)
    return dict(n=n, dt=dt, nsteps=nsteps, wall_us=1e6 * min(walls), cpu_us=1e6 * min(cpus),
                proj_it=info.projection_iterations_max, twist_it=info.twist_iterations_max,
                violation=info.constraint_violation_max)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 1000 and shorter timings (no docs update)")
    ap.add_argument("--no-docs", action="store_true", help="print only, do not update docs/benchmarks-der.md")
    args = ap.parse_args(argv)
    sizes = SIZES[:7] if args.quick else SIZES
    budget = 0.15 if args.quick else 0.6
    rows, recs = [], []
    print(f"{'n':>6} {'dt [s]':>10} {'steps':>8} {'wall us/step':>13} {'CPU us/step':>12} {'ns/vertex':>10} {'paper/ours':>11}")
    for n in sizes:
        r = time_size(n, budget)
        recs.append(r)
        speedup = 1e3 * PAPER_MS_AT_200 / r["cpu_us"] if n == 200 else None
        print(f"{n:>6} {r['dt']:>10.3g} {r['nsteps']:>8} {r['wall_us']:>13.2f} {r['cpu_us']:>12.2f} {1e3 * r['cpu_us'] / n:>10.1f} "
              f"{'' if speedup is None else f'{speedup:.1f}x':>11}", flush=True)
        rows.append([n, f"{r['dt']:.3g}", r["nsteps"], f"{r['wall_us']:.2f}", f"{r['cpu_us']:.2f}", f"{1e3 * r['cpu_us'] / n:.1f}",
                     r["proj_it"], r["twist_it"], f"{r['violation']:.1e}"])
    at200 = next((r for r in recs if r["n"] == 200), None)
    verdict = ""
    if at200 is not None:
        ok = at200["cpu_us"] <= TARGET_US_AT_200
        verdict = (f"At 200 vertices: {at200['cpu_us']:.1f} us per step (CPU; wall {at200['wall_us']:.1f} us), "
                   f"{1e3 * PAPER_MS_AT_200 / at200['cpu_us']:.0f}x faster than the paper's {PAPER_MS_AT_200:g} ms; "
                   f"the project target of <= {TARGET_US_AT_200:g} us is {'met' if ok else 'NOT met'} "
                   f"({at200['cpu_us'] / TARGET_US_AT_200:.1f}x the target).")
        print(verdict)
    if args.quick or args.no_docs:
        return 0
    body = "\n".join([
        "## Time per step vs vertices (`bench/bench_der.py`)",
        "",
        f"Produced by `{command_line()}` on {machine()}; one thread.",
        "Rod: the `cantilever` scene's (1 m, radius 1 cm, E = 1e8 Pa, G = E/3, rho = 1000 kg/m^3, gravity, damping 1/s, "
        "clamped root edge), explicit DER (symplectic Euler + fast projection + quasistatic twist, the full step) at the "
        "suggested stable dt. Timed inside single `advance(state, nsteps)` calls after a warm-up (compilation excluded); "
        "best of 3 repeats. 'CPU' is process CPU time (the machine is shared: wall time includes waiting for a core). "
        "proj. it. / twist it.: largest fast-projection / twist-Newton iteration counts in the last call "
        "(the twist is closed-form for this straight isotropic rod).",
        "",
        md_table(["n", "dt [s]", "steps timed", "wall us/step", "CPU us/step", "CPU ns/vertex", "proj. it.", "twist it.", "max violation"], rows),
        "",
        f"Paper (Bergou et al. 2008, Sec. 8): about {PAPER_MS_AT_200:g} ms per step at 200 vertices. {verdict}",
    ])
    write_section(ROOT / "docs" / "benchmarks-der.md", "bench_der", body, title="Discrete Elastic Rods: measured numbers")
    print("wrote docs/benchmarks-der.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
