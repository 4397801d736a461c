"""Benchmarks of the World / State / Simulator protocol; writes docs/benchmarks-world.md.

    python bench/bench_world.py            # full run (the lead's)
    python bench/bench_world.py --quick    # a few minutes: fewer sizes, fewer repeats, smaller budget

(a) Per-call overhead of ``advance(state, 1)``: measured and written by ``bench/bench_overhead.py
    --write`` (one measurement, not two); this script keeps that section of the file as it is.
(b) Many strands: 1, 100, 1000, 10000 clamped strands of 32 vertices under gravity; der-implicit
    (one Newton iteration), compact and der: time per step and per vertex-step with one thread and
    with two (``numba.set_num_threads``), and the speed-up. A row whose predicted time (from the
    row before) exceeds the budget is skipped and says so. A method whose simulator cannot be
    imported is listed as missing.

Times are wall-clock medians [us]; compilation and setup are excluded (one warm-up step on a
copy of the state first). SI units; gravity 9.81 m/s^2 along -z, light damping 1 /s.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from rodlab.solvers import simulator_class
from rodlab.world import WorldBuilder, shapes

ROOT = Path(__file__).resolve().parents[1]
HAIR = dict(E=3.9e9, G=1.3e9, rho=1300.0, radius=5e-5)  # the sag-free paper's strand material
STRAND_RUNS = (  # (label, method, options)
    ("der-implicit", "der-implicit", {"newton_iters": 1}),
    ("der-implicit, no line search", "der-implicit", {"newton_iters": 1, "line_search": 0}),
    ("compact", "compact", {}),
    ("der", "der", {}),
)


def load(method):
    """The simulator class, or None when its module is not written yet."""
    try:
        return simulator_class(method)
    except ModuleNotFoundError:
        return None


def strands_world(count: int, n: int = 32, length: float = 0.2):
    """``count`` straight strands of ``n`` vertices hanging from a square grid, each clamped."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    side = int(np.ceil(np.sqrt(count)))
    for k in range(count):
        start = (0.01 * (k % side), 0.01 * (k // side), 0.0)
        r = b.add_rod(shapes.straight(n, length, start=start, direction=(1.0, 0.0, -0.2)), **HAIR)
        b.clamp(r, "start")
    return b.build()


def overhead_section(text: str) -> str:
    """Section (a) of ``text`` (a docs/benchmarks-world.md), written by ``bench/bench_overhead.py
    --write``, with its heading, up to section (b); where there is none, a heading saying how to make it."""
    head = "## (a) Per-call overhead of `advance(state, 1)`"
    start, end = text.find(head), text.find("## (b) Many strands")
    if start < 0 or end < start:
        return head + "\n\nNot measured yet: `python bench/bench_overhead.py --write` writes this section.\n\n"
    return text[start:end]


def time_inside_cpu(sim, start, k: int, repeats: int) -> tuple[float, float]:
    """Per-step wall time inside one ``advance(state, k)`` call from a copy of ``start`` (median of
    ``repeats``), and the process's CPU time (all threads): the medians of the per-step wall time
    and CPU time [us]. The CPU time counts only the time the process ran, so on a
    machine shared with other work it measures the work itself where the wall time does not."""
    wall, cpu = [], []
    for _ in range(repeats):
        state = start.copy()
        t0, c0 = time.perf_counter(), time.process_time()
        sim.advance(state, k)
        wall.append((time.perf_counter() - t0) / k)
        cpu.append((time.process_time() - c0) / k)
    return 1e6 * statistics.median(wall), 1e6 * statistics.median(cpu)


def strands_table(quick: bool, budget: float) -> str:
    import numba

    counts = (1, 100, 1000) if quick else (1, 100, 1000, 10000)
    nthreads = min(2, numba.config.NUMBA_NUM_THREADS)
    rows = ["| method | strands | vertices | steps | us/step (1 thread) | us/vertex-step (1 thread) | "
            f"us/step ({nthreads} threads) | speed-up 1 -> {nthreads} | CPU us/step (1 thread) | "
            f"cores busy ({nthreads} threads) | setup [s] |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, method, options in STRAND_RUNS:
        cls = load(method)
        if cls is None:
            rows.append(f"| {label} | - | - | - | not importable yet | | | | | | |")
            continue
        setup_ps, step_ps, step_n_ps = 0.0, 0.0, 0.0  # per strand [s]: setup, one step (1 + n threads), one step (n)
        reps = 3 if quick else 5
        for count in counts:
            # the row's time: setup, plus reps x k steps at each thread count (k as chosen below)
            kk = min(2000, max(16, 0.2 / max(count * step_n_ps, 1e-9)))
            predicted = count * setup_ps + reps * kk * count * step_ps
            if predicted > budget:
                rows.append(f"| {label} | {count} | {32 * count} | - | skipped: predicted {predicted:.0f} s > budget {budget:.0f} s | | | | | | |")
                print(rows[-1], flush=True)
                continue
            t0 = time.perf_counter()
            world = strands_world(count)
            sim = cls(world, **options)
            state = sim.initial_state()
            setup = time.perf_counter() - t0
            sim.advance(state.copy(), 1)  # compile
            # enough steps for ~0.2 s of stepping at the first estimate
            t0 = time.perf_counter()
            sim.advance(state, 1)
            est = max(time.perf_counter() - t0, 1e-7)
            k = int(min(2000, max(16, 0.2 / est)))  # at least 16 steps: four frames of four substeps
            per, cpu = {}, {}
            for threads in sorted({1, nthreads}):
                numba.set_num_threads(threads)
                sim.advance(state.copy(), 1)  # start the thread pool outside the timing
                per[threads], cpu[threads] = time_inside_cpu(sim, state, k, reps)
            numba.set_num_threads(nthreads)
            nv = world.n_vertices
            rows.append(f"| {label} | {count} | {nv} | {k} | {per[1]:.1f} | {per[1] / nv:.4f} | {per[nthreads]:.1f} | "
                        f"{per[1] / per[nthreads]:.2f} | {cpu[1]:.1f} | {cpu[nthreads] / per[nthreads]:.2f} | {setup:.2f} |")
            print(rows[-1], flush=True)
            # per strand, for the next row's prediction (compilation excluded)
            setup_ps, step_ps, step_n_ps = setup / count, 1e-6 * (per[1] + per[nthreads]) / count, 1e-6 * per[nthreads] / count
    return "\n".join(rows)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
            f"numba {numba.__version__}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats (a few minutes)")
    ap.add_argument("--budget", type=float, default=None, help="seconds one strands row may take (default 60, quick 20)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks-world.md"), help="markdown file to write")
    args = ap.parse_args(argv)
    budget = args.budget if args.budget is not None else (20.0 if args.quick else 60.0)
    started = time.perf_counter()
    out = Path(args.out)
    a = overhead_section(out.read_text() if out.exists() else "")
    load_b = os.getloadavg()[0]
    b = strands_table(args.quick, budget)
    import numba
    nthreads = min(2, numba.config.NUMBA_NUM_THREADS)
    command = "python bench/bench_world.py" + (" --quick" if args.quick else "") + (f" --budget {args.budget:g}" if args.budget else "")
    text = f"""# World / Simulator benchmarks

Written by `{command}` on {datetime.date.today().isoformat()} ({time.perf_counter() - started:.0f} s).
Machine: {machine()}. Medians of wall-clock times; compilation and setup excluded.

{a}## (b) Many strands

Strands of 32 vertices (20 cm human hair: E = 3.9 GPa, radius 50 um), each clamped at its root,
gravity, damping 1 /s; der-implicit with one Newton iteration per step (with its default Armijo line
search, and without it: the sag-free paper's forward simulation takes one full Newton step per step),
compact and der with their defaults. Rows predicted to take more than {budget:.0f} s are skipped.
Medians of {"3" if args.quick else "5"} repeats; the CPU column is the process's CPU time per step with one
thread (the work itself: on a machine shared with other jobs the wall times grow, it barely does).
"Cores busy" is the process's CPU time over the wall time with {nthreads} threads: about {nthreads} when the
threads ran at once, 1 or less when they did not (the kernel ran on one thread, or the machine gave this
process one core or less: Linux's autogroup scheduler splits the cores between sessions, not threads,
so with other sessions busy a second thread adds no core). Before the compilations of one driver got
their own numba cache entries (`geometry._vec.njit_as`), the der-implicit and compact batches ran
their serial code in the parallel driver whenever a serial compilation was cached last (speed-up 1.00,
cores busy 1.0; docs/der-implicit.md, "Many strands").
Target (issue #13): 1000 x 32 with der-implicit <= 5 ms per step on 2 cores. Load average (1 min)
when the table was started: {load_b:.1f} on {os.cpu_count()} cores (above ~0.5 per core the wall times are
those of a shared machine).

{b}
"""
    out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
