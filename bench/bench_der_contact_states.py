"""CPU per step of der's contact worlds from states inside their runs (issue #11, "Speed";
docs/der-speed.md), for interleaved A/B runs against an old tree.

    RODLAB_JIT_ONLY=1 PYTHONPATH=src python bench/bench_der_contact_states.py                 # this tree
    python bench/bench_der_contact_states.py --ab /tmp/old/src --rounds 6                      # interleaved A/B

Worlds as ``rodlab.scenes.der_contact_scenes`` builds them (contact on, ``projection="fast"``): the
hanging plectoneme rod (275 vertices, ``dt`` 5e-5 s) at 1.0 s (no contact yet) and 2.2 s (wound, in
contact), the hanging chain (6 closed links of 16 vertices, 2e-4 s, energy check off) at 0.3 s and
0.9 s, the trefoil knot (60 vertices, 0.03 s) at 30 s. Each state is reached from the initial one in
calls of at most 1000 steps (a fixed call pattern: the trajectory does not depend on the machine),
then ``--calls`` calls of ``K`` steps run from copies of it; CPU time (``time.process_time``) per
step, the least of ``--reps`` repetitions. ``--ab OLD_SRC`` alternates subprocesses of the old tree
and this one (``RODLAB_JIT_ONLY=1`` both, the order swapped every round) and prints the medians.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name: (builder call, dt [s], simulator options, states' times [s], steps per timed call)
CASES = {
    "plectoneme": ("parabola_world(275, rate=4 * math.pi)", 5e-5, {}, (1.0, 2.2), 200),
    "chain": ("chain_world(6, 16)", 2e-4, dict(energy_check=False), (0.3, 0.9), 100),
    "trefoil": ("trefoil_world(60, 1.0)", 0.03, {}, (30.0,), 100),
}


def measure(names, calls: int, reps: int) -> dict:
    """CPU us per step, ``"world@time"`` -> least of ``reps``."""
    from rodlab.scenes.der_contact_scenes import chain_world, parabola_world, trefoil_world  # noqa: F401
    from rodlab.solvers import make_simulator
    out = {}
    for name in names:
        expr, dt, opts, times, per_call = CASES[name]
        sim = make_simulator(eval(expr), "der", dt=dt, projection="fast", **opts)
        state = sim.initial_state()
        for t in times:
            left = int(round(t / dt)) - int(round(state.t / dt))
            while left > 0:
                k = min(left, 1000)
                sim.advance(state, k)
                left -= k
            best = math.inf
            for _ in range(reps):
                s = state.copy()
                c = time.process_time()
                for _ in range(calls):
                    sim.advance(s, per_call)
                best = min(best, (time.process_time() - c) / (calls * per_call) * 1e6)
            out[f"{name}@{t:g}"] = best
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", nargs="+", default=list(CASES))
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ab", default=None, help="old tree's src folder: interleaved A/B")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.ab is None:
        res = measure(a.worlds, a.calls, a.reps)
        print(json.dumps(res) if a.json else "\n".join(f"{k:14s} {v:8.1f} us/step" for k, v in res.items()))
        return
    trees = [("old", str(Path(a.ab).resolve())), ("new", str(ROOT / "src"))]
    got = {"old": {}, "new": {}}
    for r in range(a.rounds):
        for label, src in (trees if r % 2 == 0 else trees[::-1]):
            env = dict(os.environ, PYTHONPATH=src, RODLAB_JIT_ONLY="1")
            cmd = [sys.executable, __file__, "--json", "--calls", str(a.calls), "--reps", str(a.reps), "--worlds",
                   *a.worlds]
            res = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
            for k, v in res.items():
                got[label].setdefault(k, []).append(v)
    print(f"load {os.getloadavg()[0]:.1f}")
    for k in got["old"]:
        o, n = statistics.median(got["old"][k]), statistics.median(got["new"][k])
        print(f"{k:14s} old {o:7.1f}  new {n:7.1f} us/step  new/old {n / o:.3f}   "
              f"(old {' '.join(f'{x:.1f}' for x in got['old'][k])}; new {' '.join(f'{x:.1f}' for x in got['new'][k])})")


if __name__ == "__main__":
    main()
