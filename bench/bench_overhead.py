"""Per-call overhead of ``advance(state, 1)`` (issue #13 item 3: target <= 5 us), every method.

    python bench/bench_overhead.py                 # table of section (a) of docs/benchmarks-world.md
    python bench/bench_overhead.py --write         # ... and write it there (the rest of the file is kept)
    python bench/bench_overhead.py --methods der --sizes 10 200 --calls 2000
    python bench/bench_overhead.py --dispatch      # numba dispatch cost: positional vs grouped arguments
    python bench/bench_overhead.py --paired --methods compact --repeats 7   # the paired estimate only

Overhead = mean wall time of one ``advance(state, 1)`` call minus the per-step time inside one
``advance(state, K)`` call over the same K steps (both from copies of one state, 20 steps after
release). The last column, robust to other processes on a shared machine, is the median of
``advance(state, 1)`` minus the median per-step time of calls of ``advance(state, 20)`` over the
same steps, scaled by 20/19 (each of those calls carries the overhead once). Every column is the
best of ``--repeats`` rounds. Those medians assume steps of equal cost; where they are not (galpha's
chord Newton refactors now and then, so most steps are cheap and a few dear) the column "split"
is the estimate to read: the CPU time (``time.process_time``) of the same K steps as K calls of one
step and as K / 2 calls of two, from one state object (``State.assign`` of the start between
loops, which keeps every method's per-state caches), alternating, ``--repeats`` rounds; per-call
cost = (CPU of the K calls - CPU of the K / 2 calls) / (K / 2), the median of the rounds (K =
``--calls`` for every method, at least 7 rounds). It needs
``advance(s, 1)`` twice to be ``advance(s, 2)``.
The median-based column assumes every step costs the same: where the
cost of a step changes along the run (compact's Newton and PCG iterations settle as the rod swings),
the median of single steps and the median of 20-step chunks describe different steps, and the
difference can even be negative. ``--paired`` adds :func:`paired_overhead`, which compares the same
steps one by one: robust to other processes and to steps of unequal cost. One clamped rod of 1 m, E = 1e8 Pa, radius 1 cm, gravity, damping
1 /s, each method's default ``dt``.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time
from pathlib import Path

import numpy as np

from rodlab.solvers import METHODS, simulator_class
from rodlab.world import WorldBuilder, shapes

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 20  # steps per call of the median-based estimate (robust on a loaded machine)
CANTILEVER = dict(E=1e8, G=1e8 / 3, rho=1000.0, radius=0.01)


def one_rod_world(n: int):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 1.0), **CANTILEVER)
    b.clamp(0, "start")
    return b.build()


def measure(method: str, n: int, calls: int, repeats: int, split_calls: int) -> tuple:
    """``(dt, mean of advance(s, 1) [us], median [us], per step inside advance(s, K) [us], median
    per step inside the calls of advance(s, CHUNK) over the same K steps [us], per-call cost by
    splitting [us] (:func:`split_cost` of ``split_calls`` steps, at least 7 rounds))``."""
    sim = simulator_class(method)(one_rod_world(n))
    start = sim.initial_state()
    sim.advance(start.copy(), 1)  # compile
    sim.advance(start, 20)
    means, medians, inside, chunked = [], [], [], []
    for _ in range(repeats):
        state = start.copy()
        t0 = time.perf_counter()
        sim.advance(state, calls)
        inside.append((time.perf_counter() - t0) / calls)
        state = start.copy()
        per = []
        for _ in range(calls // CHUNK):
            t1 = time.perf_counter()
            sim.advance(state, CHUNK)
            per.append((time.perf_counter() - t1) / CHUNK)
        chunked.append(statistics.median(per))
        state = start.copy()
        out = []
        for _ in range(calls):
            t1 = time.perf_counter()
            sim.advance(state, 1)
            out.append(time.perf_counter() - t1)
        means.append(statistics.fmean(out))
        medians.append(statistics.median(out))
    return sim.dt, 1e6 * min(means), 1e6 * min(medians), 1e6 * min(inside), 1e6 * min(chunked), \
        split_cost(sim, start, split_calls, max(7, repeats))


def split_cost(sim, start, calls: int, repeats: int) -> float:
    """Median over ``repeats`` rounds of the per-call cost [us] (CPU time) of ``advance(s, 1)``:
    the same ``calls`` steps as ``calls`` calls of one step and as ``calls // 2`` calls of two
    (module docstring)."""
    calls -= calls % 2
    state = start.copy()
    sim.advance(state, 1)  # the state object's own caches (a packed galpha state, say)
    rounds = []
    for _ in range(repeats):
        cpu = {}
        for per_call in (1, 2):
            state.assign(start)
            c0 = time.process_time()
            for _ in range(calls // per_call):
                sim.advance(state, per_call)
            cpu[per_call] = time.process_time() - c0
        rounds.append(1e6 * (cpu[1] - cpu[2]) / (calls // 2))
    return statistics.median(rounds)


def read_outputs(state) -> None:
    """What a user reading the state after a call touches: every common array field (a field a
    simulator deferred, ``State.defer``, is filled by this read)."""
    state.vertex_x, state.vertex_v, state.edge_theta, state.edge_ref_d1, state.joint_ref_twist  # noqa: B018


def paired_overhead(method: str, n: int, calls: int, rounds: int, read: bool = False) -> tuple[float, float, float]:
    """Per-call overhead [us] from the same steps timed two ways, block by block: ``calls / CHUNK``
    blocks of ``CHUNK`` steps, each run as ``CHUNK`` calls of ``advance(state, 1)`` (timed together)
    and, from the same start (the state is put back in place), as one ``advance(state, CHUNK)``.
    Each block's time is its minimum over ``rounds`` rounds, every round from one state 20 steps
    after release. A step's arithmetic is the same both ways (bitwise equal results), so the
    difference of the two sums is the overhead of ``calls - calls / CHUNK`` calls: returns
    ``(overhead, mean per step of the single calls, mean per step of the chunked calls)``.

    Blocks of equal length on both sides keep the minimum fair on a shared machine (a 2.5 ms chunk
    against 20 separate 0.13 ms calls, each at its own minimum, came out ~10 % slower per step under
    load: negative overheads); one set of arrays reset in place keeps both ways at the same
    addresses (two copies of a state stepped up to 15 % apart at 200 vertices). CPU time
    (``time.process_time``), not wall time: time spent descheduled does not count. The single calls'
    time includes the Python ``for`` loop around them (~0.05 us a call). ``read``: the state's outputs
    are read (:func:`read_outputs`) after every call of one step and after the call of ``CHUNK``, so
    outputs a simulator defers to their first read are paid for on both sides."""
    sim = simulator_class(method)(one_rod_world(n))
    start = sim.initial_state()
    sim.advance(start.copy(), 1)  # compile
    sim.advance(start, 20)
    blocks = max(1, calls // CHUNK)
    single = np.full(blocks, np.inf)
    chunk = np.full(blocks, np.inf)
    clock = time.process_time  # CPU time: a block's time while descheduled is not counted
    state, mark = start.copy(), start.copy()
    for _ in range(rounds):
        state.assign(start)
        for c in range(blocks):
            mark.assign(state)
            t0 = clock()
            for _ in range(CHUNK):
                sim.advance(state, 1)
                if read:
                    read_outputs(state)
            t1 = clock()
            single[c] = min(single[c], t1 - t0)
            state.assign(mark)
            t0 = clock()
            sim.advance(state, CHUNK)
            if read:
                read_outputs(state)
            t1 = clock()
            chunk[c] = min(chunk[c], t1 - t0)
    s1, sc, steps = float(single.sum()), float(chunk.sum()), blocks * CHUNK
    return 1e6 * (s1 - sc) / (steps - blocks), 1e6 * s1 / steps, 1e6 * sc / steps


def paired_rows(methods, sizes, calls: int, rounds: int) -> list[str]:
    rows = ["| method | vertices | `advance(s, 1)` [us] | per step in `advance(s, 20)` [us] | overhead, paired [us] | "
            "overhead, paired, state read after every call [us] |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for method in methods:
        for n in sizes:
            k = max(CHUNK, calls)  # every method the same blocks (galpha too: its ~0.5 ms steps at 200 vertices need them)
            over, one, chunked = paired_overhead(method, n, k, rounds)
            over_read = paired_overhead(method, n, k, rounds, read=True)[0]
            rows.append(f"| {method} | {n} | {one:.1f} | {chunked:.1f} | {over:.1f} | {over_read:.1f} |")
            print(rows[-1], flush=True)
    return rows


def overhead_rows(methods, sizes, calls: int, repeats: int) -> list[str]:
    rows = ["| method | vertices | dt [s] | `advance(s, 1)` median [us] | `advance(s, 1)` mean [us] | "
            "per step in `advance(s, K)` [us] | overhead (mean - per step) [us] | "
            f"overhead (median - median per step of `advance(s, {CHUNK})`) [us] | split: per-call cost, CPU [us] |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for method in methods:
        for n in sizes:
            k = max(10, calls // (4 if method == "galpha" else 1))
            dt, mean, median, inside, chunked, split = measure(method, n, k, repeats, calls)
            rows.append(f"| {method} | {n} | {dt:.3g} | {median:.1f} | {mean:.1f} | {inside:.1f} | {mean - inside:.1f} | "
                        f"{(median - chunked) * CHUNK / (CHUNK - 1):.1f} | {split:.1f} |")
            print(rows[-1], flush=True)
    return rows


def dispatch_rows(repeats: int = 5, calls: int = 20000) -> list[str]:
    """Cost [us] of calling a compiled function that reads one element, given 30 arrays of 8
    float64 positionally or as one named tuple, 12 arrays positionally, or one packed buffer
    (the layout :mod:`rodlab.der.batch` uses); best of ``repeats`` loops of ``calls`` calls."""
    from typing import NamedTuple

    from numba import njit

    arrays = [np.zeros(8) for _ in range(30)]
    Group = NamedTuple("Group", [(f"a{k}", np.ndarray) for k in range(30)])
    group = Group(*arrays)
    buf = np.zeros(240)

    @njit(cache=False)
    def positional(*args):
        return args[0][0]

    @njit(cache=False)
    def grouped(g):
        return g.a0[0]

    @njit(cache=False)
    def packed(b):
        return b[0]

    @njit(cache=False)
    def twelve(a, b, c, d, e, f, g, h, i, j, k, l):
        return a[0]

    cases = [("30 positional arrays", lambda: positional(*arrays)), ("one named tuple of 30 arrays", lambda: grouped(group)),
             ("12 positional arrays", lambda: twelve(*arrays[:12])), ("one packed float64 buffer", lambda: packed(buf))]
    rows = ["| arguments | dispatch [us per call] |", "| --- | ---: |"]
    for label, fn in cases:
        fn()
        best = min(_loop(fn, calls) for _ in range(repeats))
        rows.append(f"| {label} | {1e6 * best:.2f} |")
        print(rows[-1], flush=True)
    return rows


def _loop(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def write_section(path: Path, rows: list[str], command: str) -> None:
    """Replace section (a) of ``path`` (docs/benchmarks-world.md; bench/bench_world.py writes the
    rest and keeps this section) with ``rows``; a missing file gets this section alone."""
    head = "## (a) Per-call overhead of `advance(state, 1)`"
    section = f"""{head}

Written by `{command}` on {datetime.date.today().isoformat()}; load average (1 min) at the end:
{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (above ~0.5 per core the times are those of a shared
machine). One rod clamped at its start, gravity, damping 1 /s, E = 1e8 Pa, radius 1 cm, length 1 m,
each method's default `dt`, from the state 20 steps after release. Every column times the same steps
(from copies of one state): K calls of `advance(state, 1)`, one `advance(state, K)` and K / {CHUNK}
calls of `advance(state, {CHUNK})`. Overhead = mean time of one `advance(state, 1)` call minus the
per-step time inside the long call (sensitive to other processes: one slow call moves the mean);
the next column, robust to other processes, is the median of `advance(state, 1)` minus the median per-step
time of the `advance(state, {CHUNK})` calls, scaled by {CHUNK}/{CHUNK - 1} (both best of the rounds; it assumes
steps of equal cost). The last, "split", is robust to both: CPU time of the same K steps as K calls of one
step and as K / 2 calls of two from one state object, (CPU_1 - CPU_2) / (K / 2), the median of at least
7 alternating rounds (K = `--calls` for every method). The second table, "paired", times the same
blocks of {CHUNK} steps as {CHUNK} calls of one step and as one call of {CHUNK}, CPU time, the minimum of
each block over `--repeats` rounds (`paired_overhead`). Its last column reads the state's outputs
(every common array field) after each call on both sides: a simulator may defer an output to its
first read (`State.defer`, docs/world.md "Deferred outputs"), and this column charges that work to
the calls that made it, as a user who reads the state after every call pays it. Target: <= 5 us.

""" + "\n".join(rows) + "\n\n"
    text = path.read_text() if path.exists() else ""
    start, end = text.find(head), text.find("## (b) Many strands")
    if start >= 0 and end > start:
        text = text[:start] + section + text[end:]
    elif start >= 0:
        text = text[:start] + section
    else:
        text = (text + "\n" if text else "# World / Simulator benchmarks\n\n") + section
    path.write_text(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--sizes", nargs="*", type=int, default=[10, 50, 200])
    ap.add_argument("--calls", type=int, default=400, help="K: calls of advance(s, 1) and steps of advance(s, K)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dispatch", action="store_true", help="also time numba dispatch of argument layouts")
    ap.add_argument("--paired", action="store_true", help="only the paired estimate (paired_overhead), --repeats rounds")
    ap.add_argument("--write", action="store_true", help="write the table into section (a) of --out")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks-world.md"), help="markdown file of --write")
    args = ap.parse_args(argv)
    if args.paired:
        paired_rows(args.methods, args.sizes, args.calls, args.repeats)
        return
    rows = overhead_rows(args.methods, args.sizes, args.calls, args.repeats)
    if args.write:
        rows += [""] + paired_rows(args.methods, args.sizes, args.calls, max(args.repeats, 5))
        command = "python bench/bench_overhead.py --write" + "".join(
            f" --{k} {v}" for k, v in (("calls", args.calls), ("repeats", args.repeats)) if v != ap.get_default(k))
        write_section(Path(args.out), rows, command)
    if args.dispatch:
        dispatch_rows()


if __name__ == "__main__":
    main()
