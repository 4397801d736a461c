"""der-implicit: a loop of ``advance(state, 1)`` calls with and without reading the state after each.

    python bench/der_implicit_call_loop.py [--sizes 10 200] [--calls 1000] [--rounds 5]

One clamped rod (bench_overhead.py's world), 20 steps after release; per size and round, ``calls``
calls from a copy of that state, once without touching the state between calls and once reading
``state.vertex_x`` after every call (which fills a deferred output, docs/der-implicit.md, "Third
session"); CPU time (``time.process_time``) per call, least over the rounds. Run it with another
tree's ``src`` on ``PYTHONPATH`` (alternating processes) for an A/B.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import one_rod_world

from rodlab.solvers import simulator_class


def call_loop(n: int, calls: int, rounds: int) -> dict:
    sim = simulator_class("der-implicit")(one_rod_world(n))
    start = sim.initial_state()
    sim.advance(start, 20)
    best = {}
    for _ in range(rounds):
        for mode in ("no read", "read"):
            s = start.copy()
            sim.advance(s, 1)
            c = time.process_time()
            if mode == "read":
                for _ in range(calls):
                    sim.advance(s, 1)
                    _ = s.vertex_x
            else:
                for _ in range(calls):
                    sim.advance(s, 1)
            best[mode] = min(best.get(mode, float("inf")), 1e6 * (time.process_time() - c) / calls)
    return best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 200])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    for n in a.sizes:
        b = call_loop(n, a.calls, a.rounds)
        print(f"{n} vertices: CPU us per call, no read {b['no read']:.2f}, read after each call {b['read']:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
