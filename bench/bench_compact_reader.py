"""What a reader of compact's outputs pays per call (docs/compact.md, "Per-call cost").

    python bench/bench_compact_reader.py [--sizes 10 50 200] [--rounds 7] [--calls 400]

compact defers the frame fields (``edge_ref_d1``, ``edge_theta``, ``joint_ref_twist``) of a time
step to their first read (:meth:`rodlab.world.State.defer`). Timed here, per call, in CPU time
(``time.process_time``): ``advance(state, 1)`` alone, followed by a read of ``state.vertex_x``
(written by every call), and followed by a read of ``state.edge_ref_d1`` (which fills the three
frame fields). The same ``--calls`` steps each way from one state 20 steps after release (put back
in place with ``State.assign`` between the ways), the ways alternating, each way's blocks of 20
calls at their minimum over ``--rounds`` rounds. One clamped rod of 1 m (bench_overhead's world).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import CHUNK, one_rod_world  # noqa: E402

from rodlab.solvers import simulator_class  # noqa: E402

WAYS = {"advance(s, 1)": None, "+ read vertex_x": "vertex_x", "+ read edge_ref_d1": "edge_ref_d1"}


def reader_costs(n: int, calls: int, rounds: int) -> dict:
    """Per-call CPU time [us] of each way of :data:`WAYS` at ``n`` vertices (module docstring)."""
    sim = simulator_class("compact")(one_rod_world(n))
    start = sim.initial_state()
    sim.advance(start.copy(), 1)  # compile
    sim.advance(start, 20)
    blocks = max(1, calls // CHUNK)
    best = {way: np.full(blocks, np.inf) for way in WAYS}
    state, mark = start.copy(), start.copy()
    clock = time.process_time
    for _ in range(rounds):
        state.assign(start)
        for c in range(blocks):
            mark.assign(state)
            for way, field in WAYS.items():
                state.assign(mark)
                t0 = clock()
                if field is None:
                    for _ in range(CHUNK):
                        sim.advance(state, 1)
                else:
                    for _ in range(CHUNK):
                        sim.advance(state, 1)
                        getattr(state, field)
                best[way][c] = min(best[way][c], clock() - t0)
    return {way: 1e6 * float(b.sum()) / (blocks * CHUNK) for way, b in best.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="*", type=int, default=[10, 50, 200])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    print("| vertices | " + " | ".join(f"{w} [us]" for w in WAYS) + " |")
    print("| ---: |" + " ---: |" * len(WAYS))
    for n in args.sizes:
        costs = reader_costs(n, args.calls, args.rounds)
        print(f"| {n} | " + " | ".join(f"{costs[w]:.1f}" for w in WAYS) + " |", flush=True)
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
