"""CPU per DER step of the worlds of der's three contact scenes with contact off (issue #11, "Speed";
docs/der.md, "The explicit step"), for A/B runs of the contact-free DER step against an old tree.

    RODLAB_JIT_ONLY=1 PYTHONPATH=src python bench/bench_der_step_scenes.py                # this tree
    python bench/bench_der_step_scenes.py --ab /tmp/old/src --rounds 5                    # interleaved A/B

Worlds (as ``rodlab.scenes.der_contact_scenes`` builds them, contact settings reset to none): the
hanging chain (6 closed links of 16 vertices, 125 steps per call, energy check off; its rods on the
serial driver, as the contact loop steps them, not the parallel one), the hanging
plectoneme rod (275 vertices, 500 steps per call), the trefoil knot (60 vertices, 100 steps per
call); each after ``--warm`` steps from its initial state, then ``--calls`` calls from a copy of
that state, CPU time (``time.process_time``) per step, the least of ``--reps`` repetitions.
``--ab OLD_SRC`` alternates subprocesses of the old tree and this one (``RODLAB_JIT_ONLY=1`` both),
``--rounds`` rounds, and prints both and the ratio per world (median of rounds).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name: (builder call, dt [s], steps per call, simulator options)
WORLDS = {
    "chain": ("chain_world(6, 16)", 2e-4, 125, dict(energy_check=False)),
    "plectoneme": ("parabola_world(275, rate=4 * math.pi)", 5e-5, 500, {}),
    "trefoil": ("trefoil_world(60, 1.0)", 0.03, 100, {}),
}


def _world(expr: str):
    import math  # noqa: F401 (used by the expressions)

    from rodlab.scenes.der_contact_scenes import chain_world, parabola_world, trefoil_world  # noqa: F401
    from rodlab.world.world import ContactSettings
    return dataclasses.replace(eval(expr), contact=ContactSettings())


def measure(name: str, warm: int, calls: int, reps: int) -> float:
    """CPU us per step of world ``name`` (the least of ``reps``: other processes only add)."""
    from rodlab.solvers import make_simulator
    expr, dt, per_call, opts = WORLDS[name]
    sim = make_simulator(_world(expr), "der", dt=dt, **opts)
    sim._parallel = False  # the rods one after another, as the contact scenes' compiled loop steps them
    start = sim.initial_state()
    sim.advance(start, warm)
    out = []
    for _ in range(reps):
        state = start.copy()
        t0 = time.process_time()
        for _ in range(calls):
            sim.advance(state, per_call)
        out.append((time.process_time() - t0) / (calls * per_call) * 1e6)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", nargs="+", default=list(WORLDS))
    ap.add_argument("--warm", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ab", default=None, help="old tree's src folder: interleaved A/B")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.ab is None:
        res = {w: measure(w, a.warm, a.calls, a.reps) for w in a.worlds}
        if a.json:
            print(json.dumps(res))
        else:
            for w, us in res.items():
                print(f"{w:12s} {us:8.2f} us/step")
        return
    trees = {"old": str(Path(a.ab).resolve()), "new": str(ROOT / "src")}
    got = {k: {w: [] for w in a.worlds} for k in trees}
    for _ in range(a.rounds):
        for k, src in trees.items():
            env = dict(os.environ, PYTHONPATH=src, RODLAB_JIT_ONLY="1")
            cmd = [sys.executable, __file__, "--json", "--warm", str(a.warm), "--calls", str(a.calls), "--reps",
                   str(a.reps), "--worlds", *a.worlds]
            res = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
            for w, us in res.items():
                got[k][w].append(us)
    print(f"load {os.getloadavg()[0]:.1f}")
    for w in a.worlds:
        o, n = statistics.median(got["old"][w]), statistics.median(got["new"][w])
        lo, ln = min(got["old"][w]), min(got["new"][w])
        print(f"{w:12s} old {o:8.2f}  new {n:8.2f} us/step  new/old {n / o:.3f} (min: {ln / lo:.3f})   "
              f"(old {' '.join(f'{x:.1f}' for x in got['old'][w])}; new {' '.join(f'{x:.1f}' for x in got['new'][w])})")


if __name__ == "__main__":
    main()
