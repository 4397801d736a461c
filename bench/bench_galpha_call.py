"""What one galpha ``advance(state, 1)`` costs beyond its step, by part (issue #13 item 3; the
per-call cost itself: ``python bench/bench_overhead.py --methods galpha``, column "split").

    python bench/bench_galpha_call.py [--sizes 10 50 200]

Per size (one clamped rod of 1 m, gravity, damping 1 /s, the state 20 steps after release), CPU
time (``time.process_time``) per call, best of 7 loops of 20000 calls: the dispatch of
:func:`rodlab.galpha.batch.advance_rods` (a call whose shapes do not fit, answered before any
work), the call with ``nsteps = 0`` (dispatch, the buffer views and the common fields of the rod:
edge directors, reference twists, vertex velocities), ``GAlphaSimulator.advance(state, 0)`` (its
checks, no compiled call) and the :class:`StepReport` a call returns.
"""
from __future__ import annotations

import argparse
import os
import time

from rodlab.galpha.batch import advance_rods
from rodlab.solvers import make_simulator
from rodlab.solvers.base import step_report
from rodlab.world import WorldBuilder, shapes


def _cpu_per_call(fn, calls: int = 20000, loops: int = 7) -> float:
    fn()
    best = float("inf")
    for _ in range(loops):
        c0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - c0) / calls)
    return 1e6 * best


def parts(n: int) -> dict:
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 1.0), E=1e8, G=1e8 / 3, rho=1000.0, radius=0.01)
    b.clamp(0, "start")
    sim = make_simulator(b.build(), "galpha")
    s = sim.initial_state()
    sim.advance(s, 20)
    sv, lay = s.solver, sim.layout
    common = (s.vertex_v, s.edge_ref_d1, s.edge_theta, s.joint_ref_twist, sim._bc, lay.fb, lay.ib, 1)
    misfit = (0, 0, s.t, sim.dt, sv.sfb, sv.sib, s.vertex_x[:1], *common)
    assert advance_rods(*misfit) == -1
    fits = (0, 0, s.t, sim.dt, sv.sfb, sv.sib, s.vertex_x, *common)
    return {"dispatch": _cpu_per_call(lambda: advance_rods(*misfit)),
            "nsteps = 0 (dispatch, views, common fields)": _cpu_per_call(lambda: advance_rods(*fits)),
            "advance(s, 0)": _cpu_per_call(lambda: sim.advance(s, 0)),
            "StepReport": _cpu_per_call(lambda: step_report(1, True, "ok", 4, 0, 1e-9, 1e-5))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="*", type=int, default=[10, 50, 200])
    args = ap.parse_args(argv)
    rows = None
    for n in args.sizes:
        p = parts(n)
        if rows is None:
            rows = ["| vertices | " + " | ".join(f"{k} [us]" for k in p) + " |", "| ---: |" + " ---: |" * len(p)]
            print("\n".join(rows), flush=True)
        rows.append(f"| {n} | " + " | ".join(f"{v:.2f}" for v in p.values()) + " |")
        print(rows[-1], flush=True)
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
