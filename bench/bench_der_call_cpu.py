"""CPU time of DER's ``advance(state, 1)`` beyond its step (issue #13 item 3), for A/B runs on a
shared machine: process CPU time (``time.process_time``), not wall time, best of 5 loops.

    PYTHONPATH=src python bench/bench_der_call_cpu.py
    PYTHONPATH=/tmp/old/src python bench/bench_der_call_cpu.py      # the same from an old tree

Per case: ``call`` = one ``advance(state, 1)``, ``step`` = per step inside ``advance(state, 200)``,
``over`` = call - step [us]. Cases: the clamped cantilever of bench/bench_overhead.py at 10, 50 and
200 vertices (twist-free path) and a clamped 3-turn helix of 100 vertices (general path: frames,
reference twist and twist every step). Run old and new trees alternately (new, old, old, new).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import CANTILEVER, one_rod_world  # noqa: E402

from rodlab.solvers import simulator_class  # noqa: E402
from rodlab.world import WorldBuilder, shapes  # noqa: E402


def cpu_us(fn, n: int, rounds: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t0) / n)
    return 1e6 * best


def helix_world(n: int):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.helix(n, 0.05, 0.04, 3.0), **CANTILEVER)
    b.clamp(0, "start")
    return b.build()


def main() -> None:
    out = []
    for label, world, n in (("cantilever", one_rod_world, 10), ("cantilever", one_rod_world, 50),
                            ("cantilever", one_rod_world, 200), ("helix", helix_world, 100)):
        sim = simulator_class("der")(world(n))
        state = sim.initial_state()
        sim.advance(state, 20)
        call = cpu_us(lambda: sim.advance(state, 1), 3000 if n < 100 else 1000)
        step = cpu_us(lambda: sim.advance(state, 200), 10) / 200
        out.append(f"{label} {n}: call {call:.2f} step {step:.2f} over {call - step:.2f}")
    print(" | ".join(out), flush=True)


if __name__ == "__main__":
    main()
